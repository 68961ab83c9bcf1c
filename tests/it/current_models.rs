//! Issue 28 against a fake that answers as today's providers do (docs/design.md §14): OpenAI's
//! reasoning families validate their parameters as OpenAI does, a 400 naming a
//! parameter is corrected once for the run, reasoning streamed before the answer is
//! progress, findings arrive through structured output in both protocols, and a provider
//! that refuses structured output still gets reviewed. The real binary, real HTTP.

use crate::support::fake_models::Dialect;
use crate::support::fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use crate::support::fake_tools::submit;
use crate::support::review::{KEY_VAR, Review, units};
use crate::support::{stderr_of, stdout_of};
use serde_json::{Value, json};
use std::time::Duration;

/// A config with `[execution]` lines as written, then one route per (name, provider,
/// stream, extra lines).
fn config(r: &Review, exec: &str, routes: &[(&str, &str, bool, &str)], base: &str) {
    let mut text =
        format!("version = 1\n[execution]\nreviewBudget = \"60s\"\nhunkBudget = \"30s\"\n{exec}\n");
    for (name, provider, stream, extra) in routes {
        text.push_str(&format!(
            "[[routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{name}\"\nbaseUrl = \"{base}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 1\nstream = {stream}\n{extra}\n"
        ));
    }
    std::fs::write(r.config_path(), text).unwrap();
}

fn reviewed(v: &Value) -> usize {
    units(v)
        .iter()
        .filter(|u| u["status"] == "reviewed")
        .count()
}

#[test]
fn reasoning_families_review_every_unit_streamed_and_not() {
    let fake = FakeProvider::start();
    let r = Review::new(4);
    for model in ["gpt-5.4", "o4-mini"] {
        for stream in [true, false] {
            config(
                &r,
                "maxAttempts = 1",
                &[(model, "openai", stream, "reasoningEffort = \"low\"")],
                &fake.base_url(),
            );
            let (code, v, stderr, _) = r.json(&[]);
            let n = units(&v).len();
            assert!(n >= 4, "{v}");
            assert_eq!(reviewed(&v), n, "{model} stream={stream}: {v}\n{stderr}");
            assert_eq!(code, 0, "{stderr}");
            assert!(!stderr.contains("refused a request parameter"), "{stderr}");
        }
        for req in fake.requests_for(model) {
            let b = &req.body;
            assert!(
                b.get("max_tokens").is_none() && b.get("temperature").is_none(),
                "{b}"
            );
            assert!(b["max_completion_tokens"].as_u64().is_some(), "{b}");
            assert_eq!(b["reasoning_effort"], "low");
        }
    }
}

#[test]
fn a_400_naming_a_parameter_is_corrected_once_and_says_so() {
    let fake = FakeProvider::start();
    fake.refuse_params(&["top_k", "response_format", "tools"]);
    let r = Review::new(3);
    for (name, provider, stream) in [("gpt-4o", "openai", true), ("claude", "anthropic", false)] {
        config(
            &r,
            "maxAttempts = 1",
            &[(name, provider, stream, "params = { top_k = 5 }")],
            &fake.base_url(),
        );
        let (code, v, stderr, _) = r.json(&[]);
        let n = units(&v).len();
        assert_eq!(reviewed(&v), n, "{name}: {v}\n{stderr}");
        assert_eq!(code, 0);
        // Each refused parameter was sent until the 400 named it, then never again.
        let reqs = fake.requests_for(name);
        let sent = |k: &str| reqs.iter().filter(|q| q.body.get(k).is_some()).count();
        assert_eq!(sent("top_k"), 1, "{name}");
        let structured = if provider == "openai" {
            "response_format"
        } else {
            "tools"
        };
        // The fake names one parameter per 400: top_k first, then the structured one.
        assert_eq!(sent(structured), 2, "{name}: refused once, then no more");
        assert_eq!(
            reqs.len(),
            n + 2,
            "{name}: one re-send per refused parameter"
        );
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("refused a request parameter"))
            .collect();
        assert_eq!(warnings.len(), 2, "{name}: once per parameter: {stderr}");
        assert!(warnings.iter().any(|w| w.contains("`top_k`")), "{stderr}");
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("`{structured}`"))),
            "{stderr}"
        );
    }
}

