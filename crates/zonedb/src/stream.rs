//! Building a zone from records that mostly come in canonical order, as
//! Lode sends a zone by AXFR: each name's records are encoded
//! as soon as the next name begins ([`OrderedBuilder`]), so the records are
//! never all held at once (a 20 M-record transfer held ~7 GB of them).
//! Records out of order, or ones the structure checks refuse, make it go on
//! as a [`ZoneBuilder`] with what was built so far: the result, problems
//! included, is always what `ZoneBuilder::changed` gives for the records.
//!
//! A signed zone's NSEC3 chain usually comes last. Knot DNS keeps the NSEC3
//! nodes in a tree of their own and sends it after the other names
//! (`src/knot/nameserver/axfr.c` puts `nodes`, then `nsec3_nodes`); Lode
//! sends its NSEC3-only nodes after the others the same way (`lode-xfr`'s
//! `AxfrWriter`); BIND 9 also keeps them apart (its NSEC3 names in a
//! namespace of their own in `lib/dns/qpzone.c`), and its database
//! iterator, which AXFR out walks (`lib/ns/xfrout.c` through
//! `lib/dns/rriterator.c`), passes from the last name of the main tree to
//! the first of the NSEC3 one. Each part is in canonical order, but the
//! hashed owners (`<32 base32hex digits>.<apex>`) sort among the apex's
//! other children, so the first of them is out of order. Going the
//! ZoneBuilder's way there held every record of a 500,000-delegation TLD (a
//! peak of ~10 × the zone served).
//!
//! So a hashed owner that comes out of order starts the tail: a second
//! [`OrderedBuilder`] run for the chain, which must come in its own order
//! and hold hashed owners only (anything else goes the ZoneBuilder's way).
//! At the build, the two stores are laid into one as a compaction lays
//! out a version ([`Zone::with_apex_children`]): the chain's nodes are
//! leaves under the apex that nothing else changes, so flags and shadows
//! are found by the same walk. The peak is the two stores and the one laid
//! from them (twice the zone's store, and 8 bytes a name of fingerprints),
//! never the records: a secondary taking a 500,000-delegation TLD signed
//! with NSEC3 opt-out peaked at 52 MB, not 324 MB, for a zone of 31 MB
//! resident (from Lode, Knot DNS 3.2 and BIND 9.18 primaries alike;
//! without opt-out, 164 MB, not 615 MB, for 89 MB). A hashed owner that is also a name of the rest (it holds
//! other records, or names below it) is found there, and the build goes
//! the ZoneBuilder's way with the records of both.
//!
//! ```text
//!  names in order ──▶ OrderedBuilder ──▶ Zone ─┐
//!  NSEC3 chain last ─▶ OrderedBuilder ──▶ Zone ─┴─ laid into one store ──▶ Zone
//!  anything else out of order ──▶ ZoneBuilder (with everything so far) ──▶ Zone
//! ```

use lode_wire::name::KeyBuf;
use lode_wire::{Class, Name, Record, Rtype};

use crate::build::{knot_meta, Problem, Severity};
use crate::ordered::laid_records;
use crate::{OrderedBuilder, Zone, ZoneBuilder};

/// Builds a zone as [`ZoneBuilder::changed`] does, encoding records that
/// come in canonical order as they come.
#[derive(Debug)]
pub struct StreamBuilder {
    origin: Name,
    origin_key: Box<[u8]>,
    class: Class,
    mode: Mode,
    /// Warnings about records written before going unordered.
    carried: Vec<Problem>,
}

#[derive(Debug)]
enum Mode {
    /// Names in canonical order so far.
    Ordered(Box<Ordered>),
    /// Out of order: every record kept until the build.
    Any(ZoneBuilder),
}

/// The state while names come in canonical order: the last name's records
/// wait in `node` until the next name begins.
#[derive(Debug)]
struct Ordered {
    b: OrderedBuilder,
    /// The NSEC3 chain sent after all other names, once its first hashed
    /// owner came: an ordered run of its own (see the module notes).
    tail: Option<OrderedBuilder>,
    node: Vec<(Record, u32)>,
    key: KeyBuf,
    soa_seen: bool,
    warnings: Vec<Problem>,
}

impl Ordered {
    fn mode(origin: &Name, class: Class) -> Mode {
        Mode::Ordered(Box::new(Ordered {
            b: OrderedBuilder::new(origin.clone(), class),
            tail: None,
            node: Vec::new(),
            key: KeyBuf::new(),
            soa_seen: false,
            warnings: Vec::new(),
        }))
    }
}

