//! Telemetry: attributes on attempt spans (captured with a test subscriber), route metrics
//! and percentiles against the fake with known latencies, the JSONL trace, OTLP export to
//! a real receiver on 127.0.0.1, and a collector that refuses connections.

use crate::report_formats::{assert_valid, report_schema};
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::otlp_receiver::Receiver;
use crate::support::scripted::{Scripted, Step, units};
use crate::support::*;
use prost::Message;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use warden::config::{BreakerSettings, Execution};
use warden::engine::{Engine, EngineRoute};
use warden::provider::Provider;

// ---- span capture -------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Captured {
    kind: &'static str,
    name: String,
    fields: Map<String, Value>,
    /// For events: the fields of the span they happened in.
    parent: Option<Map<String, Value>>,
}

struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().into(), json!(v));
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name().into(), json!(v));
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name().into(), json!(v));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name().into(), json!(v));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().into(), json!(format!("{v:?}")));
    }
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut f = Fields(Map::new());
        attrs.record(&mut f);
        ctx.span(id).unwrap().extensions_mut().insert(f);
    }
    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: Context<'_, S>,
    ) {
        if let Some(f) = ctx.span(id).unwrap().extensions_mut().get_mut::<Fields>() {
            values.record(f);
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields(Map::new());
        event.record(&mut f);
        let parent = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<Fields>().map(|f| f.0.clone()));
        self.0.lock().unwrap().push(Captured {
            kind: "event",
            name: event.metadata().name().to_string(),
            fields: f.0,
            parent,
        });
    }
    fn on_close(&self, id: tracing::span::Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        let fields = span
            .extensions_mut()
            .remove::<Fields>()
            .map(|f| f.0)
            .unwrap_or_default();
        self.0.lock().unwrap().push(Captured {
            kind: "span",
            name: span.name().to_string(),
            fields,
            parent: None,
        });
    }
}

