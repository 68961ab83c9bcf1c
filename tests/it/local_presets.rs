//! Issue 36 against fakes (docs/design.md §15): Ollama's and vLLM's windows are read from
//! small fakes of their endpoints (`POST /api/show`, `GET /v1/models`) and shown by
//! `warden plan`; a server that says it takes no tools (a 400 in Ollama's words) makes
//! the route review single-shot for the rest of the run, with one warning; the presets
//! send the bounded findings schema and ask for usage; no key is needed on loopback.
//! The real llama.cpp server is in `local_models.rs`.

use crate::support::Toml;
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::review::*;
use crate::support::{assert_exit, stdout_of};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};

/// A tiny HTTP server answering `path` with `body` (JSON) and anything else 404; it
/// records the request bodies it got, and serves until the test process ends.
fn endpoint(
    path: &'static str,
    body: Value,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut first = String::new();
            if r.read_line(&mut first).is_err() {
                continue;
            }
            let mut len = 0;
            loop {
                let mut h = String::new();
                if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut b = vec![0; len];
            let _ = r.read_exact(&mut b);
            log.lock()
                .unwrap()
                .push(format!("{} {}", first.trim(), String::from_utf8_lossy(&b)));
            let (status, text) = if first.split_whitespace().nth(1) == Some(path) {
                ("200 OK", body.to_string())
            } else {
                ("404 Not Found", "{\"error\":\"not found\"}".to_string())
            };
            let mut s = s;
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    (format!("http://127.0.0.1:{port}/v1"), seen)
}

fn plan(review: &Review, provider: &str, model: &str, base: &str) -> String {
    std::fs::write(
        review.config_path(),
        format!("version = 1\n[[routes]]\nname = \"local\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbaseUrl = \"{base}\"\n"),
    )
    .unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("warden"))
        .current_dir(review.repo.path())
        .args(["plan", "-c"])
        .arg(review.config_path())
        .env_remove("OLLAMA_API_KEY")
        .env_remove("VLLM_API_KEY")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    stdout_of(&out)
}

#[test]
fn ollama_and_vllm_say_their_window_and_plan_shows_it() {
    let review = Review::new(1);
    let (base, seen) = endpoint(
        "/api/show",
        json!({"parameters": "num_ctx 8192\nstop \"<|im_end|>\"",
               "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}}),
    );
    let text = plan(&review, "ollama", "qwen2.5-coder:7b", &base);
    assert!(
        text.contains("route `local` (ollama): slots not said, maxConcurrency 4 (configured), context window 8192 tokens (from the server), maxTokens 1024"),
        "{text}"
    );
    let asked = seen.lock().unwrap().clone();
    assert!(
        asked
            .iter()
            .any(|r| r.starts_with("POST /api/show") && r.contains("\"qwen2.5-coder:7b\"")),
        "{asked:?}"
    );
    let (base, _) = endpoint(
        "/v1/models",
        json!({"object": "list", "data": [{"id": "Qwen/Qwen2.5-Coder-7B-Instruct", "object": "model", "max_model_len": 2048}]}),
    );
    let text = plan(&review, "vllm", "Qwen/Qwen2.5-Coder-7B-Instruct", &base);
    assert!(
        text.contains("context window 2048 tokens (from the server), maxTokens 512"),
        "a quarter of the window at most: {text}"
    );
    // A server that is not there: the route stays as configured, and the plan says so.
    let text = plan(&review, "llamacpp", "m", "http://127.0.0.1:9/v1");
    assert!(
        text.contains("could not read the server's slots and window"),
        "{text}"
    );
}

fn tools_of(b: &Value) -> bool {
    b.get("tools").is_some()
}

#[test]
fn a_server_that_takes_no_tools_makes_the_route_single_shot_with_one_warning() {
    let fake = FakeProvider::start();
    let ollama_400 = r#"{"error":{"message":"gemma2:2b does not support tools","type":"api_error","param":null,"code":null}}"#;
    let found = findings_answer(json!([]));
    fake.script(
        "gemma2:2b",
        vec![
            Behavior::status_with(400, &[], ollama_400),
            Behavior::Answer(found),
        ],
    );
    let review = Review::new(3);
    std::fs::write(
        review.config_path(),
        Toml::new()
            .exec(&[
                ("reviewBudget", "10m"),
                ("hunkBudget", "60s"),
                ("requestTimeout", "5s"),
                ("tools", "true"),
            ])
            .route(
                "local",
                "ollama",
                &[
                    ("model", "gemma2:2b"),
                    ("baseUrl", &fake.base_url()),
                    ("maxConcurrency", "1"),
                    ("contextWindow", "32768"),
                ],
            )
            .build(),
    )
    .unwrap();
    let (code, v, stderr, _) = review.json(&["--fail-on", "off"]);
    assert_eq!(code, 0, "{stderr}\n{v}");
    for u in units(&v) {
        assert_eq!(u["status"], "reviewed", "{u}");
    }
    let reasons: Vec<&Value> = attempts(&v).iter().map(|a| &a["reason"]).collect();
    assert_eq!(
        stderr.matches("reviews single-shot").count(),
        1,
        "{stderr}\n{reasons:?}\n{:?}",
        fake.requests_for("gemma2:2b")
            .first()
            .map(|r| r.body.to_string())
    );
    let sent: Vec<Value> = fake
        .requests_for("gemma2:2b")
        .into_iter()
        .map(|r| r.body)
        .collect();
    // One request offered tools; the three reviews went single-shot, bounded schema and
    // all, with no key (loopback) and usage asked for.
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(tools_of(&sent[0]));
    for b in &sent[1..] {
        assert!(!tools_of(b), "{b}");
        let schema = &b["response_format"]["json_schema"]["schema"];
        assert_eq!(schema["properties"]["findings"]["maxItems"], 5, "{b}");
        assert_eq!(b["stream_options"]["include_usage"], true, "{b}");
        assert!(b["max_tokens"].as_u64().unwrap() <= 1024, "{b}");
    }
    for r in fake.requests_for("gemma2:2b") {
        assert_eq!(r.header("authorization"), None, "no key on loopback");
    }
}
