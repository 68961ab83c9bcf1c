//! Skills that read the repository, end to end (docs/design.md §14): the real binary on real
//! repositories against the fake provider playing a small agent (it reads the file under
//! review, then submits). Requests are counted and read at the fake.

use crate::cache::{Setup, sources};
use crate::support::fake_provider::Behavior;
use crate::support::*;
use serde_json::{Value, json};

fn unit<'a>(v: &'a Value, path: &str, start: u64) -> &'a Value {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| {
            u["path"] == path
                && u["startLine"].as_u64().unwrap() <= start
                && start <= u["endLine"].as_u64().unwrap()
        })
        .unwrap_or_else(|| panic!("no unit of {path} at {start}: {v}"))
}

#[test]
fn a_loop_reads_the_tree_and_its_cached_answer_holds_only_while_what_it_read_does() {
    let s = Setup::with_repo(repo_with_grown_files(2, "f", 120));
    s.config("[defaults]\nignorePaths = [\"docs/**\"]\n");
    s.fake.default_behavior(Behavior::Agent);
    s.repo.write("docs/notes.md", "notes\n");
    let (_, first, _, asked) = s.json(&[]);
    assert_eq!(asked, 4, "two units, each a read and a submit: {first}");
    let reads: Vec<String> = s
        .fake
        .requests()
        .iter()
        .filter_map(|r| {
            let m = r.body["messages"].as_array()?;
            m.iter()
                .find(|m| m["role"] == "tool")
                .map(|m| m["content"].to_string())
        })
        .collect();
    assert_eq!(reads.len(), 2);
    assert!(
        reads.iter().any(|c| c.contains("f0_120 = compute(120)")),
        "{reads:?}"
    );
    let l = &unit(&first, "src/f0.rs", 121)["toolLoop"];
    assert_eq!(
        (l["turnsUsed"].as_u64(), l["toolCalls"].as_u64()),
        (Some(2), Some(1)),
        "{l}"
    );
    assert_eq!(first["summary"]["toolLoops"]["callsByTool"]["read_file"], 2);

    // A push touching only a file no unit read: nothing is asked again.
    s.repo.write("docs/notes.md", "other notes\n");
    let (_, second, _, asked) = s.json(&[]);
    assert_eq!(asked, 0, "{second}");
    assert_eq!(sources(&second), ["cache", "cache"]);

    // A push changing the top of f0.rs, far above its reviewed chunk: the chunk is the
    // same, but the file its loop read is not, so that unit is asked again (and the new
    // hunk at the top); f1's unit still comes from the cache.
    let mut text = source_lines(122, "f0");
    text = text.replacen("f0_1 = compute(1)", "f0_1 = compute(-1)", 1);
    s.repo.write("src/f0.rs", &text);
    let (_, third, _, asked) = s.json(&[]);
    assert_eq!(unit(&third, "src/f1.rs", 121)["source"], "cache", "{third}");
    assert_eq!(unit(&third, "src/f0.rs", 121)["source"], "model", "{third}");
    assert_eq!(
        asked, 4,
        "f0's two units, a read and a submit each: {third}"
    );
}

#[test]
fn failover_mid_loop_carries_the_tool_results_across_protocols() {
    let s = Setup::with_repo(repo_with_grown_files(1, "f", 40));
    // The OpenAI route reads, then fails twice; the Anthropic route finishes the loop.
    s.fake.script(
        "primary",
        vec![
            Behavior::Agent,
            Behavior::status(500),
            Behavior::status(500),
        ],
    );
    s.fake.script("fallback", vec![Behavior::Agent]);
    let (_, v, _, _) = s.json(&[]);
    let u = &v["units"][0];
    assert_eq!(u["status"], "reviewed", "{v}");
    assert_eq!(u["route"], "fallback", "{v}");
    assert_eq!(u["toolLoop"]["movedAfterTurn"], 1, "{u}");
    let sent = s.fake.requests_for("fallback");
    let body = &sent[0].body;
    // The transcript in Anthropic's shape: the assistant's tool_use, then its tool_result
    // holding what the OpenAI route's call read.
    let messages = body["messages"].as_array().unwrap();
    let used = messages.iter().any(|m| {
        m["role"] == "assistant"
            && m["content"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|b| b["type"] == "tool_use" && b["name"] == "read_file")
            })
    });
    let result = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result in {body}"));
    assert!(used, "{body}");
    assert!(
        result.to_string().contains("f0_40 = compute(40)"),
        "{result}"
    );
}

