//! Every output line is safe and every cut is visible (docs/design.md §13, issue 20 points 2
//! and 5), tried as a hostile provider, a hostile pull request and a careless shell would:
//! no line of any output is a CI command unless warden wrote it as its annotation, no
//! Markdown mentions anyone, no configured key leaves in any format, a closed stdout or
//! stderr never panics and loses no report, and files cut by limits are named.

use crate::report_formats::{assert_valid, sarif_schema};
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::review::{KEY, Review, route_cfg};
use crate::support::{Repo, source_lines};
use crate::support::{stderr_of, stdout_of};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Names a hostile pull request gives its files: each a workflow command once a runner
/// trims the line's leading blanks.
const HOSTILE_NAMES: [&str; 3] = [
    "::error title=x::owned.py",
    "::stop-commands::tok3n.py",
    "\t::warning::tab.py",
];

/// What a CI log would run: GitHub's `::` at the start of a line after any whitespace (a
/// lone CR ends a line too), its legacy `##[` anywhere, Azure's `##vso[`.
fn command_lines(text: &str) -> Vec<&str> {
    text.split(['\n', '\r'])
        .filter(|l| l.trim_start().starts_with("::") || l.contains("##[") || l.contains("##vso["))
        .collect()
}

/// Every format of one run, as files: (format, path).
fn every_format(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    [
        "text", "json", "sarif", "github", "markdown", "rdjsonl", "rdjson", "gitlab",
    ]
    .iter()
    .map(|f| (*f, dir.join(format!("report.{f}"))))
    .collect()
}

/// `review -v` writing every format with `-o` and the step summary; (code, stdout,
/// stderr, [(format, file text)], step summary).
fn review_everything(
    r: &Review,
    args: &[&str],
) -> (i32, String, String, Vec<(&'static str, String)>, String) {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    let files = every_format(dir.path());
    let mut cmd = r.command(&[&["-v", "--color", "always"], args].concat());
    for (f, p) in &files {
        cmd.arg("-o").arg(format!("{f}={}", p.display()));
    }
    cmd.env("GITHUB_STEP_SUMMARY", &summary);
    let out = cmd.output().unwrap();
    let stdout = stdout_of(&out);
    let stderr = stderr_of(&out);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let texts = files
        .iter()
        .map(|(f, p)| (*f, std::fs::read_to_string(p).unwrap()))
        .collect();
    let md = std::fs::read_to_string(&summary).unwrap();
    (out.status.code().unwrap_or(-1), stdout, stderr, texts, md)
}

/// A GitHub annotation file: every line is one of warden's own commands, and no hostile
/// text opened a command of its own inside one (its properties and data stay escaped).
fn assert_only_own_annotations(gh: &str) {
    for line in gh.lines() {
        let rest = line
            .strip_prefix("::error ")
            .or_else(|| line.strip_prefix("::warning "))
            .or_else(|| line.strip_prefix("::notice "))
            .unwrap_or_else(|| panic!("not an annotation of warden's: {line:?}"));
        let (props, data) = rest.split_once("::").expect("properties end with ::");
        assert!(!props.contains("::"), "{line}");
        assert!(!data.is_empty(), "{line}");
    }
}

#[test]
fn repository_names_never_start_a_command_line_in_any_output() {
    let repo = Repo::new();
    repo.write("src/app.py", source_lines(3, "a"));
    for (i, name) in HOSTILE_NAMES.iter().enumerate() {
        repo.write(&name.replace("\\t", "\t"), source_lines(3 + i, "h"));
    }
    repo.commit_all("base");
    repo.write("src/app.py", source_lines(30, "a"));
    for (i, name) in HOSTILE_NAMES.iter().enumerate() {
        repo.write(&name.replace("\\t", "\t"), source_lines(30 + i, "h"));
    }
    let r = Review {
        repo,
        cfg: tempfile::tempdir().unwrap(),
    };
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::status(400));
    r.config(
        &[("reviewBudget", "10s"), ("hunkBudget", "5s")],
        &[route_cfg("m", "openai", fake.base_url(), false)],
    );
    // The text report's NOT REVIEWED list names each file at the start of a line.
    let (code, stdout, stderr, files, summary) = review_everything(&r, &[]);
    // Every unit failed on a 400 (a setup error on every route): exit 2.
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stdout.contains("NOT REVIEWED"), "{stdout}");
    assert!(stdout.contains("owned.py"), "the file is named: {stdout}");
    assert_eq!(command_lines(&stdout), Vec::<&str>::new(), "{stdout}");
    assert_eq!(command_lines(&stderr), Vec::<&str>::new(), "{stderr}");
    assert_eq!(command_lines(&summary), Vec::<&str>::new(), "{summary}");
    for (format, text) in &files {
        if *format == "github" {
            assert_only_own_annotations(text);
        } else {
            assert_eq!(command_lines(text), Vec::<&str>::new(), "{format}: {text}");
        }
    }
    // `warden plan`: planned files, and skipped ones (binary content) at a line's start.
    for (i, name) in HOSTILE_NAMES.iter().enumerate() {
        let bin = format!("{}.bin", name.replace("\\t", "\t"));
        r.repo.write(&bin, [0u8, 1, 2, i as u8, 0]);
    }
    let out = r
        .repo
        .warden(&["plan", "--color", "never"])
        .output()
        .unwrap();
    let (plan, err) = (stdout_of(&out), stderr_of(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        plan.contains("binary"),
        "skipped for binary content: {plan}"
    );
    assert_eq!(command_lines(&plan), Vec::<&str>::new(), "{plan}");
    assert_eq!(command_lines(&err), Vec::<&str>::new(), "{err}");
}

