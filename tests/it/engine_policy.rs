//! The engine's policy, proven with exact numbers on tokio's paused clock against scripted
//! in-process providers: attempts, retries, Retry-After, failover order, bulkheads,
//! breakers, budgets and cancellation.

use crate::support::scripted::{Scripted, Step, units};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use warden::config::{BreakerSettings, Execution};
use warden::engine::{
    AttemptReason, BreakerState, Engine, EngineReport, EngineRoute, Event, Sink, UnitStatus,
    UnitWork,
};
use warden::provider::{Outcome, Provider};

const S: fn(u64) -> Duration = Duration::from_secs;

pub(crate) fn exec() -> Execution {
    Execution {
        review_budget: S(900),
        hunk_budget: S(300),
        request_timeout: S(120),
        connect_timeout: S(10),
        first_token_timeout: S(90),
        idle_timeout: S(30),
        max_attempts: 2,
        breaker: BreakerSettings {
            window: S(120),
            min_calls: 5,
            failure_rate: 0.5,
            open_for: S(30),
            half_open_probes: 1,
        },
        ..Default::default()
    }
}

/// Events with the (paused) time they were emitted, relative to the start.
pub(crate) type Timeline = Arc<Mutex<Vec<(Duration, Event)>>>;

pub(crate) async fn run_with(
    routes: Vec<(Arc<Scripted>, usize)>,
    exec: Execution,
    work: Vec<UnitWork>,
) -> (EngineReport, Timeline) {
    let t0 = Instant::now();
    let timeline: Timeline = Arc::new(Mutex::new(Vec::new()));
    let tl = timeline.clone();
    let sink = Sink::new(move |s| {
        let at = s.at.saturating_duration_since(t0);
        tl.lock().unwrap().push((at, s.event.clone()))
    });
    let routes = routes
        .into_iter()
        .map(|(p, cap)| EngineRoute::new(p as Arc<dyn Provider>, cap))
        .collect();
    let report = Engine::new(routes, exec, sink)
        .run(work, CancellationToken::new())
        .await;
    (report, timeline)
}

fn statuses(r: &EngineReport) -> Vec<UnitStatus> {
    r.units.iter().map(|u| u.status).collect()
}

#[tokio::test(start_paused = true)]
async fn attempts_per_unit_never_exceed_max_attempts() {
    for max in [1u32, 2, 3] {
        let a = Scripted::always("a", Step::Fail(S(1), Outcome::Unavailable));
        let b = Scripted::always("b", Step::Fail(S(1), Outcome::Unavailable));
        let mut e = exec();
        e.max_attempts = max;
        e.breaker.min_calls = 1000; // keep breakers out of this test
        let (r, _) = run_with(vec![(a.clone(), 4), (b.clone(), 4)], e, units(10)).await;
        for u in &r.units {
            assert_eq!(u.attempts.len() as u32, max, "max {max}: {u:?}");
            assert_eq!(u.status, UnitStatus::Unavailable);
        }
        assert_eq!(a.calls() + b.calls(), 10 * max as usize);
    }
}

