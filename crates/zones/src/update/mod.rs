//! Dynamic updates (RFC 2136) as Knot DNS 3.2 processes them
//! (`src/knot/updates/ddns.c`, `src/knot/events/handlers/update.c`).
//!
//! ```text
//!  parse_update ── zone section (one, type SOA), prerequisites, updates,
//!                  additional (OPT and a last TSIG noted, the rest ignored)
//!  process ─────── prerequisites (RFC 2136 §3.2) against the zone
//!             └─── updates one by one (§3.4), each checked (§3.4.1) just
//!                  before it is applied to a working copy of the names it
//!                  touches, as Knot does (no separate prescan)
//!             └─── difference of the touched names → Changeset, new serial
//! ```
//!
//! Where Knot departs from RFC 2136, Lode follows Knot (the brief is "answer
//! like Knot DNS 3.2"); the departures are listed in [`process`].

mod parse;
mod process;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use lode_wire::message::{flags, HEADER_LEN};
use lode_wire::{rcode, Class, Name, Record};
use lode_zonedb::{Changeset, Zone};

pub use lode_wire::serial::{serial_cmp, SerialOrder};
pub use parse::read_record;

/// A parsed UPDATE message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRequest {
    /// The message ID.
    pub id: u16,
    /// The 16 flag bits of the request.
    pub flags: u16,
    /// The zone section's name (ZNAME), case as sent.
    pub zone: Name,
    /// The zone section's class (ZCLASS).
    pub zone_class: Class,
    /// The prerequisite section, in canonical form (owners lower-cased).
    pub prerequisites: Vec<Record>,
    /// The update section, in canonical form (owners lower-cased).
    pub updates: Vec<Record>,
    /// The additional section held an OPT record.
    pub has_opt: bool,
    /// The additional section ended with a TSIG record (checked by the caller).
    pub has_tsig: bool,
}

/// Why an UPDATE is not applied, and how it is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateError {
    /// Not answered at all (where Knot drops the message).
    Drop {
        /// What was wrong, for the log.
        reason: String,
    },
    /// The message does not parse: FORMERR with the zone section echoed and
    /// no OPT (Knot's answer to a packet its parser rejects).
    Malformed {
        /// What was wrong, for the log.
        reason: String,
    },
    /// Refused before the update is queued (the zone section): answered like
    /// a failed query, with an OPT when the request had one.
    Query {
        /// The RCODE.
        rcode: u16,
        /// What was wrong, for the log.
        reason: String,
    },
    /// The update failed: answered with [`write_response`] (no OPT).
    Update {
        /// The RCODE: FORMERR, NXDOMAIN, YXDOMAIN, NXRRSET, YXRRSET,
        /// REFUSED, NOTAUTH, NOTZONE or SERVFAIL.
        rcode: u16,
        /// What was wrong, for the log.
        reason: String,
    },
}

impl UpdateError {
    fn drop(reason: impl Into<String>) -> Self {
        UpdateError::Drop {
            reason: reason.into(),
        }
    }
    fn query(rcode: u16, reason: impl Into<String>) -> Self {
        UpdateError::Query {
            rcode,
            reason: reason.into(),
        }
    }
    pub(crate) fn update(rcode: u16, reason: impl Into<String>) -> Self {
        UpdateError::Update {
            rcode,
            reason: reason.into(),
        }
    }
    /// The RCODE of the answer (None when the message is dropped).
    pub fn rcode(&self) -> Option<u16> {
        match self {
            UpdateError::Drop { .. } => None,
            UpdateError::Malformed { .. } => Some(rcode::FORMERR),
            UpdateError::Query { rcode, .. } | UpdateError::Update { rcode, .. } => Some(*rcode),
        }
    }
    /// The reason, for the log.
    pub fn reason(&self) -> &str {
        match self {
            UpdateError::Drop { reason }
            | UpdateError::Malformed { reason }
            | UpdateError::Query { reason, .. }
            | UpdateError::Update { reason, .. } => reason,
        }
    }
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rcode() {
            Some(r) => write!(f, "{} ({})", self.reason(), rcode::name(r)),
            None => write!(f, "{} (dropped)", self.reason()),
        }
    }
}

impl std::error::Error for UpdateError {}

/// How the serial of a changed zone is chosen (Knot's `serial-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SerialPolicy {
    /// The serial plus one (Knot's default).
    #[default]
    Increment,
    /// The Unix time, or the serial plus one when that is not greater.
    UnixTime,
    /// YYYYMMDD00 of the UTC date, or the serial plus one when that is not
    /// greater.
    DateSerial,
}

/// A serial-policy name that is not one of Knot's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSerialPolicy(pub String);

impl fmt::Display for UnknownSerialPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown serial policy '{}' (increment, unixtime or dateserial)",
            self.0
        )
    }
}