#[test]
fn no_tools_reviews_every_unit_in_one_request_without_tools() {
    let s = Setup::new(2);
    s.fake.default_behavior(Behavior::Agent);
    let (_, v, _, asked) = s.json(&["--no-tools"]);
    assert_eq!(asked, 2, "{v}");
    assert!(
        s.fake
            .requests()
            .iter()
            .all(|r| r.body.get("tools").is_none())
    );
    assert!(v["summary"].get("toolLoops").is_none(), "{v}");
}

#[test]
fn the_loop_s_submit_findings_takes_the_structured_output_schema() {
    let s = Setup::new(1);
    s.fake.default_behavior(Behavior::Agent);
    let (_, v, _, asked) = s.json(&["--no-tools", "--no-cache"]);
    assert_eq!(asked, 1, "{v}");
    let single = s.fake.requests_for("primary");
    let structured = &single[0].body["response_format"]["json_schema"]["schema"];
    assert!(structured.is_object(), "{}", single[0].body);
    let (_, v, _, asked) = s.json(&["--no-cache"]);
    assert_eq!(asked, 2, "a read and a submit: {v}");
    let looped = &s.fake.requests_for("primary")[1].body;
    let submit = looped["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "submit_findings")
        .unwrap_or_else(|| panic!("no submit_findings in {looped}"));
    assert_eq!(
        &submit["function"]["parameters"], structured,
        "one findings schema for the loop's submit_findings and structured output"
    );
}

#[test]
fn a_single_shot_answer_is_not_replayed_for_a_loop_nor_a_loop_s_for_other_bounds() {
    let s = Setup::new(2);
    s.fake.default_behavior(Behavior::Agent);
    let (_, v, _, asked) = s.json(&["--no-tools"]);
    assert_eq!(asked, 2, "one request per unit: {v}");
    // The same change with tools: the single-shot answers are not the loop's.
    let (_, v, _, asked) = s.json(&[]);
    assert_eq!(asked, 4, "each unit a read and a submit: {v}");
    assert_eq!(sources(&v), ["model", "model"]);
    // Both answers are kept, each under its own key.
    let (_, v, _, asked) = s.json(&[]);
    assert_eq!((asked, sources(&v)), (0, vec!["cache", "cache"]), "{v}");
    let (_, v, _, asked) = s.json(&["--no-tools"]);
    assert_eq!((asked, sources(&v)), (0, vec!["cache", "cache"]), "{v}");
    // Other bounds are another loop: asked again (Warden's `[defaults] maxTurns`).
    s.config("[defaults]\nmaxTurns = 3\n");
    let (_, v, _, asked) = s.json(&[]);
    assert_eq!(asked, 4, "{v}");
}

/// A named pipe at `path` (no writer ever opens it).
fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

/// docs/design.md §15: a named pipe in the reviewed tree (a local review reads the working
/// tree) is refused before it is opened: the model asked to read it and is told, by its
/// name, that it is not a regular file; the review goes on and ends well inside its budget
/// (a blocking open would wait for a writer that never comes).
#[test]
fn a_named_pipe_the_model_asks_to_read_is_refused_by_name_and_the_review_ends_in_budget() {
    use crate::support::fake_tools::call;
    let s = Setup::with_repo(repo_with_grown_files(1, "f", 40));
    mkfifo(&s.repo.path().join("src/pipe.rs"));
    s.fake.script(
        "primary",
        vec![
            Behavior::ToolCalls(vec![call(
                "read_file",
                serde_json::json!({"path": "src/pipe.rs", "start_line": null, "end_line": null}),
            )]),
            Behavior::Agent,
        ],
    );
    let out = s
        .cmd(&["--json"])
        .timeout(std::time::Duration::from_secs(40))
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    let u = &v["units"][0];
    assert_eq!(u["status"], "reviewed", "{v}");
    assert!(
        v["durationMs"].as_u64().unwrap() < v["budgetMs"].as_u64().unwrap(),
        "{v}"
    );
    let sent = s.fake.requests_for("primary");
    let told = sent[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no tool result in {}", sent[1].body));
    assert!(
        told.contains("src/pipe.rs") && told.contains("named pipe (FIFO), not a regular file"),
        "{told}"
    );
}

#[test]
fn a_push_that_leaves_a_loop_s_reads_alone_hits_the_cache_whatever_the_commit() {
    // A pull request as CI reviews it: a commit range, the tools reading the head commit
    // (whose id each result names). Only what the model read decides a replay.
    let s = Setup::with_repo(repo_with_grown_files(2, "f", 120));
    s.config("[defaults]\nignorePaths = [\"docs/**\"]\n");
    s.fake.default_behavior(Behavior::Agent);
    s.repo.git(&["checkout", "-q", "-b", "pr"]);
    s.repo.write("docs/notes.md", "notes\n");
    s.repo.commit_all("the change");
    let (_, first, _, asked) = s.json(&["main...pr"]);
    assert_eq!(asked, 4, "two units, each a read and a submit: {first}");
    assert_eq!(sources(&first), ["model", "model"]);
    let read = s
        .fake
        .requests()
        .iter()
        .filter_map(|r| {
            let m = r.body["messages"].as_array()?;
            m.iter().find(|m| m["role"] == "tool").cloned()
        })
        .next()
        .expect("a tool result");
    assert!(
        read.to_string().contains("the head commit"),
        "the tools read the head commit: {read}"
    );

    // A push that changes a file no loop read: a new head commit, the same reads.
    s.repo.write("docs/notes.md", "other notes\n");
    s.repo.commit_all("docs only");
    let (_, second, _, asked) = s.json(&["main...pr"]);
    assert_eq!(asked, 0, "{second}");
    assert_eq!(sources(&second), ["cache", "cache"]);

    // A push that changes the top of f0.rs, far above its reviewed chunk: the loop of
    // f0's unit read it, so that unit is asked again; f1's still comes from the cache.
    let text = source_lines(122, "f0").replacen("f0_1 = compute(1)", "f0_1 = compute(-1)", 1);
    s.repo.write("src/f0.rs", &text);
    s.repo.commit_all("f0 again");
    let (_, third, _, _) = s.json(&["main...pr"]);
    assert_eq!(unit(&third, "src/f1.rs", 121)["source"], "cache", "{third}");
    assert_eq!(unit(&third, "src/f0.rs", 121)["source"], "model", "{third}");
}

#[test]
fn a_loop_s_turns_are_counted_apart_from_retries_in_json_and_text() {
    let s = Setup::new(1);
    // One route: one failed attempt (retried on it), then a read and a submit. The hunk
    // budget leaves a tool turn and the final turn's retry room after the failure
    // (20 - 3 - 3 >= 10).
    let routes = fake_routes(&s.fake.base_url(), crate::cache::KEY_VAR, 2);
    let primary = routes.split("[[routes]]").nth(1).unwrap();
    std::fs::write(
        s.config_path(),
        format!("version = 1\n[execution]\nreviewBudget = \"40s\"\nhunkBudget = \"20s\"\nrequestTimeout = \"3s\"\n[[routes]]{primary}"),
    )
    .unwrap();
    s.fake
        .script("primary", vec![Behavior::status(500), Behavior::Agent]);
    let (_, v, _, asked) = s.json(&["--no-cache"]);
    assert_eq!(asked, 3, "{v}");
    assert_eq!(v["units"][0]["status"], "reviewed", "{v}");
    let c = &v["counters"];
    assert_eq!(
        (&c["attempts"], &c["retries"], &c["turns"], &c["failovers"]),
        (&json!(3), &json!(1), &json!(1), &json!(0)),
        "{c}"
    );
    let m = &v["routes"]["primary"];
    assert_eq!((&m["retries"], &m["turns"]), (&json!(1), &json!(1)), "{m}");

    // A healthy loop: turns, and no retry at all.
    let s = Setup::new(2);
    s.fake.default_behavior(Behavior::Agent);
    let (_, v, _, asked) = s.json(&["--no-cache"]);
    assert_eq!(asked, 4, "{v}");
    let c = &v["counters"];
    assert_eq!((&c["retries"], &c["turns"]), (&json!(0), &json!(2)), "{c}");
    let (_, text, _) = s.run(&["--no-cache", "-v"]);
    assert!(text.contains("calls: 2 loop turns, 0 retries"), "{text}");
}
