//! Response-rate limiting (RRL) for UDP answers, as DNS operators know it
//! from Knot DNS 3.2's `mod-rrl`, NSD and BIND: a source prefix that keeps
//! getting "the same answer" faster than the configured rate gets the excess
//! dropped, or every `slip`-th of them as a truncated (TC=1) answer so that a
//! real resolver retries over TCP.
//!
//! ```text
//!  worker thread (any of N, SO_REUSEPORT)            one Limiter, shared (&self)
//!  answer built ─▶ Class::classify(…) + key name ─▶ Limiter::check(src, class, name, now_ms)
//!                                                     │ rate 0 / exempt ─▶ Send
//!                                                     │ key = (prefix /24 | /56, class, name)
//!                                                     │ SipHash-1-3, random key per process
//!                                                     ▼
//!                                          line of 8 GCRA cells (one cache line)
//!                                                     │ passes ─▶ Send (one CAS, nothing else)
//!                                                     ▼ over rate
//!                                 log_only ─▶ WouldLimit · every slip-th ─▶ Slip · else Drop
//!                                 (counted per thread; Limiter::log_due says when
//!                                  to log "prefix X limited", once per prefix per interval)
//! ```
//!
//! Nothing here reads a clock, opens a socket, spawns a thread, locks or
//! allocates after [`Limiter::new`]: the caller passes a monotonic time in
//! milliseconds.
//!
//! # What the caller passes
//!
//! RRL applies to UDP answers only; Knot also skips answers to queries with
//! a valid server cookie. The caller builds the class with
//! [`Class::classify`] (Knot 3.2's order: NXDOMAIN, other error, wildcard,
//! ANY, DNSSEC types, size ≥ 1024, empty answer, positive) and passes as
//! `name` the lower-case wire form of:
//!
//! | class | name in the key |
//! |---|---|
//! | `NxDomain`, `Error`, `Wildcard` | the **zone apex** of the answer, so a random-subdomain or garbage flood falls in one bucket; when no zone was found (REFUSED, FORMERR …): the signer of an RRSIG in the answer, else the owner of an NS or SOA in the authority section, else the root (`b"\0"`) — Knot's `knotd_qdata_zone_name` then `name_from_rrsig` then `name_from_authrr` |
//! | `Positive`, `NoData`, `Referral`, `Large`, `Any`, `Dnssec` | the **query name** (lower-cased, so 0x20 case games do not spread a flood) |
//!
//! [`Class::keys_zone`] says which. An empty `name` is accepted (it hashes
//! like any other byte string).
//!
//! ```
//! use lode_rrl::{Class, Config, Limiter, Verdict};
//! let rrl = Limiter::new(&Config { rate: 20, ..Config::default() }).unwrap();
//! // Per UDP answer, in any worker (`now_ms` from a monotonic clock):
//! let (qname, apex) = (b"\x03www\x07example\x00", b"\x07example\x00");
//! let class = Class::classify(3 /* NXDOMAIN */, 1 /* A */, false, false, 0, 120);
//! let name: &[u8] = if class.keys_zone() { apex } else { qname };
//! let source = "192.0.2.1".parse().unwrap();
//! match rrl.check(source, class, name, 5_000) {
//!     Verdict::Send | Verdict::WouldLimit => { /* send the answer */ }
//!     Verdict::Slip => { /* send header + question, AA and TC set */ }
//!     Verdict::Drop => { /* send nothing */ }
//! }
//! # assert_eq!(rrl.check(source, class, name, 5_000), Verdict::Send);
//! ```
//!
//! # Design choice: a GCRA cell per bucket, not KRU, not Knot 3.2's buckets
//!
//! * Knot 3.2 keeps token buckets (4 s of credit, refilled per whole second)
//!   in a hopscotch table behind one global lookup mutex plus 32 striped
//!   locks. A fresh bucket holds 4 s of tokens, so a 10 s flood gets ~13×
//!   the rate through; the global mutex serialises every worker.
//! * Knot 3.4's KRU (also knot-resolver's `kru.inc.c`) keeps per-cache-line
//!   16-bit "loads" with exponential decay, 2 lines per key, a shared time
//!   per line whose advance decays all 15 loads with a CAS each, and
//!   randomised rounding (a thread-local PRNG) of prices and decay. It is
//!   lock-free and very compact, but its rate is statistical (a function
//!   of decay and limit, rounded at random), which makes "sends within
//!   ±10 % of rate" a property to sample rather than to assert, and each
//!   check touches two lines.
//! * Here: one 64-bit cell per bucket = 16-bit tag + 48-bit GCRA
//!   theoretical arrival time in 2⁻²⁰ ms units. One hash, one cache line
//!   (8 cells, replace-the-idlest like KRU, so a flooding bucket is the last
//!   to be evicted), a passing answer does one CAS on its cell, a limited
//!   one writes nothing to the table. The rate is exact: over any window of
//!   W seconds a bucket passes at most `rate·W + burst` answers, and in a
//!   steady flood exactly `rate` per second; tests are deterministic.
//!
//! Measured with `nice -n 10 cargo run --release -p lode-rrl --example
//! rrl_bench 200` on this project's machine (2 vCPU AMD EPYC, L2 512 KiB
//! per core, shared with other builds: figures are the typical values of
//! runs in which the `hash` case showed both threads really had a core).
//! ns per `check`, hash included; 2 threads = each of two threads running
//! at once on the same `Limiter`:
//!
//! | case | 1 thread | 2 threads (each) |
//! |---|---|---|
//! | SipHash-1-3 of the key alone | 12 | 12–13 |
//! | passing, 256 sources per thread (cells in cache) | 24 | 29 |
//! | passing, 65 536 /24s per thread over the 8 MiB table (cache misses) | 53–60 | 63–68 |
//! | one flooding /24, limited (same bucket on both threads) | 23 | 23–24 |
//! | eviction on every check (16 384 cells, random /24s) | 36 | 57 |
//!
//! Before the counters were striped per thread, the 2-thread flood cost
//! 60 ns per check (both threads bounced one counter line); a limited
//! answer now only reads its cell and bumps its own thread's counter. So
//! the check costs about one hash plus one cache miss, and a flood from one
//! prefix costs the other workers nothing beyond a shared read. KRU would
//! touch two lines per check (and decay 2 × 15 loads at each tick); Knot
//! 3.2 takes a global mutex on every check. Neither was measured here.
//!
//! # Memory
//!
//! 8 bytes per cell, rounded up to 64-byte lines: `table_size` 393 241
//! (Knot's default) is 3.0 MiB; [`Limiter::memory`] reports it. The log
//! table adds 32 KiB; the counters 1 KiB.
//!
//! # Slip
//!
//! Knot 3.2 slips each limited answer with probability `1/slip`; here each
//! thread slips its 1st, (slip+1)-th, (2·slip+1)-th … limited answer, so
//! exactly `1/slip` of them (rounded up) and tests can assert it. What Knot
//! sends for a slipped answer (`process_query_err` with `err_truncated`):
//! the response header and question only, AA and TC set, CD cleared, the
//! answer's RCODE kept, OPT if the query had one, TSIG-signed if it was
//! signed — no answer, authority or additional records.
//!
//! # Time
//!
//! `now_ms` may come from each worker's own read of one monotonic clock;
//! readings a little apart (up to a second) between workers do not let
//! more answers through. A bucket idle for a multiple of 2⁴⁸ units (74.6 h)
//! can, with odds `(τ + T + 1 s) / 74.6 h`, be read as still busy and limit
//! for at most `τ + T + 1 s`: an accepted blind spot of the 48-bit TAT.
//!
//! # Burst
//!
//! A bucket that was idle passes `burst` answers at once (default half a
//! second's worth, `max(1, rate / 2)`), then one every `1/rate` s. So a
//! 10 s flood gets `10·rate + burst` answers through, and any 1 s window
//! of a steady flood `rate` (± 1).
//!
//! # Counters and logs
//!
//! [`Limiter::stats`] sums relaxed counters of slipped, dropped and
//! would-limit (log-only) answers, striped per thread (16 stripes). They
//! are written only when an answer is limited; a passing answer writes
//! nothing but its own cell, so the total of checked answers is not counted
//! here (the server counts its answers). [`Limiter::log_due`], called by the caller on a limited
//! verdict, returns the source's [`Prefix`] at most once per prefix per
//! `log_interval_ms` (best effort: a 4096-slot table of prefixes, at most
//! one line per slot per interval, so also at most 4096 lines per interval
//! in all).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod prefix;
mod table;
#[cfg(test)]
mod tests;

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

