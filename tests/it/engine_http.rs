//! The engine over real HTTP against the fake provider, with short budgets.

use crate::provider::route;
use crate::support::fake_provider::{Behavior, FakeProvider};
use crate::support::scripted::units;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use warden::config::{BreakerSettings, Execution, ProviderKind};
use warden::engine::{
    BreakerState, Engine, EngineReport, EngineRoute, Event, Sink, UnitStatus, UnitWork,
};
use warden::provider::{HttpProvider, Provider};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn exec() -> Execution {
    Execution {
        review_budget: MS(4000),
        hunk_budget: MS(1500),
        request_timeout: MS(600),
        connect_timeout: MS(300),
        first_token_timeout: MS(300),
        idle_timeout: MS(200),
        max_attempts: 2,
        breaker: BreakerSettings {
            window: Duration::from_secs(60),
            min_calls: 5,
            failure_rate: 0.5,
            open_for: Duration::from_secs(60),
            half_open_probes: 1,
        },
        ..Default::default()
    }
}

fn http(fake: &FakeProvider, name: &str, kind: ProviderKind) -> Arc<dyn Provider> {
    Arc::new(HttpProvider::new(
        &route(name, kind, name, &fake.base_url(), true),
        None,
        MS(300),
    ))
}

fn run(
    routes: Vec<(Arc<dyn Provider>, usize)>,
    exec: Execution,
    work: Vec<UnitWork>,
) -> (EngineReport, Vec<(Instant, Event)>) {
    let (sink, events) = Sink::collect();
    let stamped = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = stamped.clone();
    let sink = sink.tee(Sink::new(move |s| {
        s2.lock().unwrap().push((s.at.into_std(), s.event.clone()))
    }));
    let engine = Engine::new(
        routes
            .into_iter()
            .map(|(provider, max_concurrency)| EngineRoute::new(provider, max_concurrency))
            .collect(),
        exec,
        sink,
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let report = rt.block_on(engine.run(work, CancellationToken::new()));
    drop(events);
    let stamped = stamped.lock().unwrap().clone();
    (report, stamped)
}

#[test]
fn a_hanging_primary_fails_over_and_stops_receiving_calls_once_open() {
    let fake = FakeProvider::start();
    fake.script("primary", vec![Behavior::HeadersThenHang]);
    let primary = http(&fake, "primary", ProviderKind::OpenRouter);
    let fallback = http(&fake, "fallback", ProviderKind::Anthropic);
    let (r, events) = run(vec![(primary, 1), (fallback, 4)], exec(), units(20));
    for u in &r.units {
        assert_eq!(u.status, UnitStatus::Reviewed, "{u:?}");
        assert_eq!(u.route.as_deref(), Some("fallback"));
    }
    let to_primary = fake.requests_for("primary");
    assert!(
        to_primary.len() <= 5 + 1,
        "minCalls + probes at most, got {}",
        to_primary.len()
    );
    assert_eq!(r.routes["primary"].breaker, BreakerState::Open);
    let opened_at = events
        .iter()
        .find(|(_, e)| matches!(e, Event::Breaker { route, to: BreakerState::Open, .. } if route == "primary"))
        .map(|(t, _)| *t)
        .expect("primary opened");
    assert_eq!(
        to_primary.iter().filter(|q| q.at > opened_at).count(),
        0,
        "no call after opening (openFor is 60 s)"
    );
    // Every timed-out call to the primary was hung up by the client.
    for q in fake.wait_all_closed(MS(1000)) {
        assert!(q.closed(), "{q:?}");
    }
}

#[test]
fn when_every_route_hangs_the_engine_returns_within_the_budget_and_claims_nothing() {
    let fake = FakeProvider::start();
    fake.script("a", vec![Behavior::KeepAlivesForever(MS(50))]);
    fake.script("b", vec![Behavior::Hang]);
    let a = http(&fake, "a", ProviderKind::OpenAi);
    let b = http(&fake, "b", ProviderKind::Anthropic);
    let mut e = exec();
    e.review_budget = MS(2000);
    e.first_token_timeout = MS(5000); // only the deadlines bound these attempts
    let started = Instant::now();
    let (r, _) = run(vec![(a, 2), (b, 2)], e, units(12));
    let took = started.elapsed();
    assert!(
        took <= e.review_budget + MS(1000),
        "returned after {took:?}"
    );
    assert_eq!(r.units.len(), 12);
    for u in &r.units {
        assert!(
            matches!(
                u.status,
                UnitStatus::TimedOut
                    | UnitStatus::Unavailable
                    | UnitStatus::Cancelled
                    | UnitStatus::Skipped
            ),
            "{u:?}"
        );
        assert!(u.findings.is_empty() && u.route.is_none());
    }
    let reqs = fake.wait_all_closed(MS(1000));
    assert!(!reqs.is_empty());
    for q in &reqs {
        assert!(q.hung_up_at.is_some(), "socket left open: {q:?}");
    }
}

#[test]
fn a_401_on_the_primary_is_one_request_no_retry_no_failover_and_forces_it_open() {
    let fake = FakeProvider::start();
    fake.script("primary", vec![Behavior::status(401)]);
    let primary = http(&fake, "primary", ProviderKind::OpenAi);
    let fallback = http(&fake, "fallback", ProviderKind::OpenAi);
    let (r, _) = run(vec![(primary, 1), (fallback, 1)], exec(), units(3));
    let first = &r.units[0];
    assert_eq!(first.status, UnitStatus::Failed);
    assert_eq!(first.attempts.len(), 1);
    assert_eq!(first.routes_tried, ["primary"]);
    assert_eq!(fake.requests_for("primary").len(), 1);
    assert_eq!(r.routes["primary"].breaker, BreakerState::ForcedOpen);
    // Later units go straight to the fallback.
    for u in &r.units[1..] {
        assert_eq!(u.status, UnitStatus::Reviewed);
        assert_eq!(u.routes_tried, ["fallback"]);
    }
}

/// A duration in Rust's Debug form (`499.870812ms`, `12ns`, `3µs`) inside `text`.
fn debug_duration(text: &str) -> Option<&str> {
    let b = text.as_bytes();
    (0..b.len()).find_map(|i| {
        let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let frac = b.get(i + digits) == Some(&b'.')
            && b[i + digits + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count()
                >= 3;
        let tiny = digits > 0
            && ["ns", "µs"]
                .iter()
                .any(|u| text[i + digits..].starts_with(u));
        ((i == 0 || !b[i - 1].is_ascii_digit()) && digits > 0 && (frac || tiny))
            .then(|| &text[i..(i + 20).min(text.len())])
    })
}

#[test]
fn a_deadline_cut_by_the_hunk_budget_reads_as_people_write_it() {
    let fake = FakeProvider::start();
    fake.script("a", vec![Behavior::status(503), Behavior::Hang]);
    let a = http(&fake, "a", ProviderKind::OpenAi);
    let mut e = exec();
    // The retry's deadline is what the first attempt left of the hunk budget: never a
    // round number.
    e.hunk_budget = MS(500);
    e.first_token_timeout = MS(5000);
    let (r, _) = run(vec![(a, 1)], e, units(1));
    let u = &r.units[0];
    assert_eq!(u.attempts.len(), 2, "{u:?}");
    let reason = &u.attempts[1].record.reason;
    assert!(reason.contains("deadline"), "{reason}");
    assert_eq!(debug_duration(reason), None, "{reason}");
    assert_eq!(debug_duration(&u.reason), None, "{}", u.reason);
    assert_eq!(debug_duration("within 499.870812ms"), Some("499.870812ms"));
    assert_eq!(debug_duration("after 0ns"), Some("0ns"));
    assert_eq!(debug_duration("within 499ms, 1.5s"), None);
}
