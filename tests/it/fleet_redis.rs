//! Fleet mode against a real `redis-server` on loopback: the handle's bounds and its one
//! warning, the trust boundary, and (with the real binary) shared breakers and permits.

use crate::support::fake_provider::FakeProvider;
use crate::support::redis::{RedisServer, free_port};
use crate::support::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use warden::config::RedisUrl;
use warden::fleet::{Fleet, FleetError, Target, Warn};

/// A warning sink that keeps what it is given.
fn warnings() -> (Warn, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (
        Arc::new(move |m: &str| s.lock().unwrap().push(m.to_string())),
        seen,
    )
}

fn target(url: &str, password: Option<&str>, namespace: Option<&str>) -> Target {
    Target {
        url: RedisUrl::parse(url).unwrap(),
        password: Ok(password.map(str::to_string)),
        namespace: namespace.map(str::to_string),
        cache: false,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_handle_names_keys_in_its_namespace_and_answers_within_its_bound() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (warn, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&redis.url(), None, Some("team a")), warn)
            .await
            .expect("connects");
        let up = warden::fleet::Upstream {
            provider: "openai".into(),
            host: "127.0.0.1:4000".into(),
            model: "gpt:x".into(),
        };
        let key = fleet.upstream_key("brk", &up);
        assert_eq!(key, "warden:team%20a:brk:openai:127.0.0.1%3A4000:gpt%3Ax");
        fleet
            .query::<()>("writing", ::redis::cmd("SET").arg(&key).arg("v").clone())
            .await
            .unwrap();
        let clone = fleet.clone();
        let got: String = clone
            .call("reading", |mut c| async move {
                ::redis::cmd("GET").arg(key).query_async(&mut c).await
            })
            .await
            .unwrap();
        assert_eq!(got, "v");
        assert!(fleet.is_on());
    });
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(redis.keys("warden:team%20a:*").len(), 1);
}

#[test]
fn a_paused_server_costs_one_bounded_call_and_one_warning_then_the_fleet_is_off() {
    let redis = RedisServer::start();
    let rt = runtime();
    let (warn, seen) = warnings();
    rt.block_on(async {
        let fleet = Fleet::connect(target(&redis.url(), None, None), warn)
            .await
            .unwrap();
        let ping = || ::redis::cmd("PING").clone();
        let pong: String = fleet.query("pinging", ping()).await.unwrap();
        assert_eq!(pong, "PONG");
        redis.pause();
        let t = Instant::now();
        let e = fleet.query::<String>("pinging", ping()).await.unwrap_err();
        let took = t.elapsed();
        assert!(matches!(e, FleetError::Timeout { .. }), "{e}");
        assert!(
            took < Duration::from_secs(1),
            "bounded by 250 ms, took {took:?}"
        );
        // Every later call fails at once, without touching the server.
        let t = Instant::now();
        for _ in 0..20 {
            let e = fleet.query::<String>("pinging", ping()).await.unwrap_err();
            assert!(matches!(e, FleetError::Off));
        }
        assert!(t.elapsed() < Duration::from_millis(100));
        assert!(!fleet.is_on());
        redis.resume();
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("did not answer pinging within 250ms")
            && seen[0].contains("not used for the rest of this run"),
        "{seen:?}"
    );
}

#[test]
fn unreachable_refusing_wrong_password_and_garbage_each_give_one_warning_and_no_fleet() {
    let rt = runtime();
    let secured = RedisServer::start_with(&["--requirepass", "right-horse-battery"]);
    // A server that speaks no Redis: answers every connection with garbage.
    let garbage = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let garbage_url = format!("redis://{}", garbage.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::Write;
        for mut s in garbage.incoming().flatten() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\n<html>\x00\xff not redis");
        }
    });
    let cases = [
        (
            target(&format!("redis://127.0.0.1:{}", free_port()), None, None),
            "cannot connect",
        ),
        (
            target(&secured.url(), Some("wrong-password-123"), None),
            "cannot connect",
        ),
        (target(&secured.url(), None, None), "cannot connect"),
        (target(&garbage_url, None, None), "cannot connect"),
        (
            Target {
                password: Err("[fleet] passwordEnv names PW, which is not set".into()),
                ..target(&secured.url(), None, None)
            },
            "passwordEnv names PW",
        ),
    ];
    for (t, want) in cases {
        let (warn, seen) = warnings();
        let t0 = Instant::now();
        let fleet = rt.block_on(Fleet::connect(t, warn));
        assert!(fleet.is_none());
        assert!(t0.elapsed() < Duration::from_secs(3), "connect is bounded");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].contains(want), "{seen:?}");
        assert!(!seen[0].contains("wrong-password-123"), "{seen:?}");
    }
    // The right password connects.
    let (warn, seen) = warnings();
    let ok = rt.block_on(Fleet::connect(
        target(&secured.url(), Some("right-horse-battery"), None),
        warn,
    ));
    assert!(ok.is_some() && seen.lock().unwrap().is_empty());
}

