//! OTLP/HTTP export of spans and metrics, on when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set. The OpenTelemetry SDK
//! batches and aggregates on its own threads; the exporters here post its data as binary
//! protobuf (encoded by `otlp_wire`) with the blocking HTTP client, configured from the
//! standard variables as the reference exporter reads them. At exit everything is flushed
//! within a fixed bound, so an unreachable collector can delay warden by at most that bound
//! and never changes the review's outcome.

use crate::engine::Event;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use std::sync::Mutex;
use std::time::Duration;

/// The OTLP pipelines (traces and metrics).
pub struct Otlp {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// Whether the environment asks for OTLP export.
pub fn requested() -> bool {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

fn resource() -> Resource {
    Resource::builder()
        .with_service_name("warden")
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Why OTLP export is off for this run (a warning; the review goes on).
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// A compression variable is set: the exporter sends uncompressed protobuf only.
    #[error("{var}={value}: compression is not supported (unset it)")]
    Compression {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The HTTP client could not be built (the cause, in parentheses, when known).
    #[error("cannot build the HTTP client{0}")]
    Client(String),
}

impl Otlp {
    /// Builds the exporters (endpoint, headers and protocol come from the OTel env vars).
    pub fn start(bound: Duration) -> Result<(Otlp, opentelemetry_sdk::trace::Tracer), OtlpError> {
        let spans = SpanPoster {
            post: Post::new(&TRACES, bound)?,
            resource: Resource::builder_empty().build(),
        };
        // A large queue: a 2,000-unit review makes over 4,000 spans, and the SDK's
        // default queue (2,048) would drop the rest.
        let processor = BatchSpanProcessor::builder(spans)
            .with_batch_config(
                BatchConfigBuilder::default()
                    .with_max_queue_size(1 << 16)
                    .with_max_export_batch_size(2048)
                    .build(),
            )
            .build();
        let traces = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(resource())
            .build();
        let metric_exporter = MetricPoster(Post::new(&METRICS, bound)?);
        let metrics = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metric_exporter).build())
            .with_resource(resource())
            .build();
        let tracer = traces.tracer("warden");
        Ok((Otlp { traces, metrics }, tracer))
    }

    /// The review's instruments; they record from events and export at shutdown.
    pub fn metrics(&self) -> Metrics {
        let meter = self.metrics.meter("warden");
        Metrics {
            attempts: meter
                .u64_counter("warden.route.attempts")
                .with_description("Attempts sent to a route, by outcome")
                .build(),
            duration: meter
                .f64_histogram("warden.attempt.duration")
                .with_unit("ms")
                .with_description("Attempt duration")
                .build(),
            ttft: meter
                .f64_histogram("gen_ai.server.time_to_first_token")
                .with_unit("ms")
                .build(),
            units: meter
                .u64_counter("warden.review.units")
                .with_description("Units by final status")
                .build(),
        }
    }

    /// Flushes and stops both pipelines, waiting at most `bound` in all.
    pub fn shutdown(self, bound: Duration) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = self.traces.shutdown_with_timeout(bound);
            let _ = self.metrics.shutdown_with_timeout(bound);
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(bound);
    }
}

/// Route and unit metrics, recorded from the event stream.
pub struct Metrics {
    attempts: opentelemetry::metrics::Counter<u64>,
    duration: opentelemetry::metrics::Histogram<f64>,
    ttft: opentelemetry::metrics::Histogram<f64>,
    units: opentelemetry::metrics::Counter<u64>,
}

impl Metrics {
    /// Counts finished attempts (by route, provider, model, outcome) and units (by status).
    pub fn on_event(&self, e: &Event) {
        match e {
            Event::AttemptFinished { record: r, .. } => {
                let attrs = [
                    KeyValue::new("warden.route", r.route.clone()),
                    KeyValue::new("gen_ai.provider.name", r.provider),
                    KeyValue::new("gen_ai.request.model", r.model.clone()),
                    KeyValue::new("warden.outcome", r.outcome.as_str()),
                ];
                self.attempts.add(1, &attrs);
                self.duration
                    .record(r.duration.as_secs_f64() * 1000.0, &attrs);
                if let Some(t) = r.ttft {
                    self.ttft.record(t.as_secs_f64() * 1000.0, &attrs[..3]);
                }
            }
            Event::UnitFinished { result, .. } => {
                self.units
                    .add(1, &[KeyValue::new("warden.status", result.status.as_str())]);
            }
            _ => {}
        }
    }
}

/// The standard variables of one signal (the reference exporter's names and precedence).
struct Signal {
    /// Names the exporter in its debug events ("HttpTracesClient.ExportFailed").
    client: &'static str,
    path: &'static str,
    endpoint: &'static str,
    headers: &'static str,
    compression: &'static str,
}

const TRACES: Signal = Signal {
    client: "HttpTracesClient",
    path: "/v1/traces",
    endpoint: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    headers: "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    compression: "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
};

const METRICS: Signal = Signal {
    client: "HttpMetricsClient",
    path: "/v1/metrics",
    endpoint: "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    headers: "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    compression: "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
};

