//! Attacks on this process's breakers as a floor under the fleet's (`src/fleet/floor.rs`)
//! from a hostile, flapping or vanishing Redis and from concurrency: half-open probes with
//! fleet leases out when Redis dies or the review budget ends, a route held only by probes
//! in flight, an auth failure during half-open, a fleet saying open for a millisecond.
//! Each asserts a promise: the budget kept, one honest status per unit, the route not
//! lost, at most halfOpenProbes probes out, Redis not asked in a loop.

use super::breakers::{exec, now, two};
use super::*;
use crate::support::fake_provider::Behavior;
use crate::support::resp::{FakeRedis, Misbehave};
use warden::config::Execution;
use warden::engine::breaker::{Admission, BreakerState};
use warden::engine::{Breakers, Hold};
use warden::fleet::Upstream;
use warden::fleet::breakers::{FleetBreakers, PROBE_RECHECK};
use warden::provider::Outcome;

/// Two timeouts open `b`'s own breaker (and the fleet's, unless it answers otherwise);
/// then `open_for` passes.
async fn open_then_wait(b: &FleetBreakers, open_for: Duration) {
    for _ in 0..2 {
        b.record_async(0, now(), Outcome::Timeout, Hold::default())
            .await;
    }
    tokio::time::sleep(open_for + Duration::from_millis(50)).await;
}

/// One process's breakers over one upstream, its fleet on `fake`.
async fn one_on(fake: &FakeRedis, e: &Execution) -> (FleetBreakers, Arc<Mutex<Vec<String>>>) {
    let (warn, seen) = warnings();
    let fleet = Fleet::connect(target(&fake.url(), None, None), warn)
        .await
        .unwrap();
    let up = Upstream {
        provider: "openai".into(),
        host: "h:1".into(),
        model: "m".into(),
    };
    (FleetBreakers::new(fleet, &[up], e, now()), seen)
}

/// A fleet that says "open for 1 ms" to every admission and record: well-formed, so the
/// fleet stays in use, and the engine may ask again only after a bounded recheck.
#[test]
fn a_fleet_saying_open_for_a_millisecond_every_time_is_not_asked_in_a_loop() {
    let units = 3;
    let run = FleetRun::new(units);
    super::faults::answering(&run, 0);
    let redis = FakeRedis::start(Misbehave::ByKeys(&[
        (2, "*3\r\n$4\r\nopen\r\n:1\r\n:0\r\n"),
        (4, "*4\r\n$4\r\nopen\r\n:1\r\n:0\r\n:0\r\n"),
    ]));
    run.config(Some(&redis.url()), &[("reviewBudget", "2s")], "");
    let t = Instant::now();
    let (code, v, err) = run.review();
    let took = t.elapsed();
    // The fleet says every route is open: each unit ends unavailable, honestly, within the
    // budget, and nothing was sent.
    assert_eq!(code, 3, "{err}");
    let unavailable = vec![("unavailable".to_string(), String::new()); units];
    assert_eq!(statuses(&v), unavailable, "{v}");
    assert!(run.fake.requests().is_empty());
    assert!(took < Duration::from_secs(3), "a 2 s review took {took:?}");
    assert_eq!(fleet_warnings(&err), 0, "{err}");
    // Each unit asks each route at most once per 500 ms recheck (before: one call per
    // millisecond per unit, over 6000 in this review).
    let bound = (units * 2 * (2000 / 500 + 1)) as u64;
    assert!(redis.scripts() <= bound, "{} calls", redis.scripts());
}

/// The engine sleeps until a route's `reopens_at` when no route admits (and a unit
/// waiting for a permit wakes then to go back to a preferred route): an instant in the
/// past for a route that still does not admit is a busy loop for as long as the probes
/// holding it are in flight (up to a request deadline).
#[test]
fn a_route_held_by_a_fleet_probe_in_flight_never_says_it_reopened_in_the_past() {
    let redis = RedisServer::start();
    runtime().block_on(async {
        let open_for = Duration::from_millis(300);
        let (a, b, seen) = two(&redis, "held", &exec(open_for, 1)).await;
        // Another process opens the upstream for the fleet.
        open_then_wait(&b, open_for).await;
        // This process, its own breaker closed, takes the fleet's probe lease; the probe
        // hangs while its own plain calls time out and open its own breaker.
        let (adm, _, lease) = a.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Probe);
        assert!(lease.lease.is_some() && !lease.local_probe);
        open_then_wait(&a, open_for).await;
        // openFor is over, but the fleet probe holds the route: no admission, and the
        // next look is ahead, not behind.
        let t = now();
        assert!(!a.would_admit(0, t));
        let reopen = a.reopens_at(0);
        assert!(
            reopen.is_some_and(|r| r > t),
            "reopens {:?} after now",
            reopen.map(|r| r.checked_duration_since(t))
        );
        // The probe succeeds: the route is not lost.
        a.record_async(0, now(), Outcome::Ok, lease).await;
        assert!(a.would_admit(0, now()));
        let (adm, _, hold) = a.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Probe, "its own breaker probes once");
        a.record_async(0, now(), Outcome::Ok, hold).await;
        assert_eq!(a.admit_async(0, now()).await.0, Admission::Yes);
        assert_eq!(a.state(0), BreakerState::Closed);
        assert!(seen.lock().unwrap().is_empty());
    });
}

