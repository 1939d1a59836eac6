//! Offline KSK: the key signing request (KSR) and the signed key response
//! (SKR) of Knot DNS 3.2, both ways, so that either side may be Knot.
//!
//! ```text
//!  ZSK side (signs the zone; no KSK here)          KSK side (keeps the KSK offline)
//!  pregenerate: ZSKs and their timers up to a time
//!  generate-ksr FROM TO ──── KSR ─────────────────▶ sign-ksr: each period's DNSKEY
//!    one period per key event: the ZSKs published    RRset (its ZSKs + the KSKs), CDS,
//!    then (DNSKEY records)                           CDNSKEY, signed by the KSKs active
//!                                                    then; more periods between two of
//!  import-skr ◀──────────── SKR ──────────────────── the KSR's before signatures expire
//!  the server publishes, at each moment, the key records and signatures of the
//!  latest period that has begun; its ZSKs sign the rest
//! ```
//!
//! The text (Knot's): zone-file records of the zone's apex (absolute
//! names), each period opened by a line
//! `;; KeySigningRequest 1.0 UNIXTIME (ISO TIME) =========` (in an SKR,
//! `;; SignedKeyResponse 1.0 …`), the whole closed by
//! `;; KeySigningRequest 1.0 generated at ISO TIME by …` (a file without
//! that last line is taken as cut short and refused). A KSR's last period
//! is at its end time (Knot's), so that the SKR covers the whole span.
//!
//! Pure but for the keys' signing: times are arguments.

use lode_wire::{Class, Name, Record, Rtype};

use crate::key::{key_tag, SigningKey};
use crate::rrsig::{rrsig_info, RRsetRef};
use crate::signer::{is_key_type, Policy, SignError, Signer};

/// The format's version (Knot 3.2's).
pub const VERSION: &str = "1.0";

/// Which of the two texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A key signing request: the ZSKs of each period.
    Request,
    /// A signed key response: each period's key records and signatures.
    Response,
}

impl Kind {
    /// The word of its header lines.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Request => "KeySigningRequest",
            Kind::Response => "SignedKeyResponse",
        }
    }
}

/// One period: the key records (and, in a response, their signatures)
/// from `at` until the next period's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Period {
    /// Its start, Unix seconds.
    pub at: u64,
    /// DNSKEY, CDS, CDNSKEY and RRSIG records of the apex.
    pub records: Vec<Record>,
}

impl Period {
    /// The RDATAs of its records of `rtype`.
    pub fn rdatas(&self, rtype: Rtype) -> impl Iterator<Item = &[u8]> {
        self.records
            .iter()
            .filter(move |r| r.rtype == rtype)
            .map(|r| &*r.rdata)
    }

    /// The TTL of its `rtype` records (the last one's, as in a zone file).
    pub fn ttl(&self, rtype: Rtype) -> Option<u32> {
        self.records
            .iter()
            .rev()
            .find(|r| r.rtype == rtype)
            .map(|r| r.ttl)
    }

    /// Its DNSKEY, CDS and CDNSKEY records.
    pub fn key_records(&self) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(|r| is_key_type(r.rtype))
    }

    /// The RDATAs of its signatures of `rtype`.
    pub(crate) fn sigs_covering(&self, rtype: Rtype) -> impl Iterator<Item = &[u8]> {
        self.rdatas(Rtype::RRSIG)
            .filter(move |s| rrsig_info(s).is_some_and(|i| i.covered == rtype))
    }

    /// (tag, algorithm) of the keys that signed its DNSKEY RRset.
    pub(crate) fn signer_tags(&self) -> Vec<(u16, u8)> {
        let mut tags: Vec<(u16, u8)> = self
            .sigs_covering(Rtype::DNSKEY)
            .filter_map(rrsig_info)
            .map(|i| (i.key_tag, i.algorithm))
            .collect();
        tags.sort_unstable();
        tags.dedup();
        tags
    }

    /// The earliest expiration of its signatures.
    pub fn expiry(&self) -> Option<u32> {
        self.rdatas(Rtype::RRSIG)
            .filter_map(rrsig_info)
            .map(|i| i.expiration)
            .min()
    }
}

