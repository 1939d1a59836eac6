//! A TLD-shaped data set: one large unsigned zone of delegations as a
//! registry publishes it (COM is the model), query files of a TLD's traffic
//! and update streams of a registry's churn.
//!
//! ```text
//!  index i ──Feistel(seed), cycle walk──▶ j ──length/kind buckets──▶ label (unique: a bijection)
//!        └──hash(seed, i)──▶ NS count, provider (Zipf rank) or in-bailiwick glue, DS
//!
//!  zone:     i in 0..N            (written in index order, streamed)
//!  updates:  changes and deletions of distinct existing i (an affine permutation of 0..N),
//!            additions of i in N..N+U/3
//!  queries:  existing i drawn uniformly, non-existing names from i ≥ N+U
//! ```
//!
//! Every attribute of a delegation is a pure function of its index, so the
//! query and update writers re-derive what the zone holds without reading it,
//! and nothing grows with the zone but one bit per provider NS set (to count
//! the distinct sets).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

mod labels;
mod queries;
mod updates;
mod zipf;

pub use labels::{LabelKind, LabelSpace};
pub use updates::{Pace, UpdateCounts, PACES};
pub use zipf::Zipf;

use super::{create_dir, default_threads, run_jobs, GenError, LineSink};

/// Per-mille of delegations with 2, 3 and 4 name servers (assumed).
const NS_COUNT_PER_MILLE: [(u8, u64); 3] = [(2, 800), (3, 80), (4, 120)];
/// Per-mille of in-bailiwick delegations whose servers also have an AAAA (assumed).
const GLUE_AAAA_PER_MILLE: u64 = 300;
/// Per-mille of DS records with algorithm 13 (ECDSA P-256); the rest have 8 (RSA/SHA-256).
const DS_ALG13_PER_MILLE: u64 = 800;
/// Top-level domains of the providers' name servers, with weights (assumed);
/// the zone's own TLD is left out so that no server name falls inside the zone.
const PROVIDER_TLDS: [(&str, u64); 4] = [("net", 45), ("com", 40), ("org", 10), ("info", 5)];

/// TTL of delegations and glue (COM's 2 days).
const TTL: u32 = 172_800;
/// TTL of DS records (COM's 1 day).
const DS_TTL: u32 = 86_400;

/// The letters of the zone's own name servers, `a.nic.<tld>` … `m.nic.<tld>`.
/// (`nic` cannot be a generated label: those have four characters or more.)
const APEX_SERVERS: &[u8; 13] = b"abcdefghijklm";

/// What to generate.
#[derive(Debug, Clone)]
pub struct TldSpec {
    /// The zone's apex (`com.`).
    pub tld: String,
    /// Delegations in the zone.
    pub delegations: u64,
    /// Seed of every pseudo-random choice; the same seed gives the same bytes.
    pub seed: u64,
    /// Hosting providers the NS sets are drawn from (default: one per 200 delegations).
    pub providers: Option<u64>,
    /// Exponent of the providers' Zipf popularity.
    pub zipf: f64,
    /// Share (0–1) of delegations with in-bailiwick servers and glue.
    pub glue_share: f64,
    /// Share (0–1) of delegations with a DS record.
    pub ds_share: f64,
    /// Lines in each query file.
    pub queries: u64,
    /// Updates in each update stream (default 100,000, at most half the delegations).
    pub updates: u64,
    /// NXDOMAIN queries per good query in `queries-spamrun.txt`.
    pub spamrun_ratio: u64,
    /// Give each update a prerequisite (the name exists / does not), so that
    /// the server refuses an update that does not fit the zone.
    pub prereqs: bool,
    /// The command line, recorded in README.txt.
    pub command: String,
    /// Writer threads (default: the machine's parallelism).
    pub threads: Option<usize>,
}

