//! Routing that uses the capacity and the money it has (issue 12), proven on tokio's
//! paused clock against scripted providers: spillover takes every free permit while units
//! wait, `spill = false` routes serve only failovers, the cost budget is never passed
//! (attempts in flight included), and no unit waits for a breaker that reopens too late.

use crate::support::scripted::{Scripted, Step, units};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use warden::config::{BreakerSettings, Execution, Prices, Routing};
use warden::engine::{
    AttemptReason, Engine, EngineReport, EngineRoute, Event, Sink, UnitStatus, UnitWork,
};
use warden::provider::{Outcome, Provider};

const S: fn(u64) -> Duration = Duration::from_secs;

fn exec(routing: Routing) -> Execution {
    Execution {
        review_budget: S(900),
        hunk_budget: S(300),
        request_timeout: S(120),
        max_attempts: 2,
        breaker: BreakerSettings {
            min_calls: 1000, // breakers stay out unless a test asks
            ..BreakerSettings::default()
        },
        routing,
        ..Execution::default()
    }
}

type Timeline = Arc<Mutex<Vec<(Duration, Event)>>>;

async fn run(
    routes: Vec<EngineRoute>,
    exec: Execution,
    work: Vec<UnitWork>,
) -> (EngineReport, Timeline) {
    let t0 = Instant::now();
    let timeline: Timeline = Arc::default();
    let tl = timeline.clone();
    let sink = Sink::new(move |s| {
        let at = s.at.saturating_duration_since(t0);
        tl.lock().unwrap().push((at, s.event.clone()))
    });
    let report = Engine::new(routes, exec, sink)
        .run(work, CancellationToken::new())
        .await;
    (report, timeline)
}

fn route(p: &Arc<Scripted>, cap: usize) -> EngineRoute {
    EngineRoute::new(p.clone() as Arc<dyn Provider>, cap)
}

/// After all events of each instant: (units waiting to start, in flight per route).
fn states(timeline: &Timeline) -> Vec<(Duration, usize, BTreeMap<String, usize>)> {
    let tl = timeline.lock().unwrap();
    let mut out = Vec::new();
    let mut waiting: BTreeSet<usize> = BTreeSet::new();
    let mut in_flight: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (t, e)) in tl.iter().enumerate() {
        match e {
            Event::UnitQueued { unit, .. } => {
                waiting.insert(*unit);
            }
            Event::AttemptStarted { unit, route, .. } => {
                waiting.remove(unit);
                *in_flight.entry(route.clone()).or_default() += 1;
            }
            Event::AttemptFinished { record, .. } => {
                *in_flight.get_mut(&record.route).unwrap() -= 1;
            }
            Event::UnitFinished { unit, .. } => {
                waiting.remove(unit);
            }
            _ => {}
        }
        let last_of_instant = tl.get(i + 1).is_none_or(|(next, _)| next > t);
        if last_of_instant {
            out.push((*t, waiting.len(), in_flight.clone()));
        }
    }
    out
}

#[tokio::test(start_paused = true)]
async fn spillover_never_leaves_a_free_permit_unused_while_a_unit_waits() {
    let slow = Scripted::new("slow", |n| Step::Ok(S(60 + (n as u64 % 3) * 20), 0));
    let fast = Scripted::new("fast", |n| Step::Ok(S(10 + (n as u64 % 4) * 5), 0));
    let (r, timeline) = run(
        vec![route(&slow, 2), route(&fast, 3)],
        exec(Routing::Spillover),
        units(40),
    )
    .await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    let caps = BTreeMap::from([("slow".to_string(), 2), ("fast".to_string(), 3)]);
    let mut checked = 0;
    for (t, waiting, in_flight) in states(&timeline) {
        if waiting == 0 {
            continue;
        }
        checked += 1;
        for (name, cap) in &caps {
            assert_eq!(
                in_flight.get(name).copied().unwrap_or(0),
                *cap,
                "at {t:?} {waiting} units wait while {name} has a free permit"
            );
        }
    }
    assert!(checked > 5, "units waited at {checked} instants");
    assert!(fast.calls() > slow.calls(), "the faster route serves more");
    assert_eq!(r.idle_slot_time, Duration::ZERO);

    // Ordered routing leaves the fallback idle and says how long.
    let slow = Scripted::new("slow", |n| Step::Ok(S(60 + (n as u64 % 3) * 20), 0));
    let fast = Scripted::new("fast", |n| Step::Ok(S(10 + (n as u64 % 4) * 5), 0));
    let (ordered, _) = run(
        vec![route(&slow, 2), route(&fast, 3)],
        exec(Routing::Ordered),
        units(40),
    )
    .await;
    assert_eq!(fast.calls(), 0);
    assert!(
        ordered.elapsed > r.elapsed * 2,
        "{:?} vs {:?}",
        ordered.elapsed,
        r.elapsed
    );
    // 40 units of ~80 s on 2 permits outlast the 15-minute budget: units waited all
    // along, so the fallback's 3 permits sat free for all 900 s.
    assert!(ordered.budget_expired);
    let idle = ordered.idle_slot_time.as_secs_f64();
    assert!(
        (idle - 3.0 * 900.0).abs() < 1e-6,
        "idle slot-seconds {idle}"
    );
}

