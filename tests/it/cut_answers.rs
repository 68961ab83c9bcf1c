//! Issue 27, items 1, 2, 8 and 9, against the fake provider over real HTTP and the real
//! binary (docs/design.md §14, "An answer is complete only when the provider says it ended"):
//! an answer cut by the token cap is never a clean review, whatever it holds before the
//! cut; it keeps the findings complete before the cut and is retried once with twice the
//! output cap; the answer's own object is the last one, never an example or a nested
//! field; a 100,000-deep answer is refused at once; format drift keeps findings; a
//! dropped finding is named in every human output; bounced attempts say so.

use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::review::*;
use crate::support::{stderr_of, stdout_of};
use serde_json::{Value, json};

/// The finding every cut shape holds complete before the cut.
const KEPT: &str = r#"{"severity": "low", "confidence": "high", "title": "Kept before the cut", "description": "d", "line": 11}"#;

/// The cut shapes of issue 27: each ends where the token cap cut it.
fn cut_shapes() -> Vec<(&'static str, String)> {
    vec![
        (
            "a format example in prose first",
            format!(
                "I will answer in the format {{\"findings\": []}} as asked.\n```json\n{{\"findings\": [{KEPT}, {{\"severity\": \"high\", \"title\": \"Cut"
            ),
        ),
        (
            "a nested field holding an empty list",
            format!(
                "{{\"findings\": [{}, {{\"severity\": \"hi",
                KEPT.replace(
                    "\"line\": 11}",
                    "\"line\": 11, \"related\": {\"findings\": []}}"
                )
            ),
        ),
        (
            "cut mid-finding",
            format!("{{\"findings\": [{KEPT}, {{\"severity\": \"low\", \"title\": \"Half"),
        ),
        (
            "cut before the closing brace",
            format!("{{\"findings\": [{KEPT}]"),
        ),
        (
            "a complete object the provider still says the cap cut",
            format!("{{\"findings\": [{KEPT}]}}"),
        ),
    ]
}

/// A unit whose answer the cap cut under a forced `submit_findings`: failed, said cut,
/// with the finding complete before the cut kept, except from Anthropic's whole answer
/// (its cut call's input is an object, which keeps nothing). Returns what was kept.
#[track_caller]
fn assert_cut_not_clean(u: &Value, wire: (&str, bool), label: &str) -> &'static [&'static str] {
    assert_eq!(u["status"], "failed", "{label}: {u}");
    assert_eq!(u["answerCut"], true, "{label}: {u}");
    let kept: &[&str] = match wire {
        ("anthropic", false) => &[],
        _ => &["Kept before the cut"],
    };
    assert_eq!(kept_titles(u), kept, "{label}: {u}");
    let reason = u["reason"].as_str().unwrap();
    assert!(
        reason.contains("cut at the output cap"),
        "{label}: {reason}"
    );
    kept
}

