//! The update streams: NS changes, additions and deletions of delegations, in
//! turn, as nsupdate messages that each fit the zone the previous ones left.

use std::path::PathBuf;

use super::{
    hash, pick, what, Delegation, Servers, TldModel, TldSpec, DS_TTL, NS_COUNT_PER_MILLE, TTL,
};
use crate::gen::{GenError, LineSink, Scatter};

/// Counts of an update stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateCounts {
    /// NS sets replaced.
    pub changes: u64,
    /// Delegations added.
    pub additions: u64,
    /// Delegations deleted.
    pub deletions: u64,
    /// Records in the update sections (what `lode update -r` paces).
    pub records: u64,
}

impl UpdateCounts {
    /// Update messages.
    pub fn updates(&self) -> u64 {
        self.changes + self.additions + self.deletions
    }
}

/// A pace of the update streams: the share of the zone changed per day.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// File-name tag (`low`, `medium`).
    pub name: &'static str,
    /// Percent of the delegations updated per day.
    pub percent_per_day: f64,
}

/// The paces of the update streams written (the BIND/COM study's low and medium rates).
pub const PACES: [Pace; 2] = [
    Pace {
        name: "low",
        percent_per_day: 1.0,
    },
    Pace {
        name: "medium",
        percent_per_day: 3.0,
    },
];

impl Pace {
    /// Updates per second for a zone of `delegations`.
    pub fn updates_per_second(&self, delegations: u64) -> f64 {
        delegations as f64 * self.percent_per_day / 100.0 / 86_400.0
    }
}

/// The update stream's choices: which delegations are changed, added, deleted.
struct UpdateLines<'a> {
    m: &'a TldModel,
    key: u64,
    /// Visits the existing delegations in a scattered order, each once.
    existing: Scatter,
    prereqs: bool,
    /// ` <TTL> NS `, ` <TTL> A `, ` <TTL> AAAA `, ` <DS TTL> DS `.
    ns: Vec<u8>,
    a: Vec<u8>,
    aaaa: Vec<u8>,
    ds: Vec<u8>,
}

/// What an update does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UpdateKind {
    Change,
    Addition,
    Deletion,
}

impl UpdateLines<'_> {
    /// Appends update `u` (one message, ending in `send`), using `name` as
    /// scratch; returns its kind and its records. Updates take turns: change,
    /// addition, deletion.
    fn update(&self, u: u64, name: &mut Vec<u8>, out: &mut Vec<u8>) -> (UpdateKind, u64) {
        let m = self.m;
        let step = u / 3;
        name.clear();
        match u % 3 {
            0 => {
                // Replace the NS set of an existing delegation by another provider's.
                let i = self.existing.map(2 * step + 1);
                m.push_fqdn(i, name);
                name.push(b'.');
                let old = m.delegation(i);
                let mut rank = m.provider_rank(hash(self.key, u, 1));
                if old.servers == Servers::Provider(rank) {
                    rank = rank % m.providers + 1;
                }
                let new = Delegation {
                    ns_count: pick(&NS_COUNT_PER_MILLE, hash(self.key, u, 2)),
                    servers: Servers::Provider(rank),
                    ds: old.ds,
                };
                if self.prereqs {
                    line(out, &[b"prereq yxrrset ", name, b" NS"]);
                }
                line(out, &[b"update delete ", name, b" NS"]);
                let mut records = 1 + self.add_servers(i, &new, name, out);
                // The old in-bailiwick servers' glue goes with them.
                if let Servers::InBailiwick { .. } = old.servers {
                    records += self.delete_glue(i, &old, out);
                }
                out.extend_from_slice(b"send\n");
                (UpdateKind::Change, records)
            }
            1 => {
                // A new delegation: an index past the zone, with the zone's shares.
                let i = m.delegations + step;
                m.push_fqdn(i, name);
                name.push(b'.');
                let d = m.delegation(i);
                if self.prereqs {
                    line(out, &[b"prereq nxdomain ", name]);
                }
                let mut records = self.add_servers(i, &d, name, out);
                if let Servers::InBailiwick { aaaa } = d.servers {
                    for n in 1..=d.ns_count {
                        for v6 in [false, true] {
                            if v6 && !aaaa {
                                continue;
                            }
                            out.extend_from_slice(b"update add ");
                            m.push_server(i, &d, n, out);
                            if v6 {
                                out.extend_from_slice(&self.aaaa);
                                m.push_glue_aaaa(i, n, out);
                            } else {
                                out.extend_from_slice(&self.a);
                                m.push_glue_a(i, n, out);
                            }
                            out.push(b'\n');
                            records += 1;
                        }
                    }
                }
                if let Some(ds) = d.ds {
                    out.extend_from_slice(b"update add ");
                    out.extend_from_slice(name);
                    out.extend_from_slice(&self.ds);
                    m.push_ds_rdata(i, &ds, out);
                    out.push(b'\n');
                    records += 1;
                }
                out.extend_from_slice(b"send\n");
                (UpdateKind::Addition, records)
            }
            _ => {
                // Delete an existing delegation (never one changed in this stream).
                let i = self.existing.map(2 * step);
                m.push_fqdn(i, name);
                name.push(b'.');
                let d = m.delegation(i);
                if self.prereqs {
                    line(out, &[b"prereq yxdomain ", name]);
                }
                line(out, &[b"update delete ", name]);
                let mut records = 1;
                if let Servers::InBailiwick { .. } = d.servers {
                    records += self.delete_glue(i, &d, out);
                }
                out.extend_from_slice(b"send\n");
                (UpdateKind::Deletion, records)
            }
        }
    }

    /// Appends the addition of the NS records of `d` at `name`; returns the records.
    fn add_servers(&self, i: u64, d: &Delegation, name: &[u8], out: &mut Vec<u8>) -> u64 {
        for n in 1..=d.ns_count {
            out.extend_from_slice(b"update add ");
            out.extend_from_slice(name);
            out.extend_from_slice(&self.ns);
            self.m.push_server(i, d, n, out);
            out.push(b'\n');
        }
        u64::from(d.ns_count)
    }

    /// Appends the deletion of every glue name of in-bailiwick delegation `i`; returns the records.
    fn delete_glue(&self, i: u64, d: &Delegation, out: &mut Vec<u8>) -> u64 {
        for n in 1..=d.ns_count {
            out.extend_from_slice(b"update delete ");
            self.m.push_server(i, d, n, out);
            out.push(b'\n');
        }
        u64::from(d.ns_count)
    }
}