#[tokio::test(start_paused = true)]
async fn spill_false_routes_take_only_failovers() {
    // Every third call to the primary fails at once; the rest take 30 s.
    let primary = Scripted::new("primary", |n| {
        if n % 3 == 0 {
            Step::Fail(S(1), Outcome::Unavailable)
        } else {
            Step::Ok(S(30), 0)
        }
    });
    let reserve = Scripted::always("reserve", Step::Ok(S(5), 0));
    let reserve_route = EngineRoute {
        spill: false,
        ..route(&reserve, 4)
    };
    let (r, timeline) = run(
        vec![route(&primary, 1), reserve_route],
        exec(Routing::Spillover),
        units(12),
    )
    .await;
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Reviewed));
    let on_reserve: Vec<AttemptReason> = timeline
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            Event::AttemptStarted { route, reason, .. } if route == "reserve" => {
                Some(reason.clone())
            }
            _ => None,
        })
        .collect();
    assert!(!on_reserve.is_empty(), "failovers reached the reserve");
    for reason in &on_reserve {
        assert!(
            matches!(reason, AttemptReason::Failover { .. }),
            "a spill = false route took a new unit: {reason:?}"
        );
    }
    // The same route with spill = true takes new units' free-permit spillover.
    let primary = Scripted::always("primary", Step::Ok(S(30), 0));
    let reserve = Scripted::always("reserve", Step::Ok(S(5), 0));
    let (_, timeline) = run(
        vec![route(&primary, 1), route(&reserve, 4)],
        exec(Routing::Spillover),
        units(12),
    )
    .await;
    let firsts = timeline
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, e)| {
            matches!(e, Event::AttemptStarted { route, reason: AttemptReason::First, .. } if route == "reserve")
        })
        .count();
    assert!(firsts > 0);
}

#[tokio::test(start_paused = true)]
async fn the_cost_budget_is_never_exceeded_including_attempts_in_flight() {
    // Each answer: ~5 input tokens, 500 output tokens at $3 / $15 per million = $0.0075.
    let prices = Some(Prices {
        input: 3.0,
        output: 15.0,
        ..Prices::default()
    });
    let a = Scripted::with_usage("a", 500, |n| Step::Ok(S(20 + n as u64 % 7), 0));
    let a_route = EngineRoute {
        prices,
        max_tokens: 1000,
        ..route(&a, 4)
    };
    let budget = 0.05;
    let e = Execution {
        cost_budget: Some(budget),
        ..exec(Routing::Ordered)
    };
    let (r, timeline) = run(vec![a_route], e, units(20)).await;
    let costs: Vec<f64> = r
        .units
        .iter()
        .flat_map(|u| &u.attempts)
        .map(|a| a.cost_usd.expect("priced route"))
        .collect();
    let total: f64 = costs.iter().sum();
    assert!(total <= budget + 1e-12, "spent {total} of {budget}");
    assert!((r.cost_usd - total).abs() < 1e-12);
    assert!(
        total > budget - 0.0075,
        "the budget is used, not left idle: {total}"
    );
    // The most ever committed at once (settled + in flight at their real cost) also stays
    // within the budget: cost is charged when an attempt finishes, so sum per start.
    let mut committed = 0.0;
    for (_, e) in timeline.lock().unwrap().iter() {
        if let Event::AttemptStarted { .. } = e {
            committed += 0.0075;
            assert!(
                committed <= budget + 1e-9,
                "an attempt started past the budget"
            );
        }
    }
    let reviewed = r
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Reviewed)
        .count();
    assert_eq!(reviewed, costs.len());
    let skipped: Vec<_> = r
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Skipped)
        .collect();
    assert_eq!(reviewed + skipped.len(), 20);
    assert!(!skipped.is_empty());
    for u in skipped {
        assert!(u.reason.starts_with("cost budget"), "{}", u.reason);
        assert!(u.attempts.is_empty());
    }
}

/// A 45 s review, one attempt per unit, whose breaker opens after two failures for `open_for`.
fn breaker_opens_for(open_for: Duration) -> Execution {
    Execution {
        review_budget: S(45),
        hunk_budget: S(30),
        request_timeout: S(10),
        max_attempts: 1,
        breaker: BreakerSettings {
            min_calls: 2,
            open_for,
            ..BreakerSettings::default()
        },
        ..exec(Routing::Ordered)
    }
}

#[tokio::test(start_paused = true)]
async fn a_unit_does_not_wait_for_a_breaker_that_reopens_after_the_review_deadline() {
    // The only route fails; its breaker opens for 10 minutes in a 45 s review.
    let a = Scripted::always("a", Step::Fail(S(1), Outcome::Unavailable));
    let e = breaker_opens_for(S(600));
    let (r, _) = run(vec![route(&a, 2)], e, units(10)).await;
    assert!(
        r.elapsed <= S(2),
        "the review ended when nothing could progress, not at the budget: {:?}",
        r.elapsed
    );
    assert!(!r.budget_expired);
    assert!(r.units.iter().all(|u| u.status == UnitStatus::Unavailable));
    let waited: Vec<_> = r.units.iter().filter(|u| u.attempts.is_empty()).collect();
    assert!(!waited.is_empty());
    for u in waited {
        assert!(
            u.reason.contains("open until after the review deadline"),
            "{}",
            u.reason
        );
    }
    assert_eq!(a.calls(), 2, "only the calls before the breaker opened");
}

#[tokio::test(start_paused = true)]
async fn a_unit_still_waits_for_a_breaker_that_reopens_in_time() {
    let a = Scripted::new("a", |n| {
        if n < 2 {
            Step::Fail(S(1), Outcome::Unavailable)
        } else {
            Step::Ok(S(1), 0)
        }
    });
    let e = breaker_opens_for(S(10));
    let (r, _) = run(vec![route(&a, 2)], e, units(6)).await;
    let reviewed = r
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Reviewed)
        .count();
    assert_eq!(
        reviewed,
        4,
        "{:?}",
        r.units.iter().map(|u| &u.reason).collect::<Vec<_>>()
    );
}
