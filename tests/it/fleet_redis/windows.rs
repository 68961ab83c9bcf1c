//! Rate-limit windows shared through the fleet (docs/design.md section 13): processes sharing one
//! account (one key, the provider's remaining count is the account's) take from one window
//! in Redis instead of each spending what the headers say is left; whatever Redis holds is
//! bounded; Redis gone leaves each process its local pacing.

use super::*;
use crate::support::fake_provider::{Behavior, findings_answer};
use warden::engine::pacing::PauseReason;
use warden::engine::{SharedTake, SharedWindows};
use warden::fleet::windows::FleetWindows;
use warden::provider::ratelimit::{RateLimitInfo, Window};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn upstream() -> warden::fleet::Upstream {
    warden::fleet::Upstream {
        provider: "openai".into(),
        host: "127.0.0.1:4000".into(),
        model: "gpt-x".into(),
    }
}

fn requests(limit: Option<u64>, remaining: u64, reset_after: Duration) -> Option<RateLimitInfo> {
    Some(RateLimitInfo {
        requests: Some(Window {
            limit,
            remaining,
            reset_after,
        }),
        tokens: None,
    })
}

/// A process's windows on `redis` under namespace `ns` (lease 1 s, budget 20 s).
async fn process(redis: &RedisServer, ns: &str, warn: Warn) -> FleetWindows {
    let fleet = Fleet::connect(target(&redis.url(), None, Some(ns)), warn)
        .await
        .unwrap();
    FleetWindows::new(fleet, &[upstream()], MS(1000), Duration::from_secs(20))
}

fn is_short(t: SharedTake, reason: PauseReason, most: Duration) -> bool {
    matches!(t, SharedTake::Short { reason: r, wait } if r == reason && wait <= most && !wait.is_zero())
}

#[test]
fn two_processes_take_from_one_window_which_answers_only_lower_and_a_reset_makes_whole() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (wa, seen_a) = warnings();
    let (wb, seen_b) = warnings();
    rt.block_on(async {
        let a = process(&redis, "win", wa).await;
        let b = process(&redis, "win", wb).await;
        // Nothing known: both go, and ask Redis no script.
        assert_eq!(a.take(0, 10).await, SharedTake::Go);
        assert!(redis.keys("warden:win:rl*").is_empty());
        b.settle(0, None).await;
        // A's answer: 4 of 5 left for 600 ms. Each takes one.
        a.settle(0, requests(Some(5), 4, MS(600))).await;
        assert_eq!(b.take(0, 10).await, SharedTake::Go);
        assert_eq!(a.take(0, 10).await, SharedTake::Go);
        // A's answer of the same window, read when the server had counted neither: it
        // does not raise what is left (2), B's attempt in flight counted as spoken for.
        a.settle(0, requests(Some(5), 4, MS(590))).await;
        // One of an older window (its reset long before this one's) changes nothing.
        b.settle(0, requests(Some(5), 5, MS(5))).await;
        let mut went = 0;
        for p in [&a, &b, &a, &b] {
            match p.take(0, 10).await {
                SharedTake::Go => went += 1,
                t => assert!(is_short(t, PauseReason::Requests, MS(600)), "{t:?}"),
            }
        }
        assert_eq!(went, 2, "5 a window: 3 taken, 2 more across both processes");
        // After the reset the window is whole again for the fleet: 5, then short.
        tokio::time::sleep(MS(650)).await;
        let mut went = 0;
        for p in [&a, &b, &a, &b, &a, &b] {
            went += usize::from(p.take(0, 1).await == SharedTake::Go);
        }
        assert_eq!(
            went, 5,
            "the window the first process after the reset opened"
        );
        // A's attempts end; B's three (one before the reset, two after) are in flight.
        for _ in 0..8 {
            a.settle(0, None).await;
        }
        // A newer window (its reset later than this one's by over half) replaces it, with
        // B's attempts in flight spoken for: 5 left, 3 of them B's.
        a.settle(0, requests(Some(5), 5, MS(1500))).await;
        assert_eq!(a.take(0, 1).await, SharedTake::Go);
        assert_eq!(a.take(0, 1).await, SharedTake::Go);
        let t = a.take(0, 1).await;
        assert!(is_short(t, PauseReason::Requests, MS(1500)), "{t:?}");
    });
    assert!(seen_a.lock().unwrap().is_empty(), "{:?}", seen_a.lock());
    assert!(seen_b.lock().unwrap().is_empty(), "{:?}", seen_b.lock());
}

