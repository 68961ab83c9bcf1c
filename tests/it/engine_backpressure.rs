//! docs/design.md section 13 on tokio's paused clock against scripted providers: back-pressure
//! is a wait (no attempt used, no breaker verdict, the route paused by Retry-After, at
//! most 8 bounces), and each route's effective limit stays between 1 and its cap.

use crate::engine_policy::{Timeline, exec, run_with};
use crate::support::scripted::{Scripted, Step, units};
use std::time::Duration;
use warden::config::{Execution, Routing};
use warden::engine::{Event, UnitStatus};

const S: fn(u64) -> Duration = Duration::from_secs;

/// The limits `route` took, in order (its `LimitChanged` events).
pub(crate) fn limits(tl: &Timeline, route: &str) -> Vec<usize> {
    tl.lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::LimitChanged {
                route: r, limit, ..
            } if r == route => Some(*limit),
            _ => None,
        })
        .collect()
}

fn breaker_events(tl: &Timeline) -> usize {
    let tl = tl.lock().unwrap();
    tl.iter()
        .filter(|(_, e)| matches!(e, Event::Breaker { .. }))
        .count()
}

#[tokio::test(start_paused = true)]
async fn back_pressure_uses_no_attempt_and_is_no_breaker_failure() {
    // Ten answers of 529 (outcome `unavailable`, which would open the breaker as failures:
    // 5 calls, 50 %), then answers. maxAttempts 1: a bounce must not use the one attempt.
    let a = Scripted::new("a", |n| {
        if n < 10 {
            Step::Overloaded(S(1))
        } else {
            Step::Ok(S(2), 0)
        }
    });
    let b = Scripted::always("b", Step::Ok(S(1), 0));
    let mut e = exec();
    e.max_attempts = 1;
    let (r, tl) = run_with(vec![(a.clone(), 4), (b.clone(), 4)], e, units(8)).await;
    for u in &r.units {
        assert_eq!(u.status, UnitStatus::Reviewed, "{u:?}");
        assert_eq!(u.route.as_deref(), Some("a"), "no failover: {u:?}");
    }
    assert_eq!(a.refused(), 10);
    assert_eq!(b.calls(), 0, "the fallback is not needed for a wait");
    assert_eq!(breaker_events(&tl), 0, "back-pressure opened a breaker");
    assert_eq!(r.routes["a"].breaker, warden::engine::BreakerState::Closed);
    // The overloaded route's limit came down from 4 and every limit stayed in 1..=4.
    let l = limits(&tl, "a");
    assert!(l.iter().any(|l| *l < 4), "{l:?}");
    assert!(l.iter().all(|l| (1..=4).contains(l)), "{l:?}");
}

#[tokio::test(start_paused = true)]
async fn eight_bounces_end_the_unit_unavailable_with_the_reason() {
    let a = Scripted::always("a", Step::RateLimited(S(1), S(1)));
    let (r, tl) = run_with(vec![(a.clone(), 1)], exec(), units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Unavailable);
    assert_eq!(a.calls(), 8);
    assert!(
        u.reason.contains("rate limited 8 times (back-pressure)"),
        "{}",
        u.reason
    );
    // Each bounce waited out the route's 1 s pause: 8 × 1 s answers and 7 pauses.
    assert_eq!(r.elapsed, S(15));
    let bounces: Vec<u32> = tl
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::BackPressure { bounce, .. } => Some(*bounce),
            _ => None,
        })
        .collect();
    assert_eq!(bounces, (1..=8).collect::<Vec<_>>());
    assert_eq!(breaker_events(&tl), 0);
}

#[tokio::test(start_paused = true)]
async fn max_bounces_sets_how_many_answers_of_back_pressure_a_unit_takes() {
    // `[execution] maxBounces = 3`: the unit ends after its third "not now", not the eighth.
    let a = Scripted::always("a", Step::RateLimited(S(1), S(1)));
    let e = Execution {
        max_bounces: 3,
        ..exec()
    };
    let (r, _) = run_with(vec![(a.clone(), 1)], e, units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Unavailable);
    assert_eq!(a.calls(), 3);
    assert!(
        u.reason.contains("rate limited 3 times (back-pressure)"),
        "{}",
        u.reason
    );
}