impl TldSpec {
    /// The defaults for `delegations` delegations below `tld`.
    pub fn new(tld: &str, delegations: u64) -> TldSpec {
        TldSpec {
            tld: tld.to_owned(),
            delegations,
            seed: 1,
            providers: None,
            zipf: 1.1,
            glue_share: 0.03,
            ds_share: 0.05,
            queries: 1_000_000,
            updates: (delegations / 2).min(100_000),
            spamrun_ratio: 4,
            prereqs: false,
            command: String::new(),
            threads: None,
        }
    }
}

/// A 64-bit finaliser (SplitMix64's): every input bit moves every output bit.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pseudo-random 64-bit value for item `i`, purpose `what`, under `key`
/// (the key is mixed first, so that nearby seeds share no values).
#[inline]
fn hash(key: u64, i: u64, what: u64) -> u64 {
    mix64(mix64(i ^ mix64(key)) ^ what.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// True with probability `share` (0–1) for the hash value `h`.
#[inline]
fn chance(h: u64, share: f64) -> bool {
    // 2^-53 resolution is far finer than any share we are given.
    ((h >> 11) as f64) < share * (1u64 << 53) as f64
}

/// A uniform value in [0, 1) from a hash.
#[inline]
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Where a delegation's name servers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Servers {
    /// `ns1..nsK.<provider label>.<provider tld>.`: a provider of this Zipf rank (1 = most popular).
    Provider(u64),
    /// `ns1..nsK.<label>.<tld>.` with glue A records, and AAAA if set.
    InBailiwick {
        /// The glue includes AAAA records.
        aaaa: bool,
    },
}

/// A DS record of a delegation (digest type 2, SHA-256; the digest is derived from the index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ds {
    /// Key tag.
    pub key_tag: u16,
    /// Algorithm: 13 or 8.
    pub algorithm: u8,
}

/// Everything the zone holds for one delegation, but its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delegation {
    /// Name servers (2 to 4).
    pub ns_count: u8,
    /// Whose servers.
    pub servers: Servers,
    /// The DS record, if the child is signed.
    pub ds: Option<Ds>,
}

/// Purposes of the per-index hashes.
mod what {
    pub const NS_COUNT: u64 = 1;
    pub const PROVIDER: u64 = 2;
    pub const GLUE: u64 = 3;
    pub const GLUE_AAAA: u64 = 4;
    pub const DS: u64 = 5;
    pub const DS_FIELDS: u64 = 6;
    pub const DIGEST: u64 = 7;
    pub const ADDRESS: u64 = 8;
    pub const PROVIDER_TLD: u64 = 9;
    /// Keys of the streams derived from the seed (kept apart from the per-index purposes).
    pub const PROVIDER_LABELS: u64 = 0x100;
    pub const QUERIES: u64 = 0x200;
    pub const UPDATES: u64 = 0x300;
    pub const EXISTING: u64 = 0x301;
}

