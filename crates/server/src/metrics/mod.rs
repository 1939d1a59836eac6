//! Metrics: counters kept where the work happens and summed when read, by a
//! Prometheus scrape (`metrics-listen`, [`http`]) or `lode stats` (the
//! control socket).
//!
//! ```text
//!  UDP worker / TCP thread ──▶ its own Worker block (worker.rs; plain stores, no shared line)
//!  transports (lode-io)    ──▶ their per-worker UDP counters, the TCP registry's counters
//!  update, transfer, NOTIFY ─▶ Events (events.rs: atomics, written per update batch / transfer)
//!                                    │ read and summed on each scrape
//!  GET /metrics ─▶ Scrape::families ─┴─▶ zones, RRL, dnstap, process (/proc) ─▶ OpenMetrics text
//!  lode stats [--json] ─▶ the same families as lines or JSON
//! ```
//!
//! Nothing on the query path allocates, locks or writes a line another thread
//! writes: a thread registers its block on its first request and then only
//! bumps its own counters.

pub mod events;
pub mod http;
pub(crate) mod process;
pub mod worker;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use events::Events;
pub use worker::{Observed, Worker};

/// The per-thread counter blocks of one server.
#[derive(Debug)]
pub struct Metrics {
    id: u64,
    /// False with `query-counters = false`: requests are not counted.
    pub(crate) enabled: bool,
    workers: Mutex<Vec<Arc<Worker>>>,
}

impl Metrics {
    /// An empty set of counters, told apart from any other server's in the
    /// same process.
    pub fn new() -> Arc<Metrics> {
        Metrics::with_counting(true)
    }

    /// Counters that count requests, or (false) that never do.
    pub fn with_counting(enabled: bool) -> Arc<Metrics> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Arc::new(Metrics {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            enabled,
            workers: Mutex::new(Vec::new()),
        })
    }

    fn id(&self) -> u64 {
        self.id
    }

    fn register(&self) -> Arc<Worker> {
        let w = Arc::new(Worker::new(self.id));
        self.workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(w.clone());
        w
    }

    /// Counts one request on this thread's block.
    #[inline]
    pub fn record(&self, observed: &Observed<'_>) {
        if self.enabled {
            worker::with_local(self, |w| w.record(observed));
        }
    }

    /// Every worker's block of counters, to be summed.
    pub(crate) fn workers(&self) -> Vec<Arc<Worker>> {
        self.workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Whether a family is a counter or a gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (exposed with `_total`).
    Counter,
    /// A level.
    Gauge,
}

/// A value: counts are integers, times and sizes may not be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A count.
    Int(u64),
    /// Seconds, ratios.
    Float(f64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
        }
    }
}

/// One series: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label names and values.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: Value,
}

/// A metric family: name (without `_total`), help, kind, series.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The name, `lode_…` or `process_…`.
    pub name: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// The series.
    pub samples: Vec<Sample>,
}

impl Family {
    /// An empty family.
    pub(crate) fn new(name: &'static str, help: &'static str, kind: Kind) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    /// The family with one more sample.
    pub(crate) fn with(mut self, labels: &[(&'static str, &str)], value: Value) -> Family {
        self.push(labels, value);
        self
    }

    /// Adds a sample.
    pub(crate) fn push(&mut self, labels: &[(&'static str, &str)], value: Value) {
        self.samples.push(Sample {
            labels: labels.iter().map(|&(k, v)| (k, v.to_owned())).collect(),
            value,
        });
    }

    /// The name as exposed: counters end in `_total`.
    pub fn exposed_name(&self) -> String {
        match self.kind {
            Kind::Counter => format!("{}_total", self.name),
            Kind::Gauge => self.name.to_owned(),
        }
    }
}

/// What a scrape reads: every family, summed now (the server's is
/// `control::scrape::Scrape`, which reads the parts above these counters).
pub trait Families: Send + Sync + std::fmt::Debug + 'static {
    /// Reads and sums every counter now.
    fn families(&self) -> Vec<Family>;
}

/// The families as `name{labels} value` lines (for `lode stats`).
pub fn to_text(families: &[Family]) -> String {
    let mut s = String::new();
    for f in families {
        let name = f.exposed_name();
        for sample in &f.samples {
            s.push_str(&name);
            if !sample.labels.is_empty() {
                s.push('{');
                for (i, (k, v)) in sample.labels.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "{k}={v:?}");
                }
                s.push('}');
            }
            let _ = writeln!(s, " {}", sample.value);
        }
    }
    s
}

/// The families as JSON (for `lode stats --json`): an array of
/// `{"name", "type", "help", "samples": [{"labels": {…}, "value"}]}`.
pub fn to_json(families: &[Family]) -> String {
    let families: Vec<serde_json::Value> = families
        .iter()
        .map(|f| {
            let samples: Vec<serde_json::Value> = f
                .samples
                .iter()
                .map(|s| {
                    let labels: serde_json::Map<String, serde_json::Value> = s
                        .labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(v.as_str())))
                        .collect();
                    let value = match s.value {
                        Value::Int(v) => serde_json::Value::from(v),
                        Value::Float(v) => serde_json::Value::from(v),
                    };
                    serde_json::json!({ "labels": labels, "value": value })
                })
                .collect();
            serde_json::json!({
                "name": f.exposed_name(),
                "type": match f.kind { Kind::Counter => "counter", Kind::Gauge => "gauge" },
                "help": f.help,
                "samples": samples,
            })
        })
        .collect();
    serde_json::Value::Array(families).to_string()
}
