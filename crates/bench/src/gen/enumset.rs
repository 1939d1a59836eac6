//! The ENUM record sets of Shen & Schulzrinne §3.4, generalised.
//!
//! Every number has the same length (11 digits by default: `+1` and ten). A
//! number is `prefix · zone digits · suffix`; each zone is the ENUM name of
//! `prefix · zone digits`, and holds the suffixes `0 ..` its share of the records.
//! With 5M records in 10 zones this gives exactly the paper's 5M set (Tables 1
//! and 2): zones `0.2.1.2.1.e164.arpa` … `9.2.1.2.1.e164.arpa`, records
//! `0.0.0.0.0.0.0.2.1.2.1.e164.arpa` … `9.9.9.9.9.4.9.2.1.2.1.e164.arpa`.
//! (`--prefix 16461` gives the 500k set, `--prefix 131 --zones 4` the 20M set.)
//!
//! The unassigned suffixes of a zone (the upper half when the prefix is chosen
//! here) give names that are inside a zone but do not exist: authoritative
//! NXDOMAIN. Changing the first digit of a number gives a name outside every zone.

use std::path::{Path, PathBuf};

use super::{create_dir, default_threads, run_jobs, GenError, LineSink, Scatter};

/// Digits the default prefix is taken from (Shen & Schulzrinne's 5M set uses `1212`).
const DEFAULT_PREFIX_SOURCE: &[u8] = b"121200000000000";

/// What to generate.
#[derive(Debug, Clone)]
pub struct EnumSetSpec {
    /// Total NAPTR records (one per number).
    pub records: u64,
    /// Number of zones the numbers are split into.
    pub zones: u64,
    /// Digits in every number, country code included (≤ 15).
    pub digits: usize,
    /// Leading digits shared by all numbers; chosen from `1212…` if absent.
    pub prefix: Option<String>,
    /// The ENUM apex (`e164.arpa`).
    pub apex: String,
    /// Domain of the SIP URIs in the NAPTR regexps.
    pub sip_domain: String,
    /// If set, numbers share this many distinct NAPTR RRsets (carrier ENUM) instead of one each.
    pub shared_naptr: Option<u64>,
    /// Lines in each query file (default: one per record).
    pub queries: Option<u64>,
    /// Worker threads (default: the machine's parallelism).
    pub threads: Option<usize>,
}

impl EnumSetSpec {
    /// The defaults of Shen & Schulzrinne's sets for `records` numbers in `zones` zones.
    pub fn new(records: u64, zones: u64) -> EnumSetSpec {
        EnumSetSpec {
            records,
            zones,
            digits: 11,
            prefix: None,
            apex: lode_wire::e164::E164_ARPA.to_owned(),
            sip_domain: "example.net".to_owned(),
            shared_naptr: None,
            queries: None,
            threads: None,
        }
    }
}

/// How numbers are split into zones.
#[derive(Debug, Clone)]
pub struct EnumLayout {
    prefix: Vec<u8>,
    zone_digits: usize,
    suffix_digits: usize,
    zones: u64,
    records: u64,
    apex: String,
}

/// Largest number of digits handled (so that 10^digits fits in u64 comfortably).
const MAX_DIGITS: usize = lode_wire::e164::MAX_DIGITS;

