//! Issue 28 part 5 (docs/design.md §14): a prompt too long for the model's context window.
//! A context-length 400 (both protocols' wordings) splits the chunk and the halves are
//! reviewed as units of their own, keeping their line numbers; a chunk that cannot be
//! split goes to the route with the larger window; neither spends an attempt nor opens a
//! breaker; a route's `contextWindow` splits before sending. The real binary against the
//! fake on loopback.

use crate::support::Repo;
use crate::support::fake_context::{Window, user_bytes, windows};
use crate::support::fake_provider::FakeProvider;
use crate::support::review::{KEY_VAR, Review, units};
use serde_json::Value;

/// A repository with one file, `path`, committed as `text("old")` and changed to
/// `text("new")`.
fn changed_file(path: &str, text: impl Fn(&str) -> String) -> Review {
    let repo = Repo::new();
    repo.write(path, text("old"));
    repo.commit_all("base");
    repo.write(path, text("new"));
    Review {
        repo,
        cfg: tempfile::tempdir().unwrap(),
    }
}

/// One file, `src/big.rs`, with `hunks` changed lines ten lines apart (one chunk, since
/// the config below coalesces them).
fn big_file(hunks: usize) -> Review {
    changed_file("src/big.rs", |tag| {
        (1..=hunks * 10)
            .map(|i| {
                let t = if i % 10 == 5 { tag } else { "same" };
                format!("    let value_{i} = compute_{t}({i}, \"{i}\");\n")
            })
            .collect()
    })
}

/// One long changed line: a chunk that cannot be cut.
fn one_long_line(bytes: usize) -> Review {
    changed_file("src/long.rs", |tag| match tag {
        "old" => "fn main() {}\n".to_string(),
        _ => format!(
            "fn main() {{}}\nconst DATA: &str = \"{}\";\n",
            "x".repeat(bytes)
        ),
    })
}

/// A config: `maxAttempts = 1` (a correction that counted would end the unit), big
/// chunks, and one route per (name, provider, extra lines).
fn config(r: &Review, routes: &[(&str, &str, &str)], base: &str) {
    let mut text = String::from(
        "version = 1\n[execution]\nreviewBudget = \"60s\"\nhunkBudget = \"30s\"\nrequestTimeout = \"5s\"\nmaxAttempts = 1\n[defaults.chunking.coalesce]\nmaxChunkSize = 60000\nmaxGapLines = 30\n",
    );
    for (name, provider, extra) in routes {
        text.push_str(&format!(
            "[[routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{name}\"\nbaseUrl = \"{base}\"\napiKeyEnv = \"{KEY_VAR}\"\nmaxConcurrency = 2\nstream = true\n{extra}\n"
        ));
    }
    std::fs::write(r.config_path(), text).unwrap();
}

fn lines(u: &Value) -> (u64, u64) {
    (
        u["startLine"].as_u64().unwrap(),
        u["endLine"].as_u64().unwrap(),
    )
}

/// No breaker opened on any route.
fn no_breaker_opened(v: &Value) {
    for (name, r) in v["routes"].as_object().unwrap() {
        assert_eq!(r["breaker"]["state"], "closed", "{name}: {r}");
        assert_eq!(r["breaker"]["opens"], 0, "{name}: {r}");
    }
}

#[test]
fn an_oversize_chunk_is_split_and_reviewed_in_both_protocols() {
    let r = big_file(20);
    for (model, provider) in [("small-openai", "openai"), ("small-claude", "anthropic")] {
        let fake = FakeProvider::start();
        fake.respond_with(windows(&[Window {
            model,
            bytes: 3000,
            window: 8192,
        }]));
        config(&r, &[(model, provider, "")], &fake.base_url());
        let (code, v, stderr, _) = r.json(&[]);
        assert!(!stderr.contains("unknown key"), "{stderr}");
        let told: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("exceeds the model's context window"))
            .collect();
        assert_eq!(told.len(), 1, "once per route: {stderr}");
        assert!(told[0].contains("contextWindow = 8192"), "{}", told[0]);
        let us = units(&v);
        assert!(us.len() >= 3, "{model}: split in parts: {v}");
        assert!(
            us.iter().all(|u| u["status"] == "reviewed"),
            "{model}: {v}\n{stderr}"
        );
        assert_eq!(code, 0, "{model}: {stderr}");
        assert_eq!(v["outcome"], "complete");
        assert_eq!(v["summary"]["units"], us.len(), "{model}");
        // The parts cover the chunk in order, each reviewed on its own lines, and each
        // part's finding (the fake reports the first line it is shown) keeps its number.
        let ranges: Vec<(u64, u64)> = us.iter().map(lines).collect();
        assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "{ranges:?}");
        assert!(
            ranges[0].0 <= 5 && ranges.last().unwrap().1 >= 195,
            "{ranges:?}"
        );
        for u in us {
            assert_eq!(u["path"], "src/big.rs");
            let f = u["findings"].as_array().unwrap();
            assert_eq!(f.len(), 1, "{u}");
            assert_eq!(f[0]["startLine"], u["startLine"], "{u}");
        }
        // Every part's prompt fit; each 400 made a split, and named the window.
        let reqs = fake.requests_for(model);
        let over = reqs.iter().filter(|q| user_bytes(&q.body) > 3000).count();
        let fit = reqs.len() - over;
        assert_eq!(fit, us.len(), "{model}: one request per part");
        // A 400 names the window, and the route keeps it: later parts that would not fit
        // are split before they are sent.
        assert!(
            over >= 1 && over < us.len(),
            "{model}: at most one 400 per split"
        );
        assert!(
            us[0]["reason"].as_str().unwrap().contains("8192 tokens"),
            "{}",
            us[0]
        );
        let refused: Vec<&Value> = us
            .iter()
            .flat_map(|u| u["attempts"].as_array().unwrap())
            .filter(|a| a["outcome"] == "bad_request")
            .collect();
        assert_eq!(refused.len(), over, "every attempt in the report once");
        no_breaker_opened(&v);
    }
}

