//! OTLP's protobuf messages (`ExportTraceServiceRequest`, `ExportMetricsServiceRequest`),
//! written by hand from the SDK's spans and metrics. The wire format stays the collector's
//! binary protobuf (`application/x-protobuf`, the default every OTLP/HTTP receiver takes)
//! without a code generator and the score of crates it brings into the build. Field
//! numbers are those of the OTLP protos (`common/v1`, `resource/v1`, `trace/v1`,
//! `metrics/v1`); as any proto3 encoder does, fields at their default value are left out.
//! The mapping from SDK data follows the reference exporter's, field for field; the unit
//! tests decode every message with the generated types and compare it with that mapping.

use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::{self as md, AggregatedMetrics, MetricData};
use opentelemetry_sdk::trace::SpanData;
use std::time::{SystemTime, UNIX_EPOCH};

/// One protobuf message being written (its fields, without its own key and length).
#[derive(Default)]
struct Msg(Vec<u8>);

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u64, wire: u64) {
        self.varint((field << 3) | wire);
    }

    /// uint32/uint64/int64/enum/bool: left out at zero.
    fn uint(&mut self, field: u64, v: u64) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(v);
        }
    }

    /// fixed64 (and the bits of a double or sfixed64), written even at zero: a oneof
    /// member or an `optional` field is present whatever its value.
    fn fixed64_present(&mut self, field: u64, v: u64) {
        self.key(field, FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn fixed64(&mut self, field: u64, v: u64) {
        if v != 0 {
            self.fixed64_present(field, v);
        }
    }

    fn fixed32(&mut self, field: u64, v: u32) {
        if v != 0 {
            self.key(field, FIXED32);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }

    fn bytes_present(&mut self, field: u64, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn bytes(&mut self, field: u64, b: &[u8]) {
        if !b.is_empty() {
            self.bytes_present(field, b);
        }
    }

    fn string(&mut self, field: u64, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    /// A sub-message, written even when empty (it is set).
    fn message(&mut self, field: u64, m: Msg) {
        self.bytes_present(field, &m.0);
    }

    /// A packed repeated fixed64 or double (as bits).
    fn packed_fixed64(&mut self, field: u64, vals: impl Iterator<Item = u64>) {
        let mut body = Vec::new();
        vals.for_each(|v| body.extend_from_slice(&v.to_le_bytes()));
        self.bytes(field, &body);
    }

    fn attributes<'a>(&mut self, field: u64, kvs: impl IntoIterator<Item = &'a KeyValue>) {
        for kv in kvs {
            self.message(field, key_value(kv.key.as_str(), &kv.value));
        }
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// `common.v1.KeyValue`.
fn key_value(key: &str, value: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, key);
    m.message(2, any_value(value));
    m
}

/// `common.v1.AnyValue`: a oneof, so its member is written even at its default.
fn any_value(value: &Value) -> Msg {
    let mut m = Msg::default();
    match value {
        Value::String(s) => m.bytes_present(1, s.as_str().as_bytes()),
        Value::Bool(b) => {
            m.key(2, VARINT);
            m.varint(u64::from(*b));
        }
        Value::I64(i) => {
            m.key(3, VARINT);
            m.varint(*i as u64);
        }
        Value::F64(f) => m.fixed64_present(4, f.to_bits()),
        Value::Array(a) => {
            let values: Vec<Value> = match a {
                Array::Bool(v) => v.iter().map(|x| Value::Bool(*x)).collect(),
                Array::I64(v) => v.iter().map(|x| Value::I64(*x)).collect(),
                Array::F64(v) => v.iter().map(|x| Value::F64(*x)).collect(),
                Array::String(v) => v.iter().map(|x| Value::String(x.clone())).collect(),
                _ => Vec::new(),
            };
            let mut array = Msg::default();
            values.iter().for_each(|v| array.message(1, any_value(v)));
            m.message(5, array);
        }
        _ => {}
    }
    m
}

/// `resource.v1.Resource`.
fn resource(r: &Resource) -> Msg {
    let mut m = Msg::default();
    for (k, v) in r.iter() {
        m.message(1, key_value(k.as_str(), v));
    }
    m
}

/// `common.v1.InstrumentationScope`.
fn scope(s: &InstrumentationScope) -> Msg {
    let mut m = Msg::default();
    m.string(1, s.name());
    m.string(2, s.version().unwrap_or_default());
    m.attributes(3, s.attributes());
    m
}

/// `Span.flags`/`Link.flags`: the W3C trace flags, plus whether the parent is remote.
fn span_flags(remote: bool, trace_flags: u8) -> u32 {
    u32::from(trace_flags) | 0x100 | if remote { 0x200 } else { 0 }
}

/// `trace.v1.Span`.
fn span(s: &SpanData) -> Msg {
    let mut m = Msg::default();
    let ctx = &s.span_context;
    m.bytes(1, &ctx.trace_id().to_bytes());
    m.bytes(2, &ctx.span_id().to_bytes());
    m.string(3, &ctx.trace_state().header());
    if s.parent_span_id != SpanId::INVALID {
        m.bytes(4, &s.parent_span_id.to_bytes());
    }
    m.fixed32(
        16,
        span_flags(s.parent_span_is_remote, ctx.trace_flags().to_u8()),
    );
    m.string(5, &s.name);
    let kind = match s.span_kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    };
    m.uint(6, kind);
    m.fixed64(7, nanos(s.start_time));
    m.fixed64(8, nanos(s.end_time));
    m.attributes(9, &s.attributes);
    m.uint(10, u64::from(s.dropped_attributes_count));
    for e in s.events.iter() {
        let mut em = Msg::default();
        em.fixed64(1, nanos(e.timestamp));
        em.string(2, &e.name);
        em.attributes(3, &e.attributes);
        em.uint(4, u64::from(e.dropped_attributes_count));
        m.message(11, em);
    }
    m.uint(12, u64::from(s.events.dropped_count));
    for l in s.links.iter() {
        let lc = &l.span_context;
        let mut lm = Msg::default();
        lm.bytes(1, &lc.trace_id().to_bytes());
        lm.bytes(2, &lc.span_id().to_bytes());
        lm.string(3, &lc.trace_state().header());
        lm.attributes(4, &l.attributes);
        lm.uint(5, u64::from(l.dropped_attributes_count));
        lm.fixed32(6, span_flags(lc.is_remote(), lc.trace_flags().to_u8()));
        m.message(13, lm);
    }
    m.uint(14, u64::from(s.links.dropped_count));
    let mut status = Msg::default();
    let (code, message) = match &s.status {
        Status::Unset => (0, ""),
        Status::Ok => (1, ""),
        Status::Error { description } => (2, description.as_ref()),
    };
    status.string(2, message);
    status.uint(3, code);
    m.message(15, status);
    m
}

/// `ExportTraceServiceRequest`: one resource, the spans grouped by their scope (in the
/// order the scopes first appear).
pub(crate) fn traces(res: &Resource, spans: &[SpanData]) -> Vec<u8> {
    let mut scopes: Vec<(&InstrumentationScope, Vec<&SpanData>)> = Vec::new();
    for s in spans {
        match scopes
            .iter_mut()
            .find(|(sc, _)| *sc == &s.instrumentation_scope)
        {
            Some((_, v)) => v.push(s),
            None => scopes.push((&s.instrumentation_scope, vec![s])),
        }
    }
    let mut rs = Msg::default();
    rs.message(1, resource(res));
    for (sc, list) in scopes {
        let mut ss = Msg::default();
        ss.message(1, scope(sc));
        list.into_iter().for_each(|s| ss.message(2, span(s)));
        ss.string(3, sc.schema_url().unwrap_or_default());
        rs.message(2, ss);
    }
    rs.string(3, res.schema_url().unwrap_or_default());
    let mut req = Msg::default();
    req.message(1, rs);
    req.0
}

/// A data point's value: u64 and i64 as `as_int` (a u64 past i64 as 0, as the reference
/// exporter does), f64 as `as_double`.
trait Number: Copy {
    fn put(self, m: &mut Msg, double_field: u64, int_field: u64);
    fn as_f64(self) -> f64;
}

impl Number for u64 {
    fn put(self, m: &mut Msg, d: u64, i: u64) {
        (i64::try_from(self).unwrap_or_default()).put(m, d, i);
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Number for i64 {
    fn put(self, m: &mut Msg, _: u64, i: u64) {
        m.fixed64_present(i, self as u64);
    }
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl Number for f64 {
    fn put(self, m: &mut Msg, d: u64, _: u64) {
        m.fixed64_present(d, self.to_bits());
    }
    fn as_f64(self) -> f64 {
        self
    }
}

fn temporality(t: Temporality) -> u64 {
    match t {
        Temporality::Delta => 1,
        _ => 2,
    }
}

fn exemplars<'a, T: Number + 'a>(
    m: &mut Msg,
    field: u64,
    list: impl Iterator<Item = &'a md::Exemplar<T>>,
) {
    for ex in list {
        let mut e = Msg::default();
        e.attributes(7, ex.filtered_attributes());
        e.fixed64(2, nanos(ex.time()));
        e.bytes(4, ex.span_id());
        e.bytes(5, ex.trace_id());
        ex.value.put(&mut e, 3, 6);
        m.message(field, e);
    }
}

/// `NumberDataPoint`s of a gauge or a sum.
fn number_point<'a, T: Number + 'a>(
    attrs: &mut dyn Iterator<Item = &KeyValue>,
    start: u64,
    time: u64,
    value: T,
    ex: impl Iterator<Item = &'a md::Exemplar<T>>,
) -> Msg {
    let mut p = Msg::default();
    p.attributes(7, attrs);
    p.fixed64(2, start);
    p.fixed64(3, time);
    exemplars(&mut p, 5, ex);
    value.put(&mut p, 4, 6);
    p
}

fn histogram<T: Number>(h: &md::Histogram<T>) -> Msg {
    let mut m = Msg::default();
    for dp in h.data_points() {
        let mut p = Msg::default();
        p.attributes(9, dp.attributes());
        p.fixed64(2, nanos(h.start_time()));
        p.fixed64(3, nanos(h.time()));
        p.fixed64(4, dp.count());
        p.fixed64_present(5, dp.sum().as_f64().to_bits());
        p.packed_fixed64(6, dp.bucket_counts());
        p.packed_fixed64(7, dp.bounds().map(f64::to_bits));
        exemplars(&mut p, 8, dp.exemplars());
        if let Some(v) = dp.min() {
            p.fixed64_present(11, v.as_f64().to_bits());
        }
        if let Some(v) = dp.max() {
            p.fixed64_present(12, v.as_f64().to_bits());
        }
        m.message(1, p);
    }
    m.uint(2, temporality(h.temporality()));
    m
}

/// `Metric.data`: the oneof member's field number and message. Warden's instruments
/// (counters and histograms with the default aggregation) never make an exponential
/// histogram, and the SDK offers no setting that would; such a metric would go without data.
fn metric_data<T: Number>(data: &MetricData<T>) -> Option<(u64, Msg)> {
    match data {
        MetricData::Gauge(g) => {
            let mut m = Msg::default();
            let start = g.start_time().map(nanos).unwrap_or(0);
            for dp in g.data_points() {
                let p = number_point(
                    &mut dp.attributes(),
                    start,
                    nanos(g.time()),
                    dp.value(),
                    dp.exemplars(),
                );
                m.message(1, p);
            }
            Some((5, m))
        }
        MetricData::Sum(s) => {
            let mut m = Msg::default();
            for dp in s.data_points() {
                let (start, time) = (nanos(s.start_time()), nanos(s.time()));
                let p = number_point(
                    &mut dp.attributes(),
                    start,
                    time,
                    dp.value(),
                    dp.exemplars(),
                );
                m.message(1, p);
            }
            m.uint(2, temporality(s.temporality()));
            m.uint(3, u64::from(s.is_monotonic()));
            Some((7, m))
        }
        MetricData::Histogram(h) => Some((9, histogram(h))),
        MetricData::ExponentialHistogram(_) => None,
    }
}

/// `ExportMetricsServiceRequest`: one resource, its scopes and their metrics.
pub(crate) fn metrics(rm: &md::ResourceMetrics) -> Vec<u8> {
    let mut r = Msg::default();
    r.message(1, resource(rm.resource()));
    for sm in rm.scope_metrics() {
        let mut s = Msg::default();
        s.message(1, scope(sm.scope()));
        for metric in sm.metrics() {
            let mut m = Msg::default();
            m.string(1, metric.name());
            m.string(2, metric.description());
            m.string(3, metric.unit());
            let data = match metric.data() {
                AggregatedMetrics::F64(d) => metric_data(d),
                AggregatedMetrics::U64(d) => metric_data(d),
                AggregatedMetrics::I64(d) => metric_data(d),
            };
            if let Some((field, data)) = data {
                m.message(field, data);
            }
            s.message(2, m);
        }
        s.string(3, sm.scope().schema_url().unwrap_or_default());
        r.message(2, s);
    }
    r.string(3, rm.resource().schema_url().unwrap_or_default());
    let mut req = Msg::default();
    req.message(1, r);
    req.0
}

#[cfg(test)]
#[path = "otlp_wire_tests.rs"]
mod tests;
