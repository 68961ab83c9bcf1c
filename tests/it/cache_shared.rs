//! The result cache's shared level (`[fleet] cache = true`) end to end: the real binary on
//! real repositories, a real `redis-server` on loopback and the fake provider; each
//! "machine" is its own local cache directory. Requests are counted at the fake.

use crate::cache::{KEY_VAR, Setup, cache_cmd, findings, high_at, sources};
use crate::support::redis::{RedisServer, free_port};
use crate::support::{stderr_of, stdout_of};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The setup's review budget (see `Setup::config`): no fault may hold a review past it.
const REVIEW_BUDGET: Duration = Duration::from_secs(20);

/// `[fleet]` with the shared cache level on, in namespace `ns`.
fn fleet(url: &str, ns: &str) -> String {
    format!("[fleet]\nredis = \"{url}\"\nnamespace = \"{ns}\"\ncache = true\n")
}

/// A repository with `files` changed files whose config shares answers through `redis`.
fn shared(files: usize, redis: &RedisServer) -> Setup {
    let s = Setup::new(files);
    s.config(&fleet(&redis.url(), "t"));
    s.fake.script("primary", vec![high_at(11, "Off by one")]);
    s
}

/// The local cache directory of machine `name`.
fn machine(s: &Setup, name: &str) -> String {
    s.dir.path().join(name).display().to_string()
}

/// A JSON review on `machine`.
fn review_on(s: &Setup, machine_dir: &str, extra: &[&str]) -> (i32, Value, String, usize) {
    let mut args = vec!["--cache-dir", machine_dir];
    args.extend_from_slice(extra);
    s.json(&args)
}

fn levels(v: &Value) -> Vec<Value> {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["cacheLevel"].clone())
        .collect()
}

fn warnings(stderr: &str) -> usize {
    stderr.matches("warning:").count()
}

fn cache_keys(redis: &RedisServer) -> Vec<String> {
    redis.keys("warden:t:cache:*")
}

#[test]
fn a_second_machine_with_an_empty_local_cache_asks_nothing() {
    let redis = RedisServer::start();
    let s = shared(3, &redis);
    let a = machine(&s, "a");
    let (code, cold, err, asked) = review_on(&s, &a, &[]);
    assert_eq!((code, asked), (1, 3), "{err}");
    assert_eq!(warnings(&err), 0, "{err}");
    assert_eq!(levels(&cold), [Value::Null, Value::Null, Value::Null]);
    assert_eq!(cold["summary"]["fromSharedCache"], 0);
    assert_eq!(cache_keys(&redis).len(), 3, "one shared answer per unit");

    let b = machine(&s, "b");
    let (code, warm, err, asked) = review_on(&s, &b, &[]);
    assert_eq!((code, asked), (1, 0), "machine b asks nothing: {err}");
    assert_eq!(warnings(&err), 0, "{err}");
    assert_eq!(findings(&warm), findings(&cold), "the same findings");
    assert_eq!(sources(&warm), ["cache"; 3]);
    assert_eq!(levels(&warm), ["shared"; 3]);
    assert_eq!(warm["summary"]["fromCache"], 3);
    assert_eq!(warm["summary"]["fromSharedCache"], 3);
    assert_eq!(warm["units"][0]["model"], "primary");
    assert!(
        warm["units"][0]["cachedAt"]
            .as_str()
            .is_some_and(|t| t.starts_with("20")),
        "the model's time, RFC 3339: {warm}"
    );
    let (_, text, _) = s.run(&["--cache-dir", &machine(&s, "c"), "--color", "never"]);
    assert!(
        text.contains("3 of 3 units from cache")
            && text.contains("3 of them from the fleet's shared cache"),
        "{text}"
    );

    // --no-cache turns off both levels.
    let (_, _, _, asked) = review_on(&s, &machine(&s, "d"), &["--no-cache"]);
    assert_eq!(asked, 3);

    // Machine b copied the answers into its own cache: with the server gone it still asks
    // nothing, now from its local level, after the fleet's one warning.
    drop(redis);
    let (code, local, err, asked) = review_on(&s, &b, &[]);
    assert_eq!((code, asked), (1, 0), "{err}");
    assert_eq!(levels(&local), ["local"; 3]);
    assert_eq!(local["summary"]["fromSharedCache"], 0);
    assert_eq!(warnings(&err), 1, "{err}");
    assert_eq!(findings(&local), findings(&cold));
}