#[test]
fn attempt_spans_carry_genai_and_policy_attributes() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    // a: unit 0 is answered; units 1-4 time out, which opens a's breaker at its 5th call
    // (4 of 5 failed); each fails over to b. Unit 5 then finds a open and goes to b at once.
    let a = Scripted::new("a", |n| {
        if n == 0 {
            Step::Ok(Duration::from_secs(1), 1)
        } else {
            Step::Hang
        }
    });
    let b = Scripted::always("b", Step::Ok(Duration::from_secs(1), 0));
    let exec = Execution {
        review_budget: Duration::from_secs(900),
        hunk_budget: Duration::from_secs(300),
        request_timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(5),
        first_token_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(10),
        max_attempts: 2,
        breaker: BreakerSettings {
            window: Duration::from_secs(600),
            min_calls: 5,
            failure_rate: 0.5,
            open_for: Duration::from_secs(600),
            half_open_probes: 1,
        },
        ..Default::default()
    };
    let engine = Engine::new(
        vec![
            EngineRoute::new(a as Arc<dyn Provider>, 1),
            EngineRoute::new(b as Arc<dyn Provider>, 1),
        ],
        exec,
        warden::telemetry::Telemetry::spans_only(false).sink(),
    );
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        let r = rt.block_on(engine.run(units(7), CancellationToken::new()));
        assert!(
            r.units
                .iter()
                .all(|u| u.status == warden::engine::UnitStatus::Reviewed)
        );
    });
    let got = capture.0.lock().unwrap().clone();
    let attempts: Vec<&Captured> = got
        .iter()
        .filter(|c| c.kind == "span" && c.name == "warden.attempt")
        .collect();
    let find = |pred: &dyn Fn(&Map<String, Value>) -> bool| {
        attempts
            .iter()
            .find(|c| pred(&c.fields))
            .map(|c| c.fields.clone())
    };

    let ok = find(&|f| f["warden.route"] == "a" && f.get("warden.outcome") == Some(&json!("ok")))
        .expect("ok attempt");
    for (k, v) in [
        ("gen_ai.operation.name", json!("chat")),
        ("gen_ai.provider.name", json!("scripted")),
        ("gen_ai.request.model", json!("m")),
        ("gen_ai.response.model", json!("m")),
        ("warden.attempt", json!(1)),
        ("warden.attempt_reason", json!("first")),
        ("warden.breaker_state", json!("closed")),
        ("warden.deadline_ms", json!(60_000)),
        ("warden.hunk_remaining_ms", json!(300_000)),
        ("warden.duration_ms", json!(1000)),
    ] {
        assert_eq!(ok.get(k), Some(&v), "{k} in {ok:?}");
    }
    assert!(ok.contains_key("warden.review_remaining_ms"));
    assert!(
        !ok.contains_key("warden.prompt"),
        "no content unless opted in"
    );

    let timeout =
        find(&|f| f.get("warden.outcome") == Some(&json!("timeout"))).expect("timeout attempt");
    assert_eq!(timeout["warden.stage"], "total");
    assert_eq!(timeout["warden.duration_ms"], 60_000);

    let failover = find(&|f| f.get("warden.attempt_reason") == Some(&json!("failover")))
        .expect("failover attempt");
    assert_eq!(failover["warden.route"], "b");
    assert_eq!(failover["warden.attempt"], 2);
    assert!(
        failover["warden.attempt_reason_detail"]
            .as_str()
            .unwrap()
            .starts_with("from a: timeout"),
        "{failover:?}"
    );

    // The breaker opened with a reason, and the last unit was turned away from a.
    assert!(got.iter().any(|c| c.kind == "event"
        && c.name == "warden.breaker.transition"
        && c.fields["breaker_to"] == "open"));
    let rejected = got
        .iter()
        .find(|c| c.kind == "event" && c.name == "warden.route.rejected")
        .expect("a breaker-rejected unit");
    assert_eq!(rejected.fields["route"], "a");
    assert_eq!(rejected.fields["breaker_state"], "open");
    assert_eq!(rejected.parent.as_ref().unwrap()["warden.unit.index"], 5);
    let unit5 = got
        .iter()
        .find(|c| c.kind == "span" && c.name == "warden.unit" && c.fields["warden.unit.index"] == 5)
        .unwrap();
    assert_eq!(unit5.fields["warden.route"], "b");
    assert_eq!(unit5.fields["warden.status"], "reviewed");
    assert_eq!(unit5.fields["code.file.path"], "src/f5.rs");
    // Attempts are nested in units (a unit span closes after its attempts).
    assert_eq!(
        got.iter()
            .filter(|c| c.kind == "span" && c.name == "warden.unit")
            .count(),
        7
    );
    assert!(!format!("{got:?}").contains("DIFF-CONTENT"));
}

// ---- through the binary ---------------------------------------------------------------

/// A repo with `n` changed files and a config with one fake route.
pub(crate) fn session(
    n: usize,
    fake: &FakeProvider,
    extra_route: &str,
) -> (Repo, tempfile::TempDir) {
    let repo = Repo::new();
    for i in 0..n {
        repo.write(&format!("src/f{i}.rs"), source_lines(10, &format!("f{i}")));
    }
    repo.commit_all("base");
    for i in 0..n {
        repo.write(
            &format!("src/f{i}.rs"),
            format!(
                "{}    let canary = \"DIFF-CANARY-{i}\";\n",
                source_lines(10, &format!("f{i}"))
            ),
        );
    }
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("warden.toml"),
        format!(
            "version = 1\n[execution]\nreviewBudget = \"20s\"\nhunkBudget = \"5s\"\nrequestTimeout = \"3s\"\nfirstTokenTimeout = \"3s\"\n\
             [[routes]]\nname = \"primary\"\nprovider = \"openrouter\"\nmodel = \"timed\"\nbaseUrl = \"{}\"\napiKeyEnv = \"WARDEN_TELEMETRY_KEY\"\nmaxConcurrency = 1\n{extra_route}",
            fake.base_url()
        ),
    )
    .unwrap();
    (repo, cfg)
}

