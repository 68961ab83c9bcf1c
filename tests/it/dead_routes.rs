//! Issue 27, point 7 (docs/design.md §14, "Failures that are facts end fast"): a route where
//! nothing listens is dead for the run once its half-open probe cannot connect either;
//! units only it could serve end `unavailable` at once, naming its address, and no unit
//! waits through more than one failed probe round. docs/design.md §15: only a probe that failed
//! with a fact ends the waiting; a slow route whose probe times out is waited on, and
//! probed again, while the budget lasts.

use crate::engine_policy::{exec, run_with};
use crate::support::review::*;
use crate::support::scripted::{self, Scripted, Step};
use std::time::Duration;
use warden::engine::{BreakerState, Event, UnitStatus};
use warden::provider::Outcome;

const S: fn(u64) -> Duration = Duration::from_secs;

/// 12 units, one route that refuses every connection, 120 s budget, openFor 5 s.
#[tokio::test(start_paused = true)]
async fn a_dead_route_ends_a_12_unit_review_after_one_probe_round() {
    let dead = Scripted::always("dead", Step::Refused(Duration::from_millis(1)));
    let mut e = exec();
    e.review_budget = S(120);
    e.hunk_budget = S(60);
    e.breaker.open_for = S(5);
    let (r, tl) = run_with(vec![(dead.clone(), 4)], e, scripted::units(12)).await;
    // Paused clock: the last unit ended at one openFor (5 s) and the probe's millisecond,
    // not after the 10 s, 20 s, 40 s open periods that follow a failed probe.
    let ended = tl
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, e)| matches!(e, Event::UnitFinished { .. }))
        .map(|(t, _)| *t)
        .max()
        .unwrap();
    assert!(ended < S(6), "the review ended after {ended:?}");
    assert!(r.elapsed < S(6), "{:?}", r.elapsed);
    for u in &r.units {
        assert_eq!(u.status, UnitStatus::Unavailable, "{u:?}");
        assert!(u.reason.contains("127.0.0.1:9"), "{}", u.reason);
    }
    // One probe round: the attempts before the breaker opened, and the one probe.
    let probes: usize = r
        .units
        .iter()
        .flat_map(|u| &u.attempts)
        .filter(|a| a.probe)
        .count();
    assert_eq!(probes, 1);
    let forced = tl.lock().unwrap().iter().any(|(_, e)| {
        matches!(e, Event::Breaker { to: BreakerState::ForcedOpen, reason, .. } if reason.contains("dead for the run"))
    });
    assert!(forced, "the breaker says the route is dead");
    // Units that never got an attempt say why in terms of the route's address.
    let waited: Vec<_> = r.units.iter().filter(|u| u.attempts.is_empty()).collect();
    assert!(!waited.is_empty());
    for u in waited {
        assert!(u.reason.contains("dead for the run"), "{}", u.reason);
    }
}

/// A route that answers 503 (it is there, only failing) is not dead; still, a unit waits
/// through one failed probe round only.
#[tokio::test(start_paused = true)]
async fn no_unit_waits_through_more_than_one_failed_probe_round() {
    let failing = Scripted::always("failing", Step::Fail(S(1), Outcome::Unavailable));
    let mut e = exec();
    e.review_budget = S(600);
    e.hunk_budget = S(300);
    e.breaker.open_for = S(5);
    let (r, tl) = run_with(vec![(failing, 2)], e, scripted::units(12)).await;
    let opens = tl
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                Event::Breaker {
                    to: BreakerState::Open,
                    ..
                }
            )
        })
        .count();
    // Opened, re-opened after the first failed probe, and at most once more by a unit
    // that had not waited yet: no unit sat through the 10 s + 20 s + 40 s rounds.
    assert!(opens <= 3, "{opens} opens");
    assert!(r.elapsed < S(5 + 1 + 10 + 1 + 1), "{:?}", r.elapsed);
    for u in &r.units {
        assert_eq!(u.status, UnitStatus::Unavailable, "{u:?}");
        assert_ne!(
            u.status,
            UnitStatus::Reviewed,
            "a failing route reviews nothing"
        );
    }
    assert!(
        r.units
            .iter()
            .any(|u| u.reason.contains("waits no further round")),
        "{:?}",
        r.units.iter().map(|u| &u.reason).collect::<Vec<_>>()
    );
}