pub use prefix::Prefix;
use prefix::{Addr, Exempt};
use table::Table;

/// RRL settings (Knot's `rate-limit`, `slip`, `table-size`, `whitelist`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Answers per second per bucket; 0 turns RRL off.
    pub rate: u32,
    /// Answers a quiet bucket may send at once; 0 = `max(1, rate / 2)`.
    pub burst: u32,
    /// Every `slip`-th limited answer is sent truncated: 0 drops all,
    /// 1 slips all (Knot's default), at most 100.
    pub slip: u32,
    /// Prefix length IPv4 sources are grouped by (default 24).
    pub ipv4_prefix: u8,
    /// Prefix length IPv6 sources are grouped by (default 56).
    pub ipv6_prefix: u8,
    /// Number of buckets (default 393 241, Knot's); rounded up to lines of 8.
    pub table_size: usize,
    /// Sources never limited, as `(address, prefix length)`.
    pub exempt: Vec<(IpAddr, u8)>,
    /// Only report: limited answers get [`Verdict::WouldLimit`] and are sent.
    pub log_only: bool,
    /// Minimum time between two [`Limiter::log_due`] reports of one prefix.
    pub log_interval_ms: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            rate: 0,
            burst: 0,
            slip: 1,
            ipv4_prefix: 24,
            ipv6_prefix: 56,
            table_size: 393_241,
            exempt: Vec::new(),
            log_only: false,
            log_interval_ms: 10_000,
        }
    }
}