/// Connections the server has accepted so far.
fn connections(redis: &RedisServer) -> u64 {
    let info: String = ::redis::cmd("INFO")
        .arg("stats")
        .query(&mut redis.client())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

#[test]
fn a_pr_that_points_the_fleet_at_its_own_redis_is_not_used_in_ci() {
    let evil = RedisServer::start();
    let fake = FakeProvider::start();
    let routes = fake_routes(&fake.base_url(), "WARDEN_FLEET_KEY", 2);
    let repo = Repo::new();
    repo.config(&format!("version = 1\n{routes}"))
        .write("src/app.py", source_lines(3, "a"))
        .commit_all("base");
    repo.git(&["checkout", "-q", "-b", "pr"]);
    repo.config(&format!(
        "version = 1\n[fleet]\nredis = \"{}\"\n{routes}",
        evil.url()
    ))
    .write("src/app.py", source_lines(5, "a"))
    .commit_all("the pull request");
    let review = |extra: &[&str], ci: bool| {
        let mut args = vec!["review", "--json", "--skill", "code-review"];
        args.extend_from_slice(extra);
        let mut cmd = repo.warden(&args);
        cmd.env("WARDEN_FLEET_KEY", "k");
        if ci {
            cmd.env("CI", "true");
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!err.contains("panicked"), "{err}");
        (out.status.code(), err)
    };
    let before = connections(&evil);
    let (code, err) = review(&[], true);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = review(&["main...pr"], false);
    assert_eq!(code, Some(0), "{err}");
    // Our own INFO connection is the only one.
    assert_eq!(
        connections(&evil),
        before + 1,
        "the PR's redis was contacted"
    );
    // The person trusting the head config gets the fleet they asked for.
    let (code, err) = review(&["main...pr", "--trust-head-config"], false);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        connections(&evil) > before + 2,
        "the head config's fleet is used"
    );
}

const KEY_VAR: &str = "WARDEN_FLEET_KEY";

/// A repository with changed files, the fake provider (a `primary` on the OpenAI protocol
/// and a `fallback` on Anthropic's), a config outside the repository, and optionally the
/// fleet's Redis.
struct FleetRun {
    repo: Repo,
    fake: FakeProvider,
    cfg: tempfile::TempDir,
}

