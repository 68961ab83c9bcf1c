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
