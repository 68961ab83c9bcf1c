//! Issue 36 against a REAL llama.cpp server with a real small model (SmolLM2-135M, see
//! `support/llama.rs` and docs/providers.md "Local models"): the `llamacpp` preset learns
//! the server's slots and window from `/props` (shown by `warden plan`), keeps one request
//! in flight on one slot, sends the bounded findings schema so the model's answers end,
//! reads usage, falls back to single-shot when the model ignores tools, splits on the
//! server's own context-size 400, and a cancelled request stops the server's generation.
//! The model's text is nonsense; every token is really generated, so these tests check
//! the protocol, the limits and the honesty of outcomes, never review quality.

use crate::support::llama::{Opts, Server};
use crate::support::review::*;
use serde_json::Value;

/// A `llamacpp` route at the server, with `extra` lines; the execution keys first.
fn config(review: &Review, server: &Server, exec: &str, extra: &str) {
    let text = format!(
        "version = 1\n[execution]\n{exec}\n[[routes]]\nname = \"local\"\nprovider = \"llamacpp\"\nmodel = \"smollm2\"\nbaseUrl = \"{}\"\n{extra}\n",
        server.base_url()
    );
    std::fs::write(review.config_path(), text).unwrap();
}

fn run(review: &Review, args: &[&str]) -> (i32, Value, String) {
    let (code, v, stderr, _) = review.json(args);
    (code, v, stderr)
}

fn statuses(v: &Value) -> Vec<String> {
    units(v)
        .iter()
        .map(|u| u["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_preset_learns_slots_and_window_keeps_one_in_flight_and_its_answers_end() {
    let server = Server::start(Opts::default());
    let review = Review::new(3);
    config(
        &review,
        &server,
        "reviewBudget = \"4m\"\nhunkBudget = \"2m\"",
        "",
    );
    // `warden plan` shows what the server said.
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("warden"))
        .current_dir(review.repo.path())
        .args(["plan", "-c"])
        .arg(review.config_path())
        .env_remove("LLAMA_API_KEY")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("route `local` (llamacpp): 1 slot, maxConcurrency 1 (from the server), context window 4096 tokens (from the server), maxTokens 1024"),
        "plan: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, v, stderr) = run(&review, &["--no-tools", "--fail-on", "off"]);
    assert_eq!(statuses(&v), ["reviewed"; 3], "{stderr}\n{v}");
    assert_eq!(code, 0, "{stderr}");
    let r = &v["routes"]["local"];
    assert_eq!(r["maxConcurrency"], 1, "one slot: {r}");
    assert_eq!(r["peakInFlight"], 1, "one request in flight: {r}");
    assert!(r["outputTokens"].as_u64().unwrap() > 0, "usage read: {r}");
    assert!(r["inputTokens"].as_u64().unwrap() > 0, "usage read: {r}");
    for a in attempts(&v) {
        assert_eq!(a["outcome"], "ok", "the bounded answer ended: {a}");
    }
}

#[test]
fn a_model_that_ignores_tools_makes_the_route_review_single_shot_with_one_warning() {
    let server = Server::start(Opts {
        tools_template: true,
        ..Opts::default()
    });
    let review = Review::new(3);
    config(
        &review,
        &server,
        // Budgets that leave room for turns (else the depth rule sheds them all).
        // A request with tools has no grammar to end it: up to maxTokens of text, which
        // takes a minute or more on a loaded CPU.
        "reviewBudget = \"20m\"\nhunkBudget = \"8m\"\nrequestTimeout = \"4m\"\ntools = true",
        "",
    );
    let (_, v, stderr) = run(&review, &["--fail-on", "off"]);
    assert_eq!(statuses(&v), ["reviewed"; 3], "{stderr}\n{v}");
    let warned = stderr.matches("reviews single-shot").count();
    let resent: Vec<&Value> = attempts(&v)
        .into_iter()
        .filter(|a| {
            a["reason"]
                .as_str()
                .unwrap()
                .contains("re-sent single-shot")
        })
        .collect();
    // The small model answers a request with tools in text: once, on the first unit
    // that asked; every later request goes out single-shot, so no unit wastes a turn.
    assert_eq!(resent.len(), 1, "{v}");
    assert_eq!(warned, 1, "one warning: {stderr}");
    for u in units(&v) {
        let tried = u["attempts"].as_array().unwrap();
        assert!(tried.len() <= 2, "no wasted turns: {u}");
    }
}

#[test]
fn the_servers_context_size_400_splits_the_unit_and_keeps_structured_output() {
    // 512 tokens of context, and a config that claims far more: the server's own 400
    // ("exceeds the available context size") is what warden learns the window from.
    let server = Server::start(Opts {
        ctx: 512,
        ..Opts::default()
    });
    let review = Review::new(1);
    let big: String = (0..120)
        .map(|i| format!("    let value_{i} = compute_something_long(input_{i}, {i});\n"))
        .collect();
    review
        .repo
        .write("src/f0.rs", format!("fn main() {{\n{big}}}\n"));
    config(
        &review,
        &server,
        "reviewBudget = \"4m\"\nhunkBudget = \"2m\"",
        "contextWindow = 32768\nmaxTokens = 128",
    );
    let (_, v, stderr) = run(&review, &["--no-tools", "--fail-on", "off"]);
    let all = attempts(&v);
    let too_long: Vec<&&Value> = all
        .iter()
        .filter(|a| {
            a["reason"]
                .as_str()
                .unwrap()
                .contains("available context size")
        })
        .collect();
    assert!(!too_long.is_empty(), "the server's 400 came: {v}");
    let u = &units(&v)[0];
    assert!(
        u["parts"].as_array().is_some_and(|p| p.len() >= 2) || units(&v).len() >= 2,
        "split: {u}"
    );
    assert!(
        !stderr.contains("refused a request parameter"),
        "response_format is not dropped for a window: {stderr}"
    );
}

#[test]
fn a_cancelled_request_stops_the_servers_generation() {
    let server = Server::start(Opts::default());
    let review = Review::new(1);
    // Text contract and a large cap: the model rambles until the budget cancels it.
    config(
        &review,
        &server,
        "reviewBudget = \"4s\"\nhunkBudget = \"4s\"\nrequestTimeout = \"4s\"",
        "structuredOutput = \"off\"\nmaxTokens = 3000",
    );
    let (_, v, _) = run(&review, &["--no-tools"]);
    let u = &units(&v)[0];
    assert_ne!(u["status"], "reviewed", "{u}");
    // The server notices the closed connection and stops: its slot goes idle, the task
    // cancelled (not finished at the 3000 tokens it was allowed, which would take minutes).
    // The wait is generous because the prompt is processed before the server looks again.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let slots = server.get("/slots");
        let busy = slots
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["is_processing"] == true);
        if !busy {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "the slot still generates 60 s after warden hung up: {slots}\n{}",
            server.log()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let log = server.log();
    assert!(
        log.contains("cancel task"),
        "the server was not told to stop (it finished on its own):\n{log}"
    );
    let generated: Vec<u64> = log
        .lines()
        .filter(|l| l.contains("stop processing: n_tokens = "))
        .filter_map(|l| {
            l.split("n_tokens = ")
                .nth(1)?
                .split(',')
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect();
    assert!(
        !generated.is_empty() && generated.iter().all(|&n| n < 3000),
        "the slot ran to its cap instead of stopping: {generated:?}\n{log}"
    );
}
