//! Small DNS probes of the fleet: a server's SOA serial, an AXFR drained.
//! Messages are written and read with `lode_wire::request`.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use lode_wire::request::{self, Reply};
use lode_wire::{Name, Rtype};

use super::FleetError;

/// A query for `name`/`rtype` (class IN, RD clear, no EDNS) with `id`.
pub fn query(name: &str, rtype: Rtype, id: u16) -> Result<Vec<u8>, FleetError> {
    let n = Name::parse(name, Some(&Name::root()))
        .map_err(|e| FleetError::Config(format!("name {name}: {e}")))?;
    Ok(request::query(id, &n, rtype))
}

/// The SOA serial `addr` serves for `zone` (authoritative NOERROR), three tries
/// of 200 ms, from the prober's address.
pub fn soa_serial(addr: SocketAddr, zone: &str) -> Option<u32> {
    soa_serial_from(super::net::PROBER.into(), addr, zone)
}

/// [`soa_serial`] asked from `local` (e.g. 127.0.0.1 for a server on loopback).
pub fn soa_serial_from(local: IpAddr, addr: SocketAddr, zone: &str) -> Option<u32> {
    let sock = UdpSocket::bind((local, 0)).ok()?;
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .ok()?;
    let mut buf = [0u8; 4096];
    for id in [0x5301u16, 0x5302, 0x5303] {
        let q = query(zone, Rtype::SOA, id).ok()?;
        sock.send_to(&q, addr).ok()?;
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            let Ok((n, _)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if let Some(h) = Reply::of(&buf[..n]) {
                if h.id == id {
                    return if h.aa {
                        request::answer_soa_serial(&buf[..n])
                    } else {
                        None
                    };
                }
            }
        }
    }
    None
}

/// What a drained AXFR measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drained {
    /// Records received (both SOAs included).
    pub records: u64,
    /// Messages received.
    pub messages: u64,
    /// Bytes received (without the 2-octet length prefixes).
    pub bytes: u64,
    /// Seconds from sending the request to the closing SOA.
    pub secs: f64,
}

/// The type of the last answer record of a message and the answer count;
/// None when a record runs past the message.
fn last_answer_type(msg: &[u8]) -> Option<(Rtype, u16)> {
    let count = Reply::of(msg)?.ancount;
    let (n, last) = request::answers(msg).fold((0u16, Rtype(0)), |(n, _), a| (n + 1, a.rtype));
    (n == count).then_some((last, count))
}

/// AXFRs `zone` from `addr` over TCP (request TSIG-signed with `key`, replies not
/// checked) and throws the records away: the primary's send rate without a
/// secondary's work. Fails on an error RCODE, a cut stream or after `limit`.
pub fn axfr_drain(
    addr: SocketAddr,
    zone: &str,
    key: &lode_tsig::Key,
    limit: Duration,
) -> Result<Drained, FleetError> {
    axfr_drain_over(addr, zone, key, limit, None)
}