#[test]
fn another_namespace_does_not_share_answers() {
    let redis = RedisServer::start();
    let s = shared(2, &redis);
    review_on(&s, &machine(&s, "a"), &[]);
    s.config(&fleet(&redis.url(), "other-team"));
    let (_, v, _, asked) = review_on(&s, &machine(&s, "b"), &[]);
    assert_eq!(asked, 2, "{v}");
    assert_eq!(redis.keys("warden:other-team:cache:*").len(), 2);
}

#[test]
fn shards_on_two_machines_fill_the_shared_level_for_an_unsharded_review() {
    let redis = RedisServer::start();
    let s = shared(5, &redis);
    let (_, one, _, asked1) = review_on(&s, &machine(&s, "shard1"), &["--shard", "1/2"]);
    let (_, two, _, asked2) = review_on(&s, &machine(&s, "shard2"), &["--shard", "2/2"]);
    assert_eq!((asked1, asked2), (3, 2), "disjoint shards: {one}\n{two}");
    let (code, whole, err, asked) = review_on(&s, &machine(&s, "third"), &[]);
    assert_eq!(
        (code, asked),
        (1, 0),
        "the unsharded review asks nothing: {err}"
    );
    assert_eq!(levels(&whole), ["shared"; 5]);
    assert_eq!(whole["summary"]["fromSharedCache"], 5);
    let mut shard_findings: Vec<Value> = findings(&one).clone();
    shard_findings.extend(findings(&two).iter().cloned());
    let ids = |fs: &[Value]| {
        let mut ids: Vec<String> = fs.iter().map(|f| f["id"].to_string()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(findings(&whole)), ids(&shard_findings));

    // Shards of a warm rerun on two more machines merge with the cache counts added up.
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (k, name) in [("1/2", "d"), ("2/2", "e")] {
        let (_, v, _, asked) = review_on(&s, &machine(&s, name), &["--shard", k]);
        assert_eq!(asked, 0);
        let p = dir.path().join(format!("{name}.json"));
        std::fs::write(&p, v.to_string()).unwrap();
        paths.push(p);
    }
    let out = crate::support::warden()
        .arg("merge")
        .args(&paths)
        .arg("--json")
        .output()
        .unwrap();
    let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged["summary"]["fromCache"], 5, "{merged}");
    assert_eq!(merged["summary"]["fromSharedCache"], 5);
    assert_eq!(levels(&merged), ["shared"; 5]);
}

/// The outcome of the same review without any shared level, on a fresh machine.
fn baseline(s: &Setup, name: &str) -> (i32, Value) {
    let (code, v, _, _) = review_on(s, &machine(s, name), &["--no-cache"]);
    (code, v)
}

#[test]
fn redis_down_from_the_start_gives_one_warning_and_a_local_review() {
    let s = Setup::new(3);
    s.fake.script("primary", vec![high_at(11, "Off by one")]);
    let (base_code, base) = baseline(&s, "base");
    s.config(&fleet(&format!("redis://127.0.0.1:{}", free_port()), "t"));
    let started = Instant::now();
    let (code, v, err, asked) = review_on(&s, &machine(&s, "a"), &[]);
    assert!(started.elapsed() < REVIEW_BUDGET);
    assert_eq!((code, asked), (base_code, 3), "{err}");
    assert_eq!(v["outcome"], base["outcome"]);
    assert_eq!(findings(&v), findings(&base));
    assert_eq!(warnings(&err), 1, "{err}");
    assert!(err.contains("fleet:") && err.contains("redis"), "{err}");
    // The local level still works: the rerun asks nothing.
    let (_, v, _, asked) = review_on(&s, &machine(&s, "a"), &[]);
    assert_eq!(asked, 0);
    assert_eq!(levels(&v), ["local"; 3]);
}

