//! Shared breakers: two processes' `FleetBreakers` over one Redis, the real binary
//! learning from the fleet that a primary hangs, and its own breaker as a floor under a
//! fleet that says "closed" whatever happens.

use super::*;
use crate::support::fake_provider::Behavior;
use crate::support::resp::{FakeRedis, Misbehave};
use warden::config::{BreakerSettings, Execution};
use warden::engine::breaker::{Admission, BreakerState};
use warden::engine::{Breakers, Hold};
use warden::fleet::Upstream;
use warden::fleet::breakers::FleetBreakers;
use warden::provider::Outcome;

pub(super) fn exec(open_for: Duration, probes: u32) -> Execution {
    Execution {
        request_timeout: Duration::from_secs(2),
        breaker: BreakerSettings {
            window: Duration::from_secs(60),
            min_calls: 2,
            failure_rate: 0.5,
            open_for,
            half_open_probes: probes,
        },
        ..Default::default()
    }
}

/// Two processes' breakers over one upstream (route 0) and another (route 1).
pub(super) async fn two(
    redis: &RedisServer,
    ns: &str,
    e: &Execution,
) -> (FleetBreakers, FleetBreakers, Arc<Mutex<Vec<String>>>) {
    let ups = [
        Upstream {
            provider: "openai".into(),
            host: "h:1".into(),
            model: "m".into(),
        },
        Upstream {
            provider: "openai".into(),
            host: "h:1".into(),
            model: "other".into(),
        },
    ];
    let (warn, seen) = warnings();
    let mut made = Vec::new();
    for _ in 0..2 {
        let f = Fleet::connect(target(&redis.url(), None, Some(ns)), warn.clone())
            .await
            .unwrap();
        made.push(FleetBreakers::new(f, &ups, e, tokio::time::Instant::now()));
    }
    let b = made.pop().unwrap();
    (made.pop().unwrap(), b, seen)
}

pub(super) fn now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

#[test]
fn one_process_opens_the_upstream_for_all_and_probes_are_fleet_wide() {
    let redis = RedisServer::start();
    runtime().block_on(async {
        let e = exec(Duration::from_millis(400), 1);
        let (a, b, seen) = two(&redis, "open", &e).await;
        assert_eq!(
            a.record_async(0, now(), Outcome::Timeout, Hold::default())
                .await,
            None
        );
        let t = a
            .record_async(0, now(), Outcome::Timeout, Hold::default())
            .await
            .expect("opens");
        assert_eq!((t.from, t.to), (BreakerState::Closed, BreakerState::Open));
        assert!(
            t.reason
                .contains("2 of the last 2 attempts across the fleet"),
            "{}",
            t.reason
        );
        // The other process has recorded nothing, and is told at its next admission.
        assert!(b.would_admit(0, now()), "its view is still closed");
        let (adm, t, _) = b.admit_async(0, now()).await;
        assert_eq!(adm, Admission::No);
        assert_eq!(t.unwrap().to, BreakerState::Open);
        assert!(!b.would_admit(0, now()) && b.reopens_at(0).is_some());
        // Another upstream is not affected.
        assert_eq!(b.admit_async(1, now()).await.0, Admission::Yes);
        // After openFor one probe goes, from one process only.
        tokio::time::sleep(Duration::from_millis(450)).await;
        let (adm, _, probe) = b.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Probe);
        assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        assert_eq!(b.admit_async(0, now()).await.0, Admission::No);
        // A failed probe re-opens it for twice as long, for both.
        let t = b
            .record_async(0, now(), Outcome::Unavailable, probe)
            .await
            .unwrap();
        assert_eq!((t.from, t.to), (BreakerState::HalfOpen, BreakerState::Open));
        assert!(
            t.reason.contains("open again across the fleet for 800ms"),
            "{}",
            t.reason
        );
        tokio::time::sleep(Duration::from_millis(450)).await;
        assert_eq!(
            a.admit_async(0, now()).await.0,
            Admission::No,
            "800 ms, not 400"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        // A cancelled probe gives its lease back; a good one closes it for all.
        let (adm, _, probe) = a.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Probe);
        assert_eq!(
            a.record_async(0, now(), Outcome::Cancelled, probe).await,
            None
        );
        let (adm, _, probe) = b.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Probe);
        let t = b.record_async(0, now(), Outcome::Ok, probe).await.unwrap();
        assert_eq!(t.to, BreakerState::Closed);
        let (adm, t, _) = a.admit_async(0, now()).await;
        assert_eq!(adm, Admission::Yes);
        assert_eq!(t.unwrap().to, BreakerState::Closed);
        // b saw it open twice (the first time and after its failed probe).
        let f = b.figures(0, now());
        assert_eq!((f.state, f.opens), (BreakerState::Closed, 2));
        assert!(seen.lock().unwrap().is_empty());
    });
}