#[test]
fn skill_names_never_start_a_command_line() {
    let repo = Repo::new();
    for (dir, name) in [
        ("evil", "::error title=x::owned"),
        ("stop", "::stop-commands::t0k"),
    ] {
        repo.write(
            &format!(".agents/skills/{dir}/SKILL.md"),
            format!("---\nname: \"{name}\"\ndescription: \"::warning::described\"\n---\nReview.\n"),
        );
    }
    repo.commit_all("skills");
    for args in [&["skills"][..], &["skills", "--json"][..]] {
        let out = repo.warden(args).output().unwrap();
        let (stdout, stderr) = (stdout_of(&out), stderr_of(&out));
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            stdout.contains("owned") || stderr.contains("owned"),
            "{stdout}\n{stderr}"
        );
        assert_eq!(
            command_lines(&stdout),
            Vec::<&str>::new(),
            "{args:?}: {stdout}"
        );
        assert_eq!(
            command_lines(&stderr),
            Vec::<&str>::new(),
            "{args:?}: {stderr}"
        );
    }
}

/// An `@` directly followed by a name character: GitHub would mention that user or team.
fn mentions(md: &str) -> Vec<String> {
    let chars: Vec<char> = md.chars().collect();
    chars
        .windows(2)
        .enumerate()
        .filter(|(i, w)| {
            w[0] == '@'
                && w[1].is_ascii_alphanumeric()
                && (*i == 0 || !chars[i - 1].is_ascii_alphanumeric())
        })
        .map(|(i, _)| chars[i..(i + 20).min(chars.len())].iter().collect())
        .collect()
}

#[test]
fn model_text_mentions_nobody_in_markdown_or_the_step_summary() {
    let r = Review::new(2);
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([{
        "severity": "high", "confidence": "high",
        "title": "@octocat please look",
        "description": "cc @org/team and @admin",
        "suggestion": "ask @security-team", "line": 11
    }]))));
    r.config(
        &[("reviewBudget", "10s"), ("hunkBudget", "5s")],
        &[route_cfg("m", "openai", fake.base_url(), false)],
    );
    let (code, _, stderr, files, summary) = review_everything(&r, &[]);
    assert_eq!(code, 1, "{stderr}");
    let md = &files.iter().find(|(f, _)| *f == "markdown").unwrap().1;
    assert!(md.contains("octocat") && md.contains("org/team"), "{md}");
    assert_eq!(mentions(md), Vec::<String>::new(), "{md}");
    assert!(summary.contains("octocat"), "{summary}");
    assert_eq!(mentions(&summary), Vec::<String>::new(), "{summary}");
    // JSON keeps the data exactly.
    let json: Value =
        serde_json::from_str(&files.iter().find(|(f, _)| *f == "json").unwrap().1).unwrap();
    assert_eq!(json["findings"][0]["title"], "@octocat please look");
}

