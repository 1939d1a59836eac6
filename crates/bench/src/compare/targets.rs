//! The query comparison's targets as tables: the figures each target is judged by, computed from
//! the per-entry summaries, with "met" / "not met by N %" beside each bound.
//!
//! ```text
//!  summaries ─▶ Figures (ratios Lode/echo, Lode/max(Knot, NSD), 20M/500k, …)
//!            ─▶ Markdown section "Targets" and the JSON "targets" object
//! ```

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::report::ServerSummary;
use super::{CompareResult, QueryKind};

/// Target 1: Lode's CPU per answer ≤ this × the echo's.
pub const CPU_BOUND: f64 = 1.15;
/// Target 2: Lode's zero-loss rate ≥ this × the echo's.
pub const ECHO_RATE_BOUND: f64 = 0.9;
/// Target 2: Lode's zero-loss rate ≥ this × the better of Knot DNS and NSD.
pub const BEST_RATE_BOUND: f64 = 1.25;
/// Target 3: bytes per record on the seed 5 M set.
pub const BYTES_BOUND: f64 = 32.0;
/// Target 3: bytes per record when numbers share NAPTR RRsets.
pub const SHARED_BYTES_BOUND: f64 = 16.0;
/// Target 4: zero-loss rate on the large set ≥ this × the rate on the main set.
pub const FLAT_BOUND: f64 = 0.9;

/// The figures of the targets (None where not measured).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Target 1, per query kind: CPU µs per answer of Lode, echo, Knot, NSD.
    pub cpu: Vec<(QueryKind, [Option<f64>; 4])>,
    /// Target 2, existing then non-existing: zero-loss rates of Lode, echo, Knot, NSD.
    pub rates: [[Option<f64>; 4]; 2],
    /// Target 4: Lode's zero-loss rates on the main and the large set (existing,
    /// non-existing), and the large set's records.
    pub flat: Option<([f64; 2], [f64; 2], u64)>,
}

/// `a / b` when both are known and `b` is positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The larger of two optional values.
fn best(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl Figures {
    /// Lode/echo CPU per answer for `q`.
    pub fn cpu_over_echo(&self, q: QueryKind) -> Option<f64> {
        let v = self.cpu.iter().find(|c| c.0 == q)?.1;
        ratio(v[0], v[1])
    }

    /// Lode/echo zero-loss rate (0 existing, 1 non-existing).
    pub fn rate_over_echo(&self, i: usize) -> Option<f64> {
        ratio(self.rates[i][0], self.rates[i][1])
    }

    /// Lode / max(Knot, NSD) zero-loss rate (0 existing, 1 non-existing).
    pub fn rate_over_best(&self, i: usize) -> Option<f64> {
        ratio(self.rates[i][0], best(self.rates[i][2], self.rates[i][3]))
    }

    /// Lode's NXDOMAIN rate / its existing-name rate.
    pub fn nx_over_existing(&self) -> Option<f64> {
        ratio(self.rates[1][0], self.rates[0][0])
    }

    /// Large set / main set zero-loss rate (0 existing, 1 non-existing).
    pub fn flat_ratio(&self, i: usize) -> Option<f64> {
        self.flat
            .and_then(|(m, l, _)| ratio(Some(l[i]), Some(m[i])))
    }
}

/// The main-set summary of `software`.
fn main_of<'a>(s: &'a [ServerSummary], software: &str) -> Option<&'a ServerSummary> {
    s.iter().find(|x| x.set == "main" && x.software == software)
}

/// Computes the figures from the summaries.
pub fn figures(s: &[ServerSummary]) -> Figures {
    const WHO: [&str; 4] = ["lode", "echo", "knot", "nsd"];
    let cpu = QueryKind::ALL
        .into_iter()
        .map(|q| (q, WHO.map(|w| main_of(s, w).and_then(|x| x.fixed_us(q)))))
        .filter(|(_, v)| v.iter().any(Option::is_some))
        .collect();
    let rate = |w: &str, nx: bool| {
        main_of(s, w)
            .map(|x| if nx { x.nxdomain } else { x.existing })
            .filter(|v| *v > 0.0)
    };
    let rates = [WHO.map(|w| rate(w, false)), WHO.map(|w| rate(w, true))];
    let flat = main_of(s, "lode").and_then(|m| {
        let l = s
            .iter()
            .find(|x| x.set == "large" && x.software == "lode")?;
        Some((
            [m.existing, m.nxdomain],
            [l.existing, l.nxdomain],
            l.records,
        ))
    });
    Figures { cpu, rates, flat }
}