/// halfOpenProbes = 2, this process's breaker half-open with both probes out, each holding
/// a fleet lease too, when Redis dies (killed, or frozen: one bounded call): the probes'
/// ends give back both slots, the one warning is given, and the route probes again
/// (twice) once its own open period is over.
#[test]
fn redis_gone_while_both_half_open_probes_hold_fleet_leases_loses_no_slot() {
    for freeze in [false, true] {
        let mut redis = RedisServer::start();
        runtime().block_on(async {
            let open_for = Duration::from_millis(300);
            let (a, b, seen) = two(&redis, "gone", &exec(open_for, 2)).await;
            open_then_wait(&a, open_for).await;
            let mut out = Vec::new();
            for _ in 0..2 {
                let (adm, _, hold) = a.admit_async(0, now()).await;
                assert_eq!(adm, Admission::Probe);
                assert!(hold.local_probe && hold.lease.is_some(), "{hold:?}");
                out.push(hold);
            }
            assert!(!a.would_admit(0, now()), "both slots out");
            assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
            assert_eq!(b.admit_async(0, now()).await.0, Admission::No, "no lease");
            if freeze {
                redis.pause();
            } else {
                redis.kill();
            }
            // One probe fails (open again, 600 ms), the other ends late and well.
            let t = std::time::Instant::now();
            a.record_async(0, now(), Outcome::Timeout, out[0]).await;
            assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
            a.record_async(0, now(), Outcome::Ok, out[1]).await;
            assert_eq!(a.state(0), BreakerState::Open);
            assert_eq!(seen.lock().unwrap().len(), 1, "{:?}", seen.lock().unwrap());
            tokio::time::sleep(2 * open_for + Duration::from_millis(50)).await;
            for _ in 0..2 {
                let (adm, _, hold) = a.admit_async(0, now()).await;
                assert_eq!(adm, Admission::Probe, "freeze {freeze}");
                assert_eq!(hold, Hold::local(Admission::Probe));
            }
            assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        });
        if freeze {
            redis.resume();
        }
    }
}

/// The most probes of one route in flight at once, from the report's attempts.
fn most_probes_at_once(v: &serde_json::Value, route: &str) -> usize {
    let probes: Vec<(u64, u64)> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|u| u["attempts"].as_array().unwrap())
        .filter(|a| a["probe"] == true && a["route"] == route)
        .map(|a| {
            let s = a["startedMs"].as_u64().unwrap();
            (s, s + a["durationMs"].as_u64().unwrap())
        })
        .collect();
    probes
        .iter()
        .map(|(s, _)| probes.iter().filter(|(a, b)| a <= s && s < b).count())
        .max()
        .unwrap_or(0)
}

/// Both routes hang (each attempt times out after 1.4 s), open after two timeouts and
/// half-open 1.5 s later with two probes; units queue behind two permits per route. The
/// review budget (4 s) ends while that round of probes is out (from 2.9 s, due to time out
/// at 4.3 s), with Redis answering or frozen just before (its calls in flight then cost one
/// bounded call, and the fleet is off). It is the first probe round: no unit waits through
/// a failed one (docs/design.md §14), so a second round would find no unit left to probe.
#[test]
fn the_review_deadline_cuts_half_open_probes_inside_its_budget_even_with_redis_frozen() {
    let units = 16;
    for freeze in [false, true] {
        let redis = RedisServer::start();
        let run = FleetRun::new(units);
        run.fake.script("primary", vec![Behavior::Hang]);
        run.fake.script("fallback", vec![Behavior::Hang]);
        let slow = [
            ("reviewBudget", "4s"),
            ("requestTimeout", "1500ms"),
            ("firstTokenTimeout", "1400ms"),
            ("idleTimeout", "1400ms"),
        ];
        run.config(Some(&redis.url()), &slow, "");
        let path = run.cfg.path().join("warden.toml");
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace(
                "openFor = \"60s\"",
                "openFor = \"1500ms\"\nhalfOpenProbes = 2",
            )
            .replace("maxConcurrency = 4", "maxConcurrency = 2");
        std::fs::write(&path, text).unwrap();
        let child = run.command().spawn().unwrap();
        std::thread::sleep(Duration::from_millis(3850));
        if freeze {
            redis.pause();
        }
        let (code, v, err) = finish(child);
        if freeze {
            redis.resume();
        }
        // Every unit has one honest status: its probe or attempt cut (cancelled), its hunk
        // budget spent (timed_out), or no route admitted it (unavailable).
        assert_eq!(code, 3, "{err}");
        let ended: Vec<String> = statuses(&v).into_iter().map(|(s, _)| s).collect();
        assert_eq!(ended.len(), units);
        assert!(
            ended
                .iter()
                .all(|s| ["cancelled", "timed_out", "unavailable"].contains(&s.as_str())),
            "{ended:?}"
        );
        // Within the budget, or one Redis call bound (250 ms) past it when frozen.
        let (took, budget) = (v["durationMs"].as_u64().unwrap(), 4000);
        assert!(took <= budget + 250 + 150, "freeze {freeze}: {took} ms");
        assert!(fleet_warnings(&err) <= usize::from(freeze), "{err}");
        let cut: Vec<&serde_json::Value> = v["units"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|u| u["attempts"].as_array().unwrap())
            .filter(|a| a["probe"] == true && a["outcome"] == "cancelled")
            .collect();
        assert!(
            !cut.is_empty(),
            "freeze {freeze}: no probe was out at the deadline"
        );
        for route in ["primary", "fallback"] {
            let most = most_probes_at_once(&v, route);
            assert!(most <= 2, "{most} probes at once on {route}: {v}");
        }
    }
}