/// The data set's model: labels and attributes of every index, pure functions
/// of the seed.
#[derive(Debug, Clone)]
pub struct TldModel {
    /// The apex without the final dot (`com`).
    tld: String,
    delegations: u64,
    updates: u64,
    seed: u64,
    providers: u64,
    zipf: Zipf,
    glue_share: f64,
    ds_share: f64,
    labels: LabelSpace,
    provider_labels: LabelSpace,
    provider_tlds: Vec<(&'static str, u64)>,
}

impl TldModel {
    /// Checks the spec and sets the model up.
    pub fn new(spec: &TldSpec) -> Result<TldModel, GenError> {
        let bad = |s: String| Err(GenError::Layout(s));
        let tld = spec.tld.trim_end_matches('.').to_ascii_lowercase();
        let ldh = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        if tld.is_empty() || tld.len() > 120 || !tld.split('.').all(ldh) {
            return bad(format!(
                "--tld {:?}: a name of letters, digits and hyphens (at most 120 characters), not the root",
                spec.tld
            ));
        }
        if spec.delegations == 0 {
            return bad("--delegations must be at least 1".into());
        }
        for (what, v) in [
            ("--glue-share", spec.glue_share),
            ("--ds-share", spec.ds_share),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("{what} must be between 0 and 100 %"));
            }
        }
        if !(spec.zipf > 0.0 && spec.zipf < 10.0) {
            return bad("--zipf must be between 0 and 10".into());
        }
        let half = spec.updates.div_ceil(3);
        if half.saturating_mul(2) > spec.delegations {
            return bad(format!(
                "{} updates change and delete {} distinct delegations each: more than the {} in \
                 the zone; use fewer --updates",
                spec.updates, half, spec.delegations
            ));
        }
        let labels = LabelSpace::new(spec.seed);
        let limit = labels.len() / 2;
        if spec.delegations.saturating_add(spec.updates) > limit {
            return bad(format!(
                "at most {limit} delegations and updates together (labels for non-existing names are needed too)"
            ));
        }
        let providers = spec.providers.unwrap_or(spec.delegations / 200).max(10);
        if providers > labels.len() {
            return bad(format!("at most {} providers", labels.len()));
        }
        let provider_tlds: Vec<_> = PROVIDER_TLDS
            .iter()
            .copied()
            .filter(|&(t, _)| t != tld)
            .collect();
        Ok(TldModel {
            tld,
            delegations: spec.delegations,
            updates: spec.updates,
            seed: spec.seed,
            providers,
            zipf: Zipf::new(providers, spec.zipf),
            glue_share: spec.glue_share,
            ds_share: spec.ds_share,
            labels,
            provider_labels: LabelSpace::new(hash(spec.seed, 0, what::PROVIDER_LABELS)),
            provider_tlds,
        })
    }

    /// The apex, without the final dot.
    pub fn tld(&self) -> &str {
        &self.tld
    }

    /// Delegations in the zone.
    pub fn delegations(&self) -> u64 {
        self.delegations
    }

    /// Providers in the pool.
    pub fn providers(&self) -> u64 {
        self.providers
    }

    /// Appends label `i` (delegation `i < N`, additions at `N..`, non-existing names beyond).
    pub fn push_label(&self, i: u64, out: &mut Vec<u8>) -> LabelKind {
        let mut buf = [0u8; 63];
        let (n, kind) = self.labels.label(i, &mut buf);
        out.extend_from_slice(&buf[..n]);
        kind
    }

    /// The attributes of delegation `i`.
    pub fn delegation(&self, i: u64) -> Delegation {
        let key = self.seed;
        let ns_count = pick(&NS_COUNT_PER_MILLE, hash(key, i, what::NS_COUNT));
        let servers = if chance(hash(key, i, what::GLUE), self.glue_share) {
            Servers::InBailiwick {
                aaaa: hash(key, i, what::GLUE_AAAA) % 1000 < GLUE_AAAA_PER_MILLE,
            }
        } else {
            Servers::Provider(self.provider_rank(hash(key, i, what::PROVIDER)))
        };
        let ds = chance(hash(key, i, what::DS), self.ds_share).then(|| {
            let h = hash(key, i, what::DS_FIELDS);
            Ds {
                key_tag: h as u16,
                algorithm: if (h >> 16) % 1000 < DS_ALG13_PER_MILLE {
                    13
                } else {
                    8
                },
            }
        });
        Delegation {
            ns_count,
            servers,
            ds,
        }
    }

    /// A Zipf-distributed provider rank drawn from the stream seeded by `h`.
    fn provider_rank(&self, h: u64) -> u64 {
        let mut state = h;
        self.zipf.sample(|| {
            state = mix64(state.wrapping_add(0x9E37_79B9_7F4A_7C15));
            unit(state)
        })
    }

    /// Appends the absolute name of server `n` (1-based) of delegation `i`.
    pub fn push_server(&self, i: u64, d: &Delegation, n: u8, out: &mut Vec<u8>) {
        out.extend_from_slice(b"ns");
        out.push(b'0' + n);
        out.push(b'.');
        match d.servers {
            Servers::Provider(rank) => self.push_provider_domain(rank, out),
            Servers::InBailiwick { .. } => {
                self.push_label(i, out);
                out.push(b'.');
                out.extend_from_slice(self.tld.as_bytes());
            }
        }
        out.push(b'.');
    }

    /// Appends the domain of provider `rank`, without the final dot.
    fn push_provider_domain(&self, rank: u64, out: &mut Vec<u8>) {
        let mut buf = [0u8; 63];
        let (n, _) = self.provider_labels.label(rank - 1, &mut buf);
        out.extend_from_slice(&buf[..n]);
        out.push(b'.');
        let tld = pick(
            &self.provider_tlds,
            hash(self.seed, rank, what::PROVIDER_TLD),
        );
        out.extend_from_slice(tld.as_bytes());
    }

    /// Appends the RDATA of delegation `i`'s DS record.
    fn push_ds_rdata(&self, i: u64, ds: &Ds, out: &mut Vec<u8>) {
        push_u64(out, u64::from(ds.key_tag));
        out.push(b' ');
        push_u64(out, u64::from(ds.algorithm));
        out.extend_from_slice(b" 2 ");
        for w in 0..4 {
            push_hex(out, hash(self.seed, i, what::DIGEST + 16 * w), 16);
        }
    }

    /// Appends the glue A address of server `n` of delegation `i` (198.18.0.0/15, benchmarking).
    fn push_glue_a(&self, i: u64, n: u8, out: &mut Vec<u8>) {
        let h = hash(self.seed, i, what::ADDRESS + 16 * u64::from(n));
        let a = 0xC612_0000u32 | (h as u32 & 0x1_FFFF);
        for (k, octet) in a.to_be_bytes().into_iter().enumerate() {
            if k > 0 {
                out.push(b'.');
            }
            push_u64(out, u64::from(octet));
        }
    }

    /// Appends the glue AAAA address of server `n` of delegation `i` (2001:2::/48, benchmarking).
    fn push_glue_aaaa(&self, i: u64, n: u8, out: &mut Vec<u8>) {
        let h = hash(self.seed, i, what::ADDRESS + 16 * u64::from(n) + 1);
        out.extend_from_slice(b"2001:2:0:");
        push_hex(out, h & 0xFFFF, 0);
        out.push(b':');
        push_hex(out, (h >> 16) & 0xFFFF, 0);
        out.extend_from_slice(b"::");
        push_hex(out, ((h >> 32) & 0xFFFF) | 1, 0);
    }

    /// Appends the absolute name (no final dot) of label `i` below the apex.
    fn push_fqdn(&self, i: u64, out: &mut Vec<u8>) {
        self.push_label(i, out);
        out.push(b'.');
        out.extend_from_slice(self.tld.as_bytes());
    }

    /// First index of the non-existing names (past the zone and its additions).
    fn nx_base(&self) -> u64 {
        self.delegations + self.updates
    }

    /// A label index that is neither in the zone nor added by an update, from `h`.
    pub fn nx_index(&self, h: u64) -> u64 {
        let base = self.nx_base();
        base + h % (self.labels.len() - base)
    }
}

