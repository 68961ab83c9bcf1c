//! The trust boundary at the provider: a key goes only to the configured origin (no
//! redirect is followed), is redacted from every output even when a provider echoes a
//! long one back, and TLS works as companies run it (private CAs, SSL_CERT_FILE,
//! proxies) without ever skipping verification.

use crate::support::fake_provider::{Behavior, FakeProvider};
use crate::support::review::*;
use crate::support::{assert_exit, stderr_of, stdout_of};
use serde_json::json;

// ---- issue 10, item 2: keys never leave for another origin --------------------------

#[test]
fn a_307_to_another_port_is_not_followed_and_that_server_gets_no_request_and_no_key() {
    let fake = FakeProvider::start();
    let elsewhere = FakeProvider::start();
    let review = Review::new(1);
    for (provider, stream) in EVERY_WIRE {
        let label = format!("{provider} stream={stream}");
        let model = format!("moved-{provider}-{stream}");
        let path = if provider == "anthropic" {
            "messages"
        } else {
            "chat/completions"
        };
        let location = format!("{}/{path}", elsewhere.base_url());
        fake.script(
            &model,
            vec![Behavior::status_with(307, &[("location", &location)], "")],
        );
        let (code, v, stderr) = review.one_route(&model, provider, fake.base_url(), stream);
        assert_eq!(code, 3, "{label}: {stderr}");
        let a = lone_bad_response(&v, &label);
        assert_eq!(a["httpStatus"], 307, "{label}");
        let reason = a["reason"].as_str().unwrap();
        assert!(
            reason.contains(&location) && reason.contains("redirect"),
            "{label}: {reason}"
        );
        let sent = fake.requests_for(&model);
        assert_eq!(sent.len(), 1, "{label}");
        assert!(
            sent[0].header("authorization").is_some() || sent[0].header("x-api-key").is_some(),
            "{label}: the configured origin got the key"
        );
        assert!(
            elsewhere.requests().is_empty(),
            "{label}: the redirect target got {:?}",
            elsewhere.requests()
        );
    }
}

// ---- issue 10, item 3: redaction that holds for long keys ----------------------------

/// A 164-character key shaped like an OpenAI project key.
fn long_key() -> String {
    let mut k = String::from("sk-proj-");
    let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while k.len() < 164 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        k.push(char::from(alphabet[(x % 64) as usize]));
    }
    k
}

/// Every 16-character piece of `key` that appears in `text`.
fn key_pieces_in(key: &str, text: &str) -> Vec<String> {
    (0..=key.len() - 16)
        .map(|i| &key[i..i + 16])
        .filter(|p| text.contains(p))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_long_key_echoed_by_a_provider_leaves_no_16_character_piece_in_any_output() {
    let key = long_key();
    assert_eq!(key.len(), 164);
    let echo =
        format!("Incorrect API key provided: {key}. You can find your API key at the dashboard.");
    let fake = FakeProvider::start();
    // The primary echoes the key in a 401's message and its request id, the fallback
    // inside a streamed error.
    fake.script(
        "primary",
        vec![Behavior::status_with(
            401,
            &[("x-request-id", &format!("req-{key}"))],
            &json!({"error": {"message": echo, "type": "invalid_request_error"}}).to_string(),
        )],
    );
    fake.script("fallback", vec![Behavior::MidStreamErrorWith(echo.clone())]);
    let review = Review::new(2);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
        &[
            route_cfg("primary", "openai", fake.base_url(), true),
            route_cfg("fallback", "anthropic", fake.base_url(), true),
        ],
    );
    let dir = review.cfg.path();
    let summary = dir.join("summary.md");
    let trace = dir.join("trace.jsonl");
    let sarif = dir.join("out.sarif");
    let runs: Vec<Vec<String>> = vec![
        vec!["--color".into(), "never".into()],
        vec!["-v".into(), "--color".into(), "always".into()],
        vec!["--json".into(), "-v".into()],
        vec![
            "--format".into(),
            "sarif".into(),
            "-o".into(),
            sarif.display().to_string(),
        ],
        vec!["--format".into(), "github".into(), "-v".into()],
        vec![
            "--json".into(),
            "--trace".into(),
            trace.display().to_string(),
        ],
    ];
    let mut outputs = 0;
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = review
            .command(&args)
            .env(KEY_VAR, &key)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(!text.contains("panicked"), "{text}");
            assert_eq!(
                key_pieces_in(&key, &text),
                Vec::<String>::new(),
                "{args:?} {what}: {text}"
            );
            outputs += 1;
        }
    }
    for file in [&summary, &trace, &sarif] {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.len() > 100, "{} was written", file.display());
        assert_eq!(
            key_pieces_in(&key, &text),
            Vec::<String>::new(),
            "{}: {text}",
            file.display()
        );
        outputs += 1;
    }
    assert_eq!(outputs, 2 * runs.len() + 3);
    // The outputs still say what happened, with the key's place marked.
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.contains("[redacted]"), "{text}");
    // The key did go where it belongs: to the configured origin, in its header.
    let sent = fake.requests();
    assert!(
        sent.iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {key}")))
    );
    assert!(
        sent.iter()
            .any(|r| r.header("x-api-key") == Some(key.as_str()))
    );
}