/// Whether `text` holds any 16-character piece of `key`.
fn has_piece(key: &str, text: &str) -> bool {
    (0..=key.len() - 16).any(|i| text.contains(&key[i..i + 16]))
}

#[test]
fn a_provider_that_copies_the_key_into_findings_leaks_it_nowhere() {
    assert!(KEY.len() >= 24);
    let r = Review::new(2);
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::Answer(findings_answer(json!([{
        "severity": "high", "confidence": "high",
        "title": format!("key {KEY} seen"),
        "description": format!("Authorization: Bearer {KEY}\nagain {}", &KEY[2..20]),
        "suggestion": format!("rotate {}", &KEY[4..]),
        "replacement": format!("key = \"{KEY}\""),
        "skill": KEY, "line": 11
    }]))));
    r.config(
        &[("reviewBudget", "10s"), ("hunkBudget", "5s")],
        &[route_cfg("m", "openai", fake.base_url(), false)],
    );
    let (code, stdout, stderr, files, summary) = review_everything(&r, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("[redacted]"), "{stdout}");
    assert!(!has_piece(KEY, &stdout), "text: {stdout}");
    assert!(!has_piece(KEY, &stderr), "stderr: {stderr}");
    assert!(!has_piece(KEY, &summary), "step summary: {summary}");
    for (format, text) in &files {
        assert!(!has_piece(KEY, text), "{format}: {text}");
        assert!(text.contains("redacted"), "{format}: {text}");
    }
    let sarif: Value =
        serde_json::from_str(&files.iter().find(|(f, _)| *f == "sarif").unwrap().1).unwrap();
    assert_valid(&sarif_schema(), &sarif);
}

/// A pipe whose read end is already closed: every write to it fails with EPIPE.
fn closed_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer.into()
}

/// Runs `cmd` with stdout and/or stderr on a closed pipe; (exit code, stderr if open).
fn run_closed(mut cmd: Command, stdout: bool, stderr: bool) -> (i32, String) {
    cmd.stdout(if stdout { closed_pipe() } else { Stdio::null() });
    cmd.stderr(if stderr {
        closed_pipe()
    } else {
        Stdio::piped()
    });
    let out = cmd.output().unwrap();
    let err = stderr_of(&out);
    (out.status.code().unwrap_or(-1), err)
}

