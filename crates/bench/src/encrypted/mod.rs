//! DNS over TLS and over QUIC from the client's side: new
//! handshakes per second — a fresh connection, a full handshake (no session
//! resumption) and one query each — and DoQ answers per second over
//! persistent connections, a stream per query (RFC 9250 §4.2).
//!
//! ```text
//!  handshakes: workers × loop { connect ─ full handshake ─ 1 query ─ answer checked ─ close }
//!  doq:        connections × in-flight streams × loop { open stream ─ query ─ FIN ─ answer checked }
//! ```
//!
//! Every loop stops at its deadline; a connection or answer that does not
//! come within [`TIMEOUT`] counts as a failure. Servers are authenticated by
//! nothing (opportunistic TLS): this measures the server's work, not the
//! client's trust.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lode_io::tls::{ServerAuth, TlsClient};

use crate::query::{check_reply, Expect, QuerySet, Verdict};

pub mod peers;

/// How long one connection, handshake or answer may take.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// The transport of a handshake run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secure {
    /// DNS over TLS (RFC 7858), ALPN `dot`.
    Tls,
    /// DNS over QUIC (RFC 9250), ALPN `doq`.
    Quic,
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    /// Connections whose handshake completed (DoQ rate: connections opened).
    pub handshakes: u64,
    /// Answers received and valid for their query.
    pub answers: u64,
    /// Connections, handshakes or answers that failed or timed out.
    pub failures: u64,
    /// Seconds the run took.
    pub secs: f64,
}

impl Tally {
    /// `WHAT: N handshakes, A answers, F failures in S s: H handshakes/s, A
    /// answers/s`, and with the server's CPU seconds `cpu` its µs per `per`
    /// (handshakes or answers).
    pub fn line(&self, what: &str, per: u64, cpu: Option<f64>) -> String {
        let mut s = format!(
            "{what}: {} handshakes, {} answers, {} failures in {:.2} s: {:.0} handshakes/s, {:.0} answers/s",
            self.handshakes,
            self.answers,
            self.failures,
            self.secs,
            self.handshakes as f64 / self.secs,
            self.answers as f64 / self.secs
        );
        if let Some(c) = cpu.filter(|_| per > 0) {
            s.push_str(&format!(
                ", server CPU {c:.2} s, {:.1} µs each",
                c * 1e6 / per as f64
            ));
        }
        s
    }
}

/// `WHAT: N idle connections held`, and with the server's resident KiB
/// before and with them open `: server RSS B -> P KiB, X bytes each`.
pub fn idle_line(what: &str, held: usize, rss_kib: Option<(u64, u64)>) -> String {
    let mut text = format!("{what}: {held} idle connections held");
    if let Some((before, peak)) = rss_kib.filter(|_| held > 0) {
        text.push_str(&format!(
            ": server RSS {before} -> {peak} KiB, {} bytes each",
            peak.saturating_sub(before) * 1024 / held as u64
        ));
    }
    text
}

/// A DoT client (ALPN `dot`) making full handshakes and authenticating nothing.
pub fn dot_client() -> Result<TlsClient, String> {
    client(lode_io::tls::ALPN_DOT)
}

/// Counters shared by a run's workers.
#[derive(Default)]
struct Counts {
    handshakes: AtomicU64,
    answers: AtomicU64,
    failures: AtomicU64,
}

impl Counts {
    fn tally(&self, started: Instant) -> Tally {
        Tally {
            handshakes: self.handshakes.load(Ordering::Relaxed),
            answers: self.answers.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            secs: started.elapsed().as_secs_f64(),
        }
    }
}

/// A TLS client that makes full handshakes and checks nothing, offering
/// `alpn`.
fn client(alpn: &[u8]) -> Result<TlsClient, String> {
    Ok(TlsClient::new(ServerAuth::Opportunistic, &[alpn], None)?.without_resumption())
}

/// True when `reply` answers query `i` of `set` (any RCODE).
fn valid(set: &QuerySet, i: usize, reply: &[u8]) -> bool {
    check_reply(reply, set.question(i), Expect::Any) == Verdict::Valid
}

/// `workers` clients making new connections to `addr` for `duration`, each
/// a full handshake and one query of `set` (in turn).
pub fn handshakes(
    addr: SocketAddr,
    how: Secure,
    set: &QuerySet,
    workers: usize,
    duration: Duration,
) -> Result<Tally, String> {
    if set.is_empty() {
        return Err("no query".into());
    }
    let counts = Arc::new(Counts::default());
    let started = Instant::now();
    let deadline = started + duration;
    match how {
        Secure::Tls => {
            let tls = client(lode_io::tls::ALPN_DOT)?;
            std::thread::scope(|s| {
                for w in 0..workers.max(1) {
                    let (tls, counts) = (&tls, &counts);
                    s.spawn(move || {
                        let mut i = w;
                        while Instant::now() < deadline {
                            dot_once(addr, tls, set, i % set.len(), counts);
                            i += workers;
                        }
                    });
                }
            });
        }
        Secure::Quic => {
            let rt = runtime()?;
            let set = Arc::new(set.clone());
            rt.block_on(async {
                let endpoint = quic_endpoint(addr)?;
                let mut tasks = Vec::new();
                for w in 0..workers.max(1) {
                    let (endpoint, counts, set) = (endpoint.clone(), counts.clone(), set.clone());
                    tasks.push(tokio::spawn(async move {
                        let mut i = w;
                        while Instant::now() < deadline {
                            doq_once(&endpoint, addr, &set, i % set.len(), &counts).await;
                            i += workers;
                        }
                    }));
                }
                for t in tasks {
                    let _ = t.await;
                }
                endpoint.wait_idle().await;
                Ok::<(), String>(())
            })?;
        }
    }
    Ok(counts.tally(started))
}

