//! Telemetry, an event consumer: `tracing` spans on every review, unit and attempt
//! (OpenTelemetry GenAI attribute names where they exist, `warden.` for ours) built from
//! the engine's events, written as JSONL with `--trace FILE` (or, with `--trace-format
//! chrome`, as a Chrome Trace Event timeline) and exported over OTLP/HTTP (spans and
//! metrics) when the OTel env vars ask for it. Prompts, diff content and
//! answers are not recorded unless the user opts in; keys never.

mod chrome;
mod jsonl;
#[cfg(feature = "otlp")]
mod otlp;
#[cfg(feature = "otlp")]
mod otlp_wire;
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

/// The `--trace` file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceFormat {
    /// Every span and event, one JSON object per line (docs/trace-format.md).
    #[default]
    Jsonl,
    /// Chrome Trace Event format, for Perfetto or chrome://tracing.
    Chrome,
}

/// What telemetry to install.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--trace FILE`: a trace of every span and event.
    pub trace_file: Option<PathBuf>,
    /// `--trace-format`: JSONL spans and events, or a Chrome trace timeline.
    pub trace_format: TraceFormat,
    /// `--trace-content`: prompts on attempt spans (off by default, for privacy).
    pub trace_content: bool,
    /// The repository whose links the trace file never follows (see
    /// `crate::atomic_file::Output`).
    pub checkout: Option<PathBuf>,
}

/// Installed telemetry: feed it events through [`Telemetry::sink`], then call
/// [`Telemetry::finish`] once the review is over.
pub struct Telemetry {
    jsonl: Option<jsonl::Writer>,
    /// `--trace-format chrome`: the event recorder (written to `trace` at the end).
    chrome: Option<(PathBuf, Arc<chrome::Recorder>)>,
    /// The `--trace` file: a temporary beside it (created up front), renamed over it by
    /// [`Telemetry::finish`], so a link at the path is replaced, never written through.
    trace: Option<crate::atomic_file::Output>,
    spans: Arc<spans::Spans>,
    #[cfg(feature = "otlp")]
    otlp: Option<(otlp::Otlp, Arc<otlp::Metrics>)>,
}

impl Telemetry {
    /// Installs the global subscriber if any sink is wanted; otherwise costs nothing.
    pub fn init(opts: &Options) -> Result<Telemetry> {
        let cannot = |p: &std::path::Path, e: std::io::Error| {
            Error::Usage(format!(
                "--trace {}: cannot create the file ({e})",
                p.display()
            ))
        };
        let trace = match &opts.trace_file {
            Some(p) => Some(
                crate::atomic_file::Output::open(p, opts.checkout.as_deref())
                    .map_err(|e| cannot(p, e))?,
            ),
            None => None,
        };
        let (jsonl, chrome) = match (&trace, opts.trace_format) {
            (Some(t), TraceFormat::Jsonl) => {
                let f = t.handle().map_err(|e| cannot(t.path(), e))?;
                (Some(Arc::new(Mutex::new(std::io::BufWriter::new(f)))), None)
            }
            (Some(t), TraceFormat::Chrome) => (
                None,
                Some((t.path().to_path_buf(), Arc::new(chrome::Recorder::new()))),
            ),
            _ => (None, None),
        };
        #[cfg(feature = "otlp")]
        let (otlp, tracer) = if otlp::requested() {
            match otlp::Otlp::start(FLUSH_BOUND) {
                Ok((o, t)) => {
                    let m = Arc::new(o.metrics());
                    (Some((o, m)), Some(t))
                }
                Err(e) => {
                    crate::text::stdio::eprint_line(&format!("warning: OTLP export is off: {e}"));
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
            chrome,
            trace,
            spans: Arc::new(spans::Spans::new(opts.trace_content)),
            #[cfg(feature = "otlp")]
            otlp,
        })
    }

    /// Spans only, for callers that install their own subscriber (tests, embedders).
    pub fn spans_only(trace_content: bool) -> Telemetry {
        Telemetry {
            jsonl: None,
            chrome: None,
            trace: None,
            spans: Arc::new(spans::Spans::new(trace_content)),
            #[cfg(feature = "otlp")]
            otlp: None,
        }
    }

    /// This telemetry as an event consumer: spans, and metrics when OTLP is on.
    pub fn sink(&self) -> Sink {
        let spans = self.spans.clone();
        let chrome = self.chrome.as_ref().map(|(_, r)| r.clone());
        #[cfg(feature = "otlp")]
        let metrics = self.otlp.as_ref().map(|(_, m)| m.clone());
        Sink::new(move |s| {
            if let Some(c) = &chrome {
                c.on_event(s);
            }
            spans.on_event(&s.event);
            #[cfg(feature = "otlp")]
            if let Some(m) = &metrics {
                m.on_event(&s.event);
            }
        })
    }

    /// Writes the Chrome trace and flushes every sink within [`FLUSH_BOUND`].
    pub fn finish(self) {
        let mut trace = self.trace;
        if let (Some((path, recorder)), Some(t)) = (self.chrome, trace.as_mut()) {
            let mut w = std::io::BufWriter::new(t.file());
            let written = serde_json::to_writer(&mut w, &recorder.render())
                .map_err(std::io::Error::from)
                .and_then(|()| w.flush());
            if let Err(e) = written {
                crate::text::stdio::eprint_line(&format!(
                    "warning: --trace {}: cannot write the trace ({e})",
                    path.display()
                ));
            }
        }
        #[cfg(feature = "otlp")]
        if let Some((o, _)) = self.otlp {
            o.shutdown(FLUSH_BOUND);
        }
        if let Some(w) = self.jsonl
            && let Ok(mut w) = w.lock()
        {
            let _ = w.flush();
        }
        if let Some(t) = trace {
            let path = t.path().to_path_buf();
            if let Err(e) = t.commit() {
                crate::text::stdio::eprint_line(&format!(
                    "warning: --trace {}: cannot write the trace ({e})",
                    path.display()
                ));
            }
        }
    }
}
