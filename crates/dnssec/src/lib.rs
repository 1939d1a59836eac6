//! DNSSEC signing: keys, RRSIGs, the NSEC chain, and the signer the
//! zone-update stage calls for every change of a signed zone.
//!
//! ```text
//!  key files ──SigningKey::read_all──▶ keys ─┐
//!  policy ───────────────────────────────────┴─▶ Signer
//!
//!  unsigned zone ──Signer::sign_zone──▶ signed zone            (first load, AXFR in, keys changed)
//!  signed zone + Changeset ──Signer::sign_change──▶ (signed zone, signed Changeset)
//!        the change's DNSSEC records dropped; RRSIGs of the RRsets it touched made
//!        again; NSEC records at the names it touched and before them mended;
//!        the SOA signed; signatures found due on the way made again
//! ```
//!
//! What is signed (RFC 4035 §2): every authoritative RRset but RRSIG; at a
//! delegation point only DS and NSEC; nothing that is occluded (glue,
//! names below a DNAME). The DNSKEY RRset is signed by the key signing
//! keys, the rest by the zone signing keys (by the KSK alone when there is
//! no ZSK: a combined signing key). NSEC TTL: min(SOA TTL, SOA MINIMUM)
//! (RFC 9077); NSEC next names in lower case, as Knot writes them.
//!
//! Pure but for key files, the system's randomness and keys in a PKCS #11
//! token (`hsm.rs`): `now` is passed in.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod change;
pub mod check;
pub mod hsm;
pub mod import;
pub mod key;
mod keyrecords;
pub mod nsec;
pub mod nsec3;
pub mod offline;
pub mod refresh;
pub mod rollover;
pub mod rrsig;
pub mod signer;
pub mod timing;
pub mod validate;
mod whole;

pub use key::{Algorithm, KeyError, SigningKey, KSK_FLAGS, ZSK_FLAGS};
pub use nsec3::{Nsec3, Nsec3Policy};
pub use refresh::{Due, Round};
pub use rollover::{KeyPolicy, Plan, Trigger, Ttls};
pub use signer::{
    is_signer_type, CdsPublish, KeyFacts, Policy, Progress, SignError, SignatureCount, Signer,
};
pub use timing::{KeyState, Role, Timing, Usage};
pub use validate::validate;

#[cfg(test)]
mod offline_tests;
#[cfg(test)]
mod rollover_tests;
#[cfg(test)]
mod tests;