/// One DoT connection: handshake, query `i`, answer, closed at once (RST:
/// no TIME_WAIT left on the client's ports).
fn dot_once(addr: SocketAddr, tls: &TlsClient, set: &QuerySet, i: usize, counts: &Counts) {
    use std::io::{Read, Write};
    let done = (|| -> std::io::Result<bool> {
        let tcp = std::net::TcpStream::connect_timeout(&addr, TIMEOUT)?;
        tcp.set_read_timeout(Some(TIMEOUT))?;
        tcp.set_write_timeout(Some(TIMEOUT))?;
        tcp.set_nodelay(true)?;
        let _ = nix::sys::socket::setsockopt(
            &tcp,
            nix::sys::socket::sockopt::Linger,
            &nix::libc::linger {
                l_onoff: 1,
                l_linger: 0,
            },
        );
        let mut s = tls.connect(tcp, "lode-bench")?;
        counts.handshakes.fetch_add(1, Ordering::Relaxed);
        let q = set.get(i);
        let mut framed = Vec::with_capacity(q.len() + 2);
        framed.extend_from_slice(&(q.len() as u16).to_be_bytes());
        framed.extend_from_slice(q);
        s.write_all(&framed)?;
        let mut len = [0u8; 2];
        s.read_exact(&mut len)?;
        let mut reply = vec![0u8; usize::from(u16::from_be_bytes(len))];
        s.read_exact(&mut reply)?;
        Ok(valid(set, i, &reply))
    })();
    match done {
        Ok(true) => counts.answers.fetch_add(1, Ordering::Relaxed),
        _ => counts.failures.fetch_add(1, Ordering::Relaxed),
    };
}

/// A single-threaded tokio runtime (the client stays on the CPU it is
/// pinned to).
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// A QUIC client endpoint toward `addr` (full handshakes, ALPN `doq`).
fn quic_endpoint(addr: SocketAddr) -> Result<quinn::Endpoint, String> {
    let tls = client(lode_io::quic::ALPN_DOQ)?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls.config())
        .map_err(|e| format!("QUIC client: {e}"))?;
    let local: SocketAddr = if addr.is_ipv6() {
        "[::1]:0".parse().expect("address")
    } else {
        "127.0.0.1:0".parse().expect("address")
    };
    let mut endpoint = quinn::Endpoint::client(local).map_err(|e| format!("QUIC client: {e}"))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(TIMEOUT).expect("idle timeout"),
    ));
    // Idle connections held open (`doq_hold`) stay alive past the server's
    // idle timeout.
    transport.keep_alive_interval(Some(Duration::from_secs(1)));
    config.transport_config(Arc::new(transport));
    endpoint.set_default_client_config(config);
    Ok(endpoint)
}