#[test]
fn tokens_are_shared_too_and_a_crashed_process_s_attempts_stop_counting() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let a = process(&redis, "tok", w.clone()).await;
        let b = process(&redis, "tok", w).await;
        let tokens = RateLimitInfo {
            requests: None,
            tokens: Some(Window {
                limit: Some(10_000),
                remaining: 5_000,
                reset_after: MS(800),
            }),
        };
        a.settle(0, Some(tokens)).await;
        assert_eq!(b.take(0, 3_000).await, SharedTake::Go);
        let t = a.take(0, 3_000).await;
        assert!(is_short(t, PauseReason::Tokens, MS(800)), "{t:?}");
        assert_eq!(a.take(0, 2_000).await, SharedTake::Go);
        // B "dies" with its attempt in flight: its lease runs out after 1 s, then a new
        // window's reading no longer counts it as spoken for.
        tokio::time::sleep(MS(1100)).await;
        a.settle(0, requests(Some(3), 3, MS(900))).await;
        let mut go = 0;
        for _ in 0..4 {
            go += usize::from(a.take(0, 1).await == SharedTake::Go);
        }
        assert_eq!(go, 3, "B's expired attempt is not counted");
    });
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock());
}

#[test]
fn an_attempt_larger_than_the_whole_shared_token_window_goes_once_the_window_is_whole() {
    // A 1,000-token window and an attempt estimated at 5,000: no reset ever covers it,
    // so "short until the reset" would be short for ever. Whole, the window lets it go.
    let redis = RedisServer::start();
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let a = process(&redis, "big", w).await;
        let tokens = RateLimitInfo {
            requests: None,
            tokens: Some(Window {
                limit: Some(1_000),
                remaining: 400,
                reset_after: MS(500),
            }),
        };
        a.settle(0, Some(tokens)).await;
        let t = a.take(0, 5_000).await;
        assert!(is_short(t, PauseReason::Tokens, MS(500)), "{t:?}");
        tokio::time::sleep(MS(550)).await;
        assert_eq!(a.take(0, 5_000).await, SharedTake::Go, "the whole window");
        let t = a.take(0, 5_000).await;
        assert!(is_short(t, PauseReason::Tokens, MS(500)), "spent: {t:?}");
    });
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock());
}

/// Redis's clock in ms (the script's), to plant windows relative to it.
fn redis_now_ms(c: &mut ::redis::Connection) -> i64 {
    let (s, us): (i64, i64) = ::redis::cmd("TIME").query(c).unwrap();
    s * 1000 + us / 1000
}