/// [`axfr_drain`], over TLS (RFC 9103) when `tls` is given; the handshake
/// counts in the time.
pub fn axfr_drain_over(
    addr: SocketAddr,
    zone: &str,
    key: &lode_tsig::Key,
    limit: Duration,
    tls: Option<&lode_io::tls::TlsClient>,
) -> Result<Drained, FleetError> {
    use std::io::{Read, Write};
    let mut q = query(zone, Rtype::AXFR, 0x5a5a)?;
    let now = lode_io::clock::unix_now();
    lode_tsig::sign_request_vec(&mut q, key, now)
        .map_err(|e| FleetError::Config(format!("TSIG: {e:?}")))?;
    let start = Instant::now();
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(FleetError::socket)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(FleetError::socket)?;
    let mut framed = (q.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&q);
    let mut stream: Box<dyn Read> = match tls {
        None => {
            s.write_all(&framed).map_err(FleetError::socket)?;
            Box::new(s)
        }
        Some(c) => {
            let mut t = c.connect(s, "lode-bench").map_err(FleetError::socket)?;
            t.write_all(&framed).map_err(FleetError::socket)?;
            Box::new(t)
        }
    };
    let mut r = std::io::BufReader::with_capacity(1 << 20, &mut stream);
    let mut d = Drained {
        records: 0,
        messages: 0,
        bytes: 0,
        secs: 0.0,
    };
    let mut buf = vec![0u8; 65535];
    loop {
        if start.elapsed() > limit {
            return Err(FleetError::Server(format!(
                "AXFR from {addr}: not done within {limit:?}"
            )));
        }
        let mut len = [0u8; 2];
        r.read_exact(&mut len).map_err(|e| {
            FleetError::Server(format!(
                "AXFR from {addr} cut after {} records: {e}",
                d.records
            ))
        })?;
        let n = usize::from(u16::from_be_bytes(len));
        r.read_exact(&mut buf[..n]).map_err(|e| {
            FleetError::Server(format!(
                "AXFR from {addr} cut after {} records: {e}",
                d.records
            ))
        })?;
        let msg = &buf[..n];
        match Reply::of(msg) {
            Some(h) if h.rcode == 0 => {}
            Some(h) => {
                let rc = h.rcode;
                return Err(FleetError::Server(format!("AXFR from {addr}: RCODE {rc}")));
            }
            None => return Err(FleetError::Server(format!("AXFR from {addr}: not a reply"))),
        }
        let (last, an) = last_answer_type(msg)
            .ok_or_else(|| FleetError::Server(format!("AXFR from {addr}: malformed message")))?;
        d.messages += 1;
        d.bytes += n as u64;
        d.records += u64::from(an);
        // The closing SOA: the last record of a message, not the very first record.
        if last == Rtype::SOA && d.records > 1 {
            break;
        }
    }
    d.secs = start.elapsed().as_secs_f64();
    Ok(d)
}

/// One round of [`axfr_rounds`]: the transfer, and with a PID the server's
/// CPU seconds over it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AxfrRound {
    /// The transfer.
    pub drained: Drained,
    /// Server CPU seconds (utime + stime, 10 ms ticks).
    pub cpu: Option<f64>,
}

impl AxfrRound {
    /// Records per second.
    pub fn rate(&self) -> f64 {
        self.drained.records as f64 / self.drained.secs
    }

    /// Records per server CPU-second (None without a PID or CPU time).
    pub fn per_cpu(&self) -> Option<f64> {
        self.cpu
            .filter(|&c| c > 0.0)
            .map(|c| self.drained.records as f64 / c)
    }

    /// `N records, M messages, B bytes, S s, R records/s[, server CPU …]`.
    pub fn line(&self) -> String {
        let d = &self.drained;
        let mut line = format!(
            "{} records, {} messages, {} bytes, {:.3} s, {:.0} records/s",
            d.records,
            d.messages,
            d.bytes,
            d.secs,
            self.rate()
        );
        if let (Some(cpu), Some(r)) = (self.cpu, self.per_cpu()) {
            line.push_str(&format!(
                ", server CPU {cpu:.3} s, {r:.0} records per CPU-second"
            ));
        }
        line
    }
}

/// `rounds` AXFRs of `zone` from `addr` one after the other
/// ([`axfr_drain_over`]), the CPU time of `pid` read around each; `each`
/// sees every round as it ends.
#[allow(clippy::too_many_arguments)]
pub fn axfr_rounds(
    addr: SocketAddr,
    zone: &str,
    key: &lode_tsig::Key,
    limit: Duration,
    tls: Option<&lode_io::tls::TlsClient>,
    rounds: u32,
    pid: Option<u32>,
    mut each: impl FnMut(u32, &AxfrRound),
) -> Result<Vec<AxfrRound>, FleetError> {
    let ticks = |p: Option<u32>| p.map(crate::compare::sys::pid_cpu);
    let mut done = Vec::new();
    for round in 1..=rounds.max(1) {
        let before = ticks(pid);
        let drained = axfr_drain_over(addr, zone, key, limit, tls)?;
        let cpu = before
            .zip(ticks(pid))
            .map(|(b, a)| a.saturating_sub(b) as f64 / crate::compare::sys::TICKS);
        let r = AxfrRound { drained, cpu };
        each(round, &r);
        done.push(r);
    }
    Ok(done)
}

