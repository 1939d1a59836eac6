//! Snapshots: a built zone written as its store's arrays, read back without
//! parsing or rebuilding.
//!
//! ```text
//!  "LODESNAP" version:u32le
//!  class:u16 serial:u32 negative_ttl:u32 records:u64 rrsets:u64 nodes:u32 (all le)
//!  origin_len:u8 origin (wire)   source_len:u32le source (caller's tag, e.g. file identity)
//!  section × 4 (heads, offs, data, raw): byte_len:u64le bytes
//!  checksum:u64le (of everything before it)
//! ```
//!
//! The sections are the store's flat arrays (little-endian), so a reader
//! could also map them in place. Reading checks the checksum and then the
//! whole structure (every entry decodes, keys ascend, node data is well
//! formed), so a damaged or crafted file is refused with a reason rather
//! than served. Version 4 added the two-part difference (`DIFF2` in
//! `store.rs`), version 5 hashed owners' keys stored as their hashes
//! (`HASHED`) and their NSEC3s without the next hash (`NEXT_ELIDED`); versions 3 and 4 are still read (each is the next
//! one's format without what it added): a state snapshot may hold the only
//! copy of a zone's changes.

use std::fmt;
use std::io::{self, Read, Write};

use lode_wire::{Class, Name};

use crate::blob;
use crate::store::Store;
use crate::Zone;

const MAGIC: &[u8; 8] = b"LODESNAP";
const VERSION: u32 = 5;
/// The oldest version read.
const OLDEST: u32 = 3;

/// Why a snapshot could not be read.
#[derive(Debug)]
pub enum SnapshotError {
    /// Reading failed.
    Io(io::Error),
    /// The file is not a snapshot of this version, or is damaged.
    Invalid(String),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Io(e) => write!(f, "{e}"),
            SnapshotError::Invalid(why) => write!(f, "not a valid snapshot: {why}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

impl From<io::Error> for SnapshotError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            SnapshotError::Invalid("truncated".into())
        } else {
            SnapshotError::Io(e)
        }
    }
}

/// The checksum of a snapshot.
type Sum = crate::mix::WordMix;

struct Out<'w, W: Write> {
    w: &'w mut W,
    sum: Sum,
}

impl<W: Write> Out<'_, W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.sum.update(b);
        self.w.write_all(b)
    }
}

struct In<'r, R: Read> {
    r: &'r mut R,
    sum: Sum,
    /// Bytes the file can still hold.
    left: u64,
}

impl<R: Read> In<'_, R> {
    fn get<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.r.read_exact(&mut b)?;
        self.sum.update(&b);
        Ok(b)
    }
    fn bytes(&mut self, len: u64, what: &str) -> Result<Vec<u8>, SnapshotError> {
        // A damaged length must not allocate wildly: no section is longer
        // than the file.
        if len > self.left {
            return Err(SnapshotError::Invalid(format!(
                "the {what} section is longer than the file"
            )));
        }
        self.left -= len;
        let mut v = vec![0u8; len as usize];
        self.r.read_exact(&mut v).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                SnapshotError::Invalid(format!("truncated in the {what} section"))
            }
            _ => SnapshotError::Io(e),
        })?;
        self.sum.update(&v);
        Ok(v)
    }
}

impl Zone {
    /// Writes the zone as a snapshot; `source` is stored as given (e.g. the
    /// zone file's size and modification time, to tell whether it changed).
    pub fn write_snapshot(&self, source: &[u8], w: &mut impl Write) -> io::Result<()> {
        if !self.delta.is_empty() {
            return Err(io::Error::other(
                "the zone has changes not folded into its base: compact it first",
            ));
        }
        let mut o = Out {
            w,
            sum: Sum::default(),
        };
        o.put(MAGIC)?;
        o.put(&VERSION.to_le_bytes())?;
        o.put(&self.class.0.to_le_bytes())?;
        o.put(&self.serial.to_le_bytes())?;
        o.put(&self.negative_ttl.to_le_bytes())?;
        o.put(&self.records.to_le_bytes())?;
        o.put(&self.rrsets.to_le_bytes())?;
        o.put(&self.store.len.to_le_bytes())?;
        let origin = self.origin.as_wire();
        o.put(&[origin.len() as u8])?;
        o.put(origin)?;
        o.put(&(source.len() as u32).to_le_bytes())?;
        o.put(source)?;
        let s = &self.store;
        o.put(&(s.heads.len() as u64 * 16).to_le_bytes())?;
        let mut buf = Vec::with_capacity(1 << 16);
        for chunk in s.heads.chunks(4096) {
            buf.clear();
            chunk
                .iter()
                .for_each(|h| buf.extend_from_slice(&h.to_le_bytes()));
            o.put(&buf)?;
        }
        o.put(&(s.offs.len() as u64 * 8).to_le_bytes())?;
        for chunk in s.offs.chunks(8192) {
            buf.clear();
            chunk
                .iter()
                .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
            o.put(&buf)?;
        }
        o.put(&(s.data.len() as u64).to_le_bytes())?;
        o.put(&s.data)?;
        o.put(&(s.raw.len() as u64).to_le_bytes())?;
        o.put(&s.raw)?;
        let sum = o.sum.finish();
        o.w.write_all(&sum.to_le_bytes())
    }