/// One route that times out for its first 7 calls (cap 2, 10 s deadline), then answers in
/// 1 s: its breaker opens at 30 s, the probe at 35 s times out at 45 s, the next at 55 s
/// answers. The units that waited through the timed-out probe are reviewed after it.
#[tokio::test(start_paused = true)]
async fn a_slow_route_whose_probe_times_out_is_waited_on_and_reviews_the_rest_later() {
    let slow = Scripted::new(
        "slow",
        |n| {
            if n < 7 { Step::Hang } else { Step::Ok(S(1), 0) }
        },
    );
    let mut e = exec();
    e.review_budget = S(600);
    e.hunk_budget = S(300);
    e.request_timeout = S(10);
    e.first_token_timeout = S(10);
    e.max_attempts = 1;
    e.breaker.open_for = S(5);
    let (r, tl) = run_with(vec![(slow.clone(), 2)], e, scripted::units(12)).await;
    let probes: Vec<_> = r
        .units
        .iter()
        .flat_map(|u| &u.attempts)
        .filter(|a| a.probe)
        .map(|a| a.record.outcome)
        .collect();
    assert_eq!(probes, [Outcome::Timeout, Outcome::Ok], "two probe rounds");
    let reviewed = r
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Reviewed)
        .count();
    // Units 0–5 timed out before the breaker opened and unit 6 was the failed probe;
    // every other unit waited through that probe and was reviewed once the route answered.
    assert_eq!(reviewed, 5, "{:?}", r.units);
    for u in &r.units {
        assert!(!u.reason.contains("waits no further round"), "{}", u.reason);
        if u.status != UnitStatus::Reviewed {
            // Its one attempt timed out: it never waited for the breaker.
            assert_eq!(u.attempts.len(), 1, "{u:?}");
            assert_eq!(u.attempts[0].record.outcome, Outcome::Timeout, "{u:?}");
        }
    }
    let reopened = tl.lock().unwrap().iter().any(|(t, e)| {
        matches!(e, Event::Breaker { to: BreakerState::Open, reason, .. } if reason.contains("probe failed")) && *t == S(45)
    });
    assert!(
        reopened,
        "the timed-out probe re-opened the breaker at 45 s"
    );
    assert!(r.elapsed < S(60), "{:?}", r.elapsed);
}

/// The same route, but once it stops timing out it refuses connections: a probe that
/// cannot connect is a fact, and the units that waited through it end at once, naming the
/// address (the route is not dead yet: the attempts before the probe connected).
#[tokio::test(start_paused = true)]
async fn a_probe_that_cannot_connect_ends_the_waiting_of_a_slow_route_s_units() {
    let slow = Scripted::new("slow", |n| {
        if n < 6 {
            Step::Hang
        } else {
            Step::Refused(Duration::from_millis(1))
        }
    });
    let mut e = exec();
    e.review_budget = S(600);
    e.hunk_budget = S(300);
    e.request_timeout = S(10);
    e.first_token_timeout = S(10);
    e.max_attempts = 1;
    e.breaker.open_for = S(5);
    let (r, _) = run_with(vec![(slow.clone(), 2)], e, scripted::units(12)).await;
    let probes = r
        .units
        .iter()
        .flat_map(|u| &u.attempts)
        .filter(|a| a.probe)
        .count();
    assert_eq!(probes, 1, "one probe round");
    assert!(r.elapsed < S(36), "{:?}", r.elapsed);
    let waited: Vec<_> = r.units.iter().filter(|u| u.attempts.is_empty()).collect();
    assert_eq!(waited.len(), 5, "{:?}", r.units);
    for u in waited {
        assert_eq!(u.status, UnitStatus::Unavailable, "{u:?}");
        assert!(u.reason.contains("waits no further round"), "{}", u.reason);
        assert!(u.reason.contains("127.0.0.1:9"), "{}", u.reason);
    }
}

/// A review of `files` files whose one route, `dead` (4 at once), points at a loopback
/// port that was just bound and released: nothing listens there. Its breaker opens for
/// `open_for`. Returns the review and the port.
pub fn dead_route_review(files: usize, open_for: &str) -> (Review, u16) {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let review = Review::new(files);
    let route = route_cfg(
        "dead",
        "openai",
        format!("http://127.0.0.1:{port}/v1"),
        false,
    );
    review.config(&[("reviewBudget", "120s"), ("hunkBudget", "60s")], &[route]);
    let cfg = review.config_path();
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("maxConcurrency = 1\n", "maxConcurrency = 4\n")
        .replacen(
            "[[routes]]",
            &format!("[execution.breaker]\nopenFor = \"{open_for}\"\n[[routes]]"),
            1,
        );
    std::fs::write(&cfg, text).unwrap();
    (review, port)
}

/// The real binary against a closed loopback port: the reasons name it, the review ends
/// within 15 s of a 120 s budget, and the report's counters show one probe round.
#[test]
fn a_route_where_nothing_listens_ends_a_12_unit_review_within_15s() {
    let (review, port) = dead_route_review(12, "5s");
    let (code, v, stderr, took) = review.json(&[]);
    eprintln!("dead route, 12 units: {took:?}");
    assert_eq!(v["budgetExpired"], false, "{stderr}");
    assert!(took < S(15), "took {took:?}: {stderr}");
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(units(&v).len(), 12);
    let address = format!("127.0.0.1:{port}");
    for u in units(&v) {
        assert_eq!(u["status"], "unavailable", "{u}");
        assert!(u["reason"].as_str().unwrap().contains(&address), "{u}");
    }
    let probes = attempts(&v).iter().filter(|a| a["probe"] == true).count();
    assert_eq!(probes, 1, "one probe round");
    assert_eq!(v["routes"]["dead"]["breaker"]["state"], "forced_open");
}