/// Why a [`Config`] was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `slip` over 100 (Knot's bound).
    Slip(u32),
    /// An IPv4 prefix length over 32 (in `ipv4_prefix` or an exempt entry).
    Ipv4Prefix(u8),
    /// An IPv6 prefix length over 128 (in `ipv6_prefix` or an exempt entry).
    Ipv6Prefix(u8),
    /// `table_size` 0 with a non-zero rate.
    TableSize,
    /// `rate` over [`MAX_RATE`].
    Rate(u32),
    /// `burst` too large for the rate (over about 16 000 s of answers).
    Burst(u32),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Slip(s) => write!(f, "rrl slip {s} is over 100"),
            ConfigError::Ipv4Prefix(p) => write!(f, "IPv4 prefix length {p} is over 32"),
            ConfigError::Ipv6Prefix(p) => write!(f, "IPv6 prefix length {p} is over 128"),
            ConfigError::TableSize => write!(f, "rrl table size is 0"),
            ConfigError::Rate(r) => write!(f, "rrl rate {r} is over {MAX_RATE}"),
            ConfigError::Burst(b) => write!(f, "rrl burst {b} is too large for the rate"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The largest accepted rate (answers per second per bucket).
pub const MAX_RATE: u32 = 10_000_000;

/// The response class, Knot 3.2's "same answer" kinds (plus `Referral`,
/// which Knot counts as an empty answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Class {
    /// NOERROR with answers.
    Positive,
    /// NXDOMAIN.
    NxDomain,
    /// NOERROR, no answer, not a referral.
    NoData,
    /// NOERROR, no answer, a delegation.
    Referral,
    /// Any RCODE but NOERROR and NXDOMAIN.
    Error,
    /// NOERROR of 1024 bytes or more.
    Large,
    /// NOERROR synthesised from a wildcard.
    Wildcard,
    /// NOERROR to a query of type ANY.
    Any,
    /// NOERROR to a query of type DNSKEY, RRSIG or DS.
    Dnssec,
}

impl Class {
    /// The class of an answer, in Knot 3.2's order (`rrl_clsid`): NXDOMAIN,
    /// other error, wildcard, qtype ANY, DNSKEY/RRSIG/DS, `len` ≥ 1024, no
    /// answer RR (`Referral` when `referral`), else positive.
    pub fn classify(
        rcode: u16,
        qtype: u16,
        wildcard: bool,
        referral: bool,
        ancount: u16,
        len: usize,
    ) -> Class {
        match rcode {
            0 => {}
            3 => return Class::NxDomain,
            _ => return Class::Error,
        }
        if wildcard {
            return Class::Wildcard;
        }
        match qtype {
            255 => return Class::Any,
            48 | 46 | 43 => return Class::Dnssec,
            _ => {}
        }
        if len >= 1024 {
            Class::Large
        } else if ancount == 0 && referral {
            Class::Referral
        } else if ancount == 0 {
            Class::NoData
        } else {
            Class::Positive
        }
    }

    /// Whether the key name is the zone apex (true) or the query name.
    pub fn keys_zone(self) -> bool {
        matches!(self, Class::NxDomain | Class::Error | Class::Wildcard)
    }