/// The URL a signal is posted to: the signal's own endpoint as it is, else the general
/// endpoint with the signal's path, else the collector's default address.
fn endpoint(signal: &Signal) -> String {
    let valid = |u: &str| reqwest::Url::parse(u).is_ok();
    let join = |base: &str| {
        let path = match base.ends_with('/') {
            true => &signal.path[1..],
            false => signal.path,
        };
        format!("{base}{path}")
    };
    if let Ok(u) = std::env::var(signal.endpoint)
        && valid(&u)
    {
        return u;
    }
    match std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|b| join(&b)) {
        Ok(u) if valid(&u) => u,
        _ => join("http://localhost:4318"),
    }
}

/// `k1=v1,k2=v2` with percent-encoded values (the signal's variable, else the general
/// one); pairs with an empty key or value, or that are not a valid header, are skipped.
fn headers(signal: &Signal) -> HeaderMap {
    let mut map = HeaderMap::new();
    let version = concat!("warden/", env!("CARGO_PKG_VERSION"));
    map.insert(USER_AGENT, HeaderValue::from_static(version));
    let Ok(list) =
        std::env::var(signal.headers).or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_HEADERS"))
    else {
        return map;
    };
    for pair in list.split_terminator(',').map(str::trim) {
        let Some((k, v)) = pair.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let v = percent_encoding::percent_decode_str(v)
            .decode_utf8()
            .map_or_else(|_| v.to_string(), |d| d.into_owned());
        if let (false, false, Ok(k), Ok(v)) = (
            k.is_empty(),
            v.is_empty(),
            HeaderName::try_from(k),
            HeaderValue::try_from(v),
        ) {
            map.insert(k, v);
        }
    }
    map
}

/// One signal's destination: a POST of protobuf to its URL with its headers, by a client
/// that shutdown takes away.
#[derive(Debug)]
struct Post {
    url: String,
    headers: HeaderMap,
    client: Mutex<Option<reqwest::blocking::Client>>,
    name: &'static str,
}

impl Post {
    fn new(signal: &Signal, bound: Duration) -> Result<Post, OtlpError> {
        for var in [signal.compression, "OTEL_EXPORTER_OTLP_COMPRESSION"] {
            if let Ok(value) = std::env::var(var) {
                return Err(OtlpError::Compression { var, value });
            }
        }
        // The blocking client runs a runtime of its own: built on a plain thread, so that
        // a caller inside an async runtime cannot trip over it.
        let client = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(bound)
                .build()
                .map_err(|e| OtlpError::Client(format!(" ({e})")))
        })
        .join()
        .map_err(|_| OtlpError::Client(String::new()))??;
        Ok(Post {
            url: endpoint(signal),
            headers: headers(signal),
            client: Mutex::new(Some(client)),
            name: signal.client,
        })
    }

    /// Posts one export request; a refused connection, a timeout or a status other than
    /// 2xx is an export failure for the SDK to count (and a debug event), nothing more.
    fn send(&self, body: Vec<u8>) -> OTelSdkResult {
        let client = self
            .client
            .lock()
            .map_err(|e| OTelSdkError::InternalFailure(format!("client lock: {e}")))?
            .clone()
            .ok_or(OTelSdkError::AlreadyShutdown)?;
        self.event("ExportStarted", None);
        let sent = client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/x-protobuf")
            .headers(self.headers.clone())
            .body(body)
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.bytes().map(|_| ()));
        match sent {
            Ok(()) => {
                self.event("ExportSucceeded", None);
                Ok(())
            }
            Err(e) => {
                let error = format!("{e:?}");
                self.event("ExportFailed", Some(&error));
                Err(OTelSdkError::InternalFailure(error))
            }
        }
    }

    fn event(&self, what: &str, error: Option<&str>) {
        let name = format!("{}.{what}", self.name);
        tracing::debug!(target: "opentelemetry-otlp", name, error, "");
    }

    fn close(&self) -> OTelSdkResult {
        let mut client = self
            .client
            .lock()
            .map_err(|e| OTelSdkError::InternalFailure(format!("client lock: {e}")))?;
        client
            .take()
            .map(|_| ())
            .ok_or(OTelSdkError::AlreadyShutdown)
    }
}

/// The span exporter: the batch's spans under the provider's resource.
#[derive(Debug)]
struct SpanPoster {
    post: Post,
    resource: Resource,
}

impl SpanExporter for SpanPoster {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.post
            .send(super::otlp_wire::traces(&self.resource, &batch))
    }

    fn shutdown(&mut self) -> OTelSdkResult {
        self.post.close()
    }

    fn shutdown_with_timeout(&mut self, _: Duration) -> OTelSdkResult {
        self.post.close()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.clone();
    }
}

/// The metric exporter (cumulative temporality, the SDK's default).
struct MetricPoster(Post);

impl PushMetricExporter for MetricPoster {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        self.0.send(super::otlp_wire::metrics(metrics))
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        self.0.close().or(Ok(()))
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}