#[test]
fn reasoning_streamed_for_5s_is_progress_under_a_1s_idle_clock() {
    let fake = FakeProvider::start();
    let answer = findings_answer(json!([]));
    let r = Review::new(1);
    for (model, provider, dialect) in [
        ("deepseek-r1", "openai", Dialect::ReasoningContent),
        ("kimi-k2-thinking", "openrouter", Dialect::Reasoning),
        ("claude-thinking", "anthropic", Dialect::ReasoningContent),
    ] {
        fake.script(
            model,
            vec![Behavior::Reasoning {
                dialect,
                every: Duration::from_millis(200),
                count: 25,
                answer: answer.clone(),
            }],
        );
        config(
            &r,
            "maxAttempts = 1\nfirstTokenTimeout = \"1s\"\nidleTimeout = \"1s\"\nrequestTimeout = \"20s\"",
            &[(model, provider, true, "")],
            &fake.base_url(),
        );
        let (_, v, stderr, _) = r.json(&[]);
        assert_eq!(reviewed(&v), 1, "{model}: {v}\n{stderr}");
        let a = &units(&v)[0]["attempts"][0];
        let (ttft, content) = (
            a["ttftMs"].as_u64().unwrap(),
            a["firstContentMs"].as_u64().unwrap(),
        );
        assert!(ttft < 1000, "{model}: the first reasoning token: {a}");
        assert!(
            content >= 4800 && content > ttft,
            "{model}: the answer after 5 s: {a}"
        );
    }
}