#[tokio::test(start_paused = true)]
async fn no_retry_after_auth_invalid_model_quota_bad_request_or_bad_response() {
    for o in [
        Outcome::Auth,
        Outcome::InvalidModel,
        Outcome::Quota,
        Outcome::BadRequest,
        Outcome::BadResponse,
    ] {
        let a = Scripted::always("a", Step::Fail(S(1), o));
        let b = Scripted::always("b", Step::Ok(S(1), 0));
        let (r, _) = run_with(vec![(a.clone(), 1), (b.clone(), 1)], exec(), units(1)).await;
        let u = &r.units[0];
        assert_eq!(u.status, UnitStatus::Failed, "{o}");
        assert_eq!(u.attempts.len(), 1, "{o}");
        assert_eq!(b.calls(), 0, "{o}: no failover either");
        let forced = matches!(o, Outcome::Auth | Outcome::InvalidModel);
        let state = r.routes["a"].breaker;
        assert_eq!(state == BreakerState::ForcedOpen, forced, "{o}: {state:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn no_further_attempt_with_less_than_half_the_hunk_budget() {
    // Request deadline 200 s of a 300 s hunk: after one timeout only 100 s are left.
    let a = Scripted::always("a", Step::Hang);
    let b = Scripted::always("b", Step::Ok(S(1), 0));
    let mut e = exec();
    e.request_timeout = S(200);
    let (r, _) = run_with(vec![(a.clone(), 1), (b.clone(), 1)], e, units(1)).await;
    assert_eq!(r.units[0].status, UnitStatus::TimedOut, "{:?}", r.units[0]);
    assert_eq!(r.units[0].attempts.len(), 1);
    assert_eq!(b.calls(), 0);
    // With 120 s deadlines 180 s remain: exactly one failover, to b.
    let a = Scripted::always("a", Step::Hang);
    let (r, _) = run_with(vec![(a, 1), (b.clone(), 1)], exec(), units(1)).await;
    assert_eq!(r.units[0].status, UnitStatus::Reviewed);
    assert_eq!(r.units[0].routes_tried, ["a", "b"]);
    assert_eq!(r.units[0].attempts[1].started, S(120));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_pauses_the_route_and_is_waited_on_within_the_review_budget() {
    // docs/design.md section 13 (amending rule 6): a 429 is back-pressure. It uses no attempt
    // (maxAttempts 1 still reviews), pauses the route for its Retry-After, and the unit,
    // back at the head of the queue, goes again when the pause ends.
    let a = Scripted::new("a", |n| {
        if n == 0 {
            Step::RateLimited(S(1), S(10))
        } else {
            Step::Ok(S(1), 0)
        }
    });
    let mut e = exec();
    e.max_attempts = 1;
    let (r, tl) = run_with(vec![(a, 1)], e, units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed, "{u:?}");
    assert_eq!(u.routes_tried, ["a", "a"]);
    assert_eq!(u.attempts[1].started, S(11));
    assert!(tl.lock().unwrap().iter().any(|(_, e)| matches!(
        e,
        Event::BackPressure { bounce: 1, retry_after: Some(ra), paused_until: Some(p), .. }
            if *ra == S(10) && *p == S(11)
    )));

    // A Retry-After longer than the hunk budget does not end an unstarted unit: its hunk
    // budget has not started. It waits while the review budget allows, and ends at once
    // (no idle waiting) when the pause would outlast it: 1 s + 4 × 201 s, then a pause
    // to 1005 s of a 900 s budget.
    let a = Scripted::always("a", Step::RateLimited(S(1), S(200)));
    let (r, _) = run_with(vec![(a.clone(), 1)], exec(), units(1)).await;
    assert_eq!(r.units[0].status, UnitStatus::Unavailable);
    assert_eq!(a.calls(), 5);
    assert_eq!(r.elapsed, S(805), "no waiting for a pause past the budget");
    // Durations read as people write them, not as Debug prints them.
    let why = &r.units[0].reason;
    assert!(why.contains("paused by Retry-After for 3m20s"), "{why}");
    assert!(why.contains("(1m35s left)"), "{why}");

    // Another route admits calls: the paused route is passed over at once.
    let a = Scripted::always("a", Step::RateLimited(S(1), S(30)));
    let b = Scripted::always("b", Step::Ok(S(1), 1));
    let (r, _) = run_with(vec![(a, 1), (b, 1)], exec(), units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.routes_tried, ["a", "b"]);
    assert_eq!(u.attempts[1].started, S(1));
    assert_eq!(u.route.as_deref(), Some("b"));
}

#[tokio::test(start_paused = true)]
async fn failover_follows_config_order_and_is_recorded() {
    let a = Scripted::always("a", Step::Fail(S(1), Outcome::Unavailable));
    let b = Scripted::always("b", Step::Fail(S(2), Outcome::Timeout));
    let c = Scripted::always("c", Step::Ok(S(1), 2));
    let mut e = exec();
    e.max_attempts = 3;
    let (r, tl) = run_with(vec![(a, 1), (b, 1), (c, 1)], e, units(1)).await;
    let u = &r.units[0];
    assert_eq!(u.status, UnitStatus::Reviewed);
    assert_eq!(u.routes_tried, ["a", "b", "c"]);
    assert_eq!(u.route.as_deref(), Some("c"));
    assert_eq!(u.findings.len(), 2);
    let moves: Vec<(&str, &str)> = u
        .moves
        .iter()
        .map(|m| (m.from.as_str(), m.to.as_str()))
        .collect();
    assert_eq!(moves, [("a", "b"), ("b", "c")]);
    assert!(
        u.moves[0].reason.starts_with("unavailable"),
        "{:?}",
        u.moves
    );
    let reasons: Vec<AttemptReason> = tl
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::AttemptStarted { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons[0], AttemptReason::First);
    assert!(matches!(&reasons[1], AttemptReason::Failover { from, .. } if from == "a"));
    assert!(matches!(&reasons[2], AttemptReason::Failover { from, .. } if from == "b"));
}

#[tokio::test(start_paused = true)]
async fn per_route_concurrency_never_exceeds_its_cap_and_waits_do_not_start_the_hunk_clock() {
    let a = Scripted::always("a", Step::Ok(S(25), 0));
    let mut e = exec();
    e.hunk_budget = S(30);
    e.request_timeout = S(30);
    let (r, tl) = run_with(vec![(a.clone(), 3)], e, units(30)).await;
    assert!(statuses(&r).iter().all(|s| *s == UnitStatus::Reviewed));
    assert_eq!(a.peak.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(r.routes["a"].peak_in_flight, 3);
    assert_eq!(r.elapsed, S(250), "10 waves of 3 units, 25 s each");
    // The last units waited 225 s for a permit, yet got their whole hunk budget.
    for (_, ev) in tl.lock().unwrap().iter() {
        if let Event::AttemptStarted {
            hunk_remaining,
            attempt: 1,
            ..
        } = ev
        {
            assert_eq!(*hunk_remaining, S(30));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn breaker_opens_at_min_calls_and_sends_new_units_to_the_fallback() {
    let a = Scripted::always("a", Step::Fail(S(1), Outcome::Unavailable));
    let b = Scripted::always("b", Step::Ok(S(1), 0));
    let (r, tl) = run_with(vec![(a.clone(), 1), (b.clone(), 1)], exec(), units(20)).await;
    assert!(
        statuses(&r).iter().all(|s| *s == UnitStatus::Reviewed),
        "{:?}",
        statuses(&r)
    );
    assert_eq!(
        a.calls(),
        5,
        "exactly minCalls attempts reached the sick route"
    );
    assert!(
        r.units[5..].iter().all(|u| u.routes_tried == ["b"]),
        "new units skip the open route"
    );
    let tl = tl.lock().unwrap();
    let opened = tl
        .iter()
        .position(|(_, e)| matches!(e, Event::Breaker { route, to: BreakerState::Open, .. } if route == "a"))
        .expect("a opened");
    // b's successes in the meantime did not reset a's breaker.
    let b_ok_before = tl[..opened]
        .iter()
        .filter(|(_, e)| matches!(e, Event::AttemptFinished { record, .. } if record.route == "b" && record.outcome == Outcome::Ok))
        .count();
    assert!(b_ok_before >= 4, "{b_ok_before}");
    assert_eq!(r.routes["a"].opens, 1);
    assert_eq!(r.routes["b"].breaker, BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn breaker_half_opens_after_open_for_then_reopens_longer_then_closes() {
    // a fails 6 times (5 to open it, the first probe), then works.
    let a = Scripted::new("a", |n| {
        if n < 6 {
            Step::Fail(S(1), Outcome::Unavailable)
        } else {
            Step::Ok(S(1), 0)
        }
    });
    let b = Scripted::always("b", Step::Ok(S(10), 0));
    let (r, tl) = run_with(vec![(a.clone(), 1), (b, 2)], exec(), units(30)).await;
    for u in &r.units {
        assert_eq!(u.status, UnitStatus::Reviewed, "{u:#?}");
    }
    let tl = tl.lock().unwrap();
    let transitions: Vec<(Duration, BreakerState, BreakerState)> = tl
        .iter()
        .filter_map(|(t, e)| match e {
            Event::Breaker {
                route, from, to, ..
            } if route == "a" => Some((*t, *from, *to)),
            _ => None,
        })
        .collect();
    use BreakerState::*;
    let states: Vec<(BreakerState, BreakerState)> =
        transitions.iter().map(|(_, f, t)| (*f, *t)).collect();
    assert_eq!(
        states,
        [
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Open),
            (Open, HalfOpen),
            (HalfOpen, Closed)
        ]
    );
    let at = |i: usize| transitions[i].0;
    assert_eq!(at(1) - at(0), S(30), "half-opens after openFor");
    assert_eq!(
        at(3) - at(2),
        S(60),
        "re-opens for twice as long after a bad probe"
    );
    // 5 failures, a failed probe, a good probe; after closing, a takes new units again.
    let probes = r
        .units
        .iter()
        .flat_map(|u| &u.attempts)
        .filter(|a| a.probe)
        .count();
    assert_eq!(probes, 2);
    assert!(a.calls() > 7, "a is used again once closed");
}

#[tokio::test(start_paused = true)]
async fn review_budget_expiry_cancels_every_attempt_and_every_unit_has_a_status() {
    let a = Scripted::always("a", Step::HangForever);
    let mut e = exec();
    e.review_budget = S(60);
    let (r, tl) = run_with(vec![(a.clone(), 4)], e, units(10)).await;
    assert_eq!(r.elapsed, S(60));
    assert!(r.budget_expired);
    assert_eq!(r.units.len(), 10);
    let s = statuses(&r);
    assert_eq!(s.iter().filter(|s| **s == UnitStatus::Cancelled).count(), 4);
    assert_eq!(s.iter().filter(|s| **s == UnitStatus::Skipped).count(), 6);
    for u in r.units.iter().filter(|u| u.status == UnitStatus::Cancelled) {
        assert_eq!(u.attempts.len(), 1);
        assert_eq!(u.attempts[0].record.outcome, Outcome::Cancelled);
    }
    assert!(
        tl.lock()
            .unwrap()
            .iter()
            .any(|(t, e)| matches!(e, Event::BudgetExpired { in_flight: 4 }) && *t == S(60))
    );
}

#[tokio::test(start_paused = true)]
async fn findings_received_before_expiry_are_kept() {
    let a = Scripted::new("a", |n| {
        if n < 2 {
            Step::Ok(S(5), 3)
        } else {
            Step::HangForever
        }
    });
    let mut e = exec();
    e.review_budget = S(60);
    let (r, _) = run_with(vec![(a, 2)], e, units(4)).await;
    let reviewed: Vec<_> = r
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Reviewed)
        .collect();
    assert_eq!(reviewed.len(), 2);
    assert!(reviewed.iter().all(|u| u.findings.len() == 3));
    assert_eq!(
        statuses(&r)
            .iter()
            .filter(|s| **s == UnitStatus::Cancelled)
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn optional_work_is_shed_first_when_the_budget_runs_low() {
    let a = Scripted::always("a", Step::Ok(S(20), 0));
    let mut e = exec();
    e.review_budget = S(100);
    e.hunk_budget = S(30);
    e.request_timeout = S(30);
    let mut work = units(5);
    work[3].optional = true;
    work[4].optional = true;
    let (r, _) = run_with(vec![(a, 1)], e, work).await;
    use UnitStatus::*;
    assert_eq!(
        statuses(&r),
        [Reviewed, Reviewed, Reviewed, Reviewed, Skipped]
    );
    assert!(r.units[4].reason.contains("shed"), "{}", r.units[4].reason);
}

#[tokio::test(start_paused = true)]
async fn an_interrupt_cancels_in_flight_attempts_and_keeps_findings() {
    let a = Scripted::new("a", |n| {
        if n == 0 {
            Step::Ok(S(1), 1)
        } else {
            Step::HangForever
        }
    });
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(S(10)).await;
        t.cancel();
    });
    let engine = Engine::new(
        vec![EngineRoute::new(a as Arc<dyn Provider>, 1)],
        exec(),
        Sink::none(),
    );
    let r = engine.run(units(3), token).await;
    assert!(r.interrupted && !r.budget_expired);
    assert_eq!(r.elapsed, S(10));
    use UnitStatus::*;
    assert_eq!(statuses(&r), [Reviewed, Cancelled, Skipped]);
    assert_eq!(r.units[0].findings.len(), 1);
    assert!(r.units[1].reason.contains("interrupted"));
}

#[tokio::test(start_paused = true)]
async fn a_unit_whose_last_attempt_is_cut_by_the_review_budget_is_cancelled_not_unavailable() {
    // The review budget (100 s) is shorter than the request deadline (120 s): the attempt's
    // deadline is the review's, and its timeout at 100 s is the budget running out.
    for max_attempts in [1, 2] {
        let a = Scripted::always("a", Step::Hang);
        let mut e = exec();
        e.review_budget = S(100);
        e.max_attempts = max_attempts;
        let (r, _) = run_with(vec![(a.clone(), 1)], e, units(1)).await;
        let u = &r.units[0];
        assert_eq!(u.status, UnitStatus::Cancelled, "max {max_attempts}: {u:?}");
        assert!(u.reason.contains("review budget"), "{}", u.reason);
        assert_eq!(u.attempts.len(), 1, "no attempt starts with no budget left");
        assert_eq!(u.attempts[0].record.outcome, Outcome::Cancelled);
        assert_eq!(a.calls(), 1);
        assert!(r.budget_expired);
        assert_eq!(r.elapsed, S(100));
    }
}

#[tokio::test(start_paused = true)]
async fn absurd_budgets_saturate_instead_of_overflowing_the_clock() {
    // Durations a library caller can pass without the config's 7-day cap.
    let a = Scripted::always("a", Step::Fail(S(1), Outcome::Unavailable));
    let b = Scripted::always("b", Step::Ok(S(1), 1));
    let mut e = exec();
    e.review_budget = Duration::MAX;
    e.hunk_budget = Duration::MAX;
    e.breaker.open_for = Duration::MAX;
    e.breaker.window = Duration::MAX;
    e.breaker.min_calls = 1;
    let (r, _) = run_with(vec![(a, 1), (b, 1)], e, units(3)).await;
    assert!(statuses(&r).iter().all(|s| *s == UnitStatus::Reviewed));
    assert_eq!(r.routes["a"].breaker, BreakerState::Open);
    assert!(!r.budget_expired);
}

/// Answers even units from "memory", as a result cache would.
struct EvenUnits;

impl warden::engine::Answerer for EvenUnits {
    fn answer(
        &self,
        unit: usize,
        _info: &warden::engine::UnitInfo,
    ) -> Option<warden::engine::UnitResult> {
        unit.is_multiple_of(2).then(|| warden::engine::UnitResult {
            unit,
            status: UnitStatus::Reviewed,
            route: None,
            reason: "answered before dispatch".into(),
            attempts: vec![],
            routes_tried: vec![],
            moves: vec![],
            findings: vec![],
            dropped_findings: 0,
            dropped: vec![],
            answer_cut: false,
            findings_cut: 0,
            from_cache: None,
            tool_loop: None,
            parts: Vec::new(),
        })
    }
}

#[tokio::test(start_paused = true)]
async fn an_answerer_ends_units_before_dispatch_without_a_request() {
    let a = Scripted::always("a", Step::Ok(S(1), 1));
    let engine = Engine::new(
        vec![EngineRoute::new(a.clone() as Arc<dyn Provider>, 1)],
        exec(),
        Sink::none(),
    )
    .with_answerer(Arc::new(EvenUnits));
    let r = engine.run(units(5), CancellationToken::new()).await;
    assert!(statuses(&r).iter().all(|s| *s == UnitStatus::Reviewed));
    assert_eq!(a.calls(), 2, "only the odd units were sent");
    assert_eq!(r.units[2].reason, "answered before dispatch");
    assert_eq!(r.units[1].findings.len(), 1);
    assert_eq!(r.elapsed, S(2));
}
