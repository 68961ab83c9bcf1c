//! Back-pressure shared through the fleet (DESIGN.md section 13): one process's Retry-After
//! pauses the others, its lowered limit caps theirs, whatever Redis holds is bounded, and
//! with the sharing two processes against one limited provider draw fewer 429 answers.

use super::*;
use crate::support::fake_provider::{Behavior, findings_answer};
use warden::engine::limit::LimitReason;
use warden::engine::{Bulkhead, Event, LocalBulkhead};
use warden::fleet::pace::{PacedBulkhead, publisher};

fn upstream() -> warden::fleet::Upstream {
    warden::fleet::Upstream {
        provider: "openai".into(),
        host: "127.0.0.1:4000".into(),
        model: "gpt-x".into(),
    }
}

fn back_pressure(retry_after: Duration) -> Event {
    Event::BackPressure {
        unit: 0,
        route: "primary".into(),
        route_index: 0,
        bounce: 1,
        retry_after: Some(retry_after),
        paused_until: None,
        at: Duration::ZERO,
    }
}

fn lowered(limit: usize) -> Event {
    Event::LimitChanged {
        route: "primary".into(),
        route_index: 0,
        limit,
        ceiling: 4,
        reason: LimitReason::BackPressure,
        at: Duration::ZERO,
    }
}

/// Waits (up to 2 s) until a key matching `pattern` exists.
fn wait_key(redis: &RedisServer, pattern: &str) {
    let until = Instant::now() + Duration::from_secs(2);
    while redis.keys(pattern).is_empty() {
        assert!(Instant::now() < until, "{pattern} never published");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_second_process_pauses_after_the_first_one_s_retry_after_and_meets_its_lowered_limit() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (wa, seen_a) = warnings();
    let (wb, seen_b) = warnings();
    rt.block_on(async {
        let ns = Some("bp");
        let a = Fleet::connect(target(&redis.url(), None, ns), wa)
            .await
            .unwrap();
        let b = Fleet::connect(target(&redis.url(), None, ns), wb)
            .await
            .unwrap();
        let up = upstream();
        let first = publisher(a, std::slice::from_ref(&up), Duration::from_secs(20));
        let second = PacedBulkhead::new(b, LocalBulkhead::new([4]), &[up], Duration::from_secs(20));
        // Nothing shared: permits at once, up to the cap.
        let held: Vec<_> = futures_util::future::join_all((0..4).map(|_| second.acquire(0))).await;
        assert_eq!(second.shared_limit(0), 4);
        drop(held);
        first.emit(back_pressure(Duration::from_millis(900)));
        first.emit(lowered(2));
        wait_key(&redis, "warden:bp:bppause:*");
        wait_key(&redis, "warden:bp:bplimit:*");
        // The first process's Retry-After pauses the second's new attempts...
        let asked = Instant::now();
        assert!(
            tokio::time::timeout(Duration::from_millis(300), second.acquire(0))
                .await
                .is_err(),
            "the route is paused"
        );
        let p1 = tokio::time::timeout(Duration::from_secs(2), second.acquire(0))
            .await
            .expect("a permit once the pause ends");
        assert!(
            asked.elapsed() >= Duration::from_millis(600),
            "{:?}",
            asked.elapsed()
        );
        // ...and its lowered limit caps the second's: two permits, a third waits.
        assert_eq!(second.shared_limit(0), 2);
        let p2 = tokio::time::timeout(Duration::from_millis(500), second.acquire(0))
            .await
            .expect("a second permit under the lowered limit");
        assert!(
            tokio::time::timeout(Duration::from_millis(300), second.acquire(0))
                .await
                .is_err(),
            "the lowered limit of 2 holds"
        );
        drop((p1, p2));
    });
    assert!(seen_a.lock().unwrap().is_empty());
    assert!(seen_b.lock().unwrap().is_empty());
}

#[test]
fn garbage_in_the_shared_keys_is_bounded_by_the_cap_the_floor_and_the_review_budget() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&redis.url(), None, Some("hostile")), w)
            .await
            .unwrap();
        let up = upstream();
        let (lk, pk) = (
            fleet.upstream_key("bplimit", &up),
            fleet.upstream_key("bppause", &up),
        );
        let budget = Duration::from_millis(400);
        let bh = PacedBulkhead::new(fleet, LocalBulkhead::new([4]), &[up], budget);
        let mut c = redis.client();
        // A pause an hour long is waited out no longer than the review budget.
        let _: () = ::redis::cmd("SET")
            .arg(&pk)
            .arg("1")
            .arg("PX")
            .arg(3_600_000)
            .query(&mut c)
            .unwrap();
        let asked = Instant::now();
        let p = tokio::time::timeout(Duration::from_secs(3), bh.acquire(0))
            .await
            .expect("bounded by the review budget");
        assert!(
            asked.elapsed() >= Duration::from_millis(300),
            "{:?}",
            asked.elapsed()
        );
        drop(p);
        let _: () = ::redis::cmd("DEL").arg(&pk).query(&mut c).unwrap();
        for (planted, want) in [
            ("999999", 4),
            ("-3", 4),
            ("0", 4),
            ("abc", 4),
            ("2.9", 4),
            ("1", 1),
        ] {
            let _: () = ::redis::cmd("SET")
                .arg(&lk)
                .arg(planted)
                .query(&mut c)
                .unwrap();
            drop(bh.acquire(0).await);
            assert_eq!(bh.shared_limit(0), want, "planted {planted}");
        }
    });
    assert!(
        seen.lock().unwrap().is_empty(),
        "bounded values are no reason to give up"
    );
}

