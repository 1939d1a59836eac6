//! One resource record with its RDATA in wire form (names uncompressed).

use crate::{Class, Name, Rtype};

/// A resource record as read from a zone file, an UPDATE or a transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The owner name, case preserved.
    pub owner: Name,
    /// The class (almost always IN).
    pub class: Class,
    /// The type.
    pub rtype: Rtype,
    /// Time to live in seconds.
    pub ttl: u32,
    /// RDATA in uncompressed wire form.
    pub rdata: Box<[u8]>,
}