fn kept_titles(unit: &Value) -> Vec<&str> {
    unit["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect()
}

#[test]
fn cut_shapes_end_not_clean_in_both_protocols_streamed_and_not() {
    let fake = FakeProvider::start();
    for (provider, stream) in EVERY_WIRE {
        for (shape, text) in cut_shapes() {
            let label = format!("{shape} ({provider}, stream={stream})");
            let model = format!("cut-{provider}-{stream}");
            fake.script(&model, vec![Behavior::Cut(text)]);
            let review = Review::new(1);
            let (code, v, stderr) = review.one_route(&model, provider, fake.base_url(), stream);
            let u = &units(&v)[0];
            assert_eq!(
                code, 3,
                "{label}: a cut is not a clean review: {stderr}\n{u}"
            );
            assert_ne!(v["outcome"], "complete", "{label}");
            // The loop skill's single shot forces `submit_findings`.
            let kept = assert_cut_not_clean(u, (provider, stream), &label);
            // Retried once (twice the cap), and the retry was cut too.
            let tried = u["attempts"].as_array().unwrap();
            assert_eq!(tried.len(), 2, "{label}: {u}");
            for a in tried {
                assert_eq!(a["outcome"], "bad_response", "{label}: {a}");
            }
            assert_eq!(
                v["findings"].as_array().unwrap().len(),
                kept.len(),
                "{label}"
            );
        }
    }
}

fn max_tokens(body: &Value) -> u64 {
    body["max_tokens"]
        .as_u64()
        .or_else(|| body["max_completion_tokens"].as_u64())
        .unwrap_or_else(|| panic!("no max tokens field in {body}"))
}

#[test]
fn a_cut_is_retried_once_with_twice_the_output_cap() {
    let fake = FakeProvider::start();
    let whole = findings_answer(json!([
        {"severity": "low", "title": "Found by the retry", "line": 12}
    ]));
    for (provider, stream) in EVERY_WIRE {
        let label = format!("{provider}, stream={stream}");
        let model = format!("retry-{provider}-{stream}");
        let cut = format!("{{\"findings\": [{KEPT}, {{\"sev");
        fake.script(
            &model,
            vec![Behavior::Cut(cut), Behavior::Answer(whole.clone())],
        );
        let review = Review::new(1);
        let (code, v, stderr) = review.one_route(&model, provider, fake.base_url(), stream);
        let u = &units(&v)[0];
        assert_eq!(code, 0, "{label}: {stderr}\n{u}");
        assert_eq!(u["status"], "reviewed", "{label}: {u}");
        // The finding of the cut answer survives the retry's complete answer.
        let mut titles = kept_titles(u);
        titles.sort();
        let want: &[&str] = match (provider, stream) {
            // A cut `submit_findings` call in a whole Anthropic answer keeps nothing.
            ("anthropic", false) => &["Found by the retry"],
            _ => &["Found by the retry", "Kept before the cut"],
        };
        assert_eq!(titles, want, "{label}");
        let sent: Vec<u64> = fake
            .requests_for(&model)
            .iter()
            .map(|r| max_tokens(&r.body))
            .collect();
        assert_eq!(sent, [4096, 8192], "{label}: twice the cap on the retry");
    }
}

#[test]
fn the_retry_stops_at_the_routes_ceiling_and_a_cut_at_the_ceiling_is_not_retried() {
    let fake = FakeProvider::start();
    let cut = format!("{{\"findings\": [{KEPT}, {{\"sev");
    for (ceiling, want) in [("6000", vec![4096, 6000]), ("4096", vec![4096])] {
        let model = format!("ceiling-{ceiling}");
        fake.script(&model, vec![Behavior::Cut(cut.clone())]);
        let review = Review::new(1);
        let extra = format!("maxTokensCeiling = {ceiling}");
        let mut route = route_cfg(&model, "openai", fake.base_url(), true);
        route.extra = &extra;
        review.config(&[("reviewBudget", "20s"), ("hunkBudget", "10s")], &[route]);
        let (code, v, stderr, _) = review.json(&[]);
        assert_eq!(code, 3, "{stderr}");
        let sent: Vec<u64> = fake
            .requests_for(&model)
            .iter()
            .map(|r| max_tokens(&r.body))
            .collect();
        assert_eq!(sent, want, "ceiling {ceiling}");
        let u = &units(&v)[0];
        assert_eq!(u["status"], "failed", "{u}");
        assert_eq!(kept_titles(u), ["Kept before the cut"]);
        if ceiling == "4096" {
            let reason = u["reason"].as_str().unwrap();
            assert!(reason.contains("maxTokensCeiling"), "{reason}");
        }
    }
}

#[test]
fn a_cut_with_less_than_half_the_hunk_budget_left_is_not_retried() {
    let fake = FakeProvider::start();
    let cut = format!("{{\"findings\": [{KEPT}, {{\"sev");
    fake.script(
        "slow-cut",
        vec![Behavior::DelayHeaders(
            std::time::Duration::from_millis(1300),
            Box::new(Behavior::Cut(cut)),
        )],
    );
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "2s")],
        &[route_cfg("slow-cut", "openai", fake.base_url(), false)],
    );
    let (code, v, stderr, _) = review.json(&[]);
    assert_eq!(code, 3, "{stderr}");
    let u = &units(&v)[0];
    assert_eq!(u["attempts"].as_array().unwrap().len(), 1, "{u}");
    let reason = u["reason"].as_str().unwrap();
    assert!(
        reason.contains("less than half the hunk budget"),
        "{reason}"
    );
    assert_eq!(kept_titles(u), ["Kept before the cut"]);
}

/// An answer that says it ended (`stop`) but whose findings object is the last one, with
/// a format example before it and one inside a finding: the answer's own list is read.
#[test]
fn the_answers_own_object_is_read_not_an_example_or_a_nested_field() {
    let fake = FakeProvider::start();
    let answer = format!(
        "The format is {{\"findings\": []}}.\n```json\n{{\"findings\": [{}]}}\n```",
        KEPT.replace(
            "\"line\": 11}",
            "\"line\": 11, \"see\": {\"findings\": []}}"
        )
    );
    for (provider, stream) in EVERY_WIRE {
        let model = format!("own-{provider}-{stream}");
        fake.script(&model, vec![Behavior::Answer(answer.clone())]);
        let (code, v, stderr) = Review::new(1).one_route(&model, provider, fake.base_url(), stream);
        let u = &units(&v)[0];
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(u["status"], "reviewed", "{u}");
        assert_eq!(
            kept_titles(u),
            ["Kept before the cut"],
            "{provider} {stream}"
        );
    }
}

