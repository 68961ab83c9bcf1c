//! `--trace FILE`: one JSON object per line for every closed span and every event, enough
//! to replay a run's timeline. The format is documented in docs/trace-format.md.

use serde_json::{Map, Value, json};
use std::fmt;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The shared line writer; flushed by the telemetry guard at exit.
pub type Writer = Arc<Mutex<BufWriter<std::fs::File>>>;

pub struct JsonlLayer {
    out: Writer,
    start: Instant,
}

struct SpanData {
    fields: Map<String, Value>,
    start: Instant,
}

struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().into(), Value::from(v));
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name().into(), Value::from(v));
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name().into(), Value::from(v));
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.insert(f.name().into(), Value::from(v));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name().into(), Value::from(v));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn fmt::Debug) {
        self.0
            .insert(f.name().into(), Value::from(format!("{v:?}")));
    }
}

impl JsonlLayer {
    pub fn new(out: Writer) -> Self {
        JsonlLayer {
            out,
            start: Instant::now(),
        }
    }

    fn ms(&self, at: Instant) -> f64 {
        (at.saturating_duration_since(self.start).as_micros() as f64) / 1000.0
    }

    fn write(&self, v: Value) {
        if let Ok(mut w) = self.out.lock() {
            // A full disk must not break the review: trace lines are best effort.
            let _ = serde_json::to_writer(&mut *w, &v);
            let _ = w.write_all(b"\n");
        }
    }
}

impl<S> Layer<S> for JsonlLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Map::new();
        attrs.record(&mut Fields(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanData {
                fields,
                start: Instant::now(),
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(data) = span.extensions_mut().get_mut::<SpanData>()
        {
            values.record(&mut Fields(&mut data.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        let meta = event.metadata();
        let span = ctx.event_span(event).map(|s| s.id().into_u64());
        self.write(json!({
            "type": "event",
            "name": meta.name(),
            "level": meta.level().as_str(),
            "timeMs": self.ms(Instant::now()),
            "span": span,
            "fields": fields,
        }));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(data) = span.extensions_mut().remove::<SpanData>() else {
            return;
        };
        let now = Instant::now();
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
            .saturating_sub(now.duration_since(data.start).as_millis() as u64);
        self.write(json!({
            "type": "span",
            "name": span.name(),
            "id": id.into_u64(),
            "parent": span.parent().map(|p| p.id().into_u64()),
            "startMs": self.ms(data.start),
            "durationMs": (now.duration_since(data.start).as_micros() as f64) / 1000.0,
            "startUnixMs": unix_ms,
            "fields": data.fields,
        }));
    }
}
