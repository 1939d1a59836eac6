//! The `[dnstap]` table: query logging (Knot's mod-dnstap names).
//!
//! ```toml
//! [dnstap]                      # absent: off (`lode serve --dnstap SINK` turns it on)
//! sink = "/var/log/lode.tap"    # a file, or "unix:/run/dnstap.sock" (a reader such as fstrm_capture)
//! log-queries = true            # AUTH_QUERY messages
//! log-responses = true          # AUTH_RESPONSE messages
//! sample = 1                    # log one query in N (per worker thread)
//! queue = 4096                  # events queued per worker thread; beyond: dropped, counted
//! identity = "ns1"              # default: the server's `identity` ("" = none)
//! version = "Lode 0.1.0"        # default: the server's `version` ("" = none)
//! ```

use serde::Deserialize;

use super::{ConfigError, Identity};

/// The `[dnstap]` table as written.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DnstapEntry {
    /// A file path, or `unix:/path`.
    pub sink: Option<String>,
    /// Write AUTH_QUERY messages (default true).
    pub log_queries: Option<bool>,
    /// Write AUTH_RESPONSE messages (default true).
    pub log_responses: Option<bool>,
    /// One query in N is logged (default 1).
    pub sample: Option<u32>,
    /// Events queued per worker thread (default 4096).
    pub queue: Option<usize>,
    /// The messages' identity (default: the server's).
    pub identity: Option<String>,
    /// The messages' version (default: the server's).
    pub version: Option<String>,
}

/// Resolves the table and `lode serve --dnstap SINK` (which turns logging on
/// and replaces the table's sink) into the logger's settings; `None`: off.
pub fn resolve_dnstap(
    entry: Option<&DnstapEntry>,
    cli_sink: Option<&str>,
    identity: &Identity,
) -> Result<Option<lode_dnstap::Config>, ConfigError> {
    if entry.is_none() && cli_sink.is_none() {
        return Ok(None);
    }
    let d = entry.cloned().unwrap_or_default();
    let bad = |why: String| ConfigError::Value(format!("[dnstap] {why}"));
    let sink = cli_sink
        .or(d.sink.as_deref())
        .ok_or_else(|| bad("sink: missing (a file path or unix:/path)".into()))?;
    let sink: lode_dnstap::Sink = sink.parse().map_err(|e| bad(format!("{e}")))?;
    let text = |set: Option<&String>, server: Option<&str>| match set.map(String::as_str) {
        Some("") => None,
        Some(s) => Some(s.as_bytes().to_vec()),
        None => server.map(|s| s.as_bytes().to_vec()),
    };
    let config = lode_dnstap::Config {
        sink,
        log_queries: d.log_queries.unwrap_or(true),
        log_responses: d.log_responses.unwrap_or(true),
        sample: d.sample.unwrap_or(1),
        queue: d.queue.unwrap_or(lode_dnstap::DEFAULT_QUEUE),
        identity: text(d.identity.as_ref(), identity.identity.as_deref()),
        version: text(d.version.as_ref(), identity.version.as_deref()),
    };
    if config.sample == 0 {
        return Err(bad("sample = 0: must be at least 1".into()));
    }
    if config.queue == 0 || config.queue > 1 << 20 {
        return Err(bad(format!("queue = {}: 1 to 1048576", config.queue)));
    }
    Ok(Some(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lode_dnstap::Sink;

    fn id() -> Identity {
        Identity::resolve(Some("ns-a"), Some("v1"), Some(""), None).unwrap()
    }

    #[test]
    fn table_cli_and_defaults() {
        assert_eq!(resolve_dnstap(None, None, &id()).unwrap(), None);
        let c = resolve_dnstap(None, Some("unix:/run/t.sock"), &id())
            .unwrap()
            .unwrap();
        assert_eq!(c.sink, Sink::Unix("/run/t.sock".into()));
        assert_eq!((c.log_queries, c.log_responses, c.sample), (true, true, 1));
        assert_eq!(c.queue, lode_dnstap::DEFAULT_QUEUE);
        assert_eq!(c.identity.as_deref(), Some(&b"ns-a"[..]));
        assert_eq!(c.version.as_deref(), Some(&b"v1"[..]));
        let t: DnstapEntry = toml::from_str(
            "sink = \"/tmp/x.tap\"\nlog-queries = false\nsample = 10\nqueue = 64\nidentity = \"\"\nversion = \"tap\"",
        )
        .unwrap();
        let c = resolve_dnstap(Some(&t), None, &id()).unwrap().unwrap();
        assert_eq!(c.sink, Sink::File("/tmp/x.tap".into()));
        assert_eq!((c.log_queries, c.sample, c.queue), (false, 10, 64));
        assert_eq!(c.identity, None);
        assert_eq!(c.version.as_deref(), Some(&b"tap"[..]));
        // The command line's sink wins.
        let c = resolve_dnstap(Some(&t), Some("/tmp/y.tap"), &id())
            .unwrap()
            .unwrap();
        assert_eq!(c.sink, Sink::File("/tmp/y.tap".into()));
        for bad in ["sample = 1", "sink = \"x\"\nsample = 0", "sink = \"unix:\""] {
            let t: DnstapEntry = toml::from_str(bad).unwrap();
            assert!(resolve_dnstap(Some(&t), None, &id()).is_err(), "{bad}");
        }
        assert!(toml::from_str::<DnstapEntry>("sink = \"x\"\nbogus = 1").is_err());
    }
}