    /// A short upper-case name for logs (Knot's class names where it has one).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Positive => "POSITIVE",
            Class::NxDomain => "NXDOMAIN",
            Class::NoData => "EMPTY",
            Class::Referral => "REFERRAL",
            Class::Error => "ERROR",
            Class::Large => "LARGE",
            Class::Wildcard => "WILDCARD",
            Class::Any => "ANY",
            Class::Dnssec => "DNSSEC",
        }
    }

    /// The byte hashed into the key.
    fn id(self) -> u8 {
        match self {
            Class::Positive => 1,
            Class::NxDomain => 2,
            Class::NoData => 3,
            Class::Referral => 4,
            Class::Error => 5,
            Class::Large => 6,
            Class::Wildcard => 7,
            Class::Any => 8,
            Class::Dnssec => 9,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What to do with an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Within the rate (or exempt, or RRL off): send it.
    Send,
    /// Limited, and this one slips: send the header and question only,
    /// with AA and TC set (see "Slip" in the crate docs).
    Slip,
    /// Limited: send nothing.
    Drop,
    /// Log-only mode: it would have been limited; send it.
    WouldLimit,
}

/// Limited answers so far (sums of relaxed counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Answers sent truncated.
    pub slipped: u64,
    /// Answers dropped.
    pub dropped: u64,
    /// Answers that would have been limited (log-only mode).
    pub would_limit: u64,
}

impl Stats {
    /// All limited answers: slipped + dropped + would-limit.
    pub fn limited(&self) -> u64 {
        self.slipped + self.dropped + self.would_limit
    }
}

/// Counter stripes: each thread counts in its own (threads past 16 share),
/// so workers limiting one flood do not bounce a counter line.
const STRIPES: usize = 16;

/// The next stripe to hand to a thread.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe, chosen at its first limited answer.
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Relaxed) % STRIPES;
}

/// The calling thread's counter stripe.
fn my_stripe() -> usize {
    STRIPE.with(|s| *s)
}
/// Slots of the log table.
const LOG_SLOTS: usize = 4096;

/// One stripe of counters, a cache line of its own.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Stripe {
    /// Slipped and dropped answers.
    limited: AtomicU64,
    /// Would-limit answers (log-only mode).
    would_limit: AtomicU64,
}

/// The rate limiter: one per server, shared by all workers (`&self`).
#[derive(Debug)]
pub struct Limiter {
    /// None when the rate is 0.
    table: Option<Table>,
    hasher: RandomState,
    slip: u32,
    ipv4_prefix: u8,
    ipv6_prefix: u8,
    exempt: Box<[Exempt]>,
    log_only: bool,
    log_interval: u64,
    stripes: Box<[Stripe]>,
    /// Per slot of prefixes: the last report's time + 1; 0 = never.
    log: Box<[AtomicU64]>,
}