impl std::error::Error for UnknownSerialPolicy {}

impl FromStr for SerialPolicy {
    type Err = UnknownSerialPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "increment" => Ok(SerialPolicy::Increment),
            "unixtime" => Ok(SerialPolicy::UnixTime),
            "dateserial" => Ok(SerialPolicy::DateSerial),
            _ => Err(UnknownSerialPolicy(s.to_string())),
        }
    }
}

/// The YYYYMMDD00 serial of the UTC day `now` (Unix seconds) falls in.
fn date_serial(now: u64) -> u32 {
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = (now / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y * 1_000_000 + m * 10_000 + d * 100) as u32
}

impl SerialPolicy {
    /// The serial after `current` at time `now` (Unix seconds), as Knot's
    /// `serial_next`: the policy's value when it is greater than `current`
    /// in serial arithmetic, `current + 1` otherwise.
    pub fn next(self, current: u32, now: u64) -> u32 {
        let minimum = match self {
            SerialPolicy::Increment => current,
            SerialPolicy::UnixTime => now as u32,
            SerialPolicy::DateSerial => date_serial(now),
        };
        if serial_cmp(minimum, current) == SerialOrder::Greater {
            minimum
        } else {
            current.wrapping_add(1)
        }
    }
}

/// Parses an UPDATE message: header (opcode 5), exactly one zone section of
/// type SOA and class IN or ANY (in Knot's order: a message that does not
/// parse is FORMERR — or dropped when Knot's parser never got past the
/// header —, then an EDNS version other than 0 is BADVERS, class CH NOTIMP,
/// other classes REFUSED, another type FORMERR), the prerequisite and update sections (names decompressed, RDATA
/// checked per type and put in canonical form, as Knot's parser does), and
/// the additional section (an OPT and a final TSIG are noted; the caller
/// checks the TSIG).
pub fn parse_update(msg: &[u8]) -> Result<UpdateRequest, UpdateError> {
    parse::parse(msg)
}

/// Processes one UPDATE against `zone` (see the module note): `Ok(None)` when
/// nothing changes (the serial is kept, as Knot does), otherwise the
/// changeset from the zone's SOA to the new one.
///
/// Knot DNS 3.2's behaviour, which Lode follows where it departs from
/// RFC 2136 or BIND 9:
/// - Updates are checked one at a time just before each is applied, not in a
///   prescan (§3.4.1): a later FORMERR still fails the whole update, but an
///   earlier REFUSED wins over it.
/// - A deletion of class ANY is applied whatever its TTL (§3.4.1.2 asks for
///   FORMERR when it is not 0); class NONE with a TTL other than 0 is FORMERR.
/// - The meta types are Knot's: SIG, OPT, TKEY, TSIG, IXFR, AXFR, ANY
///   (MAILA, MAILB and the rest of 128–255 are ordinary types).
/// - An added SOA replaces the zone's (TTL included) only when its serial is
///   greater than the zone's serial before the update; then the serial
///   policy is not applied. Other SOA additions, all SOA deletions and SOAs
///   added to other names are ignored (Knot 3.2 crashes on an SOA added to
///   a name that does not exist; Lode ignores it).
/// - Adding an RR whose RRset has another TTL gives the whole RRset the new
///   TTL (the changeset removes the old records and adds them back).
/// - A CNAME added to a name with a CNAME replaces it; to a name with other
///   data it is ignored; other data added to a CNAME's name is ignored.
/// - A DNAME added to a name that has a DNAME deletes the old one and does
///   not add the new one (Knot's replace-singleton path; Knot 3.2 crashes
///   when the name held nothing else, Lode removes the DNAME there too).
///   Data added below a DNAME, or a DNAME added to a name with descendants,
///   is REFUSED.
/// - NSEC3PARAM: added only at the apex (elsewhere REFUSED), and only when
///   the apex has none (otherwise ignored). RRSIG, NSEC and NSEC3 are
///   ordinary records in an unsigned zone (Knot 3.2 crashes on NSEC3 added
///   to a name that does not exist; Lode adds it).
/// - The apex NS RRset is never deleted as a set, and its last record is
///   not deleted; deleting all RRsets of the apex keeps SOA and NS.
/// - Prerequisites with a TTL other than 0, and of a class other than ANY,
///   NONE or the zone's, are FORMERR; names outside the zone are NOTZONE.
///   Value-dependent prerequisites are compared after all others.
pub fn process(
    zone: &Zone,
    req: &UpdateRequest,
    policy: SerialPolicy,
    now: u64,
) -> Result<Option<Changeset>, UpdateError> {
    process::process(zone, req, policy, now)
}