impl FleetRun {
    fn new(files: usize) -> FleetRun {
        FleetRun {
            repo: repo_with_changed_files(files),
            fake: FakeProvider::start(),
            cfg: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes the config: short budgets (overridden by `exec`), a breaker that opens after
    /// two timeouts for a minute, `[fleet]` when `redis` is given, and `route_extra`
    /// lines on both routes.
    fn config(&self, redis: Option<&str>, exec: &[(&str, &str)], route_extra: &str) {
        let mut e = vec![
            ("reviewBudget", "20s"),
            ("hunkBudget", "5s"),
            ("requestTimeout", "700ms"),
            ("connectTimeout", "300ms"),
            ("firstTokenTimeout", "600ms"),
            ("idleTimeout", "600ms"),
        ];
        for (k, v) in exec {
            e.retain(|(x, _)| x != k);
            e.push((k, v));
        }
        let mut text = String::from("version = 1\n[execution]\nmaxAttempts = 2\n");
        for (k, v) in e {
            text.push_str(&format!("{k} = \"{v}\"\n"));
        }
        text.push_str("[execution.breaker]\nminCalls = 2\nfailureRate = 0.5\nopenFor = \"60s\"\nwindow = \"2m\"\n");
        if let Some(url) = redis {
            text.push_str(&format!(
                "[fleet]\nredis = \"{url}\"\nnamespace = \"{}\"\n",
                self.namespace()
            ));
        }
        for (name, provider) in [("primary", "openai"), ("fallback", "anthropic")] {
            text.push_str(&format!(
                "[[routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{name}\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 4\n{route_extra}\n",
                self.fake.base_url()
            ));
        }
        std::fs::write(self.cfg.path().join("warden.toml"), text).unwrap();
    }

    /// Each run its own namespace, so tests sharing a server never meet.
    fn namespace(&self) -> String {
        self.cfg
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// `warden review --json -c CONFIG --skill code-review`, not yet started.
    fn command(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("warden"));
        cmd.current_dir(self.repo.path())
            .args(["review", "--json", "--skill", "code-review", "-c"])
            .arg(self.cfg.path().join("warden.toml"))
            .env(KEY_VAR, "sk-fleet-test")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("WARDEN_CACHE_DIR", fresh_cache_dir())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for v in [
            "CI",
            "GITHUB_STEP_SUMMARY",
            "NO_COLOR",
            "WARDEN_REDIS_URL",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
        ] {
            cmd.env_remove(v);
        }
        cmd
    }

    /// Runs one review: exit code, report, stderr.
    fn review(&self) -> (i32, serde_json::Value, String) {
        finish(self.command().spawn().unwrap())
    }
}

/// Waits for a started review: exit code, report, stderr.
fn finish(child: std::process::Child) -> (i32, serde_json::Value, String) {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (out.status.code().unwrap_or(-1), v, stderr)
}

/// (status, route) of every unit.
fn statuses(v: &serde_json::Value) -> Vec<(String, String)> {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["status"].as_str().unwrap().to_string(),
                u["route"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn fleet_warnings(stderr: &str) -> usize {
    stderr
        .lines()
        .filter(|l| l.contains("warning:") && l.contains("fleet:"))
        .count()
}

#[test]
fn after_one_review_opens_a_hanging_primary_three_later_reviews_send_it_nothing() {
    let redis = RedisServer::start();
    let run = FleetRun::new(4);
    run.fake.script(
        "primary",
        vec![crate::support::fake_provider::Behavior::Hang],
    );
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

mod shared_breakers {
    use super::*;
    use warden::config::{BreakerSettings, Execution};
    use warden::engine::Breakers;
    use warden::engine::breaker::{Admission, BreakerState};
    use warden::fleet::Upstream;
    use warden::fleet::breakers::FleetBreakers;
    use warden::provider::Outcome;

    fn exec(open_for: Duration, probes: u32) -> Execution {
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
    async fn two(
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

    fn now() -> tokio::time::Instant {
        tokio::time::Instant::now()
    }

    #[test]
    fn one_process_opens_the_upstream_for_all_and_probes_are_fleet_wide() {
        let redis = RedisServer::start();
        runtime().block_on(async {
            let e = exec(Duration::from_millis(400), 1);
            let (a, b, seen) = two(&redis, "open", &e).await;
            assert_eq!(
                a.record_async(0, now(), Outcome::Timeout, false).await,
                None
            );
            let t = a
                .record_async(0, now(), Outcome::Timeout, false)
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
            let (adm, t) = b.admit_async(0, now()).await;
            assert_eq!(adm, Admission::No);
            assert_eq!(t.unwrap().to, BreakerState::Open);
            assert!(!b.would_admit(0, now()) && b.reopens_at(0).is_some());
            // Another upstream is not affected.
            assert_eq!(b.admit_async(1, now()).await.0, Admission::Yes);
            // After openFor one probe goes, from one process only.
            tokio::time::sleep(Duration::from_millis(450)).await;
            assert_eq!(b.admit_async(0, now()).await.0, Admission::Probe);
            assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
            assert_eq!(b.admit_async(0, now()).await.0, Admission::No);
            // A failed probe re-opens it for twice as long, for both.
            let t = b
                .record_async(0, now(), Outcome::Unavailable, true)
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
            assert_eq!(a.admit_async(0, now()).await.0, Admission::Probe);
            assert_eq!(
                a.record_async(0, now(), Outcome::Cancelled, true).await,
                None
            );
            assert_eq!(b.admit_async(0, now()).await.0, Admission::Probe);
            let t = b.record_async(0, now(), Outcome::Ok, true).await.unwrap();
            assert_eq!(t.to, BreakerState::Closed);
            let (adm, t) = a.admit_async(0, now()).await;
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
                .record_async(1, now(), Outcome::InvalidModel, false)
                .await
                .unwrap();
            assert_eq!(t.to, BreakerState::ForcedOpen);
            tokio::time::sleep(Duration::from_millis(300)).await;
            let (adm, t) = b.admit_async(1, now()).await;
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
            a.record_async(0, now(), Outcome::Timeout, false).await;
            redis.kill();
            // The local breaker saw both outcomes: it opens on its own.
            let t = a
                .record_async(0, now(), Outcome::Timeout, false)
                .await
                .unwrap();
            assert_eq!(t.to, BreakerState::Open);
            assert_eq!(a.admit_async(0, now()).await.0, Admission::No);
            assert_eq!(a.admit_async(1, now()).await.0, Admission::Yes);
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 1, "{seen:?}");
        });
    }
}

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
    use warden::fleet::Upstream;
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
    let up = Upstream {
        provider: "openai".into(),
        host: run.fake.base_url().split('/').nth(2).unwrap().to_string(),
        model: "primary".into(),
    };
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

mod faults {
    use super::*;
    use crate::support::fake_provider::{Behavior, finding, findings_answer};

    /// The primary answers every unit with one high finding after `delay`.
    fn answering(run: &FleetRun, delay: u64) {
        let answer = Behavior::Answer(findings_answer(serde_json::json!([finding(
            11,
            "high",
            "Off-by-one in the loop"
        )])));
        let b = Behavior::DelayHeaders(Duration::from_millis(delay), Box::new(answer));
        run.fake.script("primary", vec![b]);
    }

    /// What must not change: exit code, each unit's status and route, the findings.
    fn outcome(code: i32, v: &serde_json::Value) -> (i32, Vec<(String, String)>, usize, String) {
        (
            code,
            statuses(v),
            v["findings"].as_array().unwrap().len(),
            v["outcome"].to_string(),
        )
    }

    /// The review without `[fleet]`: what every fault must leave unchanged.
    fn baseline(run: &FleetRun, route_extra: &str) -> (i32, Vec<(String, String)>, usize, String) {
        run.config(None, &[], route_extra);
        let (code, v, err) = run.review();
        assert_eq!(fleet_warnings(&err), 0);
        let o = outcome(code, &v);
        assert_eq!(o.0, 1, "high findings fail the review: {err}");
        o
    }

    fn one_warning(err: &str) {
        assert_eq!(fleet_warnings(err), 1, "{err}");
        assert!(err.contains("not used for the rest of this run"), "{err}");
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
}