#[tokio::test(start_paused = true)]
async fn a_started_unit_waits_for_a_paused_route_instead_of_retrying_the_one_that_failed() {
    // a fails the unit (its hunk budget starts); b, the failover, says "not now, 5 s".
    // Rule 6 retries the failed route only if no other admits calls: b is only paused, so
    // the unit waits for it, and the bounce does not use the second of maxAttempts 2.
    let a = Scripted::always(
        "a",
        Step::Fail(S(1), warden::provider::Outcome::Unavailable),
    );
    let b = Scripted::new("b", |n| {
        if n == 0 {
            Step::RateLimited(S(1), S(5))
        } else {
            Step::Ok(S(1), 1)
        }
    });
    let (r, _) = run_with(vec![(a.clone(), 1), (b, 1)], exec(), units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{u:?}");
    assert_eq!(u.routes_tried, ["a", "b", "b"]);
    assert_eq!(u.attempts[2].started, S(7));
    assert_eq!(a.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn under_spillover_other_routes_take_the_work_while_a_route_is_paused() {
    let a = Scripted::new("a", |n| {
        if n == 0 {
            Step::RateLimited(S(1), S(30))
        } else {
            Step::Ok(S(10), 0)
        }
    });
    let b = Scripted::always("b", Step::Ok(S(10), 0));
    let mut e = exec();
    e.routing = Routing::Spillover;
    let (r, tl) = run_with(vec![(a.clone(), 2), (b.clone(), 2)], e, units(12)).await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    let t0 = a.log.lock().unwrap()[0].1;
    let during: Vec<Duration> = a.log.lock().unwrap()[1..]
        .iter()
        .map(|(_, at, _)| at.duration_since(t0))
        .filter(|d| *d > S(1) && *d < S(31))
        .collect();
    assert!(
        during.is_empty(),
        "a started attempts while paused: {during:?}"
    );
    assert!(b.calls() >= 4, "b took the work: {}", b.calls());
    assert!(tl.lock().unwrap().iter().any(|(_, e)| matches!(
        e,
        Event::BackPressure { paused_until: Some(p), .. } if *p == S(31)
    )));
}

#[tokio::test(start_paused = true)]
async fn the_limit_finds_a_providers_capacity_and_never_exceeds_the_cap() {
    // The provider serves 3 at once and answers 429 (Retry-After 1 s) beyond; the route's
    // cap is 16. The limit starts at 4, so the first overshoot is one call, and settles
    // at 3; few answers are 429 and every unit is reviewed.
    let a = Scripted::limited("a", 3, Some(S(1)), |_| Step::Ok(S(2), 0));
    let (r, tl) = run_with(vec![(a.clone(), 16)], exec(), units(60)).await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    let calls = a.calls();
    assert!(
        a.refused() * 10 <= calls,
        "{} of {calls} answered 429",
        a.refused()
    );
    assert!(a.peak.load(std::sync::atomic::Ordering::SeqCst) <= 3);
    let l = limits(&tl, "a");
    assert!(l.iter().all(|l| (1..=16).contains(l)), "{l:?}");
    assert!(r.routes["a"].peak_in_flight <= 16);
    // Near the best fixed cap (3): 60 units × 2 s / 3 = 40 s.
    assert!(r.elapsed <= S(50), "{:?}", r.elapsed);

    // A provider with room: the limit grows to the cap and no further.
    let b = Scripted::always("b", Step::Ok(S(2), 0));
    let (r, tl) = run_with(vec![(b.clone(), 6)], exec(), units(60)).await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    assert_eq!(limits(&tl, "b").last(), Some(&6));
    assert_eq!(b.peak.load(std::sync::atomic::Ordering::SeqCst), 6);
    assert_eq!(r.routes["b"].peak_in_flight, 6);
}

#[tokio::test(start_paused = true)]
async fn a_route_with_no_success_in_its_window_still_opens() {
    // Back-pressure aside, the breaker's rule is unchanged: five timeouts open it.
    let a = Scripted::always("a", Step::Hang);
    let b = Scripted::always("b", Step::Ok(S(1), 0));
    let (r, tl) = run_with(vec![(a, 5), (b, 4)], exec(), units(10)).await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    assert!(breaker_events(&tl) >= 1);
    assert!(r.routes["a"].opens >= 1);
}

/// An account shared with other processes, in memory: route 0 may start `per_window`
/// attempts per 10 s window (of the paused clock); route 1 has no shared window.
struct SharedAccount {
    per_window: u64,
    start: tokio::time::Instant,
    taken: std::sync::Mutex<std::collections::HashMap<u64, u64>>,
    gos: std::sync::atomic::AtomicUsize,
    settles: std::sync::atomic::AtomicUsize,
}

impl warden::engine::SharedWindows for SharedAccount {
    fn take(
        &self,
        route: usize,
        _tokens: u64,
    ) -> futures_util::future::BoxFuture<'_, warden::engine::SharedTake> {
        use std::sync::atomic::Ordering::SeqCst;
        use warden::engine::SharedTake;
        let since = self.start.elapsed();
        let window = since.as_secs() / 10;
        let mut taken = self.taken.lock().unwrap();
        let n = taken.entry(window).or_insert(0);
        let t = if route != 0 || *n < self.per_window {
            *n += u64::from(route == 0);
            self.gos.fetch_add(1, SeqCst);
            SharedTake::Go
        } else {
            SharedTake::Short {
                reason: warden::engine::pacing::PauseReason::Requests,
                wait: S((window + 1) * 10) - since,
            }
        };
        Box::pin(std::future::ready(t))
    }

    fn settle(
        &self,
        _route: usize,
        _info: Option<warden::provider::ratelimit::RateLimitInfo>,
    ) -> futures_util::future::BoxFuture<'_, ()> {
        self.settles
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(std::future::ready(()))
    }
}

/// The engine owns its store: this one is the test's account, shared.
struct Shared(std::sync::Arc<SharedAccount>);
impl warden::engine::SharedWindows for Shared {
    fn take(
        &self,
        route: usize,
        tokens: u64,
    ) -> futures_util::future::BoxFuture<'_, warden::engine::SharedTake> {
        self.0.take(route, tokens)
    }
    fn settle(
        &self,
        route: usize,
        info: Option<warden::provider::ratelimit::RateLimitInfo>,
    ) -> futures_util::future::BoxFuture<'_, ()> {
        self.0.settle(route, info)
    }
}