pub(crate) fn review(
    repo: &Repo,
    cfg: &tempfile::TempDir,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (i32, Value, String, Duration) {
    let config = cfg.path().join("warden.toml");
    let mut args = vec![
        "review",
        "--json",
        "--skill",
        "code-review",
        "-c",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut cmd = repo.warden(&args);
    cmd.env("WARDEN_TELEMETRY_KEY", "sk-canary-telemetry-9d2e");
    cmd.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let out = cmd.output().unwrap();
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code().unwrap(), v, stderr, took)
}

#[test]
fn route_metrics_and_percentiles_reflect_known_latencies() {
    let fake = FakeProvider::start();
    let ok = Behavior::Answer(findings_answer(json!([])));
    // Ten answers, 100 ms apart in latency: 100, 200, ..., 1000 ms.
    let seq: Vec<Behavior> = (1..=10)
        .map(|i| Behavior::DelayHeaders(Duration::from_millis(100 * i), Box::new(ok.clone())))
        .collect();
    fake.script("timed", seq);
    let (repo, cfg) = session(10, &fake, "");
    let (code, v, _, _) = review(&repo, &cfg, &[], &[]);
    assert_eq!(code, 0, "{v}");
    assert_valid(&report_schema(), &v);
    let m = &v["routes"]["primary"];
    assert_eq!(m["calls"], 10);
    assert_eq!(m["ok"], 10);
    let get = |k: &str| m[k].as_u64().unwrap();
    assert!((480..=650).contains(&get("p50Ms")), "p50 {}", get("p50Ms"));
    assert!((950..=1150).contains(&get("p95Ms")), "p95 {}", get("p95Ms"));
    assert!(
        (1000..=1150).contains(&get("maxMs")),
        "max {}",
        get("maxMs")
    );
    assert!(get("ttftP95Ms") >= 950, "ttft p95 {}", get("ttftP95Ms"));
    assert_eq!(m["breaker"]["state"], "closed");
    assert_eq!(v["counters"]["attempts"], 10);
}

#[test]
fn the_jsonl_trace_records_the_timeline_without_keys_or_content() {
    let fake = FakeProvider::start();
    fake.script(
        "timed",
        vec![
            Behavior::Answer(findings_answer(json!([]))),
            Behavior::status(503),
        ],
    );
    fake.script("fb", vec![Behavior::Answer(findings_answer(json!([])))]);
    let fallback = "[[routes]]\nname = \"fallback\"\nprovider = \"anthropic\"\nmodel = \"fb\"\nbaseUrl = \"BASE\"\napiKeyEnv = \"WARDEN_TELEMETRY_KEY\"\n";
    let fallback = fallback.replace("BASE", &fake.base_url());
    let (repo, cfg) = session(2, &fake, &fallback);
    let trace = cfg.path().join("trace.jsonl");
    let (code, _, _, _) = review(&repo, &cfg, &["--trace", trace.to_str().unwrap()], &[]);
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(
        !text.contains("sk-canary") && !text.contains("DIFF-CANARY"),
        "key or content in the trace"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let spans = |name: &str| {
        lines
            .iter()
            .filter(|l| l["type"] == "span" && l["name"] == name)
            .count()
    };
    assert_eq!(spans("warden.review"), 1);
    assert_eq!(spans("warden.unit"), 2);
    assert_eq!(spans("warden.attempt"), 3, "one ok, one 503, one failover");
    let review_span = lines.iter().find(|l| l["name"] == "warden.review").unwrap();
    assert_eq!(review_span["fields"]["warden.outcome"], "complete");
    // Every attempt's parent is a unit, every unit's parent is the review.
    let id_of = |name: &str| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["name"] == name)
            .map(|l| l["id"].clone())
            .collect()
    };
    let units = id_of("warden.unit");
    for a in lines.iter().filter(|l| l["name"] == "warden.attempt") {
        assert!(units.contains(&a["parent"]), "{a}");
        assert!(a["startMs"].as_f64().is_some() && a["durationMs"].as_f64().is_some());
    }
    let failover = lines
        .iter()
        .find(|l| l["type"] == "event" && l["name"] == "warden.failover")
        .expect("failover event");
    assert_eq!(failover["fields"]["from"], "primary");
    let a503 = lines
        .iter()
        .find(|l| l["name"] == "warden.attempt" && l["fields"]["http.response.status_code"] == 503)
        .unwrap();
    assert_eq!(a503["fields"]["warden.outcome"], "unavailable");

    // With --trace-content, the prompt is on the attempt spans.
    fake.script("timed", vec![Behavior::Answer(findings_answer(json!([])))]);
    let (_, _, _, _) = review(
        &repo,
        &cfg,
        &["--trace", trace.to_str().unwrap(), "--trace-content"],
        &[],
    );
    assert!(
        std::fs::read_to_string(&trace)
            .unwrap()
            .contains("DIFF-CANARY")
    );
}