/// The median records/s of `rounds` and, where every round has one, the
/// median records per server CPU-second (the upper middle of an even count).
pub fn axfr_medians(rounds: &[AxfrRound]) -> (f64, Option<f64>) {
    let middle = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let rate = middle(rounds.iter().map(AxfrRound::rate).collect()).unwrap_or(0.0);
    let per_cpu: Vec<f64> = rounds.iter().filter_map(AxfrRound::per_cpu).collect();
    (rate, middle(per_cpu))
}

/// `median: R records/s[, P records per server CPU-second]`, as `lode-bench axfr` ends.
pub fn axfr_summary(rounds: &[AxfrRound]) -> String {
    let (rate, per_cpu) = axfr_medians(rounds);
    let mut s = format!("median: {rate:.0} records/s");
    if let Some(p) = per_cpu {
        s.push_str(&format!(", {p:.0} records per server CPU-second"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axfr_round_figures() {
        let round = |records: u64, secs: f64, cpu: Option<f64>| AxfrRound {
            drained: Drained {
                records,
                messages: 1,
                bytes: 10,
                secs,
            },
            cpu,
        };
        let rounds = [
            round(1000, 1.0, Some(0.5)),
            round(1000, 0.5, Some(0.25)),
            round(1000, 2.0, Some(0.0)),
        ];
        assert_eq!(axfr_medians(&rounds), (1000.0, Some(4000.0)));
        assert_eq!(
            axfr_summary(&rounds),
            "median: 1000 records/s, 4000 records per server CPU-second"
        );
        assert_eq!(
            rounds[0].line(),
            "1000 records, 1 messages, 10 bytes, 1.000 s, 1000 records/s, \
             server CPU 0.500 s, 2000 records per CPU-second"
        );
        assert_eq!(axfr_summary(&rounds[2..]), "median: 500 records/s");
    }

    #[test]
    fn query_and_reply_parsing() {
        let q = query("p1.example.", Rtype::TXT, 0x1234).expect("query");
        assert_eq!(&q[..2], &[0x12, 0x34]);
        assert_eq!(q.len(), 12 + 12 + 4);
        assert_eq!(Reply::of(&q), None, "a query is not a reply");
        // A reply: QR AA, NOERROR, one SOA answer (owner compressed to the question).
        let mut r = q.clone();
        r[2] = 0x84;
        r[7] = 1;
        r.extend_from_slice(&[0xC0, 12, 0, 6, 0, 1, 0, 0, 0, 60]);
        let rdata: Vec<u8> = [
            &[0u8][..],
            &[0u8][..],
            &7u32.to_be_bytes()[..],
            &[0u8; 16][..],
        ]
        .concat();
        r.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        r.extend_from_slice(&rdata);
        let h = Reply::of(&r).expect("a reply");
        assert_eq!((h.id, h.rcode, h.aa, h.ancount), (0x1234, 0, true, 1));
        assert_eq!(request::answer_soa_serial(&r), Some(7));
        // Cut short: no serial, no panic.
        for n in 0..r.len() {
            let _ = request::answer_soa_serial(&r[..n]);
            let _ = last_answer_type(&r[..n]);
        }
        assert_eq!(request::answer_soa_serial(&r[..r.len() - 17]), None);
        assert_eq!(last_answer_type(&r), Some((Rtype::SOA, 1)));
        assert_eq!(last_answer_type(&r[..r.len() - 1]), None);
    }
}