/// The period of `periods` (in time order) in force at `now` — the last
/// one begun — and when the next begins.
pub fn current(periods: &[Period], now: u64) -> Option<(&Period, Option<u64>)> {
    let i = periods.iter().rposition(|p| p.at <= now)?;
    Some((&periods[i], periods.get(i + 1).map(|p| p.at)))
}

/// `old` with `new` in place of its periods from `new`'s first on (Knot's
/// import: a response replaces what was imported for its span and after).
pub fn merge(mut old: Vec<Period>, new: Vec<Period>) -> Vec<Period> {
    if let Some(first) = new.first() {
        old.retain(|p| p.at < first.at);
    }
    old.extend(new);
    old
}

/// Reads a KSR or an SKR (`file` names it in errors) for the zone
/// `origin`: its periods in time order.
pub fn parse(text: &str, file: &str, origin: &Name, kind: Kind) -> Result<Vec<Period>, String> {
    // The header lines: (line, its time; None for the closing line).
    let mut heads: Vec<(u32, Option<u64>)> = Vec::new();
    let opening = format!(";; {} ", kind.word());
    for (i, line) in text.lines().enumerate() {
        let line_no = i as u32 + 1;
        let Some(rest) = line.trim_start().strip_prefix(&opening) else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let version = words.next().unwrap_or("");
        if version.split('.').next() != Some("1") {
            return Err(format!(
                "{file}:{line_no}: {} version {version:?}: 1.x is the one known",
                kind.word()
            ));
        }
        if heads.last().is_some_and(|h| h.1.is_none()) {
            return Err(format!("{file}:{line_no}: a period after the closing line"));
        }
        let at = words.next().and_then(|w| w.parse::<u64>().ok());
        if let (Some(at), Some((_, Some(before)))) = (at, heads.last()) {
            if at <= *before {
                return Err(format!(
                    "{file}:{line_no}: period at {at} not after the one before ({before})"
                ));
            }
        }
        heads.push((line_no, at));
    }
    match heads.last() {
        None => {
            return Err(format!(
                "{file}: no {} in it (\"{opening}1.0 TIME …\" lines)",
                kind.word()
            ))
        }
        Some((_, Some(_))) => {
            return Err(format!(
                "{file}: cut short: no closing \"{opening}1.0 generated at …\" line"
            ))
        }
        Some(_) => {}
    }
    let parsed = lode_zonefile::parse_str(text, file, origin).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let mut periods: Vec<Period> = heads
        .iter()
        .filter_map(|&(_, at)| at)
        .map(|at| Period {
            at,
            records: Vec::new(),
        })
        .collect();
    for (r, pos) in parsed.records.into_iter().zip(parsed.positions) {
        // The period whose header is the last one above the record.
        let Some(i) = heads.iter().rposition(|h| h.0 < pos.line) else {
            return Err(format!("{pos}: a record before the first period"));
        };
        if heads[i].1.is_none() || i >= periods.len() {
            return Err(format!("{pos}: a record after the closing line"));
        }
        if r.owner.key() != origin.key() {
            return Err(format!(
                "{pos}: {} is not the zone's apex ({origin})",
                r.owner
            ));
        }
        let allowed = match kind {
            Kind::Request => r.rtype == Rtype::DNSKEY,
            Kind::Response => {
                is_key_type(r.rtype)
                    || (r.rtype == Rtype::RRSIG
                        && rrsig_info(&r.rdata).is_some_and(|i| is_key_type(i.covered)))
            }
        };
        if !allowed {
            return Err(format!(
                "{pos}: {} has no {} records of this kind (DNSKEY{})",
                kind.word(),
                r.rtype,
                if kind == Kind::Response {
                    ", CDS, CDNSKEY and their RRSIGs"
                } else {
                    ""
                }
            ));
        }
        periods[i].records.push(r);
    }
    for p in &periods {
        if p.rdatas(Rtype::DNSKEY).next().is_none() {
            return Err(format!("{file}: the period at {} has no DNSKEY", p.at));
        }
    }
    Ok(periods)
}