/// A fleet flapping between closed, open and half-open (each script's answers in turn,
/// well-formed, so it stays in use) while the primary hangs: every unit ends reviewed by
/// the fallback or honestly unavailable within the budget, Redis is asked about once per
/// admission and record (no loop), at most halfOpenProbes (2) probes of a route are out at
/// once, and this process's own breaker keeps most units off the hanging primary.
#[test]
fn a_fleet_flapping_between_closed_open_and_half_open_keeps_every_promise() {
    let units = 24;
    let run = FleetRun::new(units);
    run.fake.script("primary", vec![Behavior::Hang]);
    let redis = FakeRedis::start(Misbehave::Cycle(&[
        (
            2,
            &[
                "*3\r\n$6\r\nclosed\r\n:0\r\n:0\r\n",
                "*3\r\n$4\r\nopen\r\n:300\r\n:0\r\n",
                "*3\r\n$9\r\nhalf_open\r\n:0\r\n:1\r\n",
                "*3\r\n$9\r\nhalf_open\r\n:0\r\n:0\r\n",
            ],
        ),
        (
            4,
            &[
                "*4\r\n$6\r\nclosed\r\n:0\r\n:1\r\n:0\r\n",
                "*4\r\n$4\r\nopen\r\n:400\r\n:2\r\n:2\r\n",
                "*4\r\n$9\r\nhalf_open\r\n:0\r\n:0\r\n:0\r\n",
            ],
        ),
    ]));
    run.config(Some(&redis.url()), &[("reviewBudget", "6s")], "");
    let path = run.cfg.path().join("warden.toml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "openFor = \"60s\"",
        "openFor = \"300ms\"\nhalfOpenProbes = 2",
    );
    std::fs::write(&path, text).unwrap();
    let (_, v, err) = run.review();
    let ended = statuses(&v);
    assert_eq!(ended.len(), units);
    for s in &ended {
        let ok = *s == ("reviewed".into(), "fallback".into())
            || *s == ("unavailable".into(), String::new());
        assert!(ok, "{s:?}: {err}");
    }
    assert!(v["durationMs"].as_u64().unwrap() <= 6000, "{err}");
    assert_eq!(fleet_warnings(&err), 0, "{err}");
    let attempts: usize = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["attempts"].as_array().unwrap().len())
        .sum();
    let calls = redis.scripts() as usize;
    assert!(
        calls <= 4 * (attempts + units),
        "{calls} calls, {attempts} attempts"
    );
    for route in ["primary", "fallback"] {
        let most = most_probes_at_once(&v, route);
        assert!(most <= 2, "{most} probes at once on {route}: {err}");
    }
    let primary = run.fake.requests_for("primary").len();
    assert!(
        primary <= units / 2,
        "{primary} requests to the hanging primary"
    );
}