// ---- issue 10, item 7: TLS as companies run it ----------------------------------------

use crate::support::tls_ca::TestCa;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

#[test]
fn a_private_ca_is_trusted_through_ca_cert_ssl_cert_file_or_ssl_cert_dir_and_nothing_else() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let gateway = FakeProvider::start_tls(ca.server.clone());
    let plain = FakeProvider::start();
    let review = Review::new(2);
    let dir = review.cfg.path();
    std::fs::write(dir.join("ca.pem"), &ca.ca_pem).unwrap();
    let certs = dir.join("certs");
    std::fs::create_dir(&certs).unwrap();
    std::fs::write(certs.join("corp-ca.pem"), &ca.ca_pem).unwrap();
    let exec = [("reviewBudget", "20s"), ("hunkBudget", "10s")];

    // Not trusted: the certificate failure is the attempt's outcome, with what to set; no
    // request reaches the gateway, the route is not retried and is forced open, and the
    // other unit fails over to the plain route.
    review.config(
        &exec,
        &[
            route_cfg("corp", "openai", gateway.base_url(), true),
            route_cfg("plain", "anthropic", plain.base_url(), true),
        ],
    );
    let (code, v, stderr, _) = review.json(&[]);
    assert_eq!(code, 3, "{stderr}");
    let on_corp: Vec<_> = attempts(&v)
        .into_iter()
        .filter(|a| a["route"] == "corp")
        .collect();
    assert_eq!(on_corp.len(), 1, "{v}");
    assert_eq!(on_corp[0]["outcome"], "auth", "{v}");
    let reason = on_corp[0]["reason"].as_str().unwrap();
    for needle in ["certificate", "not trusted", "caCert", "SSL_CERT_FILE"] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    let mut st: Vec<_> = units(&v)
        .iter()
        .map(|u| u["status"].as_str().unwrap())
        .collect();
    st.sort();
    assert_eq!(st, ["failed", "reviewed"], "{v}");
    assert_eq!(
        v["routes"]["corp"]["breaker"]["state"], "forced_open",
        "{v}"
    );
    assert!(
        gateway.requests().is_empty(),
        "a request passed an untrusted certificate"
    );

    // Trusted through the route's caCert (relative to the config file), for both protocols.
    for provider in ["openai", "anthropic"] {
        let mut corp = route_cfg("corp", provider, gateway.base_url(), true);
        corp.extra = "caCert = \"ca.pem\"";
        review.config(&exec, &[corp]);
        let (code, v, stderr, _) = review.json(&[]);
        assert_eq!(code, 0, "{provider}: {stderr}");
        assert!(units(&v).iter().all(|u| u["status"] == "reviewed"), "{v}");
    }
    // Trusted through SSL_CERT_FILE, then SSL_CERT_DIR.
    review.config(
        &exec,
        &[route_cfg("corp", "openai", gateway.base_url(), false)],
    );
    for (var, value) in [
        ("SSL_CERT_FILE", dir.join("ca.pem")),
        ("SSL_CERT_DIR", certs.clone()),
    ] {
        let out = review
            .command(&["--json"])
            .env(var, &value)
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{var}: {stderr}");
    }
    let sent = gateway.requests();
    assert_eq!(
        sent.len(),
        2 * 2 + 2 * 2,
        "two units in each of four trusted reviews"
    );
    assert!(
        sent.iter()
            .all(|r| r.header("authorization").is_some() || r.header("x-api-key").is_some())
    );
}

