//! The settings a comparison records in its report: figures as JSON numbers,
//! lists as arrays, text only where the value is text (the machine, kernel and
//! sysctls are in the provenance block).

use serde_json::{json, Value};

use super::servers::Kind;
use super::{metrics, CompareConfig};

/// Server names.
fn names(kinds: &[Kind]) -> Vec<&'static str> {
    kinds.iter().map(|k| k.name()).collect()
}

/// The settings recorded in the report.
pub(super) fn settings(cfg: &CompareConfig) -> Vec<(String, Value)> {
    let mut s: Vec<(&str, Value)> = vec![
        ("records", json!(cfg.records)),
        ("zones", json!(cfg.zones)),
        // Leading digits, not a quantity: "0161" differs from "161".
        ("prefix", json!(cfg.prefix.clone().unwrap_or_default())),
        ("runs", json!(cfg.runs)),
        ("step_secs", json!(cfg.step.as_secs_f64())),
        ("search_high", json!(cfg.high)),
        ("search_resolution", json!(cfg.resolution)),
        ("timeout_ms", json!(cfg.timeout.as_millis() as u64)),
        ("clients", json!(cfg.clients)),
        ("client_step_secs", json!(cfg.client_step.as_secs_f64())),
        ("server_workers", json!(cfg.server_workers)),
        ("tester_threads", json!(cfg.tester_threads)),
        ("ports_per_thread", json!(cfg.ports)),
        ("server_cpu", json!(cfg.server_cpu)),
        ("tester_cpu", json!(cfg.tester_cpu)),
        ("socket_buffer_bytes", json!(cfg.socket_buffer)),
        ("max_other_load", json!(cfg.max_other_load)),
        ("max_steal", json!(cfg.max_steal)),
        ("cpu_step_rate", json!(cfg.cpu_rate)),
        ("cpu_step_secs", json!(cfg.cpu_step.as_secs_f64())),
        ("flat_records", json!(cfg.flat_records)),
        ("flat_servers", json!(names(&cfg.flat_servers))),
        ("memory_records", json!(cfg.memory_records)),
        ("memory_servers", json!(names(&cfg.memory_servers))),
        ("shared_naptr", json!(cfg.shared_naptr)),
    ];
    if cfg.metrics_runs > 0 {
        s.push((
            "metrics_overhead",
            json!({
                "rounds": cfg.metrics_runs,
                "endpoint": format!("127.0.0.1:{}", cfg.base_port + metrics::PORT_OFFSET),
                "scrape_every_secs": metrics::SCRAPE_EVERY.as_secs_f64(),
            }),
        ));
    }
    s.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// A setting's value as text for report.md (strings without quotes, null as `-`).
pub fn show(v: &Value) -> String {
    match v {
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        Value::Array(a) if a.is_empty() => "-".into(),
        Value::Array(a) => a.iter().map(show).collect::<Vec<_>>().join(", "),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| format!("{k} {}", show(v)))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_text() {
        assert_eq!(show(&json!("16461")), "16461");
        assert_eq!(show(&json!(null)), "-");
        assert_eq!(show(&json!([1, 2, 4])), "1, 2, 4");
        assert_eq!(show(&json!(0.05)), "0.05");
        assert_eq!(show(&json!({"rounds": 3})), "rounds 3");
    }
}