/// The text of `periods` (as Knot writes it, one record a line), closed
/// by the line saying when and by what it was made (`now`).
pub fn write(periods: &[Period], kind: Kind, now: u64) -> String {
    let mut out = String::new();
    for p in periods {
        out.push_str(&format!(
            ";; {} {VERSION} {} ({}) =========\n",
            kind.word(),
            p.at,
            iso_time(p.at)
        ));
        for r in &p.records {
            out.push_str(&lode_zonefile::format_record(r));
            if r.rtype == Rtype::DNSKEY {
                let role = if r.rdata.get(1).is_some_and(|f| f & 1 == 1) {
                    "KSK"
                } else {
                    "ZSK"
                };
                out.push_str(&format!(" ; {role}, tag {}", key_tag(&r.rdata)));
            }
            out.push('\n');
        }
    }
    out.push_str(&format!(
        ";; {} {VERSION} generated at {} by Lode {}\n",
        kind.word(),
        iso_time(now),
        env!("CARGO_PKG_VERSION")
    ));
    out
}

/// `t` as Knot writes it in these files: `2026-11-28T08:25:18Z`.
pub(crate) fn iso_time(t: u64) -> String {
    lode_zonefile::utc_text(t)
        .trim_end_matches(" UTC")
        .replacen(' ', "T", 1)
        + "Z"
}

/// The key signing request of the ZSKs `keys` (the ZSK side's, with their
/// timers) for `from` to `to`: a period at `from`, one at each key event
/// after it, and one at `to`; each with the DNSKEY records of the keys
/// published then (TTL `ttl`).
pub fn request(keys: &[SigningKey], origin: &Name, ttl: u32, from: u64, to: u64) -> Vec<Period> {
    let at = |t: u64| {
        let records = published_zsks(keys, t)
            .into_iter()
            .map(|rdata| Record {
                owner: origin.clone(),
                class: Class::IN,
                rtype: Rtype::DNSKEY,
                ttl,
                rdata: rdata.into(),
            })
            .collect();
        Period { at: t, records }
    };
    let mut out = Vec::new();
    let mut t = from;
    while t < to {
        out.push(at(t));
        match keys.iter().filter_map(|k| k.timing.next_after(t)).min() {
            Some(next) => t = next,
            None => break,
        }
    }
    out.push(at(to));
    out.retain(|p| !p.records.is_empty());
    out
}

/// The DNSKEY RDATA of the ZSKs of `keys` published at `at` (by their
/// timers).
pub fn published_zsks(keys: &[SigningKey], at: u64) -> Vec<Vec<u8>> {
    let facts: Vec<_> = keys
        .iter()
        .map(|k| (k.role, k.algorithm.number(), k.timing))
        .collect();
    keys.iter()
        .zip(crate::timing::usage(&facts, at))
        .filter(|(k, u)| u.public && k.role == crate::timing::Role::Zsk)
        .map(|(k, _)| k.dnskey_rdata())
        .collect()
}

/// The signed key response to `request` by the KSK side's keys `keys`
/// (with their timers) and `policy` (signature lifetime and refresh, CDS
/// and CDNSKEY): for each requested period, its ZSKs with the KSKs
/// published then, the CDS and CDNSKEY the policy calls for, signed by
/// the KSKs active then; and between two requested periods, more of them
/// where a KSK event comes or the signatures would be due (expiry less
/// `rrsig-refresh`), so that a ZSK side following it never serves a
/// signature that is due.
pub fn sign_request(
    request: &[Period],
    keys: &[SigningKey],
    policy: &Policy,
    origin: &Name,
) -> Result<Vec<Period>, SignError> {
    let mut out = Vec::new();
    for (i, p) in request.iter().enumerate() {
        let end = request.get(i + 1).map(|n| n.at);
        let mut t = p.at;
        loop {
            out.push(sign_period(p, keys, policy, origin, t)?);
            let Some(end) = end else { break };
            let key_event = keys.iter().filter_map(|k| k.timing.next_after(t)).min();
            let due = t + u64::from(policy.rrsig_lifetime - policy.rrsig_refresh);
            let next = key_event.map_or(due, |k| k.min(due));
            if next >= end || next <= t {
                break;
            }
            t = next;
        }
    }
    Ok(out)
}

