//! Telemetry: `tracing` spans on every review, unit and attempt (OpenTelemetry GenAI
//! attribute names where they exist, `warden.` for ours), written as JSONL with
//! `--trace FILE` and exported over OTLP/HTTP when the OTel env vars ask for it.
//! Prompts, diff content and answers are not recorded unless the user opts in; keys never.

mod jsonl;
#[cfg(feature = "otlp")]
mod otlp;

use crate::error::{Error, Result};
use crate::report::Report;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

/// The longest warden waits at exit for telemetry to flush.
pub const FLUSH_BOUND: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub trace_file: Option<PathBuf>,
}

/// Installed telemetry; call [`Telemetry::finish`] once the report exists.
pub struct Telemetry {
    jsonl: Option<jsonl::Writer>,
    #[cfg(feature = "otlp")]
    otlp: Option<otlp::Otlp>,
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
                Ok((o, t)) => (Some(o), Some(t)),
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
            #[cfg(feature = "otlp")]
            otlp,
        })
    }

    /// Records the review's metrics and flushes every sink within [`FLUSH_BOUND`].
    pub fn finish(self, report: Option<&Report>) {
        #[cfg(feature = "otlp")]
        if let Some(o) = self.otlp {
            if let Some(r) = report {
                o.record(r);
            }
            o.shutdown(FLUSH_BOUND);
        }
        #[cfg(not(feature = "otlp"))]
        let _ = report;
        if let Some(w) = self.jsonl
            && let Ok(mut w) = w.lock()
        {
            let _ = w.flush();
        }
    }
}
