//! Metrics as an operator sees them: a real Prometheus (the Debian package)
//! scrapes `metrics-listen`; after a known load the test asks Prometheus'
//! HTTP API for the query counter, its rate during the load and the zone's
//! NXDOMAIN count, and compares `lode stats` and `lode stats --json`.
//!
//! Ports 16740-16749. Skips when `prometheus` is not installed, unless
//! `LODE_REQUIRE_PROMETHEUS=1` (set by scripts/test.sh once it installed it).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{udp_exchange, Query, TempDir};

const ZONE: &str = "$ORIGIN m.test.\n$TTL 300\n@ SOA ns1 hm 7 3600 600 86400 300\n@ NS ns1\n\
                    ns1 A 192.0.2.53\nwww A 192.0.2.80\nwww AAAA 2001:db8::80\n";

/// Queries sent, and of them for names that do not exist.
const LOAD: u64 = 2_000;
const NX_EVERY: u64 = 4;
/// Queries with a client cookie only, after the load.
const COOKIE_QUERIES: u64 = 10;
/// The load's pace: 200 queries/s for 10 s.
const PACE: Duration = Duration::from_millis(5);

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` from `addr`; (status, body).
fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_owned();
    Some((status, body))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus' value of the instant query `expr` at `time` (Unix seconds),
/// None while it has no sample (or, 503, is still starting).
fn prom_query(prom: SocketAddr, expr: &str, time: Option<f64>) -> Option<f64> {
    let mut path = format!("/api/v1/query?query={}", urlencode(expr));
    if let Some(t) = time {
        path.push_str(&format!("&time={t:.3}"));
    }
    let (status, body) = http_get(prom, &path)?;
    if status == 503 {
        return None;
    }
    assert_eq!(status, 200, "{path}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    let result = v["data"]["result"].as_array()?;
    let first = result.first()?;
    first["value"][1].as_str()?.parse().ok()
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn start_prometheus(dir: &Path, web: SocketAddr, target: SocketAddr) -> Killed {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: lode\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--web.listen-address={web}"))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    Killed(child)
}

/// The value of the `lode stats` line starting with `series`.
fn stats_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))?
        .trim()
        .parse()
        .ok()
}

#[test]
fn prometheus_scrapes_the_query_counters_and_their_rate() {
    if Command::new("prometheus")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("LODE_REQUIRE_PROMETHEUS").is_none(),
            "prometheus is required (LODE_REQUIRE_PROMETHEUS) but not installed"
        );
        eprintln!("SKIP: prometheus not installed (apt-get install prometheus)");
        return;
    }
    let dir = TempDir::new("metrics");
    let zone = dir.0.join("m.zone");
    std::fs::write(&zone, ZONE).unwrap();
    let dns = SocketAddr::from(([127, 0, 0, 1], 16740));
    let metrics = SocketAddr::from(([127, 0, 0, 1], 16741));
    let web = SocketAddr::from(([127, 0, 0, 1], 16742));
    let control = dir.0.join("lode.sock");
    let log = std::fs::File::create(dir.0.join("lode.log")).unwrap();
    // Rate limiting (at a rate the load never reaches) and cookies on, for
    // their counters.
    let config = dir.0.join("lode.toml");
    std::fs::write(&config, "[rrl]\nrate-limit = 100000\n\n[cookies]\n").unwrap();
    let _lode = Killed(
        Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(["serve", "--workers", "2", "--listen", &dns.to_string()])
            .arg("--config")
            .arg(&config)
            .args(["--metrics-listen", &metrics.to_string()])
            .arg("--control")
            .arg(&control)
            .arg("--zone")
            .arg(format!("m.test.={}", zone.display()))
            .stderr(log)
            .spawn()
            .expect("start lode"),
    );
    // Ready once the endpoint answers (no DNS query is sent before the load).
    wait_for("the metrics endpoint", Duration::from_secs(20), || {
        http_get(metrics, "/metrics").is_some_and(|(s, b)| s == 200 && b.contains("# EOF"))
    });
    let (status, _) = http_get(metrics, "/nothing-here").unwrap();
    assert_eq!(status, 404);

    let _prom = start_prometheus(&dir.0, web, metrics);
    wait_for("Prometheus to scrape Lode", Duration::from_secs(60), || {
        prom_query(web, "up{job=\"lode\"}", None) == Some(1.0)
    });

    // The load: LOAD queries at a steady pace, one in NX_EVERY for a name
    // that does not exist; every one answered.
    let started = now();
    let mut next = Instant::now();
    for i in 0..LOAD {
        let name = if i.is_multiple_of(NX_EVERY) {
            format!("nx{i}.m.test.")
        } else {
            "www.m.test.".to_owned()
        };
        let q = Query::new(&name, if i.is_multiple_of(2) { 1 } else { 28 }, 1).to_wire();
        let a = udp_exchange(dns, &q, Duration::from_secs(2)).expect("an answer");
        let want = if i.is_multiple_of(NX_EVERY) { 3 } else { 0 };
        assert_eq!(a[3] & 0x0F, want, "query {i}");
        next += PACE;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let ended = now();
    let offered = LOAD as f64 / (ended - started);

    // The counter, once Prometheus has scraped it after the load.
    let series = "lode_requests_total{transport=\"udp\",kind=\"query\"}";
    wait_for("the last scrape", Duration::from_secs(20), || {
        prom_query(web, series, None) == Some(LOAD as f64)
    });
    // Its rate in the middle of the load: what a dashboard shows.
    let mid = (started + ended) / 2.0;
    let rate = prom_query(web, &format!("rate({series}[4s])"), Some(mid))
        .expect("a rate in the middle of the load");
    eprintln!("offered {offered:.0} q/s, Prometheus rate() {rate:.0} q/s");
    assert!(
        (rate - offered).abs() < offered * 0.25,
        "Prometheus rate {rate:.1} q/s, offered {offered:.1} q/s"
    );
    let nx = prom_query(
        web,
        "lode_zone_responses_total{zone=\"m.test.\",rcode=\"NXDOMAIN\"}",
        None,
    );
    assert_eq!(nx, Some((LOAD / NX_EVERY) as f64));
    let aaaa = prom_query(
        web,
        "lode_query_types_total{transport=\"udp\",qtype=\"AAAA\"}",
        None,
    );
    assert_eq!(aaaa, Some((LOAD / 2) as f64));
    assert_eq!(
        prom_query(web, "lode_zone_serial{zone=\"m.test.\"}", None),
        Some(7.0)
    );
    assert!(prom_query(web, "process_resident_memory_bytes", None).is_some_and(|v| v > 1e6));
    assert_eq!(
        prom_query(web, "lode_zone_load_failed{zone=\"m.test.\"}", None),
        Some(0.0)
    );
    assert!(
        prom_query(web, "lode_zone_last_load_timestamp_seconds", None)
            .is_some_and(|t| t >= started - 60.0 && t <= ended)
    );
    dashboard_queries_work(web, metrics, mid);

    // Queries with a client cookie alone (UDP): BADCOOKIE with a fresh
    // cookie, counted as such; the load above had no COOKIE option.
    for i in 0..COOKIE_QUERIES {
        let mut q = Query::new("www.m.test.", 1, 1);
        q.edns = Some(common::Edns {
            size: 1232,
            version: 0,
            flags: 0,
            options: vec![(10, vec![i as u8; 8])],
        });
        let a = udp_exchange(dns, &q.to_wire(), Duration::from_secs(2)).expect("an answer");
        assert_eq!(a[3] & 0x0F, 23 & 0x0F, "BADCOOKIE's low bits");
    }

    // The same counters through the control socket.
    let stats = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("stats")
        .arg("--control")
        .arg(&control)
        .output()
        .unwrap();
    assert!(stats.status.success());
    let text = String::from_utf8(stats.stdout).unwrap();
    assert_eq!(
        stats_value(&text, series),
        Some((LOAD + COOKIE_QUERIES) as f64),
        "{text}"
    );
    assert_eq!(
        stats_value(
            &text,
            "lode_responses_total{transport=\"udp\",rcode=\"NXDOMAIN\"}"
        ),
        Some((LOAD / NX_EVERY) as f64)
    );
    assert_eq!(
        stats_value(&text, "lode_cookies_total{result=\"badcookie\"}"),
        Some(COOKIE_QUERIES as f64),
        "{text}"
    );
    assert_eq!(
        stats_value(
            &text,
            "lode_responses_total{transport=\"udp\",rcode=\"BADCOOKIE\"}"
        ),
        Some(COOKIE_QUERIES as f64)
    );
    assert!(
        !text.contains("result=\"absent\""),
        "queries without a cookie are not counted"
    );
    let status = Command::new(env!("CARGO_BIN_EXE_lode"))
        .arg("status")
        .arg("--control")
        .arg(&control)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(&format!("metrics http://{metrics}/metrics")),
        "{status}"
    );
    let json = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["stats", "--json", "--control"])
        .arg(&control)
        .output()
        .unwrap();
    assert!(json.status.success());
    let families: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let requests = families
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "lode_requests_total")
        .expect("lode_requests_total in the JSON");
    assert_eq!(requests["type"], "counter");
    let udp_query = requests["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["labels"]["transport"] == "udp" && s["labels"]["kind"] == "query")
        .unwrap();
    assert_eq!(udp_query["value"], LOAD + COOKIE_QUERIES);
}

/// Every query of the shipped Grafana dashboard is valid PromQL that gives
/// a result in the middle of the load, and every metric it names is exposed.
fn dashboard_queries_work(prom: SocketAddr, metrics: SocketAddr, at: f64) {
    let path = common::repo_root().join("contrib/grafana/lode-dashboard.json");
    let dash: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let (_, exposed) = http_get(metrics, "/metrics").unwrap();
    let mut checked = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$instance", ".*")
                .replace("$__rate_interval", "4s");
            for name in expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("lode_") || w.starts_with("process_"))
            {
                assert!(
                    exposed.contains(&format!("\n{name}")),
                    "panel {:?}: {name} is not exposed",
                    panel["title"]
                );
            }
            let value = prom_query(prom, &expr, Some(at));
            assert!(
                value.is_some(),
                "panel {:?}: {expr} gives no result",
                panel["title"]
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} dashboard queries");
}

/// A taken metrics port does not stop DNS: an error in the log and in
/// `lode status`, and the zone answered.
#[test]
fn a_taken_metrics_port_is_a_clear_error_and_dns_still_answers() {
    let dir = TempDir::new("metrics-port");
    let holder = std::net::TcpListener::bind("127.0.0.1:16744").unwrap();
    let zone = dir.0.join("m.zone");
    std::fs::write(&zone, ZONE).unwrap();
    let dns = SocketAddr::from(([127, 0, 0, 1], 16743));
    let control = dir.0.join("lode.sock");
    let log_path = dir.0.join("lode.log");
    let mut lode = Killed(
        Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(["serve", "--listen", &dns.to_string()])
            .args(["--metrics-listen", "127.0.0.1:16744"])
            .arg("--control")
            .arg(&control)
            .arg("--zone")
            .arg(format!("m.test.={}", zone.display()))
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let q = Query::new("www.m.test.", 1, 1).to_wire();
    wait_for("the zone to answer", Duration::from_secs(20), || {
        udp_exchange(dns, &q, Duration::from_millis(300)).is_some_and(|a| a[3] & 0x0F == 0)
    });
    assert!(lode.0.try_wait().unwrap().is_none(), "lode stopped");
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.contains("ERROR") && log.contains("metrics-listen 127.0.0.1:16744: cannot bind"),
        "{log}"
    );
    let status = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["status", "--control"])
        .arg(&control)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("metrics NOT served: metrics-listen 127.0.0.1:16744: cannot bind"),
        "{status}"
    );
    drop(holder);
}

/// The rare-event counters: an UPDATE applied (and its journal commit), one
/// refused (no ACL allows it), an AXFR refused — sent by nsupdate and dig,
/// read back with `lode stats`.
#[test]
fn updates_and_refusals_are_counted() {
    for tool in ["nsupdate", "dig"] {
        if Command::new(tool).arg("-V").output().is_err() {
            assert!(
                std::env::var_os("LODE_REQUIRE_PROMETHEUS").is_none(),
                "{tool} missing (package bind9-dnsutils)"
            );
            eprintln!("SKIP: {tool} not installed");
            return;
        }
    }
    let dir = TempDir::new("metrics-events");
    std::fs::write(dir.0.join("m.zone"), ZONE).unwrap();
    std::fs::write(dir.0.join("o.zone"), ZONE.replace("m.test.", "o.test.")).unwrap();
    let control = dir.0.join("lode.sock");
    let config = dir.0.join("lode.toml");
    std::fs::write(
        &config,
        format!(
            "journal-dir = \"journal\"\ncontrol = \"{}\"\nzonefile-sync = -1\n\n\
             [[acl]]\nid = \"local\"\naddress = [\"127.0.0.1\"]\naction = [\"update\"]\n\n\
             [[zone]]\nname = \"m.test.\"\nfile = \"m.zone\"\nacl = [\"local\"]\n\n\
             [[zone]]\nname = \"o.test.\"\nfile = \"o.zone\"\n",
            control.display()
        ),
    )
    .unwrap();
    let dns = SocketAddr::from(([127, 0, 0, 1], 16745));
    let _lode = Killed(
        Command::new(env!("CARGO_BIN_EXE_lode"))
            .args(["serve", "--listen", &dns.to_string(), "--config"])
            .arg(&config)
            .stderr(std::fs::File::create(dir.0.join("lode.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let q = Query::new("www.m.test.", 1, 1).to_wire();
    wait_for("the zones to answer", Duration::from_secs(20), || {
        udp_exchange(dns, &q, Duration::from_millis(300)).is_some_and(|a| a[3] & 0x0F == 0)
    });
    let nsupdate = |zone: &str| {
        let mut child = Command::new("nsupdate")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        write!(
            child.stdin.take().unwrap(),
            "server 127.0.0.1 {}\nzone {zone}\nupdate add new.{zone} 300 A 192.0.2.9\nsend\n",
            dns.port()
        )
        .unwrap();
        child.wait_with_output().unwrap()
    };
    assert!(nsupdate("m.test.").status.success(), "the allowed update");
    assert!(!nsupdate("o.test.").status.success(), "no ACL: refused");
    let axfr = Command::new("dig")
        .args([
            "@127.0.0.1",
            "-p",
            &dns.port().to_string(),
            "m.test.",
            "AXFR",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&axfr.stdout).contains("Transfer failed"));
    let stats = Command::new(env!("CARGO_BIN_EXE_lode"))
        .args(["stats", "--control"])
        .arg(&control)
        .output()
        .unwrap();
    let text = String::from_utf8(stats.stdout).unwrap();
    let value = |series: &str| stats_value(&text, series);
    assert_eq!(
        value("lode_updates_total{result=\"applied\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value("lode_updates_total{result=\"refused\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(value("lode_journal_commits_total"), Some(1.0), "{text}");
    // The update's group was made durable by the commit log's one sync.
    assert_eq!(value("lode_commit_log_syncs_total"), Some(1.0), "{text}");
    assert_eq!(
        value("lode_transfers_out_total{type=\"refused\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value("lode_zone_serial{zone=\"m.test.\"}"),
        Some(8.0),
        "{text}"
    );
    assert_eq!(
        value("lode_requests_total{transport=\"tcp\",kind=\"axfr\"}"),
        Some(1.0),
        "{text}"
    );
}
