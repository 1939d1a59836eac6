//! The Prometheus endpoint: `GET /metrics` on `metrics-listen`, answered in
//! the OpenMetrics text format by `prometheus-client` from a fresh
//! [`Families`](super::Families), on a thread of its own (hyper on a
//! single-threaded tokio runtime: scrapes are rare and small).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::{Families, Kind, Value};

/// The content type of the OpenMetrics text format, which Prometheus asks for.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Debug)]
struct Collect(Arc<dyn Families>);

impl Collector for Collect {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for f in self.0.families() {
            let ty = match f.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            let mut family = encoder.encode_descriptor(f.name, f.help, None, ty)?;
            for s in &f.samples {
                let labels: Vec<(&str, &str)> =
                    s.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let e = family.encode_family(&labels)?;
                match (f.kind, s.value) {
                    (Kind::Counter, Value::Int(v)) => ConstCounter::new(v).encode(e)?,
                    (Kind::Counter, Value::Float(v)) => ConstCounter::new(v).encode(e)?,
                    (Kind::Gauge, Value::Int(v)) => {
                        ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX)).encode(e)?
                    }
                    (Kind::Gauge, Value::Float(v)) => ConstGauge::new(v).encode(e)?,
                }
            }
        }
        Ok(())
    }
}

/// The scrape rendered in the OpenMetrics text format.
pub fn render(scrape: &Arc<dyn Families>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Collect(scrape.clone())));
    let mut text = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &registry) {
        tracing::warn!("metrics: cannot encode: {e}");
    }
    text
}

/// A running metrics endpoint; stops on drop.
#[derive(Debug)]
pub(crate) struct MetricsServer {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

/// Why the metrics endpoint is not served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum MetricsError {
    /// `metrics-listen` cannot be bound.
    #[error("metrics-listen {addr}: cannot bind: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The bound socket cannot be set up.
    #[error("metrics-listen {addr}: {source}")]
    Socket {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// Its runtime did not start.
    #[error("metrics: cannot start its runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// Its thread did not start.
    #[error("metrics: cannot start its thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl MetricsServer {
    /// Binds `addr` and serves `GET /metrics` from `scrape`.
    pub(crate) fn start(
        addr: SocketAddr,
        scrape: Arc<dyn Families>,
    ) -> Result<MetricsServer, MetricsError> {
        let std_listener = std::net::TcpListener::bind(addr)
            .map_err(|source| MetricsError::Bind { addr, source })?;
        let socket = |source| MetricsError::Socket { addr, source };
        std_listener.set_nonblocking(true).map_err(socket)?;
        let local = std_listener.local_addr().map_err(socket)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(MetricsError::Runtime)?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("lode-metrics".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::warn!("metrics: {e}");
                            return;
                        }
                    };
                    tokio::select! {
                        () = accept_loop(listener, scrape) => {}
                        _ = stop_rx => {}
                    }
                });
            })
            .map_err(MetricsError::Thread)?;
        tracing::info!("metrics on http://{local}/metrics (Prometheus)");
        Ok(MetricsServer {
            stop: Some(stop_tx),
            thread: Some(thread),
            addr: local,
        })
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(listener: tokio::net::TcpListener, scrape: Arc<dyn Families>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!("metrics: accept: {e}");
                continue;
            }
        };
        let scrape = scrape.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let scrape = scrape.clone();
                async move { Ok::<_, Infallible>(respond(&req, &scrape)) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!("metrics: {peer}: {e}");
            }
        });
    }
}

fn respond<B>(req: &Request<B>, scrape: &Arc<dyn Families>) -> Response<Full<Bytes>> {
    let reply = |status, ctype: &str, body: String| {
        Response::builder()
            .status(status)
            .header("content-type", ctype)
            .body(Full::new(Bytes::from(body)))
            .unwrap_or_default()
    };
    if req.method() != hyper::Method::GET && req.method() != hyper::Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "only GET\n".into(),
        );
    }
    match req.uri().path() {
        "/metrics" => reply(StatusCode::OK, CONTENT_TYPE, render(scrape)),
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: the metrics are at /metrics\n".into(),
        ),
    }
}