/// `v` against a bound: `1.07 (met)` or `0.80 (not met: 11 % short)`.
pub fn verdict(v: Option<f64>, bound: f64, higher_is_better: bool) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    let met = if higher_is_better {
        v >= bound
    } else {
        v <= bound
    };
    if met {
        format!("{v:.2} (met)")
    } else if higher_is_better {
        format!("{v:.2} (not met: {:.0} % short)", (1.0 - v / bound) * 100.0)
    } else {
        format!("{v:.2} (not met: {:.0} % over)", (v / bound - 1.0) * 100.0)
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The bytes-per-record bound for a summary (Lode's rows only).
fn bytes_bound(x: &ServerSummary) -> Option<f64> {
    match (x.software.as_str(), x.set.as_str()) {
        ("lode", "shared") => Some(SHARED_BYTES_BOUND),
        ("lode", _) => Some(BYTES_BOUND),
        _ => None,
    }
}

/// An RCODE's mnemonic.
fn rcode_name(r: Option<u16>) -> String {
    r.map_or("no reply".into(), |r| {
        lode_wire::rcode::name(r).into_owned()
    })
}

/// The Markdown section "Targets".
pub fn markdown(r: &CompareResult, s: &[ServerSummary]) -> String {
    let f = figures(s);
    let mut m = String::new();
    let _ = writeln!(m, "## Targets\n");

    // Target 1.
    let _ = writeln!(
        m,
        "### 1. Server CPU per answered query at the same offered rate\n\n\
         {} q/s offered for {} s per query kind, below every fast server's zero-loss rate; \
         server CPU = its threads' on-CPU time (schedstat) over the step ÷ valid answers. \
         Bound: Lode ≤ {CPU_BOUND} × the echo.\n",
        r.cpu_rate, r.cpu_step_secs
    );
    let main: Vec<&ServerSummary> = s
        .iter()
        .filter(|x| x.set == "main" && !x.fixed.is_empty())
        .collect();
    if main.is_empty() {
        let _ = writeln!(m, "Not measured (`--cpu-rate 0`).\n");
    } else {
        let _ = writeln!(
            m,
            "| server | existing µs | NXDOMAIN µs | outside µs | outside RCODE | lowest answered |"
        );
        let _ = writeln!(m, "|---|---|---|---|---|---|");
        for x in &main {
            let low = x.fixed.iter().map(|q| q.2).fold(1.0, f64::min);
            let late = x.fixed.iter().any(|q| !q.3);
            let _ = writeln!(
                m,
                "| {} | {} | {} | {} | {} | {:.2} %{} |",
                x.server,
                opt(x.fixed_us(QueryKind::Existing), 2),
                opt(x.fixed_us(QueryKind::NxDomain), 2),
                opt(x.fixed_us(QueryKind::Outside), 2),
                if x.software == "echo" {
                    "(echo)".into()
                } else {
                    rcode_name(x.outside_rcode)
                },
                low * 100.0,
                if late { " (tester behind)" } else { "" }
            );
        }
        let row = |name: &str, i: usize, bound: Option<f64>| -> String {
            let cells: Vec<String> = QueryKind::ALL
                .into_iter()
                .map(|q| {
                    let v = f.cpu.iter().find(|c| c.0 == q).map(|c| c.1);
                    let v = v.and_then(|v| ratio(v[0], v[i]));
                    match bound {
                        Some(b) => verdict(v, b, false),
                        None => opt(v, 2),
                    }
                })
                .collect();
            format!("| {name} | {} | | |", cells.join(" | "))
        };
        let _ = writeln!(m, "{}", row("**Lode/echo** (≤ 1.15)", 1, Some(CPU_BOUND)));
        let _ = writeln!(m, "{}", row("Lode/Knot", 2, None));
        let _ = writeln!(m, "{}", row("Lode/NSD", 3, None));
        let _ = writeln!(
            m,
            "\nA step with less than 99.9 % answered means the rate was above that server's \
             capacity and its figure is not comparable.\n"
        );
    }

    // Target 2.
    let _ = writeln!(
        m,
        "### 2. Zero-loss rate\n\nBounds: Lode ≥ {ECHO_RATE_BOUND} × the echo and ≥ \
         {BEST_RATE_BOUND} × the better of Knot DNS and NSD, for existing and non-existing \
         names; NXDOMAIN rate ≥ existing-name rate.\n"
    );
    let _ = writeln!(m, "| server | existing q/s | NXDOMAIN q/s |");
    let _ = writeln!(m, "|---|---|---|");
    for x in s.iter().filter(|x| x.set == "main") {
        let _ = writeln!(
            m,
            "| {}{} | {:.0} | {:.0} |",
            x.server,
            if x.tester_limited { " †" } else { "" },
            x.existing,
            x.nxdomain
        );
    }
    let _ = writeln!(
        m,
        "| **Lode/echo** (≥ 0.9) | {} | {} |",
        verdict(f.rate_over_echo(0), ECHO_RATE_BOUND, true),
        verdict(f.rate_over_echo(1), ECHO_RATE_BOUND, true)
    );
    let _ = writeln!(
        m,
        "| **Lode/max(Knot, NSD)** (≥ 1.25) | {} | {} |",
        verdict(f.rate_over_best(0), BEST_RATE_BOUND, true),
        verdict(f.rate_over_best(1), BEST_RATE_BOUND, true)
    );
    let _ = writeln!(
        m,
        "\nLode's NXDOMAIN rate / existing-name rate (≥ 1): {}.\n",
        verdict(f.nx_over_existing(), 1.0, true)
    );
    if s.iter().any(|x| x.tester_limited) {
        let _ = writeln!(
            m,
            "† some search of this server was limited by the tester (its CPU near 100 % or \
             behind schedule at the first failing step): its figure is a lower bound.\n"
        );
    }

    // Target 3.
    let _ = writeln!(
        m,
        "### 3. Memory per record\n\n(resident memory after every zone answered − resident \
         memory of the same binary serving a {}-record zone) ÷ records; resident = RSS, PSS \
         summed for NSD's processes. Bounds (Lode): ≤ {BYTES_BOUND} bytes on the seed 5 M \
         set, ≤ {SHARED_BYTES_BOUND} with shared NAPTR RRsets.\n",
        r.tiny_records
    );
    let _ = writeln!(
        m,
        "| entry | records | resident MiB | baseline MiB | bytes/record | bound |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|");
    for x in s.iter().filter(|x| x.software != "echo" && x.memory > 0.0) {
        let _ = writeln!(
            m,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {} |",
            x.server,
            x.records,
            x.memory / (1024.0 * 1024.0),
            x.tiny_memory / (1024.0 * 1024.0),
            x.bytes_per_record,
            bytes_bound(x).map_or(String::new(), |b| {
                format!("≤ {b:.0}: {}", verdict(Some(x.bytes_per_record), b, false))
            })
        );
    }

    // Target 4.
    let _ = writeln!(m, "\n### 4. Flat with size\n");
    match f.flat {
        Some((main, large, n)) => {
            let _ = writeln!(
                m,
                "Lode's zero-loss rates on {} and {n} records, interleaved in the same rounds. \
                 Bound: large ≥ {FLAT_BOUND} × main.\n",
                r.records
            );
            let _ = writeln!(m, "| Lode | existing q/s | NXDOMAIN q/s |");
            let _ = writeln!(m, "|---|---|---|");
            let _ = writeln!(
                m,
                "| {} records | {:.0} | {:.0} |",
                r.records, main[0], main[1]
            );
            let _ = writeln!(m, "| {n} records | {:.0} | {:.0} |", large[0], large[1]);
            let _ = writeln!(
                m,
                "| **ratio** (≥ 0.9) | {} | {} |",
                verdict(f.flat_ratio(0), FLAT_BOUND, true),
                verdict(f.flat_ratio(1), FLAT_BOUND, true)
            );
            let cpu: Vec<String> = s
                .iter()
                .filter(|x| x.software == "lode" && (x.set == "main" || x.set == "large"))
                .map(|x| {
                    format!(
                        "{} records: {} µs existing, {} µs NXDOMAIN",
                        x.records,
                        opt(x.fixed_us(QueryKind::Existing), 2),
                        opt(x.fixed_us(QueryKind::NxDomain), 2)
                    )
                })
                .collect();
            if !cpu.is_empty() {
                let _ = writeln!(
                    m,
                    "\nCPU per answer at {} q/s: {}.",
                    r.cpu_rate,
                    cpu.join("; ")
                );
            }
        }
        None => {
            let _ = writeln!(m, "Not measured (`--flat-records N`).");
        }
    }

    // Target 5.
    let _ = writeln!(
        m,
        "\n### 5. 100 M records\n\nNot part of this comparison (measured separately; see \
         BENCHMARKING.md)."
    );

    // Target 6.
    let _ = writeln!(
        m,
        "\n### 6. Start\n\nStart → first valid answer for a name in the last zone (process \
         start, parsing, building, binding); zone text ÷ that time; Lode's own log: its \
         \"read and built … loaded in\" line (else its zones' times summed). Parse MB/s on two cores and \
         the snapshot start are measured separately (BENCHMARKING.md).\n"
    );
    let _ = writeln!(
        m,
        "| entry | records | zone text MB | start → answer s | MB/s | Lode's log s |"
    );
    let _ = writeln!(m, "|---|---|---|---|---|---|");
    for x in s.iter().filter(|x| x.software != "echo") {
        let mb = x.zone_bytes as f64 / 1e6;
        let _ = writeln!(
            m,
            "| {} | {} | {:.1} | {:.2} | {} | {} |",
            x.server,
            x.records,
            mb,
            x.load_secs,
            if x.load_secs > 0.0 && mb > 0.0 {
                format!("{:.0}", mb / x.load_secs)
            } else {
                "-".into()
            },
            opt(x.logged_load_secs, 2)
        );
    }
    let _ = writeln!(m);
    m
}

/// The JSON object of the targets' figures.
pub fn json(s: &[ServerSummary]) -> Value {
    let f = figures(s);
    let kinds = |g: &dyn Fn(QueryKind) -> Option<f64>| -> Value {
        QueryKind::ALL
            .into_iter()
            .map(|q| (q.name().to_owned(), json!(g(q))))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let lode_bytes = |shared: bool| -> Value {
        s.iter()
            .filter(|x| x.software == "lode" && (x.set == "shared") == shared && x.memory > 0.0)
            .map(|x| json!({"entry": x.server, "records": x.records, "bytes_per_record": x.bytes_per_record}))
            .collect::<Vec<_>>()
            .into()
    };
    json!({
        "cpu_lode_over_echo": kinds(&|q| f.cpu_over_echo(q)),
        "cpu_bound": CPU_BOUND,
        "rate_lode_over_echo": {"existing": f.rate_over_echo(0), "nxdomain": f.rate_over_echo(1)},
        "rate_lode_over_best_of_knot_nsd": {"existing": f.rate_over_best(0), "nxdomain": f.rate_over_best(1)},
        "rate_bounds": {"echo": ECHO_RATE_BOUND, "best": BEST_RATE_BOUND},
        "lode_nxdomain_over_existing": f.nx_over_existing(),
        "lode_bytes_per_record": lode_bytes(false),
        "lode_shared_bytes_per_record": lode_bytes(true),
        "bytes_bounds": {"plain": BYTES_BOUND, "shared": SHARED_BYTES_BOUND},
        "flat": f.flat.map(|(m, l, n)| json!({
            "large_records": n,
            "main": {"existing": m[0], "nxdomain": m[1]},
            "large": {"existing": l[0], "nxdomain": l[1]},
            "ratio": {"existing": f.flat_ratio(0), "nxdomain": f.flat_ratio(1)},
        })),
        "flat_bound": FLAT_BOUND,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(software: &str, set: &str, existing: f64, nx: f64, cpu: [f64; 3]) -> ServerSummary {
        ServerSummary {
            server: if set == "main" {
                software.into()
            } else {
                format!("{software} {set}")
            },
            software: software.into(),
            set: set.into(),
            records: if set == "large" { 20_000_000 } else { 500_000 },
            existing,
            nxdomain: nx,
            fixed: QueryKind::ALL
                .into_iter()
                .zip(cpu)
                .filter(|(_, c)| *c > 0.0)
                .map(|(q, c)| (q, c, 1.0, true))
                .collect(),
            ..ServerSummary::default()
        }
    }

    fn set() -> Vec<ServerSummary> {
        vec![
            summary("echo", "main", 180_000.0, 176_000.0, [4.0, 4.0, 4.0]),
            summary("lode", "main", 170_000.0, 168_000.0, [4.4, 4.8, 4.2]),
            summary("knot", "main", 100_000.0, 90_000.0, [8.0, 8.8, 0.0]),
            summary("nsd", "main", 120_000.0, 150_000.0, [7.0, 7.0, 7.0]),
            summary("lode", "large", 153_000.0, 168_000.0, [5.0, 5.0, 5.0]),
        ]
    }

    #[test]
    fn ratios_against_echo_and_the_best_other() {
        let f = figures(&set());
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert!(close(f.cpu_over_echo(QueryKind::Existing), 1.1));
        assert!(close(f.cpu_over_echo(QueryKind::NxDomain), 1.2));
        assert!(close(f.rate_over_echo(0), 170.0 / 180.0));
        // Existing: Knot 100k, NSD 120k → best 120k; non-existing: NSD 150k.
        assert!(close(f.rate_over_best(0), 170.0 / 120.0));
        assert!(close(f.rate_over_best(1), 168.0 / 150.0));
        assert!(close(f.nx_over_existing(), 168.0 / 170.0));
        assert!(close(f.flat_ratio(0), 0.9));
        assert!(close(f.flat_ratio(1), 1.0));
        assert_eq!(f.flat.map(|x| x.2), Some(20_000_000));
        // Knot's outside figure is missing, not zero.
        let outside = f
            .cpu
            .iter()
            .find(|c| c.0 == QueryKind::Outside)
            .map(|c| c.1);
        assert_eq!(outside.map(|v| v[2]), Some(None));
    }

    #[test]
    fn missing_servers_give_no_ratio() {
        let only_lode = vec![summary("lode", "main", 1000.0, 1000.0, [5.0, 5.0, 5.0])];
        let f = figures(&only_lode);
        assert_eq!(f.rate_over_echo(0), None);
        assert_eq!(f.rate_over_best(1), None);
        assert_eq!(f.cpu_over_echo(QueryKind::Existing), None);
        assert_eq!(f.flat, None);
        assert_eq!(f.nx_over_existing(), Some(1.0));
    }

    #[test]
    fn verdicts() {
        assert_eq!(verdict(Some(1.10), 1.15, false), "1.10 (met)");
        assert_eq!(
            verdict(Some(1.38), 1.15, false),
            "1.38 (not met: 20 % over)"
        );
        assert_eq!(verdict(Some(0.72), 0.9, true), "0.72 (not met: 20 % short)");
        assert_eq!(verdict(Some(0.9), 0.9, true), "0.90 (met)");
        assert_eq!(verdict(None, 0.9, true), "-");
    }

    #[test]
    fn markdown_tables() {
        let r = CompareResult {
            records: 500_000,
            tiny_records: 10,
            cpu_rate: 50_000,
            cpu_step_secs: 5.0,
            ..CompareResult::default()
        };
        let mut s = set();
        s.push(ServerSummary {
            server: "lode 5M shared-NAPTR 100".into(),
            software: "lode".into(),
            set: "shared".into(),
            records: 5_000_000,
            memory: 100.0 * 1024.0 * 1024.0,
            tiny_memory: 5.0 * 1024.0 * 1024.0,
            bytes_per_record: 19.9,
            ..ServerSummary::default()
        });
        let md = markdown(&r, &s);
        assert!(md.contains("| lode | 4.40 | 4.80 | 4.20 |"), "{md}");
        assert!(
            md.contains(
                "| **Lode/echo** (≤ 1.15) | 1.10 (met) | 1.20 (not met: 4 % over) | 1.05 (met) |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| **Lode/max(Knot, NSD)** (≥ 1.25) | 1.42 (met) | 1.12 (not met: 10 % short) |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| **ratio** (≥ 0.9) | 0.90 (met) | 1.00 (met) |"),
            "{md}"
        );
        assert!(
            md.contains("| lode 5M shared-NAPTR 100 | 5000000 | 100.0 | 5.0 | 19.9 | ≤ 16: 19.90 (not met: 24 % over) |"),
            "{md}"
        );
        let j = json(&s);
        assert!(j["flat"]["ratio"]["existing"]
            .as_f64()
            .is_some_and(|v| (v - 0.9).abs() < 1e-9));
        assert_eq!(
            j["lode_shared_bytes_per_record"][0]["bytes_per_record"],
            19.9
        );
    }
}