#[test]
fn otlp_export_reaches_a_real_receiver_with_spans_and_metrics() {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    let receiver = Receiver::start();
    let fake = FakeProvider::start();
    fake.script("timed", vec![Behavior::Answer(findings_answer(json!([])))]);
    let (repo, cfg) = session(2, &fake, "");
    let endpoint = receiver.endpoint();
    let (code, v, stderr, _) = review(
        &repo,
        &cfg,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(v["outcome"], "complete");
    let traces = receiver.posts("/v1/traces");
    assert!(!traces.is_empty(), "no trace export");
    let mut spans = Vec::new();
    for body in &traces {
        let req = ExportTraceServiceRequest::decode(body.as_slice()).expect("valid OTLP protobuf");
        for rs in req.resource_spans {
            let service = rs
                .resource
                .unwrap()
                .attributes
                .into_iter()
                .find(|a| a.key == "service.name")
                .unwrap();
            assert_eq!(
                service.value.unwrap().value,
                Some(Any::StringValue("warden".into()))
            );
            for ss in rs.scope_spans {
                spans.extend(ss.spans);
            }
        }
    }
    let attr = |s: &opentelemetry_proto::tonic::trace::v1::Span, k: &str| {
        s.attributes
            .iter()
            .find(|a| a.key == k)
            .and_then(|a| a.value.clone())
            .and_then(|v| v.value)
    };
    let chats: Vec<_> = spans.iter().filter(|s| s.name == "chat timed").collect();
    assert_eq!(
        chats.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let c = chats[0];
    assert_eq!(
        attr(c, "gen_ai.provider.name"),
        Some(Any::StringValue("openrouter".into()))
    );
    assert_eq!(
        attr(c, "gen_ai.request.model"),
        Some(Any::StringValue("timed".into()))
    );
    assert_eq!(
        attr(c, "warden.outcome"),
        Some(Any::StringValue("ok".into()))
    );
    assert_eq!(
        attr(c, "gen_ai.usage.input_tokens"),
        Some(Any::IntValue(120))
    );
    assert!(spans.iter().any(|s| s.name == "warden.review"));
    assert!(spans.iter().filter(|s| s.name == "warden.unit").count() == 2);
    let metrics = receiver.posts("/v1/metrics");
    assert!(!metrics.is_empty(), "no metrics export");
    let names: Vec<String> = metrics
        .iter()
        .flat_map(|b| {
            ExportMetricsServiceRequest::decode(b.as_slice())
                .unwrap()
                .resource_metrics
        })
        .flat_map(|rm| rm.scope_metrics)
        .flat_map(|sm| sm.metrics)
        .map(|m| m.name)
        .collect();
    assert!(
        names.contains(&"warden.route.attempts".to_string())
            && names.contains(&"warden.attempt.duration".to_string()),
        "{names:?}"
    );
    let bytes = receiver.all_bytes();
    let has = |needle: &str| bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(
        !has("sk-canary") && !has("DIFF-CANARY"),
        "key or diff content exported"
    );
}

#[test]
fn a_refused_collector_changes_neither_the_outcome_nor_more_than_the_flush_bound() {
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([]))));
    let (repo, cfg) = session(2, &fake, "");
    let (code, v, _, base) = review(&repo, &cfg, &[], &[]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = format!("http://127.0.0.1:{port}");
    let (code2, v2, _, took) = review(
        &repo,
        &cfg,
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &refused)],
    );
    assert_eq!(
        (code, &v["outcome"], &v["summary"]),
        (code2, &v2["outcome"], &v2["summary"])
    );
    assert!(
        took <= base + warden::telemetry::FLUSH_BOUND + Duration::from_millis(1500),
        "with a refused collector {took:?}, without {base:?}"
    );
}