#[test]
fn auth_and_invalid_model_force_the_upstream_open_for_the_fleet() {
    let redis = RedisServer::start();
    runtime().block_on(async {
        let e = exec(Duration::from_millis(100), 1);
        let (a, b, _) = two(&redis, "forced", &e).await;
        let t = a
            .record_async(1, now(), Outcome::InvalidModel, Hold::default())
            .await
            .unwrap();
        assert_eq!(t.to, BreakerState::ForcedOpen);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (adm, t, _) = b.admit_async(1, now()).await;
        assert_eq!(
            adm,
            Admission::No,
            "forced open does not half-open after openFor"
        );
        assert_eq!(t.unwrap().to, BreakerState::ForcedOpen);
        assert_eq!(b.state(1), BreakerState::ForcedOpen);
        assert_eq!(b.admit_async(0, now()).await.0, Admission::Yes);
    });
    let ttl: i64 = ::redis::cmd("PTTL")
        .arg(redis.keys("warden:forced:brk:*").first().unwrap())
        .query(&mut redis.client())
        .unwrap();
    assert!(ttl > 14 * 60 * 1000, "forced open lasts 15 minutes: {ttl}");
}

#[test]
fn when_redis_dies_the_local_breakers_take_over_with_one_warning() {
    let mut redis = RedisServer::start();
    runtime().block_on(async {
        let e = exec(Duration::from_secs(60), 1);
        let (a, _b, seen) = two(&redis, "dies", &e).await;
        a.record_async(0, now(), Outcome::Timeout, Hold::default())
            .await;
        redis.kill();
        // The local breaker saw both outcomes: it opens on its own.
        let t = a
            .record_async(0, now(), Outcome::Timeout, Hold::default())
            .await
            .unwrap();
        assert_eq!(t.to, BreakerState::Open);
        assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
        assert_eq!(a.admit_async(1, now()).await.0, Admission::Yes);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
    });
}

#[test]
fn after_one_review_opens_a_hanging_primary_three_later_reviews_send_it_nothing() {
    let redis = RedisServer::start();
    let run = FleetRun::new(4);
    run.fake.script("primary", vec![Behavior::Hang]);
    run.config(Some(&redis.url()), &[], "");
    let (code, v, err) = run.review();
    assert_eq!(code, 0, "{err}");
    let reviewed_by_fallback = vec![("reviewed".to_string(), "fallback".to_string()); 4];
    assert_eq!(statuses(&v), reviewed_by_fallback, "{v}");
    assert_eq!(v["routes"]["primary"]["breaker"]["state"], "open", "{v}");
    let first = run.fake.requests_for("primary").len();
    assert!(first >= 2, "minCalls timeouts open it: {first}");
    assert_eq!(fleet_warnings(&err), 0, "{err}");
    // Three later reviews, each its own process, learn from the fleet: nothing to the primary.
    for i in 0..3 {
        let (code, v, err) = run.review();
        assert_eq!(code, 0, "review {i}: {err}");
        assert_eq!(statuses(&v), reviewed_by_fallback, "review {i}: {v}");
        assert_eq!(v["routes"]["primary"]["breaker"]["state"], "open", "{v}");
        assert_eq!(fleet_warnings(&err), 0, "{err}");
    }
    assert_eq!(
        run.fake.requests_for("primary").len(),
        first,
        "later reviews called the primary"
    );
    assert!(
        !redis
            .keys(&format!("warden:{}:brk:*", run.namespace()))
            .is_empty()
    );
    // Without [fleet] a later review pays the timeouts again.
    run.config(None, &[], "");
    let (code, _, err) = run.review();
    assert_eq!(code, 0, "{err}");
    assert!(run.fake.requests_for("primary").len() > first);
}

/// A fleet that answers every admission and every record "closed" (well-formed, so the
/// fleet stays in use): a bug, or whoever can write the namespace.
const CLOSED_FOREVER: Misbehave = Misbehave::ByKeys(&[
    (2, "*3\r\n$6\r\nclosed\r\n:0\r\n:0\r\n"),
    (4, "*4\r\n$6\r\nclosed\r\n:0\r\n:0\r\n:0\r\n"),
]);

#[test]
fn a_fleet_saying_closed_forever_cannot_keep_a_locally_opened_hanging_primary_in_use() {
    let units = 8;
    let run = FleetRun::new(units);
    run.fake.script("primary", vec![Behavior::Hang]);
    let redis = FakeRedis::start(CLOSED_FOREVER);
    run.config(Some(&redis.url()), &[], "");
    // One attempt at a time on the primary: each of its 700 ms timeouts is recorded
    // before the next but one can be admitted.
    let path = run.cfg.path().join("warden.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let one = text.replacen("maxConcurrency = 4", "maxConcurrency = 1", 1);
    std::fs::write(&path, one).unwrap();
    let (code, v, err) = run.review();
    assert_eq!(code, 0, "{err}");
    let by_fallback = vec![("reviewed".to_string(), "fallback".to_string()); units];
    assert_eq!(statuses(&v), by_fallback, "{v}");
    // The fleet stayed in use (no warning) and was asked for every attempt.
    assert_eq!(fleet_warnings(&err), 0, "{err}");
    assert!(redis.scripts() >= units as u64, "{}", redis.scripts());
    // minCalls = 2 timeouts open this process's own breaker; at most one more admission
    // can slip in while the second timeout's permit is free and its outcome not yet
    // recorded. Without the floor every unit's first attempt went to the primary (8).
    let primary = run.fake.requests_for("primary").len();
    assert!(
        (2..=3).contains(&primary),
        "{primary} requests reached the hanging primary: {err}"
    );
    let b = &v["routes"]["primary"]["breaker"];
    assert_eq!(
        (&b["state"], &b["opens"]),
        (&"open".into(), &1.into()),
        "{v}"
    );
}