#[test]
fn a_ca_cert_that_cannot_be_used_is_a_config_error_naming_the_route_and_the_key() {
    let fake = FakeProvider::start();
    let review = Review::new(1);
    let dir = review.cfg.path();
    std::fs::write(dir.join("notes.txt"), "not a certificate\n").unwrap();
    std::fs::write(
        dir.join("broken.pem"),
        "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    for (file, why) in [
        ("missing.pem", "cannot read"),
        ("notes.txt", "no certificate"),
        ("broken.pem", "cannot be a trust anchor"),
    ] {
        let mut corp = route_cfg("corp", "openai", fake.base_url(), true);
        let line = format!("caCert = \"{file}\"");
        corp.extra = &line;
        review.config(&[], &[corp]);
        let out = review.command(&["--json"]).output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        for needle in ["warden.toml:", "route `corp`", "caCert", file, why] {
            assert!(stderr.contains(needle), "{file}: {needle}: {stderr}");
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(fake.requests().is_empty());
    // A broken SSL_CERT_FILE is an error too, not a silent fall back to built-in roots.
    let ca = TestCa::new(&["127.0.0.1"]);
    let gateway = FakeProvider::start_tls(ca.server.clone());
    review.config(
        &[],
        &[route_cfg("corp", "openai", gateway.base_url(), true)],
    );
    let out = review
        .command(&["--json"])
        .env("SSL_CERT_FILE", dir.join("missing.pem"))
        .output()
        .unwrap();
    let stderr = assert_exit(&out, 2);
    assert!(
        stderr.contains("SSL_CERT_FILE") && stderr.contains("missing.pem"),
        "{stderr}"
    );
}

/// A CONNECT proxy on 127.0.0.1 that tunnels every connection to `to` and records each
/// request line it was sent.
fn connect_proxy(to: std::net::SocketAddr) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                log.lock()
                    .unwrap()
                    .push(head.lines().next().unwrap_or("").to_string());
                let Ok(upstream) = std::net::TcpStream::connect(to) else {
                    return;
                };
                let _ = client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n");
                let (mut c2, mut u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                let (mut c1, mut u1) = (client, upstream);
                let up = std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c1, &mut u1);
                    let _ = u1.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut u2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Write);
                let _ = up.join();
            });
        }
    });
    (url, seen)
}

#[test]
fn https_proxy_tunnels_to_a_gateway_behind_a_private_ca_with_its_name_verified() {
    let ca = TestCa::new(&["gateway.corp.test"]);
    let gateway = FakeProvider::start_tls(ca.server.clone());
    let (proxy, seen) = connect_proxy(gateway.addr());
    let review = Review::new(1);
    std::fs::write(review.cfg.path().join("ca.pem"), &ca.ca_pem).unwrap();
    // Not on this machine by name, so the proxy carries it; the name is what the
    // certificate is checked against.
    let base = format!("https://gateway.corp.test:{}/v1", gateway.addr().port());
    let mut corp = route_cfg("corp", "anthropic", base, true);
    corp.extra = "caCert = \"ca.pem\"";
    review.config(&[("reviewBudget", "20s"), ("hunkBudget", "10s")], &[corp]);
    let out = review
        .command(&["--json"])
        .env("HTTPS_PROXY", &proxy)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let connects = seen.lock().unwrap().clone();
    assert!(!connects.is_empty());
    assert!(
        connects.iter().all(|l| l.starts_with(&format!(
            "CONNECT gateway.corp.test:{} ",
            gateway.addr().port()
        ))),
        "{connects:?}"
    );
    let sent = gateway.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].header("x-api-key"), Some(KEY));
}

#[test]
fn in_ci_ca_cert_is_read_from_the_trusted_commit_not_from_the_change() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let gateway = FakeProvider::start_tls(ca.server.clone());
    let repo = crate::support::Repo::new();
    repo.config(&format!(
        "version = 1\n[[routes]]\nname = \"corp\"\nprovider = \"openai\"\nmodel = \"m\"\nbaseUrl = \"{}\"\napiKeyEnv = \"{KEY_VAR}\"\ncaCert = \"certs/ca.pem\"\n",
        gateway.base_url()
    ));
    repo.write("certs/ca.pem", &ca.ca_pem);
    repo.write("src/a.rs", crate::support::source_lines(10, "a"));
    repo.commit_all("base");
    // The change swaps the CA file (here for junk) and edits code.
    repo.write(
        "certs/ca.pem",
        "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
    );
    repo.write("src/a.rs", crate::support::source_lines(12, "a"));
    let run = |ci: bool| {
        let mut cmd = repo.warden(&["review", "--json", "--skill", "code-review"]);
        cmd.env(KEY_VAR, KEY)
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output().unwrap()
    };
    // In CI the config and the CA come from the base commit: the review goes through.
    let out = run(true);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(units(&v).iter().all(|u| u["status"] == "reviewed"), "{v}");
    assert_eq!(gateway.requests().len(), units(&v).len());
    // Locally the working tree is read, so the swapped file is what is checked.
    let out = run(false);
    let stderr = assert_exit(&out, 2);
    assert!(
        stderr.contains("caCert `certs/ca.pem`") && stderr.contains("route `corp`"),
        "{stderr}"
    );
}