/// `warden review … -o json=side.json 2>&1 | head -n 1`: stdout, stderr or both closed
/// while progress, warnings and reports are written. No panic, the `-o` file and the step
/// summary are written whole, and the exit code is the review's own.
#[test]
fn a_closed_stdout_or_stderr_never_panics_and_loses_no_report() {
    let r = Review::new(3);
    let fake = FakeProvider::start();
    fake.default_behavior(Behavior::status(400));
    r.config(
        &[("reviewBudget", "10s"), ("hunkBudget", "5s")],
        &[route_cfg("m", "openai", fake.base_url(), false)],
    );
    let dir = tempfile::tempdir().unwrap();
    // The review's own code with every stream open: every unit failed (400, a setup
    // error on every route), exit 2.
    let (open_code, _, open_err, _) = r.json(&["-v"]);
    assert_eq!(open_code, 2, "{open_err}");
    assert!(open_err.lines().count() > 2, "progress to lose: {open_err}");
    for (stdout, stderr) in [(false, true), (true, false), (true, true)] {
        let side = dir.path().join(format!("side-{stdout}-{stderr}.json"));
        let summary = dir.path().join(format!("summary-{stdout}-{stderr}.md"));
        let mut cmd = r.command(&["-v", "--format", "github", "-o"]);
        cmd.arg(format!("json={}", side.display()))
            .env("GITHUB_STEP_SUMMARY", &summary);
        let (code, err) = run_closed(cmd, stdout, stderr);
        let label = format!("stdout closed {stdout}, stderr closed {stderr}");
        assert!(!err.contains("panicked"), "{label}: {err}");
        assert_eq!(code, open_code, "{label}: {err}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&side).unwrap())
            .unwrap_or_else(|e| panic!("{label}: side.json is not whole: {e}"));
        assert_eq!(v["summary"]["units"], 3, "{label}");
        assert_eq!(v["outcome"], "unavailable", "{label}");
        let md = std::fs::read_to_string(&summary).unwrap();
        assert!(md.contains("warden"), "{label}: step summary: {md}");
    }
}

/// 60 changed files and `maxFiles = 10`: the 50 cut are counted and named in every
/// format a person reads, and the review does not pass for complete there.
#[test]
fn files_cut_by_limits_are_counted_and_named_everywhere() {
    let r = Review::new(60);
    let fake = FakeProvider::start();
    r.config(
        &[("reviewBudget", "20s"), ("hunkBudget", "5s")],
        &[route_cfg("m", "openai", fake.base_url(), false)],
    );
    let mut cfg = std::fs::read_to_string(r.config_path()).unwrap();
    cfg = cfg.replacen(
        "[execution]",
        "[defaults.scan]\nmaxFiles = 10\n[execution]",
        1,
    );
    std::fs::write(r.config_path(), cfg).unwrap();
    let (code, stdout, stderr, files, summary) = review_everything(&r, &[]);
    assert_eq!(code, 0, "the units planned were reviewed: {stderr}");
    let file = |f: &str| files.iter().find(|(n, _)| *n == f).unwrap().1.clone();
    let json: Value = serde_json::from_str(&file("json")).unwrap();
    let cut: Vec<&str> = json["skippedFiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["reason"] == "limit:maxFiles")
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(cut.len(), 50, "{json}");
    assert_valid(&crate::report_formats::report_schema(), &json);
    assert_eq!(
        json["cuts"],
        json!([{"reason": "limit:maxFiles", "limit": "maxFiles", "value": 10, "files": 50}])
    );
    let text = file("text");
    assert!(
        text.contains("50 changed files not reviewed: limit maxFiles = 10"),
        "{text}"
    );
    assert!(text.contains(cut[0]), "named: {text}");
    assert!(
        stdout.contains("CUT: 50 changed files not reviewed"),
        "{stdout}"
    );
    // The comment's verdict (its first lines) says it.
    let md = file("markdown");
    let verdict: String = md.lines().take(2).collect::<Vec<_>>().join("\n");
    assert!(verdict.contains("50 changed files not reviewed"), "{md}");
    assert!(md.contains(cut[0]), "named: {md}");
    assert!(
        summary.contains("50 changed files not reviewed"),
        "{summary}"
    );
    assert!(summary.contains(cut[0]), "named: {summary}");
    // SARIF: a tool execution notification, and the document still validates.
    let sarif: Value = serde_json::from_str(&file("sarif")).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    let cuts: Vec<&Value> = notes
        .iter()
        .filter(|n| {
            n["message"]["text"]
                .as_str()
                .unwrap()
                .contains("50 changed files not reviewed")
        })
        .collect();
    assert_eq!(cuts.len(), 1, "{notes:?}");
    // GitHub: one notice for the cut, not fifty.
    let gh = file("github");
    let notices: Vec<&str> = gh
        .lines()
        .filter(|l| l.contains("changed files not reviewed"))
        .collect();
    assert_eq!(notices.len(), 1, "{gh}");
    assert!(
        notices[0].starts_with("::notice ")
            && notices[0].ends_with("50 changed files not reviewed: limit maxFiles = 10"),
        "{gh}"
    );
}
