//! `metrics-listen`: where the Prometheus endpoint listens (see
//! `crate::metrics`); `query-counters` is a plain switch read in config.rs.
//!
//! ```toml
//! metrics-listen = "127.0.0.1:9153"   # ADDR:PORT, a bare ADDR (port 9153), or "" (none)
//! ```

use std::net::SocketAddr;

use super::ConfigError;

/// The default port of `metrics-listen` given as a bare address (CoreDNS's
/// Prometheus port; Knot's exporter uses 9433).
pub const DEFAULT_METRICS_PORT: u16 = 9153;

/// `metrics-listen`: "ADDR:PORT", "ADDR" (port 9153) or "" (none).
pub(super) fn metrics_listen(value: Option<&str>) -> Result<Option<SocketAddr>, ConfigError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if let Ok(a) = v.parse::<SocketAddr>() {
        return Ok(Some(a));
    }
    match v
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
    {
        Ok(ip) => Ok(Some(SocketAddr::new(ip, DEFAULT_METRICS_PORT))),
        Err(_) => Err(ConfigError::Value(format!(
            "metrics-listen = {v:?}: expected ADDR:PORT (e.g. \"127.0.0.1:9153\") or an address"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_bare_addresses_and_none() {
        let a = |v: &str| metrics_listen(Some(v));
        assert_eq!(
            a("127.0.0.1:9200").unwrap(),
            Some("127.0.0.1:9200".parse().unwrap())
        );
        assert_eq!(
            a("127.0.0.1").unwrap(),
            Some("127.0.0.1:9153".parse().unwrap())
        );
        assert_eq!(a("[::1]").unwrap(), Some("[::1]:9153".parse().unwrap()));
        assert_eq!(a("::1").unwrap(), Some("[::1]:9153".parse().unwrap()));
        assert_eq!(a("").unwrap(), None);
        assert_eq!(metrics_listen(None).unwrap(), None);
        let e = a("localhost:9153").unwrap_err().to_string();
        assert!(e.contains("metrics-listen = \"localhost:9153\""), "{e}");
    }
}