#[tokio::test(start_paused = true)]
async fn a_shared_window_that_cannot_cover_an_attempt_pauses_the_route_and_spillover_takes_it() {
    use std::sync::atomic::Ordering::SeqCst;
    use warden::engine::{Engine, EngineRoute, Sink};
    let a = Scripted::always("a", Step::Ok(S(1), 0));
    let b = Scripted::always("b", Step::Ok(S(4), 0));
    let mut e = exec();
    e.routing = Routing::Spillover;
    let start = tokio::time::Instant::now();
    let account = std::sync::Arc::new(SharedAccount {
        per_window: 2,
        start,
        taken: Default::default(),
        gos: Default::default(),
        settles: Default::default(),
    });
    let tl: crate::engine_policy::Timeline = Default::default();
    let t = tl.clone();
    let sink = Sink::new(move |s| {
        let at = s.at.saturating_duration_since(start);
        t.lock().unwrap().push((at, s.event.clone()))
    });
    let routes = vec![
        EngineRoute::new(
            a.clone() as std::sync::Arc<dyn warden::provider::Provider>,
            4,
        ),
        EngineRoute::new(
            b.clone() as std::sync::Arc<dyn warden::provider::Provider>,
            4,
        ),
    ];
    let r = Engine::new(routes, e, sink)
        .with_shared_windows(Shared(account.clone()))
        .run(units(12), tokio_util::sync::CancellationToken::new())
        .await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    // Route a started no more than the shared window allowed in any window of it...
    let mut per_window = std::collections::HashMap::<u64, usize>::new();
    for (_, at, _) in a.log.lock().unwrap().iter() {
        *per_window
            .entry(at.duration_since(start).as_secs() / 10)
            .or_default() += 1;
    }
    assert!(per_window.values().all(|n| *n <= 2), "{per_window:?}");
    // ...the other route took the rest, and every attempt that went was settled once.
    assert_eq!(a.calls() + b.calls(), 12);
    assert!(b.calls() >= 4, "b took the work: {}", b.calls());
    assert_eq!(account.gos.load(SeqCst), 12);
    assert_eq!(account.settles.load(SeqCst), 12);
    let paused: Vec<_> = tl
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::RoutePaused {
                route,
                reason,
                until,
                ..
            } => Some((route.clone(), *reason, *until)),
            _ => None,
        })
        .collect();
    assert_eq!(
        paused.first(),
        Some(&(
            "a".to_string(),
            warden::engine::pacing::PauseReason::Requests,
            S(10)
        )),
        "{paused:?}"
    );
}