#[test]
fn an_unsplittable_chunk_fails_over_to_the_route_with_the_larger_window() {
    let r = one_long_line(6000);
    for (small, sp, large, lp) in [
        ("small-openai", "openai", "large-claude", "anthropic"),
        ("small-claude", "anthropic", "large-openai", "openai"),
    ] {
        let fake = FakeProvider::start();
        fake.respond_with(windows(&[
            Window {
                model: small,
                bytes: 3000,
                window: 8192,
            },
            Window {
                model: large,
                bytes: 1 << 20,
                window: 200_000,
            },
        ]));
        config(&r, &[(small, sp, ""), (large, lp, "")], &fake.base_url());
        let (code, v, stderr, _) = r.json(&[]);
        assert_eq!(code, 0, "{small}: {v}\n{stderr}");
        let us = units(&v);
        assert_eq!(us.len(), 1, "{v}");
        let u = &us[0];
        assert_eq!(u["status"], "reviewed", "{u}");
        assert_eq!(u["route"], large, "{u}");
        assert_eq!(u["routesTried"], serde_json::json!([small, large]), "{u}");
        assert_eq!(u["attempts"][0]["outcome"], "bad_request", "{u}");
        assert_eq!(
            fake.requests_for(small).len(),
            1,
            "no retry on the small window"
        );
        no_breaker_opened(&v);
    }
    // With nowhere larger to go, the unit ends failed, naming the window.
    let fake = FakeProvider::start();
    fake.respond_with(windows(&[Window {
        model: "small-openai",
        bytes: 3000,
        window: 8192,
    }]));
    config(&r, &[("small-openai", "openai", "")], &fake.base_url());
    let (_, v, _, _) = r.json(&[]);
    let u = &units(&v)[0];
    assert_eq!(u["status"], "failed", "{u}");
    let reason = u["reason"].as_str().unwrap();
    assert!(
        reason.contains("fits no route's context window (small-openai: 8192 tokens)")
            && reason.contains("cannot be split"),
        "{reason}"
    );
    no_breaker_opened(&v);
}

#[test]
fn context_window_splits_before_sending() {
    // Window 2048 tokens, 256 for the answer: warden's estimate (3 characters a token)
    // lets (2048 - 256) × 3 characters go, so no request the fake sees is longer.
    let limit = (2048 - 256) * 3;
    let r = big_file(20);
    for (model, provider) in [("w-openai", "openai"), ("w-claude", "anthropic")] {
        let fake = FakeProvider::start();
        fake.respond_with(windows(&[Window {
            model,
            bytes: limit,
            window: 2048,
        }]));
        config(
            &r,
            &[(model, provider, "contextWindow = 2048\nmaxTokens = 256")],
            &fake.base_url(),
        );
        let (code, v, stderr, _) = r.json(&[]);
        let us = units(&v);
        assert!(us.len() >= 2, "{v}");
        assert!(
            us.iter().all(|u| u["status"] == "reviewed"),
            "{v}\n{stderr}"
        );
        assert_eq!(code, 0);
        let reqs = fake.requests_for(model);
        let shown: Vec<String> = us
            .iter()
            .map(|u| format!("{}-{} {}", u["startLine"], u["endLine"], u["attempts"]))
            .collect();
        assert_eq!(
            reqs.len(),
            us.len(),
            "one request per part, none refused: {shown:#?}"
        );
        assert!(reqs.iter().all(|q| user_bytes(&q.body) <= limit));
        assert!(
            us[0]["reason"]
                .as_str()
                .unwrap()
                .contains("exceeds route w-"),
            "{}",
            us[0]
        );
    }
    // A unit that fits no route's window ends failed before any request.
    let r = one_long_line(9000);
    let fake = FakeProvider::start();
    config(
        &r,
        &[(
            "w-openai",
            "openai",
            "contextWindow = 2048\nmaxTokens = 256",
        )],
        &fake.base_url(),
    );
    let (code, v, _, _) = r.json(&[]);
    let u = &units(&v)[0];
    assert_eq!(u["status"], "failed", "{u}");
    assert!(
        u["reason"]
            .as_str()
            .unwrap()
            .contains("fits no route's context window (w-openai: 2048 tokens)"),
        "{u}"
    );
    assert_eq!(fake.requests().len(), 0, "nothing sent");
    assert_ne!(code, 0);
}