/// Appends `v` in decimal.
fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut k = buf.len();
    loop {
        k -= 1;
        buf[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[k..]);
}

/// Appends `v` in lower-case hex, `width` digits (0: no leading zeros).
fn push_hex(out: &mut Vec<u8>, v: u64, width: usize) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = if width > 0 {
        width
    } else {
        (16 - v.leading_zeros() as usize / 4).max(1)
    };
    for k in (0..digits).rev() {
        out.push(HEX[((v >> (4 * k)) & 0xF) as usize]);
    }
}

/// Counts of the zone written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZoneCounts {
    /// Delegations.
    pub delegations: u64,
    /// Distinct NS sets (provider sets used, plus one per in-bailiwick delegation).
    pub ns_sets: u64,
    /// NS records below the apex.
    pub ns_records: u64,
    /// Delegations with in-bailiwick servers.
    pub glue_delegations: u64,
    /// Glue A records.
    pub glue_a: u64,
    /// Glue AAAA records.
    pub glue_aaaa: u64,
    /// DS records.
    pub ds: u64,
    /// Labels in the `xn--` form.
    pub idn_labels: u64,
    /// Every record of the file, apex included.
    pub records: u64,
}

/// The query files, in the order of [`TldSummary::query_files`].
pub const QUERY_FILES: [&str; 5] = [
    "queries-referral.txt",
    "queries-nxdomain.txt",
    "queries-ds.txt",
    "queries-mix.txt",
    "queries-spamrun.txt",
];