/// Slow answers: the review is still asking when the test breaks the server.
fn slow(s: &Setup) {
    s.fake.script(
        "primary",
        vec![crate::support::fake_provider::Behavior::DelayHeaders(
            Duration::from_millis(400),
            Box::new(high_at(11, "Off by one")),
        )],
    );
}

/// A JSON review on `machine_dir` in its own process; `fault` runs once the fake has the
/// review's first request. Exit code, report, stderr and the requests it made; the review
/// must end within its budget.
fn review_with_fault(
    s: &Setup,
    machine_dir: &str,
    fault: impl FnOnce(),
) -> (i32, Value, String, usize) {
    let before = s.fake.requests().len();
    let started = Instant::now();
    let child = Command::new(assert_cmd::cargo::cargo_bin("warden"))
        .current_dir(s.repo.path())
        .args(s.args(&["--json", "--cache-dir", machine_dir]))
        .env(KEY_VAR, "sk-cache-test")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("WARDEN_REDIS_URL")
        .env_remove("CI")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while s.fake.requests().len() == before {
        assert!(started.elapsed() < REVIEW_BUDGET, "the review never asked");
        std::thread::sleep(Duration::from_millis(10));
    }
    fault();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < REVIEW_BUDGET,
        "no stall past the review budget"
    );
    let err = stderr_of(&out);
    assert!(!err.contains("panicked"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    let asked = s.fake.requests().len() - before;
    (out.status.code().unwrap_or(-1), v, err, asked)
}

/// The same exit code, outcome and findings as `base`, every unit asked, one warning.
fn assert_like_base(base: &(i32, Value), got: &(i32, Value, String, usize), units: usize) {
    let (code, v, err, asked) = got;
    assert_eq!(
        (*code, &v["outcome"], *asked),
        (base.0, &base.1["outcome"], units),
        "{err}"
    );
    assert_eq!(findings(v), findings(&base.1));
    assert_eq!(warnings(err), 1, "{err}");
    assert!(err.contains("fleet:"), "{err}");
}

#[test]
fn redis_killed_mid_review_changes_nothing_but_one_warning() {
    let mut redis = RedisServer::start();
    let s = shared(4, &redis);
    slow(&s);
    let base = baseline(&s, "base");
    let got = review_with_fault(&s, &machine(&s, "a"), || redis.kill());
    assert_like_base(&base, &got, 4);
    // The local level kept the answers.
    redis.restart();
    let (_, v, _, asked) = review_on(&s, &machine(&s, "a"), &[]);
    assert_eq!((asked, levels(&v)), (0, vec![Value::from("local"); 4]));
}

#[test]
fn a_paused_redis_costs_one_bounded_wait_and_one_warning() {
    let redis = RedisServer::start();
    let s = shared(4, &redis);
    slow(&s);
    let base = baseline(&s, "base");
    // Paused before the review starts: connecting gives up within its bound.
    redis.pause();
    let got = review_with_fault(&s, &machine(&s, "a"), || {});
    redis.resume();
    assert_like_base(&base, &got, 4);
    // Paused mid-review: the next Redis call (an attempt's record, a permit, or the
    // cache's write at the end) gives up within the call bound.
    let got = review_with_fault(&s, &machine(&s, "b"), || redis.pause());
    redis.resume();
    assert_like_base(&base, &got, 4);
    assert!(got.2.contains("did not answer"), "{}", got.2);
}

#[test]
fn a_corrupt_shared_value_is_a_miss_a_cold_review_and_is_replaced() {
    let redis = RedisServer::start();
    let s = shared(2, &redis);
    let (code, cold, _, _) = review_on(&s, &machine(&s, "a"), &[]);
    let keys = cache_keys(&redis);
    assert_eq!(keys.len(), 2);
    let mut conn = redis.client();
    // One value's bytes changed under its checksum; the other is not a sealed value at all.
    let stored: Vec<u8> = ::redis::cmd("GET").arg(&keys[0]).query(&mut conn).unwrap();
    let mut flipped = stored.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 0x01;
    let ttl = |k: &str| -> i64 {
        ::redis::cmd("PTTL")
            .arg(k)
            .query(&mut redis.client())
            .unwrap()
    };
    assert!(
        ttl(&keys[0]) > 29 * 24 * 3600 * 1000,
        "expires after maxAge (30 days)"
    );
    let _: () = ::redis::cmd("SET")
        .arg(&keys[0])
        .arg(flipped)
        .query(&mut conn)
        .unwrap();
    let _: () = ::redis::cmd("SET")
        .arg(&keys[1])
        .arg("garbage")
        .query(&mut conn)
        .unwrap();

    let (code_b, again, err, asked) = review_on(&s, &machine(&s, "b"), &[]);
    assert_eq!((code_b, asked), (code, 2), "a cold review: {err}");
    assert_eq!(findings(&again), findings(&cold));
    assert_eq!(sources(&again), ["model"; 2]);
    assert_eq!(warnings(&err), 1, "{err}");
    assert!(
        err.contains("2 stored answer(s) failed their checksum"),
        "{err}"
    );
    // The fresh answers replaced the damaged ones.
    let (_, v, err, asked) = review_on(&s, &machine(&s, "c"), &[]);
    assert_eq!(asked, 0, "{err}");
    assert_eq!(levels(&v), ["shared"; 2]);
    assert_eq!(warnings(&err), 0, "{err}");
}

#[test]
fn a_shared_cache_without_a_server_is_a_config_error() {
    let s = Setup::new(1);
    s.config("[fleet]\ncache = true\n");
    let (code, _, err) = s.run(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("warden.toml") && err.contains("[fleet] cache = true needs a Redis server"),
        "{err}"
    );
    assert!(s.fake.requests().is_empty());
    // WARDEN_REDIS_URL names the server as well as [fleet] redis does.
    let redis = RedisServer::start();
    let out = s
        .cmd(&["--json", "--cache-dir", &machine(&s, "a")])
        .env("WARDEN_REDIS_URL", redis.url())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{err}");
    assert_eq!(warnings(&err), 0, "{err}");
    assert_eq!(redis.keys("warden:cache:*").len(), 1);
}

#[test]
fn stats_count_the_shared_level_and_clear_leaves_it_unless_asked() {
    let redis = RedisServer::start();
    let s = shared(2, &redis);
    let a = machine(&s, "a");
    review_on(&s, &a, &[]);
    let mut conn = redis.client();
    let _: () = ::redis::cmd("SET")
        .arg("warden:other:cache:x")
        .arg("another team's")
        .query(&mut conn)
        .unwrap();
    let cfg = s.config_path();
    let dir = PathBuf::from(&a);
    let env = [("WARDEN_CACHE_DIR", dir.as_path())];
    let (code, out) = cache_cmd(&s, &["-c", cfg.to_str().unwrap(), "stats", "--json"], &env);
    assert_eq!(code, 0, "{out}");
    let st: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["entries"], 2);
    assert_eq!(st["shared"]["entries"], 2, "{st}");
    assert_eq!(st["shared"]["keys"], "warden:t:cache:*");
    let (_, text) = cache_cmd(&s, &["-c", cfg.to_str().unwrap(), "stats"], &env);
    assert!(text.contains("shared:  2 answer(s) in redis"), "{text}");

    let (code, out) = cache_cmd(&s, &["-c", cfg.to_str().unwrap(), "clear"], &env);
    assert_eq!(code, 0);
    assert!(
        out.contains("cleared 2") && out.contains("--shared"),
        "{out}"
    );
    assert_eq!(
        cache_keys(&redis).len(),
        2,
        "the shared level is left alone"
    );
    let (code, out) = cache_cmd(
        &s,
        &["-c", cfg.to_str().unwrap(), "clear", "--shared"],
        &env,
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("cleared 2 cached answer(s) from the fleet's shared cache"),
        "{out}"
    );
    assert!(cache_keys(&redis).is_empty());
    assert_eq!(
        redis.keys("warden:other:*").len(),
        1,
        "other namespaces stay"
    );
    let (_, _, _, asked) = review_on(&s, &machine(&s, "b"), &[]);
    assert_eq!(asked, 2, "nothing left to share");
}