/// One period of the response: `request`'s ZSKs signed at `t`.
fn sign_period(
    request: &Period,
    keys: &[SigningKey],
    policy: &Policy,
    origin: &Name,
    t: u64,
) -> Result<Period, SignError> {
    let ttl = request.ttl(Rtype::DNSKEY).unwrap_or(3600);
    let mut policy = policy.clone();
    policy.dnskey_ttl = Some(ttl);
    policy.reproducible_signing = false;
    let keys = keys
        .iter()
        .map(SigningKey::try_clone)
        .collect::<Result<Vec<_>, _>>()
        .map_err(SignError::Key)?;
    let signer = Signer::at(origin, keys, policy, t)?;
    if signer.signers_of(Rtype::DNSKEY).next().is_none() {
        return Err(SignError::NoKeys);
    }
    let mut records = signer.key_records_of(origin, Class::IN, ttl);
    for zsk in request.rdatas(Rtype::DNSKEY) {
        if !records
            .iter()
            .any(|r| r.rtype == Rtype::DNSKEY && *r.rdata == *zsk)
        {
            records.push(Record {
                owner: origin.clone(),
                class: Class::IN,
                rtype: Rtype::DNSKEY,
                ttl,
                rdata: zsk.into(),
            });
        }
    }
    records.sort_by_key(|r| r.rtype);
    let mut period = Period { at: t, records };
    let validity = signer.validity(t);
    let mut scratch = Vec::new();
    let mut sigs = Vec::new();
    for (set, rdatas) in key_rrsets(&period, origin, ttl) {
        signer.sign_rdatas(&set, &rdatas, validity, &mut scratch, &mut sigs);
    }
    period.records.extend(sigs.into_iter().map(|rdata| Record {
        owner: origin.clone(),
        class: Class::IN,
        rtype: Rtype::RRSIG,
        ttl,
        rdata: rdata.into(),
    }));
    Ok(period)
}

/// The period's DNSKEY, CDNSKEY and CDS RRsets (those it has), each with
/// its RDATAs, as signed (original TTL `ttl`).
fn key_rrsets<'a>(
    period: &'a Period,
    origin: &'a Name,
    ttl: u32,
) -> impl Iterator<Item = (RRsetRef<'a>, Vec<&'a [u8]>)> {
    [Rtype::DNSKEY, Rtype::CDNSKEY, Rtype::CDS]
        .into_iter()
        .map(move |rtype| {
            let set = RRsetRef {
                owner: origin.as_ref(),
                rtype,
                class: Class::IN,
                ttl,
            };
            (set, period.rdatas(rtype).collect::<Vec<_>>())
        })
        .filter(|(_, rdatas)| !rdatas.is_empty())
}

/// Checks one period of a response before it is used: its DNSKEY RRset
/// (and CDS, CDNSKEY) signed, at the period's start, by a key of it with
/// the SEP flag; and each of `zsks` (the DNSKEY RDATA of the ZSKs this
/// side publishes then) in it — a response to another request would make
/// the zone bogus.
pub fn verify(period: &Period, origin: &Name, zsks: &[Vec<u8>]) -> Result<(), String> {
    let keys: Vec<&[u8]> = period.rdatas(Rtype::DNSKEY).collect();
    let sigs: Vec<&[u8]> = period.rdatas(Rtype::RRSIG).collect();
    let when = || format!("the period at {} ({})", period.at, iso_time(period.at));
    for z in zsks {
        if !keys.contains(&&z[..]) {
            return Err(format!(
                "{}: the DNSKEY RRset lacks ZSK tag {} that is published then \
                 (a response to another request, or the ZSKs changed since)",
                when(),
                key_tag(z)
            ));
        }
    }
    // (The TTL each signature covers is its own original TTL.)
    for (set, rdatas) in key_rrsets(period, origin, 0) {
        if crate::validate::verified_by(&set, &rdatas, &sigs, &keys, true, period.at).is_none() {
            return Err(format!(
                "{}: no signature of the {} RRset valid then by one of its keys with the SEP flag",
                when(),
                set.rtype
            ));
        }
    }
    Ok(())
}
