//! Fleet permits (`fleetMaxConcurrency`) across real processes: the cap at the fake, a
//! killed process's leases, and waiting within the budget.

use super::*;

#[test]
fn three_concurrent_reviews_share_fleet_max_concurrency_and_all_complete() {
    use crate::support::fake_provider::{Behavior, findings_answer};
    let redis = RedisServer::start();
    let run = FleetRun::new(4);
    let slow = Behavior::DelayHeaders(
        Duration::from_millis(250),
        Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
    );
    run.fake.script("primary", vec![slow]);
    let three = |run: &FleetRun| {
        let children: Vec<_> = (0..3).map(|_| run.command().spawn().unwrap()).collect();
        for c in children {
            let (code, v, err) = finish(c);
            assert_eq!(code, 0, "{err}");
            assert_eq!(
                statuses(&v),
                vec![("reviewed".to_string(), "primary".to_string()); 4],
                "{v}"
            );
            assert_eq!(fleet_warnings(&err), 0, "{err}");
        }
    };
    // Without the fleet cap, three processes × 4 permits overlap well past 3.
    run.config(Some(&redis.url()), &[], "");
    three(&run);
    assert!(run.fake.max_in_flight() > 3, "{}", run.fake.max_in_flight());
    let fake = FleetRun {
        fake: FakeProvider::start(),
        ..run
    };
    fake.fake.script(
        "primary",
        vec![Behavior::DelayHeaders(
            Duration::from_millis(250),
            Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
        )],
    );
    fake.config(Some(&redis.url()), &[], "fleetMaxConcurrency = 3");
    three(&fake);
    assert_eq!(fake.fake.requests_for("primary").len(), 12);
    assert!(
        fake.fake.max_in_flight() <= 3,
        "{}",
        fake.fake.max_in_flight()
    );
    assert!(fake.fake.max_in_flight() >= 2, "the processes did overlap");
    assert!(
        redis
            .keys(&format!("warden:{}:permits:*", fake.namespace()))
            .is_empty(),
        "every permit was given back"
    );
}

#[test]
fn a_killed_process_s_fleet_permits_come_back_within_a_request_deadline() {
    use warden::engine::Bulkhead;
    use warden::fleet::bulkhead::{FleetBulkhead, FleetCap};
    let redis = RedisServer::start();
    let run = FleetRun::new(1);
    run.fake.script(
        "primary",
        vec![crate::support::fake_provider::Behavior::Hang],
    );
    // One fleet permit; the attempt hangs for its whole 3 s request deadline.
    run.config(
        Some(&redis.url()),
        &[("requestTimeout", "3s"), ("firstTokenTimeout", "3s")],
        "fleetMaxConcurrency = 1",
    );
    let mut child = run.command().spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while run.fake.requests_for("primary").is_empty() {
        assert!(
            Instant::now() < until,
            "the review never called the primary"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL: no chance to give the permit back
    let killed = Instant::now();
    let _ = child.wait();
    let up = primary_upstream(&run);
    runtime().block_on(async {
        let (warn, seen) = warnings();
        let fleet = Fleet::connect(target(&redis.url(), None, Some(&run.namespace())), warn)
            .await
            .unwrap();
        let b = FleetBulkhead::new(
            fleet,
            [4],
            &[FleetCap {
                upstream: up,
                cap: Some(1),
            }],
            Duration::from_secs(3),
        );
        // Held by the dead process at first…
        let early = tokio::time::timeout(Duration::from_millis(500), b.acquire(0)).await;
        assert!(early.is_err(), "the dead process's permit was still held");
        // …and back within its lease: one request deadline.
        let p = tokio::time::timeout(Duration::from_secs(4), b.acquire(0))
            .await
            .expect("the permit came back");
        let back = killed.elapsed();
        assert!(back <= Duration::from_millis(3500), "back after {back:?}");
        drop(p);
        assert!(seen.lock().unwrap().is_empty());
    });
}

/// The upstream of `run`'s `primary` route, as the fleet names it.
fn primary_upstream(run: &FleetRun) -> warden::fleet::Upstream {
    warden::fleet::Upstream {
        provider: "openai".into(),
        host: run.fake.base_url().split('/').nth(2).unwrap().to_string(),
        model: "primary".into(),
    }
}

#[test]
fn waiting_for_a_fleet_permit_ends_with_the_review_budget() {
    use warden::engine::Bulkhead;
    use warden::fleet::bulkhead::{FleetBulkhead, FleetCap};
    let redis = RedisServer::start();
    let run = FleetRun::new(2);
    run.config(
        Some(&redis.url()),
        &[("reviewBudget", "2s")],
        "fleetMaxConcurrency = 1",
    );
    let rt = runtime();
    // Another member of the fleet holds the primary's only permit (renewed) all along.
    let (warn, _) = warnings();
    let fleet = rt
        .block_on(Fleet::connect(
            target(&redis.url(), None, Some(&run.namespace())),
            warn,
        ))
        .unwrap();
    let cap = FleetCap {
        upstream: primary_upstream(&run),
        cap: Some(1),
    };
    let holder = FleetBulkhead::new(fleet, [1], &[cap], Duration::from_secs(2));
    let held = rt.block_on(holder.acquire(0));
    let t = Instant::now();
    let (code, v, err) = run.review();
    let took = t.elapsed();
    drop(held);
    assert!(
        took < Duration::from_millis(3500),
        "a 2 s review took {took:?}"
    );
    assert!(run.fake.requests().is_empty(), "no permit, no request");
    for u in v["units"].as_array().unwrap() {
        assert_eq!(u["status"], "skipped", "{v}");
        assert!(
            u["reason"]
                .as_str()
                .unwrap()
                .contains("review budget ran out before the unit started"),
            "{u}"
        );
    }
    assert_eq!(fleet_warnings(&err), 0, "{err}");
    assert_ne!(code, 0, "an unreviewed change does not pass: {err}");
}