/// `warden cache ARGS` with config `cfg` and cache directory `dir`: code, stdout, stderr.
fn cache_cli(s: &Setup, dir: &str, args: &[&str]) -> (i32, String, String) {
    let out = crate::support::warden()
        .current_dir(s.repo.path())
        .arg("cache")
        .args(args)
        .arg("-c")
        .arg(s.config_path())
        .env("WARDEN_CACHE_DIR", dir)
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(!err.contains("panicked"), "{err}");
    let stdout = stdout_of(&out);
    (out.status.code().unwrap_or(-1), stdout, err)
}

#[test]
fn stats_and_clear_with_the_shared_level_down_or_not_configured() {
    let mut redis = RedisServer::start();
    let s = shared(1, &redis);
    let a = machine(&s, "a");
    review_on(&s, &a, &[]);
    redis.kill();
    let (code, out, err) = cache_cli(&s, &a, &["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let st: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (st["entries"].as_u64(), &st["shared"]["entries"]),
        (Some(1), &Value::Null)
    );
    assert_eq!(warnings(&err), 1, "{err}");
    let (code, out, _) = cache_cli(&s, &a, &["stats"]);
    assert_eq!(code, 0);
    assert!(out.contains("could not be asked"), "{out}");
    // Asked to clear a level it cannot reach: exit 2, and it says nothing was deleted there.
    let (code, _, err) = cache_cli(&s, &a, &["clear", "--shared"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nothing was deleted there"), "{err}");
    // Without [fleet] cache there is no shared level to clear.
    s.config("");
    let (code, out, err) = cache_cli(&s, &a, &["stats", "--json"]);
    assert_eq!((code, warnings(&err)), (0, 0), "{err}");
    assert!(serde_json::from_str::<Value>(&out).unwrap()["shared"].is_null());
    let (code, _, err) = cache_cli(&s, &a, &["clear", "--shared"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--shared: there is no shared cache level"),
        "{err}"
    );
}

#[test]
fn verdicts_travel_with_shared_answers() {
    let redis = RedisServer::start();
    let s = Setup::new(1);
    s.config(&format!(
        "{}[defaults.verification]\nenabled = true\n",
        fleet(&redis.url(), "t")
    ));
    let (two, confirmed) = crate::support::fake_provider::real_bug_and_false_alarm();
    s.fake.script(
        "primary",
        vec![
            crate::support::fake_provider::Behavior::Answer(two),
            crate::support::fake_provider::Behavior::Answer(confirmed),
        ],
    );
    let (_, cold, _, asked) = review_on(&s, &machine(&s, "a"), &[]);
    assert_eq!(asked, 2, "a review request and a verification request");
    let (code, warm, err, asked) = review_on(&s, &machine(&s, "b"), &[]);
    assert_eq!(
        (code, asked),
        (1, 0),
        "not reviewed, not verified again: {err}"
    );
    assert_eq!(findings(&warm), findings(&cold));
    assert_eq!(findings(&warm)[0]["verification"], "confirmed");
    assert_eq!(warm["verification"]["rejected"], 1);
    assert_eq!(levels(&warm), ["shared"]);
}

/// Two machines' reviews around junk planted in Redis: machine a fills the shared level with
/// `units` answers, each is then replaced by `bytes` bytes (as whoever can write to the fleet's
/// Redis could), and machine b reviews.
struct Planted {
    code: i32,
    cold: Value,
    code_b: i32,
    again: Value,
    err: String,
    asked: usize,
    /// Bytes Redis sent during b's review.
    sent: u64,
    keys: Vec<String>,
}

fn plant_and_review_again(redis: &RedisServer, units: usize, bytes: usize) -> Planted {
    let s = shared(units, redis);
    let (code, cold, _, _) = review_on(&s, &machine(&s, "a"), &[]);
    let keys = cache_keys(redis);
    assert_eq!(keys.len(), units);
    let junk = vec![b'x'; bytes];
    let mut conn = redis.client();
    for k in &keys {
        let _: () = ::redis::cmd("SET")
            .arg(k)
            .arg(&junk)
            .query(&mut conn)
            .unwrap();
    }
    let before = redis.stat("total_net_output_bytes");
    let (code_b, again, err, asked) = review_on(&s, &machine(&s, "b"), &[]);
    let sent = redis.stat("total_net_output_bytes") - before;
    eprintln!("bytes sent by redis during the review: {sent}");
    Planted {
        code,
        cold,
        code_b,
        again,
        err,
        asked,
        sent,
        keys,
    }
}

/// The fleet stayed on: the fresh answers replaced the planted values.
fn replaced(redis: &RedisServer, keys: &[String]) {
    for k in keys {
        let len: u64 = ::redis::cmd("STRLEN")
            .arg(k)
            .query(&mut redis.client())
            .unwrap();
        assert!(len < 256 * 1024, "{k}: {len}");
    }
}

#[test]
fn an_oversized_shared_value_is_a_miss_and_is_never_sent_whole() {
    let redis = RedisServer::start();
    // 64 MB under the key (Redis allows 512).
    let p = plant_and_review_again(&redis, 1, 64 << 20);
    let err = &p.err;
    assert_eq!(
        (p.code_b, p.asked),
        (p.code, 1),
        "a miss, asked again: {err}"
    );
    assert_eq!(findings(&p.again), findings(&p.cold));
    assert_eq!(warnings(err), 1, "{err}");
    assert!(
        err.contains("1 stored answer(s)") && err.contains("over 256 KiB"),
        "{err}"
    );
    assert!(
        p.sent < 2 * 256 * 1024,
        "redis sent {} bytes: the 64 MB value was read whole",
        p.sent
    );
    replaced(&redis, &p.keys);
}

#[test]
fn a_read_whose_every_value_comes_back_cut_is_within_the_connection_s_read_cap() {
    // The connection reads no more than each call's honest largest reply: for a read, 256 KiB
    // + 1 byte and framing per value. Every value at that size must still be read (misses
    // asked again), not taken for a hostile server (which turns the fleet off).
    let redis = RedisServer::start();
    let p = plant_and_review_again(&redis, 6, 300 << 10);
    let err = &p.err;
    assert_eq!(
        (p.code_b, p.asked),
        (p.code, 6),
        "six misses, asked again: {err}"
    );
    assert_eq!(findings(&p.again), findings(&p.cold));
    assert_eq!(
        warnings(err),
        1,
        "only the oversized answers' warning: {err}"
    );
    assert!(err.contains("6 stored answer(s)"), "{err}");
    assert!(
        p.sent > 6 * 256 * 1024,
        "every value came back cut: {} bytes",
        p.sent
    );
    replaced(&redis, &p.keys);
}

#[test]
fn clear_without_a_namespace_leaves_a_namespace_named_cache_alone() {
    let redis = RedisServer::start();
    let s = Setup::new(1);
    s.config(&format!(
        "[fleet]\nredis = \"{}\"\ncache = true\n",
        redis.url()
    ));
    let hex = "ab".repeat(32);
    let mine = format!("warden:cache:{hex}");
    // The keys of a team whose namespace is `cache`: its breaker and its answer.
    let theirs = [
        "warden:cache:brk:openai:api.openai.com:gpt".to_string(),
        format!("warden:cache:cache:{hex}"),
    ];
    let mut conn = redis.client();
    for k in theirs.iter().chain([&mine]) {
        let _: () = ::redis::cmd("SET")
            .arg(k)
            .arg("v")
            .query(&mut conn)
            .unwrap();
    }
    let dir = machine(&s, "a");
    let (code, out, err) = cache_cli(&s, &dir, &["stats", "--json"]);
    assert_eq!(code, 0, "{err}");
    let st: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["shared"]["entries"], 1, "{st}");
    let (code, out, err) = cache_cli(&s, &dir, &["clear", "--shared"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("cleared 1 cached answer(s) from the fleet's shared cache"),
        "{out}"
    );
    assert!(
        redis.keys(&mine).is_empty(),
        "this namespace's answer is gone"
    );
    for k in &theirs {
        assert_eq!(
            redis.keys(k).len(),
            1,
            "{k} of namespace `cache` was deleted"
        );
    }
}