// ---- issue 20, point 4: URLs decided once, from the parsed URL ------------------------

/// A plain HTTP proxy on 127.0.0.1 that records the request line of every request it is
/// sent and answers 502: whether a request went through it, and what it asked for.
fn recording_proxy() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                if client.read(&mut byte).unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            log.lock()
                .unwrap()
                .push(head.lines().next().unwrap_or("").to_string());
            let _ = client.write_all(
                b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (url, seen)
}

fn with_proxy(cmd: &mut std::process::Command, proxy: &str) {
    for var in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"] {
        cmd.env(var, proxy);
    }
}

/// A one-unit review (5 s budgets) over one `openai` route `name` at `base`, with every
/// proxy variable set to `proxy`; what it answers does not matter, only where it went.
fn review_through(proxy: &str, name: &str, base: &str) {
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "5s"), ("hunkBudget", "5s")],
        &[route_cfg(name, "openai", base.to_string(), false)],
    );
    let mut cmd = review.command(&["--json"]);
    with_proxy(&mut cmd, proxy);
    cmd.output().unwrap();
}

#[test]
fn loopback_spelled_any_way_never_goes_through_a_proxy_and_sends_one_authorization_header() {
    let fake = FakeProvider::start();
    let (proxy, seen) = recording_proxy();
    let port = fake.addr().port();
    for host in ["127.1", "LOCALHOST", "127.0.0.1"] {
        let review = Review::new(1);
        let base = format!("http://{host}:{port}/v1");
        let model = format!("m-{host}");
        review.config(
            &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
            &[route_cfg(&model, "openai", base, false)],
        );
        let mut cmd = review.command(&["--json"]);
        with_proxy(&mut cmd, &proxy);
        let out = cmd.output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(0), "{host}: {stderr}");
        assert!(seen.lock().unwrap().is_empty(), "{host}: {:?}", seen.lock());
        let sent = fake.requests_for(&model);
        assert_eq!(sent.len(), 1, "{host}");
        let auth: Vec<_> = sent[0]
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .collect();
        assert_eq!(auth.len(), 1, "{host}: {auth:?}");
        assert_eq!(auth[0].1, format!("Bearer {KEY}"), "{host}");
    }
    // `localhost.` does not resolve here, but it is loopback: it fails on its own, never
    // through the proxy.
    review_through(&proxy, "dot", &format!("http://localhost.:{port}/v1"));
    assert!(seen.lock().unwrap().is_empty(), "{:?}", seen.lock());
    // The control: a name that is not this machine does go through the proxy, so the
    // recorder above would have seen the others.
    review_through(
        &proxy,
        "far",
        &format!("http://gateway.corp.test:{port}/v1"),
    );
    let lines = seen.lock().unwrap().clone();
    assert!(
        !lines.is_empty() && lines[0].contains("gateway.corp.test"),
        "{lines:?}"
    );
}

#[test]
fn a_base_url_with_userinfo_or_a_query_is_refused_at_load_without_echoing_it() {
    let fake = FakeProvider::start();
    let base = fake.base_url();
    let with_user = base.replace("http://", "http://alice:pw-canary-77@");
    let with_query = format!("{base}?key=query-canary-88");
    for (url, secret) in [
        (with_user.as_str(), "pw-canary-77"),
        (with_query.as_str(), "query-canary-88"),
    ] {
        let review = Review::new(1);
        review.config(&[], &[route_cfg("gw", "openai", url.to_string(), false)]);
        let out = review.command(&["--json"]).output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(
            stderr.contains("route `gw`") && stderr.contains("baseUrl"),
            "{url}: {stderr}"
        );
        assert!(stderr.contains("warden.toml:"), "{url}: {stderr}");
        assert!(!stderr.contains(secret), "{url}: {stderr}");
        assert!(!stdout_of(&out).contains(secret), "{url}");
        assert!(fake.requests().is_empty(), "{url}");
    }
}