/// Writes the reply Knot sends for a processed UPDATE: the request's ID,
/// QR, its opcode, RD and CD copied, `rcode` (for NOERROR: the request's
/// RCODE bits, as Knot copies them), and the zone section echoed
/// as sent (none when the request had none); no OPT, whatever the request
/// had. Returns the length written (0 if `request` is shorter than a header
/// or `out` too small).
pub fn write_response(request: &[u8], rcode: u16, out: &mut [u8]) -> usize {
    if request.len() < HEADER_LEN || out.len() < HEADER_LEN {
        return 0;
    }
    let req_flags = u16::from_be_bytes([request[2], request[3]]);
    // Knot's reply starts as a copy of the request's header: a NOERROR
    // reply keeps whatever RCODE bits the request carried.
    let code = if rcode == 0 {
        req_flags & 0xF
    } else {
        rcode & 0xF
    };
    let f = flags::QR | (req_flags & 0x7800) | (req_flags & (flags::RD | flags::CD)) | code;
    out[..HEADER_LEN].fill(0);
    out[0..2].copy_from_slice(&request[0..2]);
    out[2..4].copy_from_slice(&f.to_be_bytes());
    let mut len = HEADER_LEN;
    let qd = u16::from_be_bytes([request[4], request[5]]);
    if qd >= 1 {
        if let Some((_, _, _, end)) = parse::read_zone_section(request) {
            let q = &request[HEADER_LEN..end];
            if let Some(dst) = out.get_mut(HEADER_LEN..end) {
                dst.copy_from_slice(q);
                out[5] = 1;
                len = end;
            }
        }
    }
    len
}

/// An UPDATE message for `zone` (class IN) with these prerequisites and
/// updates, names uncompressed and no additional section: for tests and
/// tools.
pub use lode_wire::request::update as encode_update;

/// Writes the answer to a failed UPDATE: [`write_response`] for
/// [`UpdateError::Update`] and [`UpdateError::Malformed`]; for
/// [`UpdateError::Query`] the same plus an OPT (UDP size `udp_size`, no
/// options) when the request had one. None when the message is dropped.
pub fn write_error(
    request: &[u8],
    err: &UpdateError,
    udp_size: u16,
    out: &mut [u8],
) -> Option<usize> {
    write_error_with(request, err, udp_size, &[], out)
}

/// As [`write_error`], with an Extended DNS Error (RFC 8914) of
/// `info_code` in the OPT of a [`UpdateError::Query`] answer (an UPDATE to
/// a frozen zone: REFUSED with 14, "Not Ready", as Knot answers it).
pub fn write_error_ede(
    request: &[u8],
    err: &UpdateError,
    udp_size: u16,
    info_code: u16,
    out: &mut [u8],
) -> Option<usize> {
    let [hi, lo] = info_code.to_be_bytes();
    write_error_with(request, err, udp_size, &[0, 15, 0, 2, hi, lo], out)
}

fn write_error_with(
    request: &[u8],
    err: &UpdateError,
    udp_size: u16,
    options: &[u8],
    out: &mut [u8],
) -> Option<usize> {
    let rc = err.rcode()?;
    let mut len = write_response(request, rc, out);
    if len == 0 {
        return Some(0);
    }
    if let UpdateError::Query { .. } = err {
        if request_has_opt(request) {
            let [size_hi, size_lo] = udp_size.to_be_bytes();
            let [rd_hi, rd_lo] = (options.len() as u16).to_be_bytes();
            let opt = [
                0,
                0,
                41,
                size_hi,
                size_lo,
                (rc >> 4) as u8, // the extended RCODE's upper bits (BADVERS)
                0,
                0,
                0,
                rd_hi,
                rd_lo,
            ];
            let end = len + opt.len() + options.len();
            if let Some(dst) = out.get_mut(len..end) {
                dst[..opt.len()].copy_from_slice(&opt);
                dst[opt.len()..].copy_from_slice(options);
                out[11] = 1;
                len = end;
            }
        }
    }
    Some(len)
}

/// True if the request's additional section has an OPT record (records that
/// cannot be read end the search).
fn request_has_opt(request: &[u8]) -> bool {
    let count = |i: usize| u16::from_be_bytes([request[4 + 2 * i], request[5 + 2 * i]]) as usize;
    let mut pos = match parse::read_zone_section(request) {
        Some((_, _, _, end)) if count(0) == 1 => end,
        _ if count(0) == 0 => HEADER_LEN,
        _ => return false,
    };
    let before = count(1) + count(2);
    for i in 0..before + count(3) {
        let mut name = lode_wire::NameBuf::new();
        let Ok(p) = name.read_compressed(request, pos) else {
            return false;
        };
        let (Some(t), Some(l)) = (request.get(p..p + 2), request.get(p + 8..p + 10)) else {
            return false;
        };
        if i >= before && t == [0, 41] {
            return true;
        }
        pos = p + 10 + u16::from_be_bytes([l[0], l[1]]) as usize;
    }
    false
}
