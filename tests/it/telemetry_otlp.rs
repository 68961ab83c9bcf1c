//! OTLP export configured by the standard variables: a signal's own endpoint used as it is,
//! the general endpoint joined with the signal's path, headers from the general and the
//! per-signal variable (which replaces the general one), and a compression setting warden
//! cannot honour turning export off with a warning while the review goes on.

use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::otlp_receiver::Receiver;
use crate::telemetry::{review, session};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use serde_json::json;

#[test]
fn otlp_export_follows_the_endpoint_and_header_variables() {
    let receiver = Receiver::start();
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([]))));
    let (repo, cfg) = session(1, &fake, "");
    let base = receiver.endpoint();
    let spans_at = format!("{base}/collector/spans");
    let (code, v, stderr, _) = review(
        &repo,
        &cfg,
        &[],
        &[
            // A trailing slash: the signal's path is joined without doubling it.
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &format!("{base}/")),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &spans_at),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20t0k, x-tenant=blue,=skipped,empty=",
            ),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-tenant=green"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(v["outcome"], "complete");
    let paths = receiver.paths();
    assert!(
        paths
            .iter()
            .all(|p| p == "/collector/spans" || p == "/v1/metrics"),
        "{paths:?}"
    );
    let spans = receiver.requests("/collector/spans");
    assert!(
        !spans.is_empty(),
        "no trace export at the traces endpoint: {paths:?}"
    );
    for post in &spans {
        assert_eq!(post.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(post.header("authorization"), Some("Bearer t0k"));
        assert_eq!(post.header("x-tenant"), Some("blue"));
        assert_eq!(post.header("empty"), None);
        let req = ExportTraceServiceRequest::decode(post.body.as_slice()).expect("protobuf");
        assert!(!req.resource_spans.is_empty());
    }
    let metrics = receiver.requests("/v1/metrics");
    assert!(!metrics.is_empty(), "no metrics export: {paths:?}");
    for post in &metrics {
        // The per-signal variable replaces the general one: no authorization here.
        assert_eq!(post.header("x-tenant"), Some("green"));
        assert_eq!(post.header("authorization"), None);
        ExportMetricsServiceRequest::decode(post.body.as_slice()).expect("protobuf");
    }
}

#[test]
fn a_compression_setting_turns_otlp_off_with_a_warning_and_the_review_goes_on() {
    let receiver = Receiver::start();
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([]))));
    let (repo, cfg) = session(1, &fake, "");
    let (code, v, stderr, _) = review(
        &repo,
        &cfg,
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint()),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(v["outcome"], "complete");
    assert!(
        stderr.contains("OTLP export is off")
            && stderr.contains("OTEL_EXPORTER_OTLP_COMPRESSION=gzip"),
        "{stderr}"
    );
    assert!(receiver.paths().is_empty(), "{:?}", receiver.paths());
}