/// This process's fleet probe (its lease taken while its own breaker was closed) holds off
/// its own half-open probes; when it ends, nothing may change that the engine is told of
/// (its own breaker stays half-open, the fleet's view stays closed), yet the route admits
/// again. Units waiting for a route must not sleep to their deadline: while it does not
/// admit, the route says when to look again, at most one recheck ahead.
#[test]
fn a_route_waiting_on_its_fleet_probe_says_when_to_look_again() {
    // Admissions: a lease, then closed; records: closed.
    let fake = FakeRedis::start(Misbehave::Cycle(&[
        (
            2,
            &[
                "*3\r\n$9\r\nhalf_open\r\n:0\r\n:1\r\n",
                "*3\r\n$6\r\nclosed\r\n:0\r\n:0\r\n",
            ],
        ),
        (4, &["*4\r\n$6\r\nclosed\r\n:0\r\n:1\r\n:0\r\n"]),
    ]));
    runtime().block_on(async {
        let open_for = Duration::from_millis(300);
        let (a, seen) = one_on(&fake, &exec(open_for, 1)).await;
        let (adm, _, lease) = a.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Probe);
        open_then_wait(&a, open_for).await;
        // Half-open, but its fleet probe is out: no admission.
        assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        assert_eq!(a.state(0), BreakerState::HalfOpen);
        let t = now();
        assert!(!a.would_admit(0, t));
        let look = a.reopens_at(0);
        let after = now();
        assert!(
            look.is_some_and(|r| r > t && r <= after + PROBE_RECHECK),
            "looks again {:?} after now",
            look.map(|r| r.checked_duration_since(t))
        );
        // The probe times out: no transition to announce, and the route admits again.
        assert_eq!(
            a.record_async(0, now(), Outcome::Timeout, lease).await,
            None
        );
        assert!(a.would_admit(0, now()));
        let (adm, _, hold) = a.admit_async(0, now()).await;
        assert_eq!(
            (adm, hold),
            (Admission::Probe, Hold::local(Admission::Probe))
        );
        assert!(seen.lock().unwrap().is_empty());
    });
}

/// halfOpenProbes 2, both probes out at both levels: the first ends in an auth failure
/// (forced open for this process and the fleet, never reopening), the second ends well
/// after it and changes nothing; the other process is told at its next admission.
#[test]
fn an_auth_failure_during_half_open_forces_both_levels_open_whatever_the_other_probe_says() {
    let redis = RedisServer::start();
    runtime().block_on(async {
        let open_for = Duration::from_millis(300);
        let (a, b, seen) = two(&redis, "auth", &exec(open_for, 2)).await;
        open_then_wait(&a, open_for).await;
        let (_, _, first) = a.admit_async(0, now()).await;
        let (_, _, second) = a.admit_async(0, now()).await;
        assert!(first.local_probe && first.lease.is_some(), "{first:?}");
        assert!(second.local_probe && second.lease.is_some(), "{second:?}");
        let t = a
            .record_async(0, now(), Outcome::Auth, first)
            .await
            .unwrap();
        assert_eq!(t.to, BreakerState::ForcedOpen);
        assert_eq!(a.record_async(0, now(), Outcome::Ok, second).await, None);
        tokio::time::sleep(8 * open_for).await;
        assert_eq!(a.state(0), BreakerState::ForcedOpen);
        assert!(!a.would_admit(0, now()) && a.reopens_at(0).is_none());
        assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        let (adm, t, _) = b.admit_async(0, now()).await;
        assert_eq!(
            (adm, t.unwrap().to),
            (Admission::No, BreakerState::ForcedOpen)
        );
        assert_eq!(a.admit_async(1, now()).await.0, Admission::Yes);
        assert!(seen.lock().unwrap().is_empty());
    });
}

/// A fleet that grants a probe lease to every admission (no warden Redis does: at most
/// halfOpenProbes across the fleet): this process holds at most halfOpenProbes (2) at
/// once, gives one more back at once, and asks for no attempt until one of its own ends.
#[test]
fn a_fleet_granting_every_admission_a_lease_gets_at_most_half_open_probes_from_this_process() {
    let fake = FakeRedis::start(Misbehave::ByKeys(&[
        (2, "*3\r\n$9\r\nhalf_open\r\n:0\r\n:1\r\n"),
        (4, "*4\r\n$9\r\nhalf_open\r\n:0\r\n:0\r\n:0\r\n"),
    ]));
    runtime().block_on(async {
        let (a, seen) = one_on(&fake, &exec(Duration::from_secs(30), 2)).await;
        let mut out = Vec::new();
        for _ in 0..2 {
            let (adm, _, hold) = a.admit_async(0, now()).await;
            assert_eq!(adm, Admission::Probe);
            out.push(hold);
        }
        // A third lease goes back (a record call gives it back) and the route waits.
        let calls = fake.scripts();
        assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        assert_eq!(fake.scripts(), calls + 2, "asked, then gave the lease back");
        assert!(!a.would_admit(0, now()), "no asking in a loop");
        // One of its probes ends: one more may go, and no more.
        a.record_async(0, now(), Outcome::Ok, out.pop().unwrap())
            .await;
        assert!(a.would_admit(0, now()));
        assert_eq!(a.admit_async(0, now()).await.0, Admission::Probe);
        assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        assert!(seen.lock().unwrap().is_empty());
    });
}