impl StreamBuilder {
    /// A builder for the zone at `origin`, class IN.
    pub fn new(origin: Name) -> StreamBuilder {
        StreamBuilder {
            mode: Ordered::mode(&origin, Class::IN),
            origin_key: origin.key(),
            origin,
            class: Class::IN,
            carried: Vec::new(),
        }
    }

    /// Sets the zone's class (default IN); before the first record.
    pub fn class(self, class: Class) -> StreamBuilder {
        StreamBuilder {
            mode: Ordered::mode(&self.origin, class),
            class,
            ..self
        }
    }

    /// Adds a record; `tag` is echoed in problems about it.
    pub fn add(&mut self, record: Record, tag: u32) {
        let Mode::Ordered(o) = &mut self.mode else {
            if let Mode::Any(z) = &mut self.mode {
                z.add(record, tag);
            }
            return;
        };
        let Ordered {
            node,
            key,
            soa_seen,
            tail,
            ..
        } = &mut **o;
        // What the structure checks could refuse goes the ZoneBuilder's
        // way, which names it: another class, meta types, owners outside,
        // an SOA but the apex's one.
        let soa_ok = record.rtype != Rtype::SOA
            || (record.owner == self.origin && record.rdata.len() >= 20 && !*soa_seen);
        *soa_seen |= record.rtype == Rtype::SOA;
        let plain = soa_ok
            && record.class == self.class
            && !(record.rtype.is_meta() && knot_meta(record.rtype))
            && record.owner.as_ref().ends_with(&self.origin.as_ref());
        if !plain {
            return self.unordered(record, tag);
        }
        let mut k = KeyBuf::new();
        record.owner.as_ref().write_key(&mut k);
        if node.is_empty() || k.as_slice() == key.as_slice() {
            *key = k;
            node.push((record, tag));
            return;
        }
        let hashed = k
            .as_slice()
            .get(self.origin_key.len()..)
            .and_then(crate::nsec3::key_hash)
            .is_some();
        // Past the first hashed owner out of order, only the chain in its
        // own order; before, any name after the last.
        let starts_tail = tail.is_none() && hashed && k.as_slice() < key.as_slice();
        let in_order = k.as_slice() > key.as_slice() && (tail.is_none() || hashed);
        if !(starts_tail || in_order) || self.flush().is_err() {
            return self.unordered(record, tag);
        }
        if let Mode::Ordered(o) = &mut self.mode {
            if starts_tail {
                o.tail = Some(OrderedBuilder::new(self.origin.clone(), self.class));
            }
            o.key = k;
            o.node.push((record, tag));
        }
    }

    /// The zone and its warnings, or every problem found.
    pub fn build(mut self) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
        if self.flush().is_err() {
            self.go_unordered();
        }
        match self.mode {
            Mode::Ordered(o) if o.b.is_complete() => {
                let Ordered {
                    b, tail, warnings, ..
                } = *o;
                let zone = b.finish().map_err(|p| vec![p])?;
                let Some(tail) = tail else {
                    return Ok((zone, warnings));
                };
                let tail = tail.finish_unchecked();
                if let Some(whole) = zone.with_apex_children(&tail) {
                    return Ok((whole, warnings));
                }
                // A hashed owner is also a name of the rest (it holds other
                // records, or names below it): the ZoneBuilder's way.
                let mut z = ZoneBuilder::new(self.origin).class(self.class).changed();
                for r in laid_records(&zone).into_iter().chain(laid_records(&tail)) {
                    z.add(r, 0);
                }
                carry(warnings, z.build())
            }
            Mode::Ordered(_) => {
                self.go_unordered();
                match self.mode {
                    Mode::Any(z) => carry(self.carried, z.build()),
                    Mode::Ordered(_) => unreachable!("just made unordered"),
                }
            }
            Mode::Any(z) => carry(self.carried, z.build()),
        }
    }

    /// Writes the waiting name's records (its RRsets in type order, the
    /// last TTL of a set winning as in a zone file).
    fn flush(&mut self) -> Result<(), Problem> {
        let Mode::Ordered(o) = &mut self.mode else {
            return Ok(());
        };
        let Ordered {
            b,
            tail,
            node,
            warnings,
            ..
        } = &mut **o;
        if node.is_empty() {
            return Ok(());
        }
        let b = tail.as_mut().unwrap_or(b);
        node.sort_by_key(|(r, _)| r.rtype);
        let owner = node[0].0.owner.clone();
        b.node(owner.as_ref());
        for set in node.chunk_by(|a, b| a.0.rtype == b.0.rtype) {
            let rtype = set[0].0.rtype;
            let mut ttl = set[0].0.ttl;
            for (r, tag) in &set[1..] {
                if r.ttl != ttl && rtype != Rtype::RRSIG {
                    warnings.push(Problem {
                        tag: Some(*tag),
                        severity: Severity::Warning,
                        message: format!(
                            "{owner} {rtype}: TTL {} differs from the RRset's TTL {ttl}; the RRset takes {} (the last one written)",
                            r.ttl, r.ttl
                        ),
                    });
                    ttl = r.ttl;
                }
            }
            b.rrset(rtype, ttl, set.iter().map(|(r, _)| &*r.rdata))?;
        }
        node.clear();
        Ok(())
    }

    /// Goes on as a `ZoneBuilder` with everything so far, then `record`.
    fn unordered(&mut self, record: Record, tag: u32) {
        self.go_unordered();
        if let Mode::Any(z) = &mut self.mode {
            z.add(record, tag);
        }
    }

    /// Goes on as a `ZoneBuilder` with everything so far: what was written
    /// (its tags lost: the problems they would name were checked), the
    /// waiting name's records.
    fn go_unordered(&mut self) {
        let z = ZoneBuilder::new(self.origin.clone())
            .class(self.class)
            .changed();
        let Mode::Ordered(o) = std::mem::replace(&mut self.mode, Mode::Any(z)) else {
            return;
        };
        let Ordered {
            b,
            tail,
            node,
            warnings,
            ..
        } = *o;
        self.carried = warnings;
        let Mode::Any(z) = &mut self.mode else {
            return;
        };
        for r in b.into_records() {
            z.add(r, 0);
        }
        for r in tail.into_iter().flat_map(OrderedBuilder::into_records) {
            z.add(r, 0);
        }
        for (r, tag) in node {
            z.add(r, tag);
        }
    }
}