#[test]
fn findings_arrive_through_structured_output_in_both_protocols() {
    let fake = FakeProvider::start();
    let r = Review::new(1);
    let line = 10;
    // OpenAI: the content is the schema's JSON; Anthropic: the forced submit_findings call.
    fake.script(
        "gpt-4.1",
        vec![Behavior::Answer(
            json!({"findings": [{"severity": "high", "confidence": "high", "title": "structured",
                "description": "d", "line": line, "endLine": null, "suggestion": null,
                "replacement": null, "skill": null}]})
            .to_string(),
        )],
    );
    fake.script(
        "claude-sonnet",
        vec![Behavior::ToolCalls(vec![submit(json!([finding(
            line,
            "high",
            "structured"
        )]))])],
    );
    for (model, provider) in [("gpt-4.1", "openai"), ("claude-sonnet", "anthropic")] {
        for stream in [true, false] {
            config(&r, "", &[(model, provider, stream, "")], &fake.base_url());
            let (_, v, stderr, _) = r.json(&[]);
            assert_eq!(reviewed(&v), 1, "{model} {stream}: {v}\n{stderr}");
            let titles: Vec<&str> = v["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["title"].as_str())
                .collect();
            assert_eq!(titles, ["structured"], "{model} {stream}: {v}");
        }
    }
    let schema = warden::findings_schema::schema();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let o = &fake.requests_for("gpt-4.1")[0].body["response_format"];
    assert_eq!(o["type"], "json_schema");
    assert_eq!(o["json_schema"]["strict"], true);
    assert_eq!(o["json_schema"]["schema"], schema);
    let a = &fake.requests_for("claude-sonnet")[0].body;
    assert_eq!(
        a["tool_choice"],
        json!({"type": "tool", "name": "submit_findings"})
    );
    assert_eq!(a["tools"][0]["input_schema"], schema);
    let good = json!({"findings": [{"severity": "low", "confidence": "low", "title": "t",
        "description": "d", "line": 3, "endLine": null, "suggestion": null, "replacement": null, "skill": null}]});
    assert!(validator.is_valid(&good));
    for bad in [
        json!({"findings": [{"severity": "low"}]}),
        json!({"findings": [], "extra": 1}),
        json!({"findings": [{"severity": "urgent", "confidence": "low", "title": "t", "description": "d",
            "line": 3, "endLine": null, "suggestion": null, "replacement": null, "skill": null}]}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

#[test]
fn a_provider_that_ignores_structured_output_is_read_by_the_text_contract() {
    let fake = FakeProvider::start();
    let r = Review::new(1);
    fake.default_behavior(Behavior::Answer(findings_answer(json!([finding(
        10, "low", "prose"
    )]))));
    for (provider, stream) in [("openai", true), ("anthropic", false), ("litellm", true)] {
        config(&r, "", &[("local", provider, stream, "")], &fake.base_url());
        let (_, v, stderr, _) = r.json(&[]);
        assert_eq!(reviewed(&v), 1, "{provider}: {v}\n{stderr}");
        assert_eq!(v["findings"][0]["title"], "prose");
    }
}

#[test]
fn cached_reads_of_20_units_show_in_the_route_table_json_and_cost() {
    let fake = FakeProvider::start();
    fake.report_cached(100);
    let r = Review::new(20);
    // Both APIs cache a prefix of at least 1024 tokens only, and the built-in skill's
    // system block is shorter (checked at the end): the repository's own code-review
    // skill, committed in the base, has the long instructions that make it cacheable.
    let rules: String = (0..60)
        .map(|i| {
            format!(
                "- Rule {i}: check that every error path of the change releases what it took.\n"
            )
        })
        .collect();
    r.repo.write(
        ".warden/skills/code-review/SKILL.md",
        format!("---\nname: code-review\ndescription: the house rules\n---\n{rules}"),
    );
    r.repo.git(&["add", ".warden"]);
    r.repo.git(&["commit", "-qm", "house rules"]);
    let prices = "inputPrice = 2.0\noutputPrice = 8.0\ncachedInputPrice = 0.5";
    for (name, provider) in [("gpt-4.1", "openai"), ("claude", "anthropic")] {
        config(&r, "", &[(name, provider, true, prices)], &fake.base_url());
        let (_, v, stderr, _) = r.json(&[]);
        let n = units(&v).len();
        assert!(n >= 20, "{v}");
        assert_eq!(reviewed(&v), n, "{stderr}");
        let m = &v["routes"][name];
        let n = n as u64;
        // The first request writes the shared prefix (Anthropic says so; OpenAI does not),
        // every later one reads it: the providers cache nothing they have not seen.
        assert_eq!(m["inputTokens"], 120 * n, "{m}");
        assert_eq!(m["cachedInputTokens"], 100 * (n - 1), "{m}");
        let share = (100.0 * (n - 1) as f64 / (120 * n) as f64 * 1000.0).round() / 1000.0;
        assert_eq!(m["cacheHitShare"], share, "{m}");
        let written = if provider == "anthropic" { 100 } else { 0 };
        assert_eq!(m["cacheWriteTokens"], written, "{m}");
        // A hit: 20 fresh at 2.0, 100 cached at 0.5, 42 out at 8.0, per million; the
        // first: 120 at 2.0 (written or fresh) and 42 out.
        let per_hit = (20.0 * 2.0 + 100.0 * 0.5 + 42.0 * 8.0) / 1e6;
        let first = (120.0 * 2.0 + 42.0 * 8.0) / 1e6;
        let want_cost = per_hit * (n - 1) as f64 + first;
        let cost = v["summary"]["costUsd"].as_f64().unwrap();
        assert!((cost - want_cost).abs() < 1e-6, "{cost} vs {want_cost}");
        let hits = units(&v)
            .iter()
            .filter(|u| u["attempts"][0]["cachedInputTokens"] == 100)
            .count() as u64;
        assert_eq!(hits, n - 1, "{v}");
        // The next review's requests all read the cache.
        let text = r.command(&[]).output().unwrap();
        let text = stdout_of(&text);
        let want = format!("tokens: {} in ({} cached, 83.3% hit", 120 * n, 100 * n);
        assert!(text.contains(&want), "{want}\n{text}");
    }
    // Anthropic: the system block is a cache breakpoint, the same bytes for every unit.
    let reqs = fake.requests_for("claude");
    assert!(reqs[0].body["system"].to_string().len() / 4 >= 1024);
    let first = &reqs[0].body["system"];
    assert_eq!(first[0]["cache_control"], json!({"type": "ephemeral"}));
    assert!(reqs.iter().all(|q| q.body["system"] == *first));
    let openai = fake.requests_for("gpt-4.1");
    assert!(
        openai
            .iter()
            .all(|q| q.body["messages"][0] == openai[0].body["messages"][0])
    );
    assert_ne!(openai[0].body["messages"][1], openai[1].body["messages"][1]);
}

#[test]
fn bad_current_model_keys_exit_2_naming_the_line() {
    let r = Review::new(1);
    for (extra, want) in [
        ("reasoningEffort = \"max\"", "reasoningEffort"),
        ("structuredOutput = \"yes\"", "structuredOutput"),
        ("contextWindow = 10", "contextWindow"),
        ("params = { model = \"x\" }", "params"),
        ("cachedInputPrice = -1.0", "cachedInputPrice"),
        ("cacheWritePrice = -2.0", "cacheWritePrice"),
    ] {
        config(
            &r,
            "",
            &[("m", "openai", true, extra)],
            "http://127.0.0.1:9/v1",
        );
        let out = r.command(&[]).output().unwrap();
        let stderr = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{extra}: {stderr}");
        assert!(
            stderr.contains("warden.toml:") && stderr.contains(want),
            "{extra}: {stderr}"
        );
    }
}

/// The providers cache no prefix under 1024 tokens, and the fake neither: the built-in
/// skill's system block alone is under it, so nothing reads as cached.
#[test]
fn a_prompt_under_the_providers_cache_minimum_is_never_read_as_cached() {
    let fake = FakeProvider::start();
    fake.report_cached(100);
    let r = Review::new(3);
    for (name, provider) in [("gpt-4.1", "openai"), ("claude", "anthropic")] {
        config(&r, "", &[(name, provider, true, "")], &fake.base_url());
        let (_, v, stderr, _) = r.json(&["--no-cache"]);
        assert_eq!(reviewed(&v), 3, "{stderr}");
        let m = &v["routes"][name];
        assert_eq!(
            (&m["cachedInputTokens"], &m["cacheWriteTokens"]),
            (&json!(0), &json!(0)),
            "{m}"
        );
    }
    let system = fake.requests_for("claude")[0].body["system"].to_string();
    assert!(system.len() / 4 < 1024, "{}", system.len());
}
