//! The transports' settings a configuration asks for: TCP's and DNS over
//! TLS's (a reload changes their limits and timeouts, not their threads).

use super::Config;

/// Scheduling priority (nice) of the TCP event-loop threads.
const TCP_NICE: i32 = 10;

/// The TCP transport's settings in `config` (a reload changes its limits
/// and timeouts, not its threads).
pub(crate) fn tcp_config(config: &Config) -> lode_io::TcpConfig {
    lode_io::TcpConfig {
        idle_timeout: config.tcp_idle_timeout,
        max_clients: config.tcp_max_clients,
        max_clients_per_source: config.tcp_max_clients_per_source,
        io_timeout: config.tcp_io_timeout,
        threads: config.workers.div_ceil(2),
        // A TCP flood must not take the CPU from UDP, which answers
        // nearly every query: with `lode bench attack --quick --tables 3
        // --servers lode` (Lode pinned to one CPU) the UDP zero-loss rate
        // under the TCP abuse mix went from 0.50 × its rate without to
        // 1.13 × (one coarse run; full runs: 0.83–0.84, benchmarks/HISTORY.md,
        // "Under attack", 2026-11-24).
        nice: TCP_NICE,
        ..lode_io::TcpConfig::default()
    }
}

/// DNS over TLS's settings: TCP's, with its own client limit and the
/// handshake timeout (the TLS server itself is added at start).
pub(crate) fn dot_config(config: &Config) -> lode_io::TcpConfig {
    lode_io::TcpConfig {
        max_clients: config.tls.max_clients,
        handshake_timeout: config.tls.handshake_timeout,
        ..tcp_config(config)
    }
}