impl EnumLayout {
    /// Checks the spec and computes the layout.
    pub fn new(spec: &EnumSetSpec) -> Result<EnumLayout, GenError> {
        let bad = |s: String| Err(GenError::Layout(s));
        if spec.zones == 0 || spec.records < spec.zones {
            return bad(format!(
                "need at least one zone and one record per zone ({} records, {} zones)",
                spec.records, spec.zones
            ));
        }
        if spec.digits == 0 || spec.digits > MAX_DIGITS {
            return bad(format!(
                "numbers have 1 to {MAX_DIGITS} digits, not {}",
                spec.digits
            ));
        }
        let apex = spec.apex.trim_end_matches('.').to_owned();
        if apex.is_empty() || apex.bytes().any(|b| b.is_ascii_whitespace()) {
            return bad(format!("bad apex {:?}", spec.apex));
        }
        let zone_digits = if spec.zones == 1 {
            0
        } else {
            decimal_len(spec.zones - 1)
        };
        let max_share = spec.records.div_ceil(spec.zones);
        let (prefix, suffix_digits) = match &spec.prefix {
            Some(p) => {
                let p = p.trim_start_matches('+');
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.starts_with('0') {
                    return bad(format!(
                        "prefix {p:?}: digits, not starting with 0 (a country code first)"
                    ));
                }
                let Some(r) = spec.digits.checked_sub(p.len() + zone_digits) else {
                    return bad(format!(
                        "prefix {p} and {zone_digits} zone digit(s) exceed {} digits",
                        spec.digits
                    ));
                };
                if pow10(r) < max_share {
                    return bad(format!(
                        "{max_share} records per zone do not fit in {r} digit(s) after prefix {p} \
                         and the zone digit(s); use a shorter prefix or more zones"
                    ));
                }
                (p.as_bytes().to_vec(), r)
            }
            None => {
                // Room for twice the share: the upper half stays free for NXDOMAIN queries.
                let mut r = 1;
                while pow10(r) < max_share.saturating_mul(2) {
                    r += 1;
                }
                let plen = spec.digits.saturating_sub(r + zone_digits);
                if plen == 0 {
                    return bad(format!(
                        "{} records in {} zones do not fit in {}-digit numbers; \
                         use more --digits or more zones",
                        spec.records, spec.zones, spec.digits
                    ));
                }
                (DEFAULT_PREFIX_SOURCE[..plen].to_vec(), r)
            }
        };
        Ok(EnumLayout {
            prefix,
            zone_digits,
            suffix_digits,
            zones: spec.zones,
            records: spec.records,
            apex,
        })
    }

    /// Number of zones.
    pub fn zones(&self) -> u64 {
        self.zones
    }

    /// Number of records (numbers).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Digits of a number below its zone (labels of an owner name relative to its zone).
    pub fn suffix_digits(&self) -> usize {
        self.suffix_digits
    }

    /// The shared leading digits.
    pub fn prefix(&self) -> &str {
        // The prefix holds ASCII digits only (checked in `new`).
        std::str::from_utf8(&self.prefix).unwrap_or_default()
    }

    /// Records in zone `z`: the share, plus one for the first `records % zones` zones.
    pub fn zone_records(&self, z: u64) -> u64 {
        self.records / self.zones + u64::from(z < self.records % self.zones)
    }

    /// The zone and the suffix of the `k`-th number (`k < records`), in zone order.
    pub fn locate(&self, k: u64) -> (u64, u64) {
        let base = self.records / self.zones;
        let rem = self.records % self.zones;
        let cut = rem * (base + 1);
        if k < cut {
            (k / (base + 1), k % (base + 1))
        } else {
            (rem + (k - cut) / base, (k - cut) % base)
        }
    }

    /// Writes the digits of number (`z`, `suffix`) into `out`; returns how many.
    pub fn number(&self, z: u64, suffix: u64, out: &mut [u8; MAX_DIGITS]) -> usize {
        let p = self.prefix.len();
        out[..p].copy_from_slice(&self.prefix);
        write_padded(z, &mut out[p..p + self.zone_digits]);
        let total = p + self.zone_digits + self.suffix_digits;
        write_padded(suffix, &mut out[p + self.zone_digits..total]);
        total
    }

    /// The apex of zone `z`, absolute (`0.2.1.2.1.e164.arpa.`).
    pub fn zone_apex(&self, z: u64) -> String {
        let mut digits = [0u8; MAX_DIGITS];
        let p = self.prefix.len();
        digits[..p].copy_from_slice(&self.prefix);
        write_padded(z, &mut digits[p..p + self.zone_digits]);
        let mut out = Vec::with_capacity(64);
        push_enum_name(&digits[..p + self.zone_digits], &self.apex, &mut out);
        out.push(b'.');
        // Built from ASCII digits, dots and the (UTF-8) apex.
        String::from_utf8(out).unwrap_or_default()
    }