/// A build's result with the warnings found before it went unordered first.
fn carry(
    mut carried: Vec<Problem>,
    built: Result<(Zone, Vec<Problem>), Vec<Problem>>,
) -> Result<(Zone, Vec<Problem>), Vec<Problem>> {
    match built {
        Ok((zone, warnings)) => {
            carried.extend(warnings);
            Ok((zone, carried))
        }
        Err(problems) => {
            carried.extend(problems);
            Err(carried)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Built = Result<(Zone, Vec<Problem>), Vec<Problem>>;

    fn name(s: &str) -> Name {
        s.parse().unwrap()
    }

    /// A xorshift generator of test data.
    fn random(seed: u64) -> impl FnMut() -> u64 {
        let mut st = seed | 1;
        move || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        }
    }

    fn rec(owner: &Name, rtype: Rtype, ttl: u32, rdata: Vec<u8>) -> Record {
        Record {
            owner: owner.clone(),
            class: Class::IN,
            rtype,
            ttl,
            rdata: rdata.into(),
        }
    }

    /// The records grouped by name, names in canonical order, the records
    /// of a name in a random order.
    fn name_by_name(
        mut by_name: Vec<(Box<[u8]>, Vec<Record>)>,
        next: &mut impl FnMut() -> u64,
    ) -> Vec<Record> {
        by_name.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (_, mut v) in by_name {
            for i in (1..v.len()).rev() {
                v.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            out.extend(v);
        }
        out
    }

    /// Adds `r` to its name's records.
    fn add_to(by_name: &mut Vec<(Box<[u8]>, Vec<Record>)>, r: Record) {
        let key = r.owner.key();
        match by_name.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => by_name.push((key, vec![r])),
        }
    }

    /// Records of a random zone, name by name in canonical order, the
    /// records of a name in a random order; mixed case, TTLs that differ
    /// within a set, duplicates, cuts, DNAMEs, wildcards and signatures.
    fn records(seed: u64) -> Vec<(Record, u32)> {
        tagged(untagged(seed))
    }

    /// [`records`] without tags.
    fn untagged(seed: u64) -> Vec<Record> {
        let mut next = random(seed);
        let origin = name("example.");
        let mut soa = name("ns.example.").as_wire().to_vec();
        soa.extend_from_slice(name("h.example.").as_wire());
        for v in [7u32, 3600, 600, 86400, 120] {
            soa.extend_from_slice(&v.to_be_bytes());
        }
        let mut by_name: Vec<(Box<[u8]>, Vec<Record>)> = vec![(
            origin.key(),
            vec![
                rec(&origin, Rtype::SOA, 300, soa),
                rec(
                    &origin,
                    Rtype::NS,
                    300,
                    name("ns.example.").as_wire().to_vec(),
                ),
            ],
        )];
        let labels = ["a", "B", "c", "*", "!x", "d-e"];
        for _ in 0..150 {
            let depth = 1 + next() % 3;
            let owner: String = (0..depth)
                .map(|_| labels[(next() % labels.len() as u64) as usize].to_string() + ".")
                .collect::<String>()
                + "Example.";
            let owner = name(&owner);
            let ttl = [300, 300, 300, 60][(next() % 4) as usize];
            let (rtype, rdata) = match next() % 7 {
                0 => (Rtype::NS, name("ns.other.").as_wire().to_vec()),
                1 => (Rtype::DNAME, name("t.other.").as_wire().to_vec()),
                2 => (Rtype::RRSIG, vec![0, 1, (next() % 5) as u8]),
                3 => (Rtype::TXT, vec![1, (next() % 3) as u8]),
                _ => (Rtype::A, vec![10, 0, 0, (next() % 4) as u8]),
            };
            add_to(&mut by_name, rec(&owner, rtype, ttl, rdata));
        }
        name_by_name(by_name, &mut next)
    }

    /// The records with tags in the order given.
    fn tagged(records: impl IntoIterator<Item = Record>) -> Vec<(Record, u32)> {
        records
            .into_iter()
            .enumerate()
            .map(|(i, r)| (r, i as u32))
            .collect()
    }

    /// A random NSEC3 chain for `example.`, owners in canonical order:
    /// hashed owners (some spelled in upper case, the first one's hash
    /// starting with 0, so sorting before the apex's other children), each
    /// with its NSEC3 (naming the next owner's hash) and signatures; now
    /// and then a second NSEC3 of another TTL.
    fn chain(seed: u64) -> Vec<Record> {
        let mut next = random(seed ^ 0x5a5a);
        let digits = b"0123456789abcdefghijklmnopqrstuv";
        let mut hashes: Vec<[u8; 20]> = (0..3 + next() % 20)
            .map(|_| std::array::from_fn(|_| next() as u8))
            .collect();
        hashes[0][0] &= 0x07;
        hashes.sort_unstable();
        hashes.dedup();
        let mut by_name = Vec::new();
        for (i, h) in hashes.iter().enumerate() {
            let mut label = lode_wire::nsec3::base32hex(h);
            if next().is_multiple_of(3) {
                label.make_ascii_uppercase();
            }
            assert!(label
                .iter()
                .all(|c| digits.contains(&c.to_ascii_lowercase())));
            let owner = name(&format!("{}.example.", String::from_utf8_lossy(&label)));
            let mut nsec3 = vec![1, 1, 0, 0, 0, 20];
            nsec3.extend_from_slice(&hashes[(i + 1) % hashes.len()]);
            nsec3.extend_from_slice(&[0, 1, 0x40]);
            add_to(&mut by_name, rec(&owner, Rtype::NSEC3, 300, nsec3.clone()));
            if next().is_multiple_of(4) {
                nsec3.push(0x01);
                add_to(&mut by_name, rec(&owner, Rtype::NSEC3, 60, nsec3));
            }
            for _ in 0..1 + next() % 2 {
                let sig = vec![0, 50, 13, 2, (next() % 5) as u8];
                add_to(&mut by_name, rec(&owner, Rtype::RRSIG, 300, sig));
            }
        }
        name_by_name(by_name, &mut next)
    }

    /// The stream builder's and the zone builder's result, and how the
    /// stream builder took the records: "ordered", "tail" (in order but
    /// for an NSEC3 chain last) or "any".
    fn both(records: &[(Record, u32)]) -> ([Built; 2], &'static str) {
        let mut s = StreamBuilder::new(name("example."));
        let mut z = ZoneBuilder::new(name("example.")).changed();
        for (r, tag) in records {
            s.add(r.clone(), *tag);
            z.add(r.clone(), *tag);
        }
        let way = match &s.mode {
            Mode::Ordered(o) if o.tail.is_some() => "tail",
            Mode::Ordered(_) => "ordered",
            Mode::Any(_) => "any",
        };
        ([s.build(), z.build()], way)
    }

    /// Asserts that both builders build the same; how the stream builder
    /// took the records (see [`both`]).
    fn assert_same(records: &[(Record, u32)]) -> &'static str {
        let ([a, b], way) = both(records);
        let sorted = |mut v: Vec<Problem>| {
            v.sort_by(|x, y| (x.tag, &x.message).cmp(&(y.tag, &y.message)));
            v
        };
        match (a, b) {
            (Ok((za, wa)), Ok((zb, wb))) => {
                crate::ordered::tests::assert_same(&za, &zb);
                assert_eq!(
                    (za.serial(), za.negative_ttl()),
                    (zb.serial(), zb.negative_ttl())
                );
                assert_eq!(
                    (za.record_count(), za.rrset_count()),
                    (zb.record_count(), zb.rrset_count())
                );
                assert_eq!(sorted(wa), sorted(wb));
            }
            (Err(pa), Err(pb)) => {
                let m = |v: Vec<Problem>| -> Vec<String> {
                    sorted(v).into_iter().map(|p| p.message).collect()
                };
                assert_eq!(m(pa), m(pb));
            }
            (a, b) => panic!("{:?} against {:?}", a.err(), b.err()),
        }
        way
    }

    #[test]
    fn builds_what_the_zone_builder_builds_in_order_or_not() {
        for seed in 1..30u64 {
            let mut recs = records(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            assert_eq!(assert_same(&recs), "ordered");
            // A name out of order half way: the rest goes unordered.
            let half = recs.len() / 2;
            recs.swap(3, half);
            assert_eq!(assert_same(&recs), "any");
            recs.reverse();
            assert_eq!(assert_same(&recs), "any");
        }
    }

    #[test]
    fn refused_records_are_named_as_the_zone_builder_names_them() {
        let recs = records(7);
        let soa = recs
            .iter()
            .find(|(r, _)| r.rtype == Rtype::SOA)
            .unwrap()
            .0
            .clone();
        let outside = Record {
            owner: name("www.other."),
            ..soa.clone()
        };
        let second_soa = Record {
            owner: name("a.example."),
            ..soa
        };
        for bad in [outside, second_soa] {
            let mut v = recs.clone();
            v.insert(v.len() / 2, (bad, 9999));
            assert_eq!(assert_same(&v), "any");
            let ([a, _], _) = both(&v);
            assert!(a.unwrap_err().iter().any(|p| p.tag == Some(9999)));
        }
        // No NS at the apex.
        let v: Vec<_> = recs
            .iter()
            .filter(|(r, _)| !(r.rtype == Rtype::NS && r.owner == name("example.")))
            .cloned()
            .collect();
        assert_same(&v);
    }

    #[test]
    fn builds_an_nsec3_chain_sent_last_without_holding_the_records() {
        let mut tails = 0;
        for seed in 1..40u64 {
            let seed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let mut rest = untagged(seed);
            if seed.is_multiple_of(5) {
                // A DNAME at the apex: the chain is below it too.
                let t = name("t.other.").as_wire().to_vec();
                rest.insert(0, rec(&name("example."), Rtype::DNAME, 300, t));
            }
            let chain = chain(seed);
            // All other names, then the chain (Lode, Knot DNS, BIND 9).
            let last: Vec<Record> = rest.iter().chain(&chain).cloned().collect();
            tails += usize::from(assert_same(&tagged(last.clone())) == "tail");
            // The chain among the other names: in order.
            let mut mixed = last.clone();
            mixed.sort_by_key(|r| r.owner.key());
            assert_eq!(assert_same(&tagged(mixed)), "ordered");
            // The chain out of its own order, or a name after it.
            let mut owners: Vec<&[Record]> = chain
                .chunk_by(|a, b| a.owner.key() == b.owner.key())
                .collect();
            owners.swap(1, 2);
            let mut v = rest.clone();
            v.extend(owners.concat());
            assert_eq!(assert_same(&tagged(v)), "any");
            let mut v = last.clone();
            let a = name("a.example.").as_wire().to_vec();
            v.push(rec(&name("zz.example."), Rtype::NS, 300, a));
            assert_eq!(assert_same(&tagged(v)), "any");
            // A hashed owner that is a name of the rest too (it holds other
            // records, or a name below it): found at the build.
            let mut v = rest.clone();
            let first = chain[0].owner.clone();
            let below = name(&format!("x.{first}"));
            let (one, two) = if seed.is_multiple_of(2) {
                (&first, &below)
            } else {
                (&below, &below)
            };
            v.push(rec(one, Rtype::A, 300, vec![10, 0, 0, 1]));
            v.push(rec(two, Rtype::TXT, 300, vec![1, b'x']));
            v.sort_by_key(|r| r.owner.key());
            v.extend(chain.iter().cloned());
            assert_eq!(assert_same(&tagged(v)), "tail");
        }
        assert_eq!(tails, 39, "every chain starts out of order");
    }
}