#[test]
fn garbage_in_the_shared_window_keys_is_bounded_and_no_reason_to_give_up() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let p = process(&redis, "junk", w).await;
        let fleet = Fleet::connect(target(&redis.url(), None, Some("junk")), warnings().0)
            .await
            .unwrap();
        let (req, fly) = (
            fleet.upstream_key("rlreq", &upstream()),
            fleet.upstream_key("rlfly", &upstream()),
        );
        let mut c = redis.client();
        let plant = |c: &mut ::redis::Connection, fields: &[(&str, String)]| {
            let _: () = ::redis::cmd("DEL").arg(&req).query(c).unwrap();
            let mut cmd = ::redis::cmd("HSET");
            cmd.arg(&req);
            for (k, v) in fields {
                cmd.arg(*k).arg(v);
            }
            let _: () = cmd.query(c).unwrap();
            // A PTTL of a day changes nothing either.
            let _: () = ::redis::cmd("PEXPIRE")
                .arg(&req)
                .arg(86_400_000)
                .query(c)
                .unwrap();
        };
        let now = redis_now_ms(&mut c);
        let day = 86_400_000i64;
        let s = |n: i64| n.to_string();
        // Not windows warden writes: each is dropped, and the attempt goes.
        for fields in [
            vec![
                ("lim", s(5)),
                ("left", s(0)),
                ("reset", s(now + day)),
                ("len", s(1000)),
            ],
            vec![
                ("lim", s(5)),
                ("left", s(0)),
                ("reset", s(now + 500)),
                ("len", s(day)),
            ],
            vec![
                ("lim", s(5)),
                ("left", s(0)),
                ("reset", "nan".into()),
                ("len", s(1000)),
            ],
            vec![
                ("lim", s(5)),
                ("left", s(0)),
                ("reset", s(now + 500)),
                ("len", "inf".into()),
            ],
            vec![
                ("left", "abc".into()),
                ("reset", s(now + 500)),
                ("len", s(1000)),
            ],
            vec![
                ("lim", s(5)),
                ("left", s(0)),
                ("reset", s(i64::MIN)),
                ("len", s(1000)),
            ],
        ] {
            plant(&mut c, &fields);
            let t = p.take(0, 1).await;
            assert_eq!(t, SharedTake::Go, "{fields:?}");
            p.settle(0, None).await;
        }
        // Negative left is nothing left: a wait of at most the window (not a day).
        plant(
            &mut c,
            &[
                ("lim", s(5)),
                ("left", s(-7)),
                ("reset", s(now + 700)),
                ("len", s(1000)),
            ],
        );
        let t = p.take(0, 1).await;
        assert!(is_short(t, PauseReason::Requests, MS(1000)), "{t:?}");
        // Huge left is the limit; a garbage limit is no limit (the window is forgotten at
        // its reset).
        plant(
            &mut c,
            &[
                ("lim", s(3)),
                ("left", "1e30".into()),
                ("reset", s(now + 5000)),
                ("len", s(9000)),
            ],
        );
        let mut go = 0;
        for _ in 0..5 {
            go += usize::from(p.take(0, 1).await == SharedTake::Go);
        }
        assert_eq!(go, 3, "left bounded to the limit of 3");
        for _ in 0..3 {
            p.settle(0, None).await;
        }
        // The keys of another type: replaced, not an error.
        for key in [&req, &fly] {
            let _: () = ::redis::cmd("DEL").arg(key).query(&mut c).unwrap();
            let _: () = ::redis::cmd("SET").arg(key).arg("x").query(&mut c).unwrap();
        }
        assert_eq!(p.take(0, 1).await, SharedTake::Go);
        p.settle(0, requests(Some(5), 1, MS(800))).await;
        assert_eq!(p.take(0, 1).await, SharedTake::Go);
        assert!(matches!(p.take(0, 1).await, SharedTake::Short { .. }));
    });
    assert!(
        seen.lock().unwrap().is_empty(),
        "bounded values are no reason to give up: {:?}",
        seen.lock()
    );
}

#[test]
fn a_script_answer_of_another_shape_turns_the_fleet_off_with_one_warning() {
    use crate::support::resp::{FakeRedis, Misbehave};
    // A server that has a window (EXISTS answers 1) and answers scripts with a breaker's
    // shape: no warden window script answers that.
    let fake = FakeRedis::start(Misbehave::Reply("*3\r\n$6\r\nclosed\r\n:0\r\n:0\r\n"));
    let rt = runtime();
    let (w, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&fake.url(), None, None), w)
            .await
            .unwrap();
        let p = FleetWindows::new(fleet.clone(), &[upstream()], MS(1000), MS(5000));
        // The fake answers +OK to EXISTS: no window known, no script asked.
        assert_eq!(p.take(0, 1).await, SharedTake::Go);
        assert_eq!(fake.scripts(), 0);
        // After an answer with headers the route asks the script, whose answer is garbage.
        p.settle(0, requests(Some(5), 1, MS(800))).await;
        assert_eq!(p.take(0, 1).await, SharedTake::Go);
        assert!(!fleet.is_on());
        assert_eq!(p.take(0, 1).await, SharedTake::Go);
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
}

/// One route on the fake (the account) with `maxConcurrency = 8`, `[fleet]` when `redis`
/// is given.
fn paced_config(run: &FleetRun, redis: Option<&str>) {
    let mut text = String::from(
        "version = 1\n[execution]\nreviewBudget = \"60s\"\nhunkBudget = \"30s\"\nmaxAttempts = 1\n",
    );
    if let Some(url) = redis {
        text.push_str(&format!(
            "[fleet]\nredis = \"{url}\"\nnamespace = \"{}\"\n",
            run.namespace()
        ));
    }
    text.push_str(&format!(
        "[[routes]]\nname = \"primary\"\nprovider = \"openai\"\nmodel = \"m\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 8\n",
        run.fake.base_url()
    ));
    std::fs::write(run.cfg.path().join("warden.toml"), text).unwrap();
}

/// What two reviews at once did to one account of `K` requests a second.
struct Account {
    refused: usize,
    requests: usize,
    /// The most requests that reached the fake within any one of its windows' length.
    busiest: usize,
    wall: Duration,
}