/// What was written.
#[derive(Debug, Clone)]
pub struct TldSummary {
    /// The zone's apex, with the final dot.
    pub apex: String,
    /// The zone file.
    pub zone_file: PathBuf,
    /// Counts of the zone.
    pub zone: ZoneCounts,
    /// Providers in the pool.
    pub providers: u64,
    /// Query files (see [`QUERY_FILES`]).
    pub query_files: Vec<PathBuf>,
    /// Lines in each query file.
    pub queries: u64,
    /// Update streams, one per [`PACES`] entry (the same updates, paced differently).
    pub update_files: Vec<PathBuf>,
    /// Counts of the update stream.
    pub updates: UpdateCounts,
    /// README.txt.
    pub readme: PathBuf,
    /// Knot DNS `zone:` section.
    pub knot_conf: PathBuf,
    /// Lode configuration serving the zone.
    pub lode_conf: PathBuf,
}

/// One unit of work for the generator threads.
#[derive(Debug, Clone, Copy)]
enum Job {
    Zone,
    Queries(usize),
    Updates,
}

/// Writes the zone, the query files, the update streams, server configurations
/// and README.txt into `dir`.
pub fn generate(spec: &TldSpec, dir: &Path) -> Result<TldSummary, GenError> {
    let model = TldModel::new(spec)?;
    create_dir(dir)?;
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let apex = format!("{}.", model.tld);
    let zone_file = dir.join(format!("{apex}zone"));
    let query_files: Vec<PathBuf> = QUERY_FILES.iter().map(|f| dir.join(f)).collect();
    let update_files: Vec<PathBuf> = PACES
        .iter()
        .map(|p| dir.join(format!("updates-{}.txt", p.name)))
        .collect();

    let zone_counts = Mutex::new(ZoneCounts::default());
    let update_counts = Mutex::new(UpdateCounts::default());
    let mut jobs = vec![Job::Updates];
    jobs.extend((0..QUERY_FILES.len()).map(Job::Queries));
    jobs.push(Job::Zone); // the longest: taken first
    let threads = spec.threads.unwrap_or_else(default_threads);
    run_jobs(jobs, threads, |job| match job {
        Job::Zone => {
            let c = write_zone(&model, &zone_file)?;
            if let Ok(mut slot) = zone_counts.lock() {
                *slot = c;
            }
            Ok(())
        }
        Job::Queries(k) => queries::write_queries(&model, spec, k, &query_files[k]),
        Job::Updates => {
            let c = updates::write_updates(&model, spec, &update_files)?;
            if let Ok(mut slot) = update_counts.lock() {
                *slot = c;
            }
            Ok(())
        }
    })?;
    let zone = zone_counts.into_inner().unwrap_or_default();
    let updates = update_counts.into_inner().unwrap_or_default();
    let (knot_conf, lode_conf) =
        super::write_server_configs(&dir, "tld", &[(apex.clone(), zone_file.clone())])?;
    let summary = TldSummary {
        apex,
        zone_file,
        zone,
        providers: model.providers,
        query_files,
        queries: spec.queries,
        update_files,
        updates,
        readme: dir.join("README.txt"),
        knot_conf,
        lode_conf,
    };
    write_readme(&model, spec, &summary)?;
    Ok(summary)
}

