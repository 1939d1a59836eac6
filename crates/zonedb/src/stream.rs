//! Building a zone from records that mostly come in canonical order, as
//! Lode sends a zone by AXFR: each name's records are encoded
//! as soon as the next name begins ([`OrderedBuilder`]), so the records are
//! never all held at once (a 20 M-record transfer held ~7 GB of them).
//! Records out of order, or ones the structure checks refuse, make it go on
//! as a [`ZoneBuilder`] with what was built so far: the result, problems
//! included, is always what `ZoneBuilder::changed` gives for the records.

use lode_wire::name::KeyBuf;
use lode_wire::{Class, Name, Record, Rtype};

use crate::build::{knot_meta, Problem, Severity};
use crate::{OrderedBuilder, Zone, ZoneBuilder};

/// Builds a zone as [`ZoneBuilder::changed`] does, encoding records that
/// come in canonical order as they come.
#[derive(Debug)]
pub struct StreamBuilder {
    origin: Name,
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
    node: Vec<(Record, u32)>,
    key: KeyBuf,
    soa_seen: bool,
    warnings: Vec<Problem>,
}

impl Ordered {
    fn mode(origin: &Name, class: Class) -> Mode {
        Mode::Ordered(Box::new(Ordered {
            b: OrderedBuilder::new(origin.clone(), class),
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
        if k.as_slice() < key.as_slice() || self.flush().is_err() {
            return self.unordered(record, tag);
        }
        if let Mode::Ordered(o) = &mut self.mode {
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
            Mode::Ordered(o) if o.b.is_complete() => match o.b.finish() {
                Ok(zone) => Ok((zone, o.warnings)),
                Err(p) => Err(vec![p]),
            },
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
            b, node, warnings, ..
        } = &mut **o;
        if node.is_empty() {
            return Ok(());
        }
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
            b, node, warnings, ..
        } = *o;
        self.carried = warnings;
        let Mode::Any(z) = &mut self.mode else {
            return;
        };
        for r in b.into_records() {
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

    /// Records of a random zone, name by name in canonical order, the
    /// records of a name in a random order; mixed case, TTLs that differ
    /// within a set, duplicates, cuts, DNAMEs, wildcards and signatures.
    fn records(seed: u64) -> Vec<(Record, u32)> {
        let mut st = seed | 1;
        let mut next = move || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        let rec = |owner: &Name, rtype: Rtype, ttl: u32, rdata: Vec<u8>| Record {
            owner: owner.clone(),
            class: Class::IN,
            rtype,
            ttl,
            rdata: rdata.into(),
        };
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
            let r = rec(&owner, rtype, ttl, rdata);
            match by_name.iter_mut().find(|(k, _)| **k == *owner.key()) {
                Some((_, v)) => v.push(r),
                None => by_name.push((owner.key(), vec![r])),
            }
        }
        by_name.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (_, mut v) in by_name {
            for i in (1..v.len()).rev() {
                v.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            out.extend(v);
        }
        out.into_iter()
            .enumerate()
            .map(|(i, r)| (r, i as u32))
            .collect()
    }

    /// The stream builder's and the zone builder's result, and whether the
    /// stream builder stayed in order.
    fn both(records: &[(Record, u32)]) -> ([Built; 2], bool) {
        let mut s = StreamBuilder::new(name("example."));
        let mut z = ZoneBuilder::new(name("example.")).changed();
        for (r, tag) in records {
            s.add(r.clone(), *tag);
            z.add(r.clone(), *tag);
        }
        let ordered = matches!(s.mode, Mode::Ordered(_));
        ([s.build(), z.build()], ordered)
    }

    fn assert_same(records: &[(Record, u32)]) -> bool {
        let ([a, b], ordered) = both(records);
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
        ordered
    }

    #[test]
    fn builds_what_the_zone_builder_builds_in_order_or_not() {
        for seed in 1..30u64 {
            let mut recs = records(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            assert!(assert_same(&recs), "in order");
            // A name out of order half way: the rest goes unordered.
            let half = recs.len() / 2;
            recs.swap(3, half);
            assert!(!assert_same(&recs));
            recs.reverse();
            assert!(!assert_same(&recs));
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
            assert!(!assert_same(&v));
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
}
