//! Redis down, stopped, killed or frozen around a real review: the outcome and exit code
//! of a review without `[fleet]`, exactly one warning, within the budget.

use super::*;
use crate::support::fake_provider::{Behavior, finding, findings_answer};

/// The primary answers every unit with one high finding after `delay`.
pub(super) fn answering(run: &FleetRun, delay: u64) {
    let answer = Behavior::Answer(findings_answer(serde_json::json!([finding(
        11,
        "high",
        "Off-by-one in the loop"
    )])));
    let b = Behavior::DelayHeaders(Duration::from_millis(delay), Box::new(answer));
    run.fake.script("primary", vec![b]);
}

/// What must not change: exit code, each unit's status and route, the findings.
pub(super) fn outcome(
    code: i32,
    v: &serde_json::Value,
) -> (i32, Vec<(String, String)>, usize, String) {
    (
        code,
        statuses(v),
        v["findings"].as_array().unwrap().len(),
        v["outcome"].to_string(),
    )
}

/// The review without `[fleet]`: what every fault must leave unchanged.
pub(super) fn baseline(
    run: &FleetRun,
    route_extra: &str,
) -> (i32, Vec<(String, String)>, usize, String) {
    run.config(None, &[], route_extra);
    let (code, v, err) = run.review();
    // A fleet cap with no Redis named is said once; nothing else about the fleet.
    let unused_cap = usize::from(route_extra.contains("fleetMaxConcurrency"));
    assert_eq!(fleet_warnings(&err), unused_cap, "{err}");
    if unused_cap == 1 {
        assert!(
            err.contains("sets fleetMaxConcurrency, but no Redis is named"),
            "{err}"
        );
    }
    let o = outcome(code, &v);
    assert_eq!(o.0, 1, "high findings fail the review: {err}");
    o
}

pub(super) fn one_warning(err: &str) {
    assert_eq!(fleet_warnings(err), 1, "{err}");
    assert!(err.contains("not used for the rest of this run"), "{err}");
}

/// The report keeps the fleet's one warning, as stderr showed it.
fn one_reported_warning(v: &serde_json::Value, err: &str) {
    let w = v["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:#?}");
    assert_eq!(w[0]["source"], "fleet");
    let message = w[0]["message"].as_str().unwrap();
    assert!(err.contains(message), "{message} not in {err}");
}

#[test]
fn redis_down_from_the_start_changes_nothing_but_one_warning() {
    let run = FleetRun::new(3);
    answering(&run, 0);
    let want = baseline(&run, "fleetMaxConcurrency = 1");
    let dead = format!("redis://127.0.0.1:{}", free_port());
    run.config(Some(&dead), &[], "fleetMaxConcurrency = 1");
    let (code, v, err) = run.review();
    assert_eq!(outcome(code, &v), want);
    one_warning(&err);
    assert!(err.contains("cannot connect"), "{err}");
    one_reported_warning(&v, &err);
}

/// Starts a review with `[fleet]` on `redis`, waits for the primary's first request,
/// applies `fault`, and returns the review's result and wall time.
fn fault_mid_review(
    run: &FleetRun,
    redis: &mut RedisServer,
    fault: impl FnOnce(&mut RedisServer),
) -> ((i32, serde_json::Value, String), Duration) {
    run.config(
        Some(&redis.url()),
        &[("reviewBudget", "8s")],
        "fleetMaxConcurrency = 1",
    );
    let seen = run.fake.requests_for("primary").len();
    let t = Instant::now();
    let child = run.command().spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while run.fake.requests_for("primary").len() == seen {
        assert!(
            Instant::now() < until,
            "the review never called the primary"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    fault(redis);
    let out = finish(child);
    (out, t.elapsed())
}

#[test]
fn redis_stopped_mid_review_changes_nothing_but_one_warning() {
    let mut redis = RedisServer::start();
    let run = FleetRun::new(4);
    answering(&run, 300);
    let want = baseline(&run, "fleetMaxConcurrency = 1");
    let before = run.fake.requests_for("primary").len();
    let ((code, v, err), _) = fault_mid_review(&run, &mut redis, RedisServer::stop);
    assert_eq!(outcome(code, &v), want);
    one_warning(&err);
    one_reported_warning(&v, &err);
    assert_eq!(
        run.fake.requests_for("primary").len() - before,
        4,
        "one request per unit"
    );
    assert!(
        !err.contains("cannot connect"),
        "it was connected when redis stopped: {err}"
    );
    // Killed (SIGKILL) mid-review, likewise.
    redis.restart();
    let ((code, v, err), _) = fault_mid_review(&run, &mut redis, RedisServer::kill);
    assert_eq!(outcome(code, &v), want, "{err}");
    one_warning(&err);
    assert!(!err.contains("cannot connect"), "{err}");
}

#[test]
fn a_frozen_redis_never_stalls_the_review_past_its_budget() {
    let mut redis = RedisServer::start();
    let run = FleetRun::new(4);
    answering(&run, 300);
    let want = baseline(&run, "fleetMaxConcurrency = 1");
    // Frozen mid-review (SIGSTOP): the calls in flight time out after 250 ms.
    let ((code, v, err), took) = fault_mid_review(&run, &mut redis, |r| r.pause());
    assert_eq!(outcome(code, &v), want);
    one_warning(&err);
    assert!(err.contains("did not answer"), "{err}");
    assert!(took < Duration::from_secs(8), "an 8 s review took {took:?}");
    // Frozen from the start: connecting is bounded too.
    let t = Instant::now();
    let (code, v, err) = run.review();
    assert_eq!(outcome(code, &v), want);
    one_warning(&err);
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    redis.resume();
}

/// The breaker key of the run's primary (see `Fleet::upstream_key`).
fn primary_breaker(run: &FleetRun) -> String {
    let host = run.fake.base_url();
    let host = host
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    format!(
        "warden:{}:brk:openai:{}:primary",
        run.namespace(),
        warden::fleet::escape(host)
    )
}

#[test]
fn a_planted_open_until_next_decade_cannot_keep_the_primary_from_reviews() {
    let redis = RedisServer::start();
    let run = FleetRun::new(3);
    answering(&run, 0);
    let want = baseline(&run, "");
    // Whoever can write to the namespace marks the primary open for ten years (its
    // policy: openFor 60 s, so at most 8 minutes with backoff).
    let mut c = redis.client();
    let (secs, _): (u64, u64) = ::redis::cmd("TIME").query(&mut c).unwrap();
    let until = (secs + 10 * 365 * 24 * 3600) * 1000;
    let _: () = ::redis::cmd("HSET")
        .arg(primary_breaker(&run))
        .arg("state")
        .arg("open")
        .arg("until")
        .arg(until)
        .query(&mut c)
        .unwrap();
    let before = run.fake.requests_for("primary").len();
    run.config(Some(&redis.url()), &[], "");
    let (code, v, err) = run.review();
    assert_eq!(outcome(code, &v), want, "{err}");
    one_warning(&err);
    assert!(
        err.contains("longer than this process's breakers ever stay open (openFor × 8 = 8m)"),
        "{err}"
    );
    assert_eq!(run.fake.requests_for("primary").len() - before, 3, "{err}");
}