const K: u64 = 6;
const UNITS: usize = 20;

/// Two `warden review` processes of `UNITS` units each, the second started `stagger`
/// after the first, against one fake that serves `K` requests a second account-wide and
/// says so in OpenAI's headers (429 beyond); each reviews every unit.
fn two_paced_reviews(redis: Option<&str>, stagger: Duration) -> Account {
    let run = FleetRun::new(UNITS);
    run.fake.paced(K);
    run.fake.default_behavior(Behavior::DelayHeaders(
        MS(300),
        Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
    ));
    paced_config(&run, redis);
    let t = Instant::now();
    let first = run.command().spawn().unwrap();
    std::thread::sleep(stagger);
    let second = run.command().spawn().unwrap();
    for c in [first, second] {
        let (code, v, err) = finish(c);
        assert_eq!(code, 0, "{err}");
        let reviewed = statuses(&v).iter().filter(|(s, _)| s == "reviewed").count();
        assert_eq!(reviewed, UNITS, "{}", v["summary"]);
        assert_eq!(fleet_warnings(&err), 0, "{err}");
    }
    let wall = t.elapsed();
    let log = run.fake.requests();
    let times: Vec<Instant> = log.iter().map(|r| r.at).collect();
    let busiest = times
        .iter()
        .map(|t0| {
            times
                .iter()
                .filter(|t| **t >= *t0 && t.duration_since(*t0) < MS(1000))
                .count()
        })
        .max()
        .unwrap_or(0);
    let a = Account {
        refused: run.fake.refused(),
        requests: log.len(),
        busiest,
        wall,
    };
    eprintln!(
        "two reviews x {UNITS} units, {K}/s account, redis {redis:?}, stagger {stagger:?}: {} requests, {} answered 429, at most {} within 1 s, {:.2?}",
        a.requests, a.refused, a.busiest, a.wall
    );
    a
}

#[test]
fn two_processes_sharing_one_account_stay_within_its_rate_limit_and_both_complete() {
    let _shared = timing_sensitive();
    let redis = RedisServer::start();
    let stagger = MS(1500);
    let alone = two_paced_reviews(None, stagger);
    let shared = two_paced_reviews(Some(&redis.url()), stagger);
    // Each process alone spends what the headers say the account has left, so the two
    // overdraw it; sharing one account, the fleet asks for little the account cannot give.
    // Measured: 10 to 13 answers of 429 without sharing, 0 with it (a few could come at a
    // window's edge on a loaded machine: the fake's window starts with its first request).
    assert!(
        alone.refused >= 6,
        "without sharing: {} 429s",
        alone.refused
    );
    assert!(
        shared.refused <= 3 && shared.refused * 2 < alone.refused,
        "with sharing {} 429s, without {}",
        shared.refused,
        alone.refused
    );
}

#[test]
fn redis_stopped_mid_review_leaves_the_local_pacing_with_one_warning() {
    let _shared = timing_sensitive();
    let mut redis = RedisServer::start();
    let run = FleetRun::new(UNITS);
    run.fake.paced(K);
    run.fake.default_behavior(Behavior::DelayHeaders(
        MS(300),
        Box::new(Behavior::Answer(findings_answer(serde_json::json!([])))),
    ));
    paced_config(&run, Some(&redis.url()));
    let child = run.command().spawn().unwrap();
    // Stopped once the windows are in Redis (the first answers' headers settled there).
    let until = Instant::now() + Duration::from_secs(10);
    while redis
        .keys(&format!("warden:{}:rlreq:*", run.namespace()))
        .is_empty()
    {
        assert!(Instant::now() < until, "no window was shared");
        std::thread::sleep(MS(5));
    }
    redis.stop();
    let (code, v, err) = finish(child);
    assert_eq!(code, 0, "{err}");
    let reviewed = statuses(&v).iter().filter(|(s, _)| s == "reviewed").count();
    assert_eq!(reviewed, UNITS, "{}", v["summary"]);
    assert_eq!(fleet_warnings(&err), 1, "{err}");
    assert!(err.contains("not used for the rest of this run"), "{err}");
    // The local pacing carried on: the 429s are the first burst's (8 sent before any
    // headers, 6 served) and a few at window edges, not one per request past the limit.
    let refused = run.fake.refused();
    eprintln!(
        "redis stopped mid-review: {} requests, {refused} answered 429",
        run.fake.requests().len()
    );
    assert!(refused <= 5, "{refused} answers of 429");
}
