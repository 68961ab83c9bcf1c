//! Back-pressure shared through the fleet (docs/design.md section 13): one process's Retry-After
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

/// Two processes' fleets on `redis` in namespace `ns`, each warning into its own list.
async fn two_processes(
    redis: &RedisServer,
    ns: &str,
    a: &(Warn, Arc<Mutex<Vec<String>>>),
    b: &(Warn, Arc<Mutex<Vec<String>>>),
) -> (Fleet, Fleet) {
    let connect = |w: &Warn| Fleet::connect(target(&redis.url(), None, Some(ns)), w.clone());
    (connect(&a.0).await.unwrap(), connect(&b.0).await.unwrap())
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
    let (seen_a, seen_b) = (warnings(), warnings());
    rt.block_on(async {
        let (a, b) = two_processes(&redis, "bp", &seen_a, &seen_b).await;
        let up = upstream();
        let first = publisher(a, std::slice::from_ref(&up), Duration::from_secs(20));
        let second = PacedBulkhead::new(b, LocalBulkhead::new([4]), &[up], Duration::from_secs(20));
        // Nothing shared: permits at once, up to the cap; the second reports 4 in flight.
        let mut held = Vec::new();
        for _ in 0..4 {
            held.push(second.acquire(0).await);
        }
        assert_eq!(second.shared_limit(0), 4);
        drop(held);
        // The first's limit drops: the fleet had 4 in flight, so its total is 4 x 0.7.
        first.emit(back_pressure(Duration::from_millis(900)));
        first.emit(lowered(3));
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
        // ...and the fleet total caps the second's limit: two permits, a third waits.
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
    assert!(seen_a.1.lock().unwrap().is_empty());
    assert!(seen_b.1.lock().unwrap().is_empty());
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

/// GET of a key as a whole number (None: absent or not one).
fn int_at(redis: &RedisServer, key: &str) -> Option<i64> {
    let mut c = redis.client();
    ::redis::cmd("GET")
        .arg(key)
        .query::<Option<i64>>(&mut c)
        .ok()
        .flatten()
}

/// Waits (up to 2 s) until `key` holds `want`.
fn wait_int(redis: &RedisServer, key: &str, want: i64) {
    let until = Instant::now() + Duration::from_secs(2);
    while int_at(redis, key) != Some(want) {
        assert!(
            Instant::now() < until,
            "{key}: {:?}, not {want}",
            int_at(redis, key)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn two_processes_hold_at_most_the_fleet_total_between_them_and_it_grows_back() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (seen_a, seen_b) = (warnings(), warnings());
    rt.block_on(async {
        let (a, b) = two_processes(&redis, "total", &seen_a, &seen_b).await;
        let up = upstream();
        let (total, leases) = (
            a.upstream_key("bplimit", &up),
            a.upstream_key("bpleases", &up),
        );
        let budget = Duration::from_secs(20);
        let one = std::slice::from_ref(&up);
        let pub_a = publisher(a.clone(), one, budget);
        let pa = PacedBulkhead::new(a, LocalBulkhead::new([4]), one, budget);
        let pb = PacedBulkhead::new(b, LocalBulkhead::new([4]), one, budget);
        let mut c = redis.client();
        let _: () = ::redis::cmd("SET")
            .arg(&total)
            .arg(3)
            .query(&mut c)
            .unwrap();
        // A fleet total of 3: each process may take up to 3, the two together 3.
        let a1 = pa.acquire(0).await;
        let a2 = pa.acquire(0).await;
        let b1 = pb.acquire(0).await;
        assert_eq!((pa.shared_limit(0), pb.shared_limit(0)), (3, 3));
        for p in [&pa, &pb] {
            assert!(
                tokio::time::timeout(Duration::from_millis(300), p.acquire(0))
                    .await
                    .is_err(),
                "the fleet holds its total"
            );
        }
        let held: usize = ::redis::cmd("ZCARD").arg(&leases).query(&mut c).unwrap();
        assert_eq!(held, 3);
        // A lease given back goes to whichever process asks.
        drop(a1);
        let b2 = tokio::time::timeout(Duration::from_secs(2), pb.acquire(0))
            .await
            .expect("the other process takes the lease given back");
        // Back-pressure now publishes a fleet figure: 3 leases held x 0.7 = 2.
        pub_a.emit(lowered(1));
        wait_int(&redis, &total, 2);
        drop((a2, b1, b2));
        // The total grows back by one after 8 x total x wait leases at it (wait 2: it was
        // lowered once): 32 at 2.
        for i in 0..32 {
            let p = if i % 2 == 0 { &pa } else { &pb };
            let permit = tokio::time::timeout(Duration::from_secs(2), p.acquire(0))
                .await
                .expect("a lease");
            drop(permit);
        }
        wait_int(&redis, &total, 3);
    });
    assert!(seen_a.1.lock().unwrap().is_empty());
    assert!(seen_b.1.lock().unwrap().is_empty());
}

#[test]
fn garbage_members_loads_leases_and_growth_are_bounded() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&redis.url(), None, Some("junk")), w)
            .await
            .unwrap();
        let up = upstream();
        let key = |kind: &str| fleet.upstream_key(kind, &up);
        let (total, members, leases, growth) = (
            key("bplimit"),
            key("bpmembers"),
            key("bpleases"),
            key("bpgrowth"),
        );
        let load = format!("{}:", key("bpload"));
        let mut c = redis.client();
        let mut cmd = |args: &[String]| {
            let mut q = ::redis::cmd(&args[0]);
            for a in &args[1..] {
                q.arg(a);
            }
            q.query::<::redis::Value>(&mut c).unwrap();
        };
        // 200 members (more than are ever read), loads huge, negative, not numbers.
        let junk = ["999999999", "-4", "abc", "nan", "inf", "1e400", "3"];
        for m in 0..200 {
            cmd(&["SADD".into(), members.clone(), format!("m{m}")]);
            let v = junk[m % junk.len()].to_string();
            cmd(&["SET".into(), format!("{load}m{m}"), v]);
        }
        // Leases for ever (far past any lease's length) and a growth hash of nonsense.
        for m in 0..2000 {
            cmd(&[
                "ZADD".into(),
                leases.clone(),
                "1e18".into(),
                format!("l{m}"),
            ]);
        }
        let g = ["n", "x", "wait", "-7", "at", "99999999999999999999"];
        let mut hset = vec!["HSET".to_string(), growth.clone()];
        hset.extend(g.iter().map(|s| s.to_string()));
        cmd(&hset);
        let budget = Duration::from_secs(20);
        let one = std::slice::from_ref(&up);
        publisher(fleet.clone(), one, budget).emit(lowered(2));
        wait_key(&redis, "warden:junk:bplimit:*");
        let published = int_at(&redis, &total).unwrap();
        // The sum is bounded (64 members read, 1024 each at most), and at least 1.
        assert!((1..=64 * 1024).contains(&published), "{published}");
        // However large, the total caps a process at its cap; the eternal leases are not
        // a warden's and hold nothing.
        let bh = PacedBulkhead::new(fleet, LocalBulkhead::new([4]), one, budget);
        let p = tokio::time::timeout(Duration::from_secs(2), bh.acquire(0))
            .await
            .expect("a lease: the eternal ones are dropped");
        assert!((1..=4).contains(&bh.shared_limit(0)));
        drop(p);
        let held: usize = ::redis::cmd("ZCOUNT")
            .arg(&leases)
            .arg("1e17")
            .arg("+inf")
            .query(&mut redis.client())
            .unwrap();
        assert_eq!(
            held, 0,
            "leases further out than any warden takes are dropped"
        );
    });
    assert!(
        seen.lock().unwrap().is_empty(),
        "bounded values are no reason to give up: {:?}",
        seen.lock().unwrap()
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

/// The config of these reviews: one route (no fallback to spill to, so the provider's limit
/// is the only way through) with `route_extra`, `[fleet]` when `redis` is given.
fn one_route(run: &FleetRun, redis: Option<&str>, route_extra: &str) {
    let mut text = String::from(
        "version = 1\n[execution]\nmaxAttempts = 2\nreviewBudget = \"60s\"\nhunkBudget = \"20s\"\nrequestTimeout = \"5s\"\n",
    );
    if let Some(url) = redis {
        text.push_str(&format!(
            "[fleet]\nredis = \"{url}\"\nnamespace = \"{}\"\n",
            run.namespace()
        ));
    }
    text.push_str(&format!(
        "[[routes]]\nname = \"primary\"\nprovider = \"openai\"\nmodel = \"primary\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_VAR}\"\n{route_extra}\n",
        run.fake.base_url()
    ));
    std::fs::write(run.cfg.path().join("warden.toml"), text).unwrap();
}

/// Two reviews of `units` units each against a fake serving 2 in parallel (429 with
/// Retry-After: 1 beyond), 200 ms answers, the second started a second after the first
/// (CI jobs starting one after another): each reviews every unit; returns the fake's
/// answers of 429.
fn two_reviews(redis: Option<&str>, units: usize) -> usize {
    let run = FleetRun::new(units);
    run.fake.limited(2);
    run.fake.default_behavior(Behavior::DelayHeaders(
        Duration::from_millis(200),
        Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
    ));
    one_route(&run, redis, "maxConcurrency = 8");
    let first = run.command().spawn().unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let second = run.command().spawn().unwrap();
    for c in [first, second] {
        let (code, v, err) = finish(c);
        assert_eq!(code, 0, "{err}");
        let reviewed = statuses(&v).iter().filter(|(s, _)| s == "reviewed").count();
        assert_eq!(reviewed, units, "{v}");
        assert_eq!(fleet_warnings(&err), 0, "{err}");
    }
    let refused = run.fake.refused();
    eprintln!(
        "two reviews of {units} units, redis {redis:?}: {} requests, {refused} answered 429, most in flight {}",
        run.fake.requests().len(),
        run.fake.max_in_flight()
    );
    refused
}

#[test]
fn two_processes_against_a_limited_provider_share_their_back_pressure_and_both_complete() {
    let redis = RedisServer::start();
    // Measured on the code before the fleet total (each process took the whole lowered
    // limit): 7 answers of 429 a pair with sharing against 8 without. With it: 2 to 4.
    // Counted over two rounds each, always both (never more rounds until it passes):
    // sharing gives at most two thirds of the answers of 429.
    let (mut alone, mut shared) = (0, 0);
    for _ in 0..2 {
        alone += two_reviews(None, 16);
        shared += two_reviews(Some(&redis.url()), 16);
    }
    assert!(alone > 0 && shared > 0, "the provider's limit was met");
    assert!(
        shared * 3 <= alone * 2,
        "sharing back-pressure cut the fleet's answers of 429 by a third: {shared} with, {alone} without"
    );
}

/// The bar: `maxConcurrency = "auto"` (a ceiling of 16) under `fleetMaxConcurrency = 3`,
/// two processes against a fake serving 2 (so the limits move, the total is lowered and
/// leased): the fake never has more than 3 in flight, and each process's effective limit
/// stays within 1..=16.
#[test]
fn the_limit_never_exceeds_the_cap_or_the_fleet_cap() {
    let redis = RedisServer::start();
    let run = FleetRun::new(24);
    run.fake.limited(2);
    run.fake.default_behavior(Behavior::DelayHeaders(
        Duration::from_millis(100),
        Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
    ));
    let extra = "maxConcurrency = \"auto\"\nfleetMaxConcurrency = 3";
    one_route(&run, Some(&redis.url()), extra);
    let children: Vec<_> = (0..2).map(|_| run.command().spawn().unwrap()).collect();
    for c in children {
        let (code, v, err) = finish(c);
        assert_eq!(code, 0, "{err}");
        let reviewed = statuses(&v).iter().filter(|(s, _)| s == "reviewed").count();
        assert_eq!(reviewed, 24, "{v}");
        assert_eq!(fleet_warnings(&err), 0, "{err}");
        let limit = &v["routes"]["primary"]["limit"];
        let (min, max) = (
            limit["min"].as_u64().unwrap(),
            limit["max"].as_u64().unwrap(),
        );
        assert!(min >= 1 && max <= 16, "{limit}");
    }
    assert!(
        run.fake.max_in_flight() <= 3,
        "{}",
        run.fake.max_in_flight()
    );
    assert!(run.fake.refused() > 0, "the provider's limit was met");
}