/// Appends the concatenation of `parts` and a newline.
fn line(out: &mut Vec<u8>, parts: &[&[u8]]) {
    for p in parts {
        out.extend_from_slice(p);
    }
    out.push(b'\n');
}

/// Writes the update stream once per pace; returns its counts.
pub(super) fn write_updates(
    m: &TldModel,
    spec: &TldSpec,
    paths: &[PathBuf],
) -> Result<UpdateCounts, GenError> {
    let lines = UpdateLines {
        m,
        key: hash(m.seed, 0, what::UPDATES),
        existing: Scatter::new(m.delegations, hash(m.seed, 0, what::EXISTING)),
        prereqs: spec.prereqs,
        ns: format!(" {TTL} NS ").into_bytes(),
        a: format!(" {TTL} A ").into_bytes(),
        aaaa: format!(" {TTL} AAAA ").into_bytes(),
        ds: format!(" {DS_TTL} DS ").into_bytes(),
    };
    let mut name = Vec::with_capacity(160);
    // First pass: the counts, for the header.
    let mut c = UpdateCounts::default();
    let mut buf = Vec::with_capacity(4096);
    for u in 0..spec.updates {
        buf.clear();
        let (kind, records) = lines.update(u, &mut name, &mut buf);
        match kind {
            UpdateKind::Change => c.changes += 1,
            UpdateKind::Addition => c.additions += 1,
            UpdateKind::Deletion => c.deletions += 1,
        }
        c.records += records;
    }
    let per_update = c.records as f64 / c.updates().max(1) as f64;
    for (pace, path) in PACES.iter().zip(paths) {
        let mut out = LineSink::create(path)?;
        let ups = pace.updates_per_second(m.delegations);
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let head = format!(
            "; Update stream for the {tld}. zone of lode-bench gen tld (seed {seed}, {n} delegations):\n\
             ; {u} updates, one message each: {ch} NS sets replaced, {ad} delegations added, {de} deleted;\n\
             ; {rec} records ({per:.2} per update). Each update is valid against the zone as the\n\
             ; previous ones left it: apply them in order, on one connection (-c 1).\n\
             ; Pace \"{name}\": {pct} % of the zone per day = {ups:.4} updates/s = {rps:.4} records/s:\n\
             ;   lode update -s SERVER -k KEYFILE -c 1 -r {rps:.4} {file}\n\
             ; (no -r: as fast as the server takes them, the study's \"high\" rate)\n\
             zone {tld}.\n",
            tld = m.tld,
            seed = m.seed,
            n = m.delegations,
            u = c.updates(),
            ch = c.changes,
            ad = c.additions,
            de = c.deletions,
            rec = c.records,
            per = per_update,
            name = pace.name,
            pct = pace.percent_per_day,
            rps = ups * per_update,
        );
        out.push(head.as_bytes())?;
        for u in 0..spec.updates {
            buf.clear();
            lines.update(u, &mut name, &mut buf);
            out.push(&buf)?;
        }
        out.finish()?;
    }
    Ok(c)
}