/// Picks from weighted choices with `h`.
fn pick<T: Copy>(table: &[(T, u64)], h: u64) -> T {
    let total: u64 = table.iter().map(|&(_, w)| w).sum();
    let mut x = h % total.max(1);
    for &(t, w) in table {
        if x < w {
            return t;
        }
        x -= w;
    }
    table[table.len() - 1].0
}

/// Writes the zone: apex SOA, 13 NS with glue, then every delegation in index order.
fn write_zone(m: &TldModel, path: &Path) -> Result<ZoneCounts, GenError> {
    let mut out = LineSink::create(path)?;
    let mut c = ZoneCounts {
        delegations: m.delegations,
        ..ZoneCounts::default()
    };
    let mut head = format!(
        "; {tld}. — a TLD-shaped zone generated by lode-bench gen tld (seed {seed}): \
         {n} delegations, unsigned\n\
         $ORIGIN {tld}.\n$TTL {TTL}\n\
         @ 900 SOA a.nic hostmaster.nic 1 1800 900 604800 86400\n",
        tld = m.tld,
        seed = m.seed,
        n = m.delegations,
    );
    for (k, &l) in APEX_SERVERS.iter().enumerate() {
        let l = l as char;
        head.push_str(&format!(
            "@ NS {l}.nic\n{l}.nic A 198.18.0.{}\n{l}.nic AAAA 2001:2::{}\n",
            k + 1,
            k + 1
        ));
    }
    c.records = 1 + 3 * APEX_SERVERS.len() as u64;
    out.push(head.as_bytes())?;

    // One bit per provider NS set (rank, server count) to count the distinct sets.
    let mut used = vec![0u64; ((m.providers * 3) as usize).div_ceil(64)];
    let mut owner = Vec::with_capacity(80);
    let mut host = Vec::with_capacity(80);
    let mut line = Vec::with_capacity(512);
    let ttl_ds = format!(" {DS_TTL} DS ");
    for i in 0..m.delegations {
        owner.clear();
        if m.push_label(i, &mut owner) == LabelKind::Idn {
            c.idn_labels += 1;
        }
        let d = m.delegation(i);
        // The servers' domain: the provider's (absolute), or the delegation itself (relative).
        let servers_domain = match d.servers {
            Servers::Provider(rank) => {
                host.clear();
                m.push_provider_domain(rank, &mut host);
                host.push(b'.');
                &host
            }
            Servers::InBailiwick { .. } => &owner,
        };
        line.clear();
        for n in 1..=d.ns_count {
            line.extend_from_slice(&owner);
            line.extend_from_slice(b" NS ns");
            line.push(b'0' + n);
            line.push(b'.');
            line.extend_from_slice(servers_domain);
            line.push(b'\n');
        }
        c.ns_records += u64::from(d.ns_count);
        match d.servers {
            Servers::Provider(rank) => {
                let bit = ((rank - 1) * 3 + u64::from(d.ns_count - 2)) as usize;
                used[bit / 64] |= 1 << (bit % 64);
            }
            Servers::InBailiwick { aaaa } => {
                c.glue_delegations += 1;
                c.ns_sets += 1;
                for n in 1..=d.ns_count {
                    for v6 in [false, true] {
                        if v6 && !aaaa {
                            continue;
                        }
                        line.extend_from_slice(b"ns");
                        line.push(b'0' + n);
                        line.push(b'.');
                        line.extend_from_slice(&owner);
                        if v6 {
                            line.extend_from_slice(b" AAAA ");
                            m.push_glue_aaaa(i, n, &mut line);
                            c.glue_aaaa += 1;
                        } else {
                            line.extend_from_slice(b" A ");
                            m.push_glue_a(i, n, &mut line);
                            c.glue_a += 1;
                        }
                        line.push(b'\n');
                    }
                }
            }
        }
        if let Some(ds) = d.ds {
            line.extend_from_slice(&owner);
            line.extend_from_slice(ttl_ds.as_bytes());
            m.push_ds_rdata(i, &ds, &mut line);
            line.push(b'\n');
            c.ds += 1;
        }
        out.push(&line)?;
    }
    c.ns_sets += used.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
    c.records += c.ns_records + c.glue_a + c.glue_aaaa + c.ds;
    out.finish()?;
    Ok(c)
}