// ---- item 8: format drift keeps findings; a dropped one is named everywhere ----------

#[test]
fn format_drift_keeps_findings_and_a_dropped_one_is_named_in_every_human_output() {
    let fake = FakeProvider::start();
    // `line: 11.0`, `severity: "major"`, `"error"`, `"12"`, trailing commas: kept. A
    // severity no model should write: dropped, and named.
    let answer = r#"```json
{"findings": [
  {"severity": "major", "confidence": 0.9, "title": "Kept float line", "line": 11.0},
  {"severity": "Error", "title": "Kept text line", "line": "12",},
  {"severity": "urgent", "title": "Dropped severity", "line": 11},
],}
```"#;
    fake.script("drift", vec![Behavior::Answer(answer.into())]);
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
        &[route_cfg("drift", "openai", fake.base_url(), true)],
    );
    let dir = review.cfg.path();
    let (md, sarif, summary) = (dir.join("r.md"), dir.join("r.sarif"), dir.join("sum.md"));
    let out = review
        .command(&[
            "--fail-on",
            "off",
            "-o",
            &format!("markdown={}", md.display()),
            "-o",
            &format!("sarif={}", sarif.display()),
            "-o",
            &format!("json={}", dir.join("r.json").display()),
            // The step summary is written with the GitHub format.
            "-o",
            &format!("github={}", dir.join("r.gh").display()),
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let text = stdout_of(&out);
    let stderr = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{stderr}");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let u = &units(&v)[0];
    let mut titles = kept_titles(u);
    titles.sort();
    assert_eq!(titles, ["Kept float line", "Kept text line"], "{u}");
    let high: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "high")
        .collect();
    assert_eq!(high.len(), 2, "major and error are high: {v}");
    assert_eq!(u["findingsDropped"], 1, "{u}");
    let dropped = &v["droppedFindings"][0];
    assert_eq!(dropped["entry"], 3, "{v}");
    assert_eq!(dropped["title"], "Dropped severity");
    assert!(dropped["reason"].as_str().unwrap().contains("\"urgent\""));
    // Every human output counts and names it.
    let named = |label: &str, body: &str| {
        assert!(
            body.contains("1 finding from the models' answers dropped")
                || body.contains("finding dropped:"),
            "{label} does not count the drop:\n{body}"
        );
        assert!(
            body.contains("Dropped severity"),
            "{label} does not name it:\n{body}"
        );
        assert!(body.contains("urgent"), "{label} does not say why:\n{body}");
    };
    named("text", &text);
    named("markdown", &std::fs::read_to_string(&md).unwrap());
    named("step summary", &std::fs::read_to_string(&summary).unwrap());
    named(
        "GitHub annotations",
        &std::fs::read_to_string(dir.join("r.gh")).unwrap(),
    );
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    let note = notes
        .iter()
        .find(|n| n["descriptor"]["id"] == "warden/dropped-finding")
        .unwrap_or_else(|| panic!("no SARIF notification of the drop: {notes:?}"));
    named("SARIF", note["message"]["text"].as_str().unwrap());
}

// ---- item 2: a 100,000-deep answer ends bad_response at once ------------------------

/// The CPU time (user + system) of a child run to its end, from `wait4`.
fn child_cpu(mut cmd: std::process::Command) -> (i32, String, std::time::Duration) {
    let out_file = tempfile::NamedTempFile::new().unwrap();
    // Reaped by wait4 below, which also gives its CPU time.
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .stdout(out_file.reopen().unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, into structs we own.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as i32);
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec as u64)
            + std::time::Duration::from_micros(t.tv_usec as u64)
    };
    let code = libc::WEXITSTATUS(status);
    let stdout = std::fs::read_to_string(out_file.path()).unwrap();
    (code, stdout, tv(ru.ru_utime) + tv(ru.ru_stime))
}

#[test]
fn a_100k_deep_answer_ends_bad_response_within_a_tenth_of_a_second_of_cpu() {
    let _alone = crate::support::cpu_hungry();
    let fake = FakeProvider::start();
    let deep = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let shapes = [
        ("ordinary", findings_answer(json!([]))),
        ("top level", deep.clone()),
        ("in the list", format!("{{\"findings\": [{deep}]}}")),
        (
            "in a description",
            format!(
                "{{\"findings\": [{{\"severity\": \"low\", \"title\": \"t\", \"line\": 11, \"description\": {deep}}}]}}"
            ),
        ),
    ];
    let mut baseline = std::time::Duration::ZERO;
    for (label, answer) in shapes {
        let model = format!("deep-{}", label.replace(' ', "-"));
        fake.script(&model, vec![Behavior::Answer(answer)]);
        let review = Review::new(1);
        review.config(
            &[("reviewBudget", "4s"), ("hunkBudget", "4s")],
            &[route_cfg(&model, "openai", fake.base_url(), false)],
        );
        let (code, stdout, cpu) = child_cpu(review.command(&["--json"]));
        eprintln!("{label}: {cpu:?} of CPU for the whole run");
        let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        if label == "ordinary" {
            assert_eq!(code, 0, "{v}");
            baseline = cpu;
            continue;
        }
        assert_eq!(code, 3, "{label}: {v}");
        let a = lone_bad_response(&v, label);
        let reason = a["reason"].as_str().unwrap();
        assert!(
            reason.contains("deeper than 64 levels"),
            "{label}: {reason}"
        );
        // What the deep answer costs beyond an ordinary review of the same plan.
        assert!(
            cpu < baseline + std::time::Duration::from_millis(100),
            "{label}: {cpu:?} of CPU against {baseline:?} for an ordinary answer"
        );
    }
}

// ---- item 9: bounced attempts are marked ---------------------------------------------

#[test]
fn bounced_attempts_carry_backpressure_true_in_the_json_report() {
    let fake = FakeProvider::start();
    let bounce = Behavior::status_with(
        503,
        &[("retry-after", "0")],
        r#"{"error": {"message": "overloaded", "type": "overloaded_error"}}"#,
    );
    fake.script(
        "bounced",
        vec![
            bounce.clone(),
            bounce.clone(),
            bounce,
            Behavior::Answer(findings_answer(json!([]))),
        ],
    );
    let review = Review::new(1);
    review.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "10s")],
        &[route_cfg("bounced", "openai", fake.base_url(), true)],
    );
    let (code, v, stderr, _) = review.json(&[]);
    let u = &units(&v)[0];
    assert_eq!(code, 0, "{stderr}\n{u}");
    assert_eq!(u["status"], "reviewed", "{u}");
    let tried = u["attempts"].as_array().unwrap();
    let flags: Vec<&Value> = tried.iter().map(|a| &a["backpressure"]).collect();
    assert_eq!(flags, [true, true, true, false], "{u}");
    // Counted as warden counts: one attempt of the default maxAttempts = 2.
    let counted = tried.iter().filter(|a| a["backpressure"] != true).count();
    assert_eq!(counted, 1);
}

/// A loop's final turn forces `submit_findings`, and the real APIs answer a forced tool
/// with a call of it even when the token cap cuts it: the call's arguments end mid-object
/// (OpenAI `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"`). Every cut
/// shape that way is not clean, keeps the finding complete before the cut (streamed, or
/// OpenAI's arguments string; Anthropic's whole answer carries `input` as an object, which
/// a cut cannot leave parsable, so the fake sends an empty one), and is retried once.
#[test]
fn a_forced_submit_findings_cut_at_the_cap_is_not_clean_in_either_protocol() {
    use crate::support::fake_tools::call;
    let fake = FakeProvider::start();
    for (provider, stream) in EVERY_WIRE {
        for (i, (shape, text)) in cut_shapes().into_iter().enumerate() {
            let label = format!("{shape} ({provider}, stream={stream})");
            let model = format!("forced-{provider}-{stream}-{i}");
            let read = Behavior::ToolCalls(vec![call("read_file", json!({"path": "src/f0.rs"}))]);
            fake.script(
                &model,
                vec![read, Behavior::Cut(text.clone()), Behavior::Cut(text)],
            );
            let review = Review::new(1);
            let route = route_cfg(&model, provider, fake.base_url(), stream);
            review.config(&[("reviewBudget", "20s"), ("hunkBudget", "10s")], &[route]);
            let toml = std::fs::read_to_string(review.config_path()).unwrap();
            let toml = toml.replace(
                "[execution]\n",
                "[execution]\nmaxTurns = 2\nrequestTimeout = \"4s\"\n",
            );
            std::fs::write(review.config_path(), toml).unwrap();
            let (code, v, stderr, _) = review.json(&[]);
            let u = &units(&v)[0];
            assert_eq!(code, 3, "{label}: {stderr}\n{u}");
            assert_cut_not_clean(u, (provider, stream), &label);
            assert_eq!(u["toolLoop"]["toolCalls"], 1, "{label}: {u}");
            // The tool turn, the final turn and its one retry: both forced.
            let reqs = fake.requests_for(&model);
            assert_eq!(reqs.len(), 3, "{label}: {u}");
            for r in &reqs[1..] {
                let choice = r.body["tool_choice"].to_string();
                assert!(choice.contains("submit_findings"), "{label}: {choice}");
            }
        }
    }
}
