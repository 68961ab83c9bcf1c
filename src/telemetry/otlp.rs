//! OTLP/HTTP export of spans and metrics (opentelemetry-otlp), on when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set. Export runs on the
//! SDK's own threads; at exit everything is flushed within a fixed bound, so an
//! unreachable collector can delay warden by at most that bound and never changes the
//! review's outcome.

use crate::engine::Event;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
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

impl Otlp {
    /// Builds the exporters (endpoint, headers and protocol come from the OTel env vars).
    pub fn start(bound: Duration) -> Result<(Otlp, opentelemetry_sdk::trace::Tracer), String> {
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_timeout(bound)
            .build()
            .map_err(|e| e.to_string())?;
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
        let metric_exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_timeout(bound)
            .build()
            .map_err(|e| e.to_string())?;
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