impl Limiter {
    /// Builds the limiter and allocates its table (nothing when `rate` is 0).
    pub fn new(config: &Config) -> Result<Limiter, ConfigError> {
        if config.slip > 100 {
            return Err(ConfigError::Slip(config.slip));
        }
        if config.ipv4_prefix > 32 {
            return Err(ConfigError::Ipv4Prefix(config.ipv4_prefix));
        }
        if config.ipv6_prefix > 128 {
            return Err(ConfigError::Ipv6Prefix(config.ipv6_prefix));
        }
        if config.rate > MAX_RATE {
            return Err(ConfigError::Rate(config.rate));
        }
        let mut exempt = Vec::with_capacity(config.exempt.len());
        for &(addr, len) in &config.exempt {
            match addr {
                IpAddr::V4(_) if len > 32 => return Err(ConfigError::Ipv4Prefix(len)),
                IpAddr::V6(_) if len > 128 => return Err(ConfigError::Ipv6Prefix(len)),
                _ => exempt.push(Exempt::new(addr, len)),
            }
        }
        let table = if config.rate == 0 {
            None
        } else {
            if config.table_size == 0 {
                return Err(ConfigError::TableSize);
            }
            let burst = match config.burst {
                0 => (config.rate / 2).max(1),
                b => b,
            };
            let span = table::interval_of(config.rate).saturating_mul(u64::from(burst) + 1);
            if span > table::MAX_SPAN {
                return Err(ConfigError::Burst(burst));
            }
            Some(Table::new(config.table_size, config.rate, burst))
        };
        Ok(Limiter {
            table,
            hasher: RandomState::new(),
            slip: config.slip,
            ipv4_prefix: config.ipv4_prefix,
            ipv6_prefix: config.ipv6_prefix,
            exempt: exempt.into_boxed_slice(),
            log_only: config.log_only,
            log_interval: config.log_interval_ms,
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            log: (0..LOG_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Whether limiting is on (`rate` > 0).
    pub fn enabled(&self) -> bool {
        self.table.is_some()
    }

    /// Bytes of the bucket table (0 when off).
    pub fn memory(&self) -> usize {
        self.table.as_ref().map_or(0, Table::memory)
    }

    /// The verdict for one UDP answer of `class` to `source`, keyed by
    /// `name` (lower-case wire form; see the crate docs for which name),
    /// at `now_ms` (monotonic milliseconds, any origin, the same clock for
    /// all workers). Lock-free, allocation-free.
    #[inline]
    pub fn check(&self, source: IpAddr, class: Class, name: &[u8], now_ms: u64) -> Verdict {
        let Some(table) = &self.table else {
            return Verdict::Send;
        };
        let addr = Addr::of(source);
        if self.exempt.iter().any(|e| e.contains(addr)) {
            return Verdict::Send;
        }
        let mut h = self.hasher.build_hasher();
        h.write_u8(class.id());
        h.write_u8(u8::from(addr.v6));
        h.write_u128(addr.masked(self.prefix_len(addr)));
        h.write(name);
        let hash = h.finish();
        if table.take(hash, now_ms) {
            return Verdict::Send;
        }
        self.limited()
    }

    /// Counts a limited answer and picks its verdict.
    #[cold]
    fn limited(&self) -> Verdict {
        let stripe = &self.stripes[my_stripe()];
        if self.log_only {
            stripe.would_limit.fetch_add(1, Relaxed);
            return Verdict::WouldLimit;
        }
        // The n-th limited answer of this stripe slips when n % slip == 0;
        // `stats` derives slipped and dropped from the count alone.
        let n = stripe.limited.fetch_add(1, Relaxed);
        match self.slip {
            0 => Verdict::Drop,
            s if n % u64::from(s) == 0 => Verdict::Slip,
            _ => Verdict::Drop,
        }
    }

    /// The prefix length for the address's family.
    fn prefix_len(&self, a: Addr) -> u8 {
        if a.v6 {
            self.ipv6_prefix
        } else {
            self.ipv4_prefix
        }
    }

    /// The block `source` is accounted under (e.g. `192.0.2.0/24`).
    pub fn prefix_of(&self, source: IpAddr) -> Prefix {
        let a = Addr::of(source);
        a.prefix(self.prefix_len(a))
    }

    /// Call on a limited verdict: `Some(prefix)` when the caller should log
    /// "prefix limited (class …)" now, at most once per prefix (and per log
    /// slot) per `log_interval_ms`. Lock-free; writes only when it says yes.
    pub fn log_due(&self, source: IpAddr, now_ms: u64) -> Option<Prefix> {
        let a = Addr::of(source);
        let len = self.prefix_len(a);
        let mut h = self.hasher.build_hasher();
        h.write_u8(0xff);
        h.write_u8(u8::from(a.v6));
        h.write_u128(a.masked(len));
        let slot = &self.log[(h.finish() >> 16) as usize % LOG_SLOTS];
        // The slot holds the last report's time + 1 (0: never reported).
        let old = slot.load(Relaxed);
        if old != 0 && now_ms.wrapping_sub(old - 1) < self.log_interval {
            return None;
        }
        slot.compare_exchange(old, now_ms.wrapping_add(1), Relaxed, Relaxed)
            .ok()
            .map(|_| a.prefix(len))
    }

    /// The counters so far (relaxed sums; may lag other threads slightly).
    pub fn stats(&self) -> Stats {
        let mut s = Stats::default();
        for st in self.stripes.iter() {
            let limited = st.limited.load(Relaxed);
            let slipped = match self.slip {
                0 => 0,
                n => limited.div_ceil(u64::from(n)),
            };
            s.slipped += slipped;
            s.dropped += limited - slipped;
            s.would_limit += st.would_limit.load(Relaxed);
        }
        s
    }

    /// Cells in the bucket table (0 when off).
    pub fn cells(&self) -> usize {
        self.table.as_ref().map_or(0, |t| t.lines() * table::WAYS)
    }
}