/// Size of a file in bytes (0 if it cannot be read).
fn file_size(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Writes README.txt: what was generated, how, and the counts.
fn write_readme(m: &TldModel, spec: &TldSpec, s: &TldSummary) -> Result<(), GenError> {
    let z = &s.zone;
    let n = z.delegations.max(1) as f64;
    let pct = |v: u64| 100.0 * v as f64 / n;
    let mut t = String::new();
    let mut add = |line: String| {
        t.push_str(&line);
        t.push('\n');
    };
    add(format!(
        "TLD-shaped data set for {} (lode-bench gen tld)",
        s.apex
    ));
    add(String::new());
    add(format!("command:      {}", spec.command));
    add(format!("seed:         {}", m.seed));
    add(format!(
        "zone:         {} ({} bytes)",
        s.zone_file.display(),
        file_size(&s.zone_file)
    ));
    add(format!("delegations:  {}", z.delegations));
    add(format!(
        "NS records:   {} ({:.2} per delegation)",
        z.ns_records,
        z.ns_records as f64 / n
    ));
    add(format!(
        "NS sets:      {} distinct, from {} providers (Zipf s = {}), plus one per in-bailiwick delegation",
        z.ns_sets, m.providers, spec.zipf
    ));
    add(format!(
        "in-bailiwick: {} delegations ({:.2} %), {} glue A, {} glue AAAA",
        z.glue_delegations,
        pct(z.glue_delegations),
        z.glue_a,
        z.glue_aaaa
    ));
    add(format!("DS:           {} ({:.2} %)", z.ds, pct(z.ds)));
    add(format!(
        "IDN labels:   {} ({:.2} %)",
        z.idn_labels,
        pct(z.idn_labels)
    ));
    add(format!(
        "records:      {} (apex: SOA, 13 NS, 13 A, 13 AAAA)",
        z.records
    ));
    add(String::new());
    add(format!(
        "query files ({} lines each, dnsperf `name TYPE`; the same file serves DO=0 and DO=1: \
         dnsperf -D sets DO on every query):",
        s.queries
    ));
    for p in &s.query_files {
        add(format!("  {} ({} bytes)", p.display(), file_size(p)));
    }
    let u = &s.updates;
    add(String::new());
    add(format!(
        "update streams (the same {} updates: {} NS changes, {} additions, {} deletions; {} records):",
        u.updates(),
        u.changes,
        u.additions,
        u.deletions,
        u.records
    ));
    let per = u.records as f64 / u.updates().max(1) as f64;
    for (pace, p) in PACES.iter().zip(&s.update_files) {
        let ups = pace.updates_per_second(z.delegations);
        add(format!(
            "  {} ({} bytes): {} % of the zone per day = {:.4} updates/s; lode update -c 1 -r {:.4} (records/s)",
            p.display(),
            file_size(p),
            pace.percent_per_day,
            ups,
            ups * per
        ));
    }
    add(String::new());
    add(format!("knot zones:   {}", s.knot_conf.display()));
    add(format!("lode config:  {}", s.lode_conf.display()));
    let mut out = LineSink::create(&s.readme)?;
    out.push(t.as_bytes())?;
    out.finish()
}

#[cfg(test)]
mod tests;