#[test]
fn redis_gone_leaves_the_local_permits_with_one_warning() {
    let mut redis = RedisServer::start();
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&redis.url(), None, Some("gone")), w)
            .await
            .unwrap();
        let bh = PacedBulkhead::new(
            fleet,
            LocalBulkhead::new([2]),
            &[upstream()],
            Duration::from_secs(20),
        );
        drop(bh.acquire(0).await);
        redis.kill();
        for _ in 0..3 {
            let p = tokio::time::timeout(Duration::from_secs(1), bh.acquire(0))
                .await
                .expect("local permits");
            drop(p);
        }
        assert!(
            bh.try_acquire(0).is_some(),
            "with the fleet off, permits are local"
        );
    });
    assert_eq!(seen.lock().unwrap().len(), 1, "{:?}", seen.lock().unwrap());
}

/// Two reviews at once against a fake serving 2 in parallel (429 with Retry-After: 1
/// beyond): each reviews every unit; returns the fake's 429 answers and the run's namespace.
fn two_reviews(redis: Option<&str>) -> (usize, String) {
    let run = FleetRun::new(8);
    run.fake.limited(2);
    run.fake.default_behavior(Behavior::DelayHeaders(
        Duration::from_millis(200),
        Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
    ));
    run.config(redis, &[("reviewBudget", "30s")], "");
    let children: Vec<_> = (0..2).map(|_| run.command().spawn().unwrap()).collect();
    for c in children {
        let (code, v, err) = finish(c);
        assert_eq!(code, 0, "{err}");
        let reviewed = statuses(&v).iter().filter(|(s, _)| s == "reviewed").count();
        assert_eq!(reviewed, 8, "{v}");
        assert_eq!(fleet_warnings(&err), 0, "{err}");
    }
    let refused = run.fake.refused();
    eprintln!(
        "two reviews, redis {redis:?}: {} requests, {refused} answered 429, most in flight {}",
        run.fake.requests().len(),
        run.fake.max_in_flight()
    );
    (refused, run.namespace())
}

#[test]
fn two_processes_against_a_limited_provider_share_their_back_pressure_and_both_complete() {
    let redis = RedisServer::start();
    let (alone, _) = two_reviews(None);
    let (shared, ns) = two_reviews(Some(&redis.url()));
    assert!(alone > 0 && shared > 0, "the provider's limit was met");
    // The lowered limit was published for the other process (it lives 10 s).
    assert!(
        !redis.keys(&format!("warden:{ns}:bplimit:*")).is_empty(),
        "back-pressure was shared"
    );
}