    /// The ENUM name of number (`z`, `suffix`), absolute without the final dot.
    pub fn name(&self, z: u64, suffix: u64, out: &mut Vec<u8>) {
        let mut digits = [0u8; MAX_DIGITS];
        let n = self.number(z, suffix, &mut digits);
        push_enum_name(&digits[..n], &self.apex, out);
    }

    /// A name inside zone `z` that does not exist, derived from suffix `s`.
    pub fn nx_name(&self, z: u64, s: u64, out: &mut Vec<u8>) {
        let count = self.zone_records(z);
        let free = pow10(self.suffix_digits) - count;
        if free > 0 {
            self.name(z, count + s % free, out);
        } else {
            // The zone is full: a label below an existing leaf does not exist either.
            out.extend_from_slice(b"x.");
            self.name(z, s, out);
        }
    }

    /// A name outside every zone: number (`z`, `s`) with its first digit changed.
    pub fn outside_name(&self, z: u64, s: u64, out: &mut Vec<u8>) {
        let mut digits = [0u8; MAX_DIGITS];
        let n = self.number(z, s, &mut digits);
        // Rotate 1..=9 so the first digit stays non-zero and differs from the prefix's.
        digits[0] = b'1' + (digits[0] - b'0') % 9;
        push_enum_name(&digits[..n], &self.apex, out);
    }
}

/// What was written.
#[derive(Debug, Clone)]
pub struct EnumSetSummary {
    /// The layout used.
    pub layout: EnumLayout,
    /// Zone apexes and their files, in zone order.
    pub zone_files: Vec<(String, PathBuf)>,
    /// Query files: existing names, non-existing names inside the zones, names outside.
    pub query_files: [PathBuf; 3],
    /// Knot DNS `zone:` section for the generated zones.
    pub knot_conf: PathBuf,
    /// Lode configuration serving the generated zones.
    pub lode_conf: PathBuf,
    /// Lines in each query file.
    pub queries: u64,
}

/// The three query files, in the order of [`EnumSetSummary::query_files`].
pub const QUERY_FILES: [&str; 3] = [
    "queries-existing.txt",
    "queries-nxdomain.txt",
    "queries-outside.txt",
];

/// One unit of work for the generator threads.
#[derive(Debug, Clone, Copy)]
enum Job {
    Zone(u64),
    Queries(usize),
}

/// Writes the zone files, the query files and a Knot configuration snippet into `dir`.
pub fn generate(spec: &EnumSetSpec, dir: &Path) -> Result<EnumSetSummary, GenError> {
    let layout = EnumLayout::new(spec)?;
    if spec.shared_naptr == Some(0) {
        return Err(GenError::Layout("--shared-naptr needs at least 1".into()));
    }
    create_dir(dir)?;
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let zone_files: Vec<(String, PathBuf)> = (0..layout.zones)
        .map(|z| {
            let apex = layout.zone_apex(z);
            let file = dir.join(format!("{apex}zone"));
            (apex, file)
        })
        .collect();
    let query_files = QUERY_FILES.map(|f| dir.join(f));
    let queries = spec.queries.unwrap_or(layout.records);

    let mut jobs: Vec<Job> = (0..3).map(Job::Queries).collect();
    jobs.extend((0..layout.zones).rev().map(Job::Zone));
    let threads = spec.threads.unwrap_or_else(default_threads);
    run_jobs(jobs, threads, |job| match job {
        Job::Zone(z) => write_zone(&layout, spec, z, &zone_files[z as usize].1),
        Job::Queries(kind) => write_queries(&layout, kind, queries, &query_files[kind]),
    })?;

    let (knot_conf, lode_conf) = super::write_server_configs(&dir, "enum", &zone_files)?;
    Ok(EnumSetSummary {
        layout,
        zone_files,
        query_files,
        knot_conf,
        lode_conf,
        queries,
    })
}