/// One DoQ connection: handshake, query `i` on a stream, answer, closed.
async fn doq_once(
    endpoint: &quinn::Endpoint,
    addr: SocketAddr,
    set: &QuerySet,
    i: usize,
    counts: &Counts,
) {
    let connected = async {
        let connecting = endpoint.connect(addr, "lode-bench").ok()?;
        tokio::time::timeout(TIMEOUT, connecting).await.ok()?.ok()
    }
    .await;
    let Some(conn) = connected else {
        counts.failures.fetch_add(1, Ordering::Relaxed);
        return;
    };
    counts.handshakes.fetch_add(1, Ordering::Relaxed);
    let ok = doq_query(&conn, set, i).await;
    conn.close(quinn::VarInt::from_u32(0), b"");
    let counter = if ok {
        &counts.answers
    } else {
        &counts.failures
    };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Query `i` of `set` on a new stream of `conn` (ID 0, 2-byte length, FIN;
/// RFC 9250 §4.2): true when its answer came and is valid.
async fn doq_query(conn: &quinn::Connection, set: &QuerySet, i: usize) -> bool {
    let exchange = async {
        let (mut send, mut recv) = conn.open_bi().await.ok()?;
        let q = set.get(i);
        let mut framed = Vec::with_capacity(q.len() + 2);
        framed.extend_from_slice(&(q.len() as u16).to_be_bytes());
        framed.extend_from_slice(q);
        send.write_all(&framed).await.ok()?;
        send.finish().ok()?;
        let reply = recv.read_to_end(65537).await.ok()?;
        let body = reply.get(2..)?;
        Some(valid(set, i, body))
    };
    matches!(
        tokio::time::timeout(TIMEOUT, exchange).await,
        Ok(Some(true))
    )
}

/// DoQ answers per second: `connections` connections to `addr`, each with
/// `inflight` streams at a time, asking the queries of `set` in turn for
/// `duration`.
pub fn doq_rate(
    addr: SocketAddr,
    set: &QuerySet,
    connections: usize,
    inflight: usize,
    duration: Duration,
) -> Result<Tally, String> {
    if set.is_empty() {
        return Err("no query".into());
    }
    let counts = Arc::new(Counts::default());
    let rt = runtime()?;
    let set = Arc::new(set.clone());
    let started = Instant::now();
    let deadline = started + duration;
    rt.block_on(async {
        let endpoint = quic_endpoint(addr)?;
        let mut tasks = Vec::new();
        for c in 0..connections.max(1) {
            let connecting = endpoint
                .connect(addr, "lode-bench")
                .map_err(|e| format!("DoQ connection to {addr}: {e}"))?;
            let conn = tokio::time::timeout(TIMEOUT, connecting)
                .await
                .map_err(|_| format!("DoQ connection to {addr}: timed out"))?
                .map_err(|e| format!("DoQ connection to {addr}: {e}"))?;
            counts.handshakes.fetch_add(1, Ordering::Relaxed);
            for f in 0..inflight.max(1) {
                let (conn, counts, set) = (conn.clone(), counts.clone(), set.clone());
                let stride = connections.max(1) * inflight.max(1);
                let mut i = c * inflight.max(1) + f;
                tasks.push(tokio::spawn(async move {
                    while Instant::now() < deadline {
                        let counter = if doq_query(&conn, &set, i % set.len()).await {
                            &counts.answers
                        } else {
                            &counts.failures
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        i += stride;
                    }
                }));
            }
        }
        for t in tasks {
            let _ = t.await;
        }
        endpoint.close(quinn::VarInt::from_u32(0), b"");
        Ok::<(), String>(())
    })?;
    Ok(counts.tally(started))
}

/// `connections` DoQ connections to `addr`, each held idle (QUIC
/// keep-alives only) after one query; once all are open and a second has
/// passed, `at_peak` is called with how many are, then every one is
/// closed. Returns that number.
pub fn doq_hold(
    addr: SocketAddr,
    set: &QuerySet,
    connections: usize,
    at_peak: impl FnOnce(usize),
) -> Result<usize, String> {
    if set.is_empty() {
        return Err("no query".into());
    }
    let counts = Counts::default();
    let rt = runtime()?;
    rt.block_on(async {
        let endpoint = quic_endpoint(addr)?;
        let mut held = Vec::with_capacity(connections);
        for i in 0..connections {
            let connected = async {
                let connecting = endpoint.connect(addr, "lode-bench").ok()?;
                tokio::time::timeout(TIMEOUT, connecting).await.ok()?.ok()
            }
            .await;
            if let Some(conn) = connected {
                if doq_query(&conn, set, i % set.len()).await {
                    held.push(conn);
                }
            }
        }
        counts
            .handshakes
            .store(held.len() as u64, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(1)).await;
        at_peak(held.len());
        for c in &held {
            c.close(quinn::VarInt::from_u32(0), b"");
        }
        endpoint.wait_idle().await;
        Ok::<(), String>(())
    })?;
    Ok(counts.handshakes.load(Ordering::Relaxed) as usize)
}

/// `connections` DoT connections to `addr`, opened one after the other,
/// each a full handshake and then held idle (no query: a client that
/// connected and waits); once all are open and a second has passed,
/// `at_peak` is called with how many are, then every one is closed.
/// Returns that number and the handshakes per second of opening them.
pub fn dot_hold(
    addr: SocketAddr,
    connections: usize,
    at_peak: impl FnOnce(usize),
) -> Result<(usize, f64), String> {
    crate::rate::raise_nofile(connections as u64 + 64).map_err(|e| e.to_string())?;
    let tls = dot_client()?;
    let started = Instant::now();
    let mut held = Vec::with_capacity(connections);
    for _ in 0..connections {
        let Ok(tcp) = std::net::TcpStream::connect_timeout(&addr, TIMEOUT) else {
            continue;
        };
        let _ = tcp.set_read_timeout(Some(TIMEOUT));
        let _ = tcp.set_write_timeout(Some(TIMEOUT));
        if let Ok(s) = tls.connect(tcp, "lode-bench") {
            held.push(s);
        }
    }
    let rate = held.len() as f64 / started.elapsed().as_secs_f64().max(1e-9);
    std::thread::sleep(Duration::from_secs(1));
    at_peak(held.len());
    let n = held.len();
    drop(held);
    Ok((n, rate))
}
