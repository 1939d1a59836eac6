//! The query files: referrals, NXDOMAIN, DS at the parent, a TLD-like mix and
//! a spamrun, in dnsperf format (`name TYPE`).

use std::path::Path;

use super::{hash, pick, what, Servers, TldModel, TldSpec, APEX_SERVERS};
use crate::gen::{GenError, LineSink};

/// Shares of the queries in `queries-mix.txt`, per mille: referrals, NXDOMAIN, DS, apex.
/// NXDOMAIN as in the .nl trace of the SIDN study (2.9 %); the rest assumed.
const MIX_PER_MILLE: [u64; 4] = [880, 30, 50, 40];

/// Query types of referral queries, per mille (assumed).
const REFERRAL_TYPES: [(&[u8], u64); 3] = [(b"A", 650), (b"AAAA", 280), (b"NS", 70)];
/// Query types of NXDOMAIN queries, per mille (assumed).
const NX_TYPES: [(&[u8], u64); 3] = [(b"A", 600), (b"AAAA", 300), (b"MX", 100)];

/// Writers of the query lines; `k` numbers the line, `key` keeps files apart.
pub(super) struct QueryLines<'a> {
    m: &'a TldModel,
    key: u64,
}

impl QueryLines<'_> {
    /// A query that a correct server answers with a referral.
    fn referral(&self, k: u64, out: &mut Vec<u8>) {
        let h = hash(self.key, k, 1);
        let i = h % self.m.delegations;
        let where_ = hash(self.key, k, 2) % 100;
        // 40 % the delegation itself, the rest a name below it.
        if where_ >= 40 {
            let prefix: &[u8] = match where_ {
                40..=84 => b"www.",
                85..=94 => b"mail.",
                _ => match self.m.delegation(i).servers {
                    Servers::InBailiwick { .. } => b"ns1.",
                    Servers::Provider(_) => b"m.",
                },
            };
            out.extend_from_slice(prefix);
        }
        self.m.push_fqdn(i, out);
        out.push(b' ');
        out.extend_from_slice(pick(&REFERRAL_TYPES, hash(self.key, k, 3)));
        out.push(b'\n');
    }

    /// A query for a name that does not exist (a realistic label not in the zone).
    fn nxdomain(&self, k: u64, out: &mut Vec<u8>) {
        let i = self.m.nx_index(hash(self.key, k, 4));
        if hash(self.key, k, 5) % 100 < 30 {
            out.extend_from_slice(b"www.");
        }
        self.m.push_fqdn(i, out);
        out.push(b' ');
        out.extend_from_slice(pick(&NX_TYPES, hash(self.key, k, 6)));
        out.push(b'\n');
    }

    /// A DS query at the parent side: 45 % signed delegations, 40 % unsigned ones
    /// (NODATA), 15 % names that do not exist (assumed shares).
    fn ds(&self, k: u64, out: &mut Vec<u8>) {
        let c = hash(self.key, k, 7) % 100;
        let i = if c < 85 {
            let want_ds = c < 45;
            let mut i = hash(self.key, k, 8) % self.m.delegations;
            // A few dozen tries find one of a 1 % share; otherwise take what there is.
            for t in 0..200 {
                if self.m.delegation(i).ds.is_some() == want_ds {
                    break;
                }
                i = hash(self.key, k, 100 + t) % self.m.delegations;
            }
            i
        } else {
            self.m.nx_index(hash(self.key, k, 8))
        };
        self.m.push_fqdn(i, out);
        out.extend_from_slice(b" DS\n");
    }

    /// A query at the apex or for the zone's own servers.
    fn apex(&self, k: u64, out: &mut Vec<u8>) {
        let h = hash(self.key, k, 10);
        match h % 100 {
            0..=29 => {
                out.extend_from_slice(self.m.tld.as_bytes());
                out.extend_from_slice(b" SOA\n");
            }
            30..=59 => {
                out.extend_from_slice(self.m.tld.as_bytes());
                out.extend_from_slice(b" NS\n");
            }
            60..=79 => {
                out.extend_from_slice(self.m.tld.as_bytes());
                out.extend_from_slice(b" DNSKEY\n");
            }
            c => {
                out.push(APEX_SERVERS[((h >> 8) % 13) as usize]);
                out.extend_from_slice(b".nic.");
                out.extend_from_slice(self.m.tld.as_bytes());
                out.extend_from_slice(if c < 90 { b" A\n" } else { b" AAAA\n" });
            }
        }
    }

    /// A line of the TLD-like mix.
    fn mix(&self, k: u64, out: &mut Vec<u8>) {
        match pick(
            &[
                (0u8, MIX_PER_MILLE[0]),
                (1, MIX_PER_MILLE[1]),
                (2, MIX_PER_MILLE[2]),
                (3, MIX_PER_MILLE[3]),
            ],
            hash(self.key, k, 11),
        ) {
            0 => self.referral(k, out),
            1 => self.nxdomain(k, out),
            2 => self.ds(k, out),
            _ => self.apex(k, out),
        }
    }
}

/// Writes query file `kind` (see [`QUERY_FILES`]).
pub(super) fn write_queries(
    m: &TldModel,
    spec: &TldSpec,
    kind: usize,
    path: &Path,
) -> Result<(), GenError> {
    let mut out = LineSink::create(path)?;
    let q = QueryLines {
        m,
        key: hash(m.seed, kind as u64, what::QUERIES),
    };
    let ratio = spec.spamrun_ratio;
    let mut line = Vec::with_capacity(160);
    for k in 0..spec.queries {
        line.clear();
        match kind {
            0 => q.referral(k, &mut line),
            1 => q.nxdomain(k, &mut line),
            2 => q.ds(k, &mut line),
            3 => q.mix(k, &mut line),
            // One line of the mix, then `ratio` NXDOMAIN lines.
            _ if k % (ratio + 1) == 0 => q.mix(k, &mut line),
            _ => q.nxdomain(k, &mut line),
        }
        out.push(&line)?;
    }
    out.finish()
}