/// Writes zone `z`: SOA, two NS with their addresses, then one NAPTR per number.
fn write_zone(
    layout: &EnumLayout,
    spec: &EnumSetSpec,
    z: u64,
    path: &Path,
) -> Result<(), GenError> {
    let mut out = LineSink::create(path)?;
    let header = format!(
        "; ENUM zone {apex} generated by lode-bench gen enum: {n} NAPTR records\n\
         $ORIGIN {apex}\n$TTL 3600\n\
         @ SOA ns.enum.example.com. root.enum.example.com. 5 10800 1800 604800 1800\n\
         @ NS ns1\n@ NS ns2\nns1 A 11.1.1.1\nns2 A 11.1.1.2\n",
        apex = layout.zone_apex(z),
        n = layout.zone_records(z),
    );
    out.push(header.as_bytes())?;

    let r = layout.suffix_digits;
    // The owner, relative to the zone: suffix digits reversed, dot-separated.
    let mut owner = vec![b'0'; 2 * r - 1];
    for i in (1..owner.len()).step_by(2) {
        owner[i] = b'.';
    }
    // The rest of the line; in per-number mode the number sits at `num_at`.
    let mut digits = [0u8; MAX_DIGITS];
    let n = layout.number(z, 0, &mut digits);
    let mut tail = Vec::with_capacity(128);
    tail.extend_from_slice(b" NAPTR 100 10 \"u\" \"E2U+sip\" \"!^.*$!sip:+");
    let num_at = tail.len();
    tail.extend_from_slice(&digits[..n]);
    tail.extend_from_slice(format!("@{}!\" .\n", spec.sip_domain).as_bytes());
    let shared: Vec<Vec<u8>> = match spec.shared_naptr {
        Some(k) => (0..k)
            .map(|i| {
                format!(
                    " NAPTR 100 10 \"u\" \"E2U+sip\" \"!^(.*)$!sip:\\\\1@gw{i}.{}!\" .\n",
                    spec.sip_domain
                )
                .into_bytes()
            })
            .collect(),
        None => Vec::new(),
    };
    // Global index of this zone's first number, so shared RRsets rotate across zones.
    let first: u64 = (0..z).map(|i| layout.zone_records(i)).sum();
    let suffix_at = num_at + n - r;
    for s in 0..layout.zone_records(z) {
        out.push(&owner)?;
        if shared.is_empty() {
            out.push(&tail)?;
        } else {
            out.push(&shared[((first + s) % shared.len() as u64) as usize])?;
        }
        // Odometer: add one to the suffix in the owner (reversed) and in the number.
        for j in (0..r).rev() {
            let o = 2 * (r - 1 - j);
            if owner[o] == b'9' {
                owner[o] = b'0';
                tail[suffix_at + j] = b'0';
            } else {
                owner[o] += 1;
                tail[suffix_at + j] += 1;
                break;
            }
        }
    }
    out.finish()
}

/// Writes query file `kind` (0 existing, 1 non-existing inside, 2 outside): `name NAPTR` lines.
fn write_queries(
    layout: &EnumLayout,
    kind: usize,
    count: u64,
    path: &Path,
) -> Result<(), GenError> {
    let mut out = LineSink::create(path)?;
    let scatter = Scatter::new(layout.records, kind as u64 + 1);
    let mut line = Vec::with_capacity(128);
    for i in 0..count {
        let (z, s) = layout.locate(scatter.map(i % layout.records));
        line.clear();
        match kind {
            0 => layout.name(z, s, &mut line),
            1 => layout.nx_name(z, s, &mut line),
            _ => layout.outside_name(z, s, &mut line),
        }
        line.extend_from_slice(b" NAPTR\n");
        out.push(&line)?;
    }
    out.finish()
}

/// Appends the ENUM name of `digits` (reversed, dot-separated) below `apex`, no final dot.
fn push_enum_name(digits: &[u8], apex: &str, out: &mut Vec<u8>) {
    for &d in digits.iter().rev() {
        out.push(d);
        out.push(b'.');
    }
    out.extend_from_slice(apex.as_bytes());
}

/// Writes `v` in decimal, zero-padded to the width of `out` (high digits dropped if too long).
fn write_padded(mut v: u64, out: &mut [u8]) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// Digits in the decimal form of `v`.
fn decimal_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// 10^e, saturating.
fn pow10(e: usize) -> u64 {
    10u64.saturating_pow(e as u32)
}

#[cfg(test)]
mod tests;
