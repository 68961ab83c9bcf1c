//! Telemetry, an event consumer: `tracing` spans on every review, unit and attempt
//! (OpenTelemetry GenAI attribute names where they exist, `warden.` for ours) built from
//! the engine's events, written as JSONL with `--trace FILE` and exported over OTLP/HTTP
//! (spans and metrics) when the OTel env vars ask for it. Prompts, diff content and
//! answers are not recorded unless the user opts in; keys never.

mod jsonl;
#[cfg(feature = "otlp")]
mod otlp;
mod spans;

use crate::engine::Sink;
use crate::error::{Error, Result};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

/// The longest warden waits at exit for telemetry to flush.
pub const FLUSH_BOUND: Duration = Duration::from_secs(2);

/// What telemetry to install.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--trace FILE`: a JSONL trace of every span and event.
    pub trace_file: Option<PathBuf>,
    /// `--trace-content`: prompts on attempt spans (off by default, for privacy).
    pub trace_content: bool,
}

/// Installed telemetry: feed it events through [`Telemetry::sink`], then call
/// [`Telemetry::finish`] once the review is over.
pub struct Telemetry {
    jsonl: Option<jsonl::Writer>,
    spans: Arc<spans::Spans>,
    #[cfg(feature = "otlp")]
    otlp: Option<(otlp::Otlp, Arc<otlp::Metrics>)>,
}

impl Telemetry {
    /// Installs the global subscriber if any sink is wanted; otherwise costs nothing.
    pub fn init(opts: &Options) -> Result<Telemetry> {
        let jsonl = match &opts.trace_file {
            Some(p) => {
                let f = std::fs::File::create(p).map_err(|e| {
                    Error::Usage(format!(
                        "--trace {}: cannot create the file ({e})",
                        p.display()
                    ))
                })?;
                Some(Arc::new(Mutex::new(std::io::BufWriter::new(f))))
            }
            None => None,
        };
        #[cfg(feature = "otlp")]
        let (otlp, tracer) = if otlp::requested() {
            match otlp::Otlp::start(FLUSH_BOUND) {
                Ok((o, t)) => {
                    let m = Arc::new(o.metrics());
                    (Some((o, m)), Some(t))
                }
                Err(e) => {
                    eprintln!("warning: OTLP export is off: {e}");
                    (None, None)
                }
            }
        } else {
            (None, None)
        };
        #[cfg(feature = "otlp")]
        let otel_layer = tracer.map(|t| tracing_opentelemetry::layer().with_tracer(t));
        #[cfg(not(feature = "otlp"))]
        let otel_layer: Option<tracing_subscriber::layer::Identity> = None;

        let any = jsonl.is_some() || otel_layer.is_some();
        if any {
            let subscriber = tracing_subscriber::registry()
                .with(jsonl.clone().map(jsonl::JsonlLayer::new))
                .with(otel_layer);
            // A second init in one process (tests) keeps the first subscriber.
            let _ = tracing::subscriber::set_global_default(subscriber);
        }
        Ok(Telemetry {
            jsonl,
            spans: Arc::new(spans::Spans::new(opts.trace_content)),
            #[cfg(feature = "otlp")]
            otlp,
        })
    }

    /// Spans only, for callers that install their own subscriber (tests, embedders).
    pub fn spans_only(trace_content: bool) -> Telemetry {
        Telemetry {
            jsonl: None,
            spans: Arc::new(spans::Spans::new(trace_content)),
            #[cfg(feature = "otlp")]
            otlp: None,
        }
    }

    /// This telemetry as an event consumer: spans, and metrics when OTLP is on.
    pub fn sink(&self) -> Sink {
        let spans = self.spans.clone();
        #[cfg(feature = "otlp")]
        let metrics = self.otlp.as_ref().map(|(_, m)| m.clone());
        Sink::new(move |e| {
            spans.on_event(&e);
            #[cfg(feature = "otlp")]
            if let Some(m) = &metrics {
                m.on_event(&e);
            }
        })
    }

    /// Flushes every sink within [`FLUSH_BOUND`].
    pub fn finish(self) {
        #[cfg(feature = "otlp")]
        if let Some((o, _)) = self.otlp {
            o.shutdown(FLUSH_BOUND);
        }
        if let Some(w) = self.jsonl
            && let Ok(mut w) = w.lock()
        {
            let _ = w.flush();
        }
    }
}