/// One file of `hunks` ten-line blocks rewritten (ten lines removed, ten added, about
/// 100 bytes each), 30 lines apart: one chunk of about 60 KB for 20 hunks.
fn rewritten_blocks(hunks: usize) -> Review {
    changed_file("src/blocks.rs", |tag| {
        (1..=hunks * 30)
            .map(|i| {
                let t = if i % 30 < 10 { tag } else { "kept" };
                format!(
                    "    let value_{i:04} = compute_{t}_{i:04}(input.field_{i:04}, \"a string literal that makes the line long\");\n"
                )
            })
            .collect()
    })
}

/// The note's figures: a 20-hunk file (one 60 KB chunk) against a model with an 8k window
/// (the fake refuses a user message over 32 KB, about 4 bytes a token), without and with
/// `contextWindow = 8192`. Printed; every part is reviewed either way.
#[test]
fn a_20_hunk_file_against_an_8k_window_is_reviewed_in_parts() {
    let r = rewritten_blocks(20);
    for extra in ["", "contextWindow = 8192"] {
        let fake = FakeProvider::start();
        fake.respond_with(windows(&[Window {
            model: "gpt-8k",
            bytes: 8192 * 4,
            window: 8192,
        }]));
        config(&r, &[("gpt-8k", "openai", extra)], &fake.base_url());
        let (code, v, stderr, took) = r.json(&[]);
        let us = units(&v);
        assert!(
            us.iter().all(|u| u["status"] == "reviewed"),
            "{v}\n{stderr}"
        );
        assert_eq!(code, 0);
        let reqs = fake.requests_for("gpt-8k");
        let refused = reqs
            .iter()
            .filter(|q| user_bytes(&q.body) > 8192 * 4)
            .count();
        let largest = reqs.iter().map(|q| user_bytes(&q.body)).max().unwrap();
        let sizes: Vec<usize> = reqs
            .iter()
            .map(|q| user_bytes(&q.body))
            .filter(|b| *b <= 8192 * 4)
            .collect();
        eprintln!(
            "20-hunk file (1 planned unit), 8k window, route `{}`: {} units reviewed, {} requests ({refused} answered 400 context length), largest prompt sent {largest} B, parts {sizes:?} B, {took:?}",
            if extra.is_empty() {
                "no contextWindow"
            } else {
                extra
            },
            us.len(),
            reqs.len(),
        );
        if !extra.is_empty() {
            assert_eq!(refused, 0, "split before sending");
        }
        assert!(us.len() >= 2);
    }
}

/// A tool loop's transcript, not its chunk, outgrows the window (the agent reads a 30 KB
/// file under an 8k window): the chunk is not split (each half would read the file
/// again); the unit goes on as one request without tools, and says so.
#[test]
fn a_tool_loop_whose_transcript_outgrows_the_window_goes_on_without_tools() {
    let r = Review {
        repo: crate::support::repo_with_grown_files(1, "g", 1000),
        cfg: tempfile::tempdir().unwrap(),
    };
    let fake = FakeProvider::start();
    fake.default_behavior(crate::support::fake_provider::Behavior::Agent);
    config(
        &r,
        &[("agent", "openai", "contextWindow = 8192\nmaxTokens = 256")],
        &fake.base_url(),
    );
    let (code, v, stderr, _) = r.json(&[]);
    let us = units(&v);
    assert_eq!(us.len(), 1, "not split: {v}");
    assert_eq!(us[0]["status"], "reviewed", "{v}\n{stderr}");
    assert_eq!(code, 0);
    let reason = us[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("transcript outgrew route agent's context window"),
        "{reason}: {}",
        us[0]
    );
    let reqs = fake.requests_for("agent");
    assert_eq!(reqs.len(), 2, "the read, then the chunk alone");
    assert!(reqs[0].body.get("tools").is_some());
    assert!(reqs[1].body.get("tools").is_none(), "{}", reqs[1].body);
    assert_eq!(us[0]["toolLoop"]["toolCalls"], 1, "{}", us[0]);
}