    /// Reads a snapshot written by [`Zone::write_snapshot`] from a source of
    /// at most `size` bytes (the file's size): the zone and the `source` tag
    /// it was written with.
    pub fn read_snapshot(r: &mut impl Read, size: u64) -> Result<(Zone, Vec<u8>), SnapshotError> {
        let bad = |why: &str| SnapshotError::Invalid(why.to_string());
        let mut i = In {
            r,
            sum: Sum::default(),
            left: size,
        };
        if &i.get::<8>()? != MAGIC {
            return Err(bad("no LODESNAP signature"));
        }
        let version = u32::from_le_bytes(i.get()?);
        if !(OLDEST..=VERSION).contains(&version) {
            return Err(SnapshotError::Invalid(format!(
                "version {version}, this build reads versions {OLDEST} to {VERSION}"
            )));
        }
        let class = Class(u16::from_le_bytes(i.get()?));
        let serial = u32::from_le_bytes(i.get()?);
        let negative_ttl = u32::from_le_bytes(i.get()?);
        let records = u64::from_le_bytes(i.get()?);
        let rrsets = u64::from_le_bytes(i.get()?);
        let len = u32::from_le_bytes(i.get()?);
        let [olen] = i.get::<1>()?;
        let origin_wire = i.bytes(u64::from(olen), "origin")?;
        let origin = Name::from_wire(&origin_wire).map_err(|_| bad("malformed origin name"))?;
        let slen = u32::from_le_bytes(i.get()?);
        let source = i.bytes(u64::from(slen), "source")?;
        let mut section = |what: &str| -> Result<Vec<u8>, SnapshotError> {
            let n = u64::from_le_bytes(i.get()?);
            i.bytes(n, what)
        };
        let heads = section("heads")?;
        let offs = section("offsets")?;
        let data = section("data")?;
        let raw = section("raw")?;
        let expect = i.sum.finish();
        let mut got = [0u8; 8];
        i.r.read_exact(&mut got)?;
        if u64::from_le_bytes(got) != expect {
            return Err(bad("checksum mismatch (damaged file)"));
        }
        if heads.len() % 16 != 0 || offs.len() % 8 != 0 {
            return Err(bad("section sizes"));
        }
        let mut store = Store {
            top: Vec::new(),
            heads: heads
                .chunks_exact(16)
                .map(|c| {
                    let mut b = [0u8; 16];
                    b.copy_from_slice(c);
                    u128::from_le_bytes(b)
                })
                .collect(),
            offs: offs
                .chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    u64::from_le_bytes(b)
                })
                .collect(),
            data,
            raw,
            len,
            nsec3: None,
        };
        if len == 0 {
            return Err(bad("no apex"));
        }
        store.index_top();
        let (nsec3, nsec3_ids) = store
            .validate(blob::is_valid)
            .map_err(SnapshotError::Invalid)?;
        store.nsec3 = crate::nsec3::Nsec3Index::new(nsec3, nsec3_ids);
        let mut okey = lode_wire::name::KeyBuf::new();
        origin.as_ref().write_key(&mut okey);
        let zone = Zone {
            origin_key: okey.as_slice().into(),
            origin,
            class,
            store: std::sync::Arc::new(store),
            delta: crate::delta::Delta::default(),
            negative_ttl,
            serial,
            records,
            rrsets,
            expired: false,
            expire_at: None,
            apex: crate::ApexFacts::default(),
        }
        .settled();
        if zone.soa().first().len() < 22 {
            return Err(bad("no SOA at the apex"));
        }
        Ok((zone, source))
    }
}
