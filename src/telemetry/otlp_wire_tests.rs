//! The hand-written encoding against the OTLP protos' generated types: every message is
//! decoded with them and must equal what the reference transform makes of the same data.

use super::{metrics, traces};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use prost::Message;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

fn every_value() -> Vec<KeyValue> {
    vec![
        KeyValue::new("s", "text"),
        KeyValue::new("empty", ""),
        KeyValue::new("i", -7i64),
        KeyValue::new("zero", 0i64),
        KeyValue::new("f", 2.5),
        KeyValue::new("fzero", 0.0),
        KeyValue::new("b", true),
        KeyValue::new("bfalse", false),
        KeyValue::new("ai", Value::Array(Array::I64(vec![1, -2]))),
        KeyValue::new("af", Value::Array(Array::F64(vec![0.5]))),
        KeyValue::new("ab", Value::Array(Array::Bool(vec![false, true]))),
        KeyValue::new(
            "as",
            Value::Array(Array::String(vec![StringValue::from("x"), "".into()])),
        ),
        KeyValue::new("anone", Value::Array(Array::I64(vec![]))),
    ]
}

fn context(trace: u128, span: u64, remote: bool, state: &str) -> SpanContext {
    SpanContext::new(
        TraceId::from(trace),
        SpanId::from(span),
        TraceFlags::SAMPLED,
        remote,
        state.parse::<TraceState>().unwrap(),
    )
}

fn span(name: &'static str, scope: &InstrumentationScope, status: Status) -> SpanData {
    let start = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
    let mut events = SpanEvents::default();
    events
        .events
        .push(Event::new("retry", start, every_value(), 1));
    events.events.push(Event::new("bare", start, vec![], 0));
    events.dropped_count = 3;
    let mut links = SpanLinks::default();
    let linked = context(5, 6, true, "k=v");
    links
        .links
        .push(Link::new(linked, vec![KeyValue::new("l", 1i64)], 2));
    links.dropped_count = 4;
    SpanData {
        span_context: context(0x0102_0304, 0x0a0b, false, "vendor=1,other=2"),
        parent_span_id: SpanId::from(0x0c0d),
        parent_span_is_remote: true,
        span_kind: SpanKind::Client,
        name: name.into(),
        start_time: start,
        end_time: start + Duration::from_millis(1500),
        attributes: every_value(),
        dropped_attributes_count: 5,
        events,
        links,
        status,
        instrumentation_scope: scope.clone(),
    }
}

/// A root span: no parent, no events, no links, an unset status, nothing dropped.
fn root(scope: &InstrumentationScope) -> SpanData {
    let mut s = span("warden.review", scope, Status::Unset);
    s.parent_span_id = SpanId::INVALID;
    s.parent_span_is_remote = false;
    s.span_kind = SpanKind::Internal;
    s.events = SpanEvents::default();
    s.links = SpanLinks::default();
    s.dropped_attributes_count = 0;
    s.attributes.clear();
    s.span_context = SpanContext::new(
        TraceId::from(9u128),
        SpanId::from(8u64),
        TraceFlags::default(),
        false,
        TraceState::default(),
    );
    s
}

fn sorted(mut req: ExportTraceServiceRequest) -> ExportTraceServiceRequest {
    for rs in &mut req.resource_spans {
        rs.scope_spans
            .sort_by_key(|s| s.scope.as_ref().map(|s| s.name.clone()));
    }
    req
}

#[test]
fn spans_decode_to_what_the_reference_transform_makes() {
    let warden = InstrumentationScope::builder("warden").build();
    let other = InstrumentationScope::builder("other")
        .with_version("1.2")
        .with_schema_url("https://example.test/schema")
        .with_attributes([KeyValue::new("scope.attr", "x")])
        .build();
    let spans = vec![
        root(&warden),
        span("chat timed", &warden, Status::Ok),
        span("chat failed", &other, Status::error("upstream 503")),
        span("warden.unit", &warden, Status::error("")),
    ];
    let resource = Resource::builder()
        .with_service_name("warden")
        .with_attribute(KeyValue::new("service.version", "0.1.0"))
        .with_schema_url([], "https://example.test/resource")
        .build();
    let body = traces(&resource, &spans);
    let got = ExportTraceServiceRequest::decode(body.as_slice()).expect("valid protobuf");
    let want = ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(
            spans.clone(),
            &ResourceAttributesWithSchema::from(&resource),
        ),
    };
    assert_eq!(sorted(got.clone()), sorted(want));
    // Within a scope the spans keep the batch's order.
    let names: Vec<_> = got.resource_spans[0].scope_spans[0]
        .spans
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["warden.review", "chat timed", "warden.unit"]);
}

#[test]
fn an_empty_batch_is_one_resource_and_no_spans() {
    let resource = Resource::builder_empty().build();
    let got = ExportTraceServiceRequest::decode(traces(&resource, &[]).as_slice()).unwrap();
    assert_eq!(got.resource_spans.len(), 1);
    assert!(got.resource_spans[0].scope_spans.is_empty());
}

/// One export: the body the code under test wrote, and the reference transform's request.
type Export = (Vec<u8>, ExportMetricsServiceRequest);

/// Encodes each export with the code under test and with the reference transform.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Export>>>);

impl PushMetricExporter for Capture {
    async fn export(&self, rm: &ResourceMetrics) -> OTelSdkResult {
        let pair = (metrics(rm), ExportMetricsServiceRequest::from(rm));
        self.0.lock().unwrap().push(pair);
        Ok(())
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

#[test]
fn metrics_decode_to_what_the_reference_transform_makes() {
    let capture = Capture::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(capture.clone()).build())
        .with_resource(Resource::builder().with_service_name("warden").build())
        .build();
    let meter = provider.meter("warden");
    let attrs = [
        KeyValue::new("warden.route", "fast"),
        KeyValue::new("warden.outcome", "ok"),
    ];
    let attempts = meter.u64_counter("warden.route.attempts").build();
    attempts.add(3, &attrs);
    attempts.add(1, &attrs[..1]);
    attempts.add(u64::MAX, &[KeyValue::new("huge", true)]);
    let duration = meter
        .f64_histogram("warden.attempt.duration")
        .with_unit("ms")
        .with_description("Attempt duration")
        .build();
    for v in [0.0, 12.5, 480.0, 9_000.0] {
        duration.record(v, &attrs);
    }
    meter.u64_histogram("counts").build().record(7, &[]);
    meter.i64_up_down_counter("queue").build().add(-4, &[]);
    meter.f64_counter("cost").build().add(0.25, &[]);
    meter.i64_gauge("depth").build().record(-2, &[]);
    meter.f64_gauge("ratio").build().record(0.0, &[]);
    meter.u64_gauge("limit").build().record(0, &[]);
    provider.shutdown().unwrap();
    let exports = capture.0.lock().unwrap();
    assert!(!exports.is_empty(), "no export at shutdown");
    for (body, want) in exports.iter() {
        let got = ExportMetricsServiceRequest::decode(body.as_slice()).expect("valid protobuf");
        assert_eq!(&got, want);
    }
    let (_, last) = exports.last().unwrap();
    let names = last.resource_metrics[0].scope_metrics[0].metrics.len();
    assert_eq!(names, 8, "every instrument reached the export");
}
