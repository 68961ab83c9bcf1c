//! Fleet mode against a real `redis-server` on loopback: the handle's bounds and its one
//! warning, the trust boundary and TLS here; shared breakers (`breakers.rs`), fleet permits
//! (`permits.rs`), Redis faults (`faults.rs`), a hostile Redis (`hostile.rs`) with the
//! real binary, and attacks on the local floor under the fleet's breakers (`half_open.rs`).

mod breakers;
mod faults;
mod half_open;
mod hostile;
mod pace;
mod permits;
mod windows;

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
    redis.stat("total_connections_received")
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
fn rediss_is_verified_against_the_system_roots_or_ssl_cert_file() {
    let ca = crate::support::tls_ca::TestCa::new(&["127.0.0.1"]);
    let redis = RedisServer::start_tls(&ca.leaf_pem, &ca.leaf_key_pem);
    let ca_file = redis.dir().join("ca.pem");
    std::fs::write(&ca_file, &ca.ca_pem).unwrap();
    let run = FleetRun::new(2);
    run.config(None, &[], "");
    // The fleet's URL from the environment, as a CI secret would give it.
    let review = |trust_ca: bool| {
        let mut cmd = run.command();
        cmd.env("WARDEN_REDIS_URL", redis.url());
        if trust_ca {
            cmd.env("SSL_CERT_FILE", &ca_file);
        } else {
            cmd.env_remove("SSL_CERT_FILE");
        }
        finish(cmd.spawn().unwrap())
    };
    // A private CA the process does not trust: one warning, a local review.
    let (code, v, err) = review(false);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fleet_warnings(&err), 1, "{err}");
    assert!(
        err.contains("cannot connect to redis rediss://127.0.0.1"),
        "{err}"
    );
    assert_eq!(statuses(&v).len(), 2);
    // Trusted through SSL_CERT_FILE: the fleet is used over TLS.
    let (code, _, err) = review(true);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fleet_warnings(&err), 0, "{err}");
    let keys = std::process::Command::new("redis-cli")
        .args(["--tls", "--cacert"])
        .arg(&ca_file)
        .args(["-h", "127.0.0.1", "-p", &redis.port().to_string(), "--scan"])
        .output()
        .unwrap();
    let keys = String::from_utf8_lossy(&keys.stdout);
    assert!(
        keys.contains("warden:brk:openai:"),
        "the breaker window is in redis: {keys}"
    );
}
