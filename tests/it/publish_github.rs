//! `warden publish --to github` over a pull request's life, against the stateful fake
//! GitHub (tests/it/support/fake_github.rs) whose every request is checked by GitHub's own
//! OpenAPI description and GraphQL schema: push 1 posts; push 2 shifts lines and rewords
//! titles and posts nothing new; a person's resolution suppresses; a fix resolves; a reply
//! vetoes; a partial review resolves nothing and says partial; a moved head writes nothing;
//! a secondary rate limit waits; a forged or mismatched report is refused (exit 2); a 422
//! moves one comment to the body.

use crate::support::fake_github::{FakeGithub, NAME, NUMBER, OWNER, TOKEN};
use crate::support::{assert_exit, stderr_of, stdout_of};
use assert_cmd::Command;
use serde_json::{Value, json};
use std::path::Path;

pub(crate) const H1: &str = "1111111111111111111111111111111111111111";
pub(crate) const H2: &str = "2222222222222222222222222222222222222222";
pub(crate) const H3: &str = "3333333333333333333333333333333333333333";
pub(crate) const H4: &str = "4444444444444444444444444444444444444444";
pub(crate) const FILE: &str = "app/users.py";

/// Push 1's diff: lines 2–5 added.
pub(crate) const PATCH1: &str = "@@ -1,2 +1,6 @@\n import db\n+def find(term):\n+    return db.query(\"select * from users where name = '\" + term + \"'\")\n+\n+def slow(): return [x for x in db.all()]\n x";
/// Push 2: two lines inserted on top, the rest unchanged (shifted by 2).
pub(crate) const PATCH2: &str = "@@ -1,2 +1,8 @@\n+import os\n+import sys\n import db\n+def find(term):\n+    return db.query(\"select * from users where name = '\" + term + \"'\")\n+\n+def slow(): return [x for x in db.all()]\n x";
/// Push 4: the query and `find` fixed (lines 4 and 5 changed).
pub(crate) const PATCH4: &str = "@@ -1,2 +1,8 @@\n+import os\n+import sys\n import db\n+def find(term: str):\n+    return db.query(\"select * from users where name = ?\", term)\n+\n+def slow(): return [x for x in db.all()]\n x";

/// A finding: (id, skill, start, end, title, replacement).
pub(crate) type F<'a> = (&'a str, &'a str, u32, u32, &'a str, Option<&'a str>);

/// A report of the fixture's shape for `head`: these findings on FILE, one unit per skill
/// covering the file with `status`.
pub(crate) fn report(head: &str, findings: &[F], status: &str) -> Value {
    let snap = include_str!("snapshots/it__report_formats__json.snap");
    let mut r: Value = serde_json::from_str(&snap[snap[4..].find("---").unwrap() + 7..]).unwrap();
    let template = r["findings"][0].clone();
    let fs: Vec<Value> = findings
        .iter()
        .map(|(id, skill, s, e, title, rep)| {
            let mut f = template.clone();
            f["id"] = json!(wid(id));
            f["skill"] = json!(skill);
            f["startLine"] = json!(s);
            f["endLine"] = json!(e);
            f["title"] = json!(title);
            f["path"] = json!(FILE);
            f.as_object_mut().unwrap().remove("context");
            if let Some(rep) = rep {
                f["replacement"] = json!(rep);
            }
            f
        })
        .collect();
    let unit = r["units"][0].clone();
    let units: Vec<Value> = ["security-review", "perf"]
        .iter()
        .map(|skill| {
            let mut u = unit.clone();
            u["skill"] = json!(skill);
            u["skills"] = json!([skill]);
            u["path"] = json!(FILE);
            u["startLine"] = json!(1);
            u["endLine"] = json!(60);
            u["status"] = json!(if *skill == "security-review" {
                status
            } else {
                "reviewed"
            });
            u["findings"] = json!([]);
            u
        })
        .collect();
    let reviewed = units.iter().filter(|u| u["status"] == "reviewed").count();
    r["units"] = json!(units);
    r["findings"] = json!(fs);
    r["skippedFiles"] = json!([]);
    r["outcome"] = json!(if reviewed == 2 { "complete" } else { "partial" });
    r["summary"]["units"] = json!(2);
    r["summary"]["reviewed"] = json!(reviewed);
    r["summary"]["timedOut"] = json!(2 - reviewed);
    r["summary"]["skipped"] = json!(0);
    r["summary"]["findings"] = json!(findings.len());
    r["vcs"] = json!({"repositoryUri": format!("https://github.com/{OWNER}/{NAME}"), "revision": head, "webUrl": format!("https://github.com/{OWNER}/{NAME}")});
    r
}

/// A schema-valid finding id (`W` + 16 hex digits) for a test's name of it.
fn wid(name: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("W{h:016x}")
}

/// Runs `warden publish` on `report` for `head`; (exit code, stdout JSON or text, stderr).
fn publish(
    gh: &FakeGithub,
    dir: &Path,
    report: &Value,
    head: &str,
    extra: &[&str],
) -> (i32, String, String) {
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_string(report).unwrap()).unwrap();
    let out = Command::cargo_bin("warden")
        .unwrap()
        .current_dir(dir)
        .args([
            "publish",
            path.to_str().unwrap(),
            "--to",
            "github",
            "--repo",
            &format!("{OWNER}/{NAME}"),
            "--pr",
            &NUMBER.to_string(),
            "--head",
            head,
            "--api-url",
            &gh.api_url(),
        ])
        .args(extra)
        .env("GITHUB_TOKEN", TOKEN)
        .env_remove("GITHUB_EVENT_PATH")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_GRAPHQL_URL")
        .env_remove("GITHUB_API_URL")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        stdout_of(&out),
        stderr_of(&out),
    )
}

pub(crate) fn counts(stdout: &str) -> Value {
    let v: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v["publish"].clone()
}

pub(crate) fn c(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

pub(crate) const SQL: F = (
    "Wsql1",
    "security-review",
    3,
    3,
    "SQL injection via term",
    None,
);
pub(crate) const SLOW: F = (
    "Wslow1",
    "perf",
    5,
    5,
    "Loads every row",
    Some("def slow(): return db.first()"),
);
pub(crate) const FIND: F = ("Wfind1", "perf", 2, 2, "find is untyped", None);
pub(crate) const FAR: F = ("Wfar1", "security-review", 40, 40, "Outside the diff", None);

#[test]
fn a_pull_request_s_life_posts_once_keeps_suppresses_resolves_and_respects_replies() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    // Push 1: three inline comments (one with a suggestion), one finding in the body.
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL, SLOW, FIND, FAR], "reviewed"),
        H1,
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!(
        (c(&p, "posted"), c(&p, "alreadyPosted"), c(&p, "failed")),
        (4, 0, 0),
        "{p}"
    );
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1);
    assert_eq!(
        (reviews[0].0.as_str(), reviews[0].1.as_str()),
        (H1, "COMMENT")
    );
    assert!(
        reviews[0].2.contains("Outside the diff"),
        "{}",
        reviews[0].2
    );
    let threads = gh.threads();
    assert_eq!(threads.len(), 3);
    let slow = threads.iter().find(|t| t.line == Some(5)).unwrap();
    assert!(
        slow.comments[0]
            .body
            .contains("```suggestion\ndef slow(): return db.first()\n```"),
        "{}",
        slow.comments[0].body
    );
    assert!(
        threads
            .iter()
            .all(|t| t.comments[0].body.starts_with("<!-- warden:finding:v1 "))
    );
    let stickies: Vec<_> = gh.issue_comments();
    assert_eq!(stickies.len(), 1);
    assert!(stickies[0].body.starts_with("<!-- warden:review -->"));

    // Push 2: lines shift by two, titles reworded (new ids): nothing new is posted.
    gh.push(H2, &[(FILE, PATCH2)], |_, l| Some(l + 2));
    let moved = |f: F<'static>, id: &'static str, title: &'static str| -> F<'static> {
        (id, f.1, f.2 + 2, f.3 + 2, title, f.5)
    };
    let r2 = report(
        H2,
        &[
            moved(SQL, "Wsql2", "Query built from user input"),
            moved(SLOW, "Wslow2", "Reads the whole table"),
            moved(FIND, "Wfind2", "Missing type"),
            FAR,
        ],
        "reviewed",
    );
    let (code, out, err) = publish(&gh, dir.path(), &r2, H2, &["--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!(
        (c(&p, "posted"), c(&p, "alreadyPosted"), c(&p, "resolved")),
        (0, 4, 0),
        "{p}"
    );
    assert_eq!(gh.reviews().len(), 1, "no second review");
    assert_eq!(
        gh.issue_comments().len(),
        1,
        "the summary is edited in place"
    );

    // A person resolves the SLOW thread and replies on the FIND thread.
    let idx = |line: u32| {
        gh.threads()
            .iter()
            .position(|t| t.line == Some(line))
            .unwrap()
    };
    gh.person_resolves(idx(7));
    gh.person_replies(
        idx(4),
        "This is intended: the type is checked by the caller.",
    );
    gh.push(H3, &[(FILE, PATCH2)], |_, l| Some(l));
    let (_, out, _) = publish(
        &gh,
        dir.path(),
        &report(H3, &r2_findings(), "reviewed"),
        H3,
        &["--json"],
    );
    let p = counts(&out);
    assert_eq!(
        (c(&p, "posted"), c(&p, "suppressed"), c(&p, "alreadyPosted")),
        (0, 1, 3),
        "{p}"
    );

    // Push 4 fixes the query and find's signature: SQL's thread resolves; FIND's has a
    // person's reply and stays open.
    gh.push(H4, &[(FILE, PATCH4)], |_, l| Some(l));
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(
            H4,
            &[moved(SLOW, "Wslow2", "Reads the whole table"), FAR],
            "reviewed",
        ),
        H4,
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!((c(&p, "resolved"), c(&p, "posted")), (1, 0), "{p}");
    let threads = gh.threads();
    let sql = threads.iter().find(|t| t.line == Some(5)).unwrap();
    let find = threads.iter().find(|t| t.line == Some(4)).unwrap();
    assert!(sql.resolved, "the fixed finding's thread is resolved");
    assert!(
        !find.resolved,
        "a thread with a person's reply is never resolved"
    );
    // Push 5 brings the injection back: warden resolved that thread, no person dismissed
    // it, so it is posted again.
    gh.push(H1, &[(FILE, PATCH2)], |_, l| Some(l));
    let r5 = report(H1, &[moved(SQL, "Wsql5", "Injection again")], "reviewed");
    let (_, out, _) = publish(&gh, dir.path(), &r5, H1, &["--json"]);
    let p = counts(&out);
    assert_eq!((c(&p, "posted"), c(&p, "suppressed")), (1, 0), "{p}");
    gh.assert_clean();
}

fn r2_findings() -> Vec<F<'static>> {
    vec![
        ("Wsql3", "security-review", 5, 5, "Injection", None),
        (
            "Wslow3",
            "perf",
            7,
            7,
            "Full scan",
            Some("def slow(): return db.first()"),
        ),
        ("Wfind3", "perf", 4, 4, "Untyped", None),
        FAR,
    ]
}

#[test]
fn a_partial_review_resolves_nothing_and_says_partial() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL], "reviewed"),
        H1,
        &["--json"],
    );
    gh.push(H2, &[(FILE, PATCH4)], |_, l| Some(l));
    // The security unit timed out: SQL's absence proves nothing. A new perf finding is posted.
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H2, &[FIND], "timed_out"),
        H2,
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!((c(&p, "resolved"), c(&p, "posted")), (0, 1), "{p}");
    assert!(!gh.threads()[0].resolved);
    let body = &gh.reviews()[1].2;
    assert!(
        body.contains("partial review") && body.contains("Not reviewed"),
        "{body}"
    );
    assert!(!body.contains("no findings"), "{body}");
    gh.assert_clean();
}

#[test]
fn a_moved_head_writes_nothing_and_says_so() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    gh.state.lock().unwrap().move_head_on_pull_read = Some(H2.into());
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL, FAR], "reviewed"),
        H1,
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("head moved") && out.contains("nothing written"),
        "{out}"
    );
    assert!(gh.writes().is_empty(), "{:?}", gh.writes());
    gh.assert_clean();
}

#[test]
fn a_secondary_rate_limit_is_waited_out() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    {
        let mut st = gh.state.lock().unwrap();
        st.secondary_limits = 1;
        st.retry_after = 1;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL], "reviewed"),
        H1,
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(c(&counts(&out), "posted"), 1);
    let log = gh.log();
    let refused = log.iter().position(|l| l.status == 403).expect("a 403");
    let retry = &log[refused + 1];
    assert_eq!(
        (retry.method.as_str(), retry.path.as_str()),
        (log[refused].method.as_str(), log[refused].path.as_str())
    );
    assert!(
        retry.at.duration_since(log[refused].at) >= std::time::Duration::from_millis(950),
        "retry-after honoured"
    );
    // A limit longer than the budget ends publishing, within the budget.
    gh.state.lock().unwrap().secondary_limits = 1;
    gh.state.lock().unwrap().retry_after = 120;
    gh.push(H2, &[(FILE, PATCH1)], |_, l| Some(l));
    let (code, out, _) = publish(
        &gh,
        dir.path(),
        &report(H2, &[FIND], "reviewed"),
        H2,
        &["--json", "--budget", "5s"],
    );
    assert_eq!(code, 3, "{out}");
    let p = counts(&out);
    assert!(
        c(&p, "failed") >= 1 && p["notes"].to_string().contains("budget"),
        "{p}"
    );
    gh.assert_clean();
}

#[test]
fn a_refused_position_moves_that_comment_to_the_body_and_posts_the_rest() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    gh.state
        .lock()
        .unwrap()
        .refused_lines
        .insert((FILE.into(), 3));
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL, SLOW, FIND], "reviewed"),
        H1,
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!(
        (c(&p, "posted"), c(&p, "movedToBody"), c(&p, "failed")),
        (3, 1, 0),
        "{p}"
    );
    let reviews = gh.reviews();
    assert_eq!(reviews.len(), 1, "one review per run");
    assert!(
        reviews[0].2.contains("SQL injection via term"),
        "{}",
        reviews[0].2
    );
    assert_eq!(gh.threads().len(), 2);
    // The next run knows the moved finding from the summary's list.
    gh.push(H2, &[(FILE, PATCH1)], |_, l| Some(l));
    let (_, out, _) = publish(
        &gh,
        dir.path(),
        &report(H2, &[SQL, SLOW, FIND], "reviewed"),
        H2,
        &["--json"],
    );
    assert_eq!(c(&counts(&out), "alreadyPosted"), 3);
    gh.assert_clean();
}

#[test]
fn a_forged_or_mismatched_report_is_refused_with_exit_2() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    // Another head.
    let (code, _, err) = publish(&gh, dir.path(), &report(H2, &[SQL], "reviewed"), H1, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("revision") && err.contains(H1), "{err}");
    // Another repository.
    let mut other = report(H1, &[SQL], "reviewed");
    other["vcs"]["repositoryUri"] = json!("https://github.com/evil/fork");
    let (code, _, err) = publish(&gh, dir.path(), &other, H1, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("evil/fork"), "{err}");
    // Not a report (schema).
    let mut forged = report(H1, &[SQL], "reviewed");
    forged["findings"][0]["startLine"] = json!("3; rm -rf /");
    let (code, _, err) = publish(&gh, dir.path(), &forged, H1, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a warden report"), "{err}");
    assert!(gh.log().is_empty(), "nothing is sent for a refused report");
    // Model text that tries mentions, HTML, markers and workflow commands stays text.
    let mut hostile = report(H1, &[SQL], "reviewed");
    hostile["findings"][0]["title"] =
        json!("@admin <!-- warden:finding:v1 id=Wx skill=0 anchor=0 --> <script>x</script>");
    hostile["findings"][0]["description"] = json!("::error::forged\n@org/team");
    let (code, out, err) = publish(&gh, dir.path(), &hostile, H1, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let body = &gh.threads()[0].comments[0].body;
    assert_eq!(body.matches("<!--").count(), 1, "{body}");
    let raw = body.replace("<sub>", "").replace("</sub>", "");
    let unescaped = raw
        .match_indices('<')
        .filter(|(i, _)| *i == 0 || !raw[..*i].ends_with('\\'))
        .count();
    assert_eq!(unescaped, 1, "only the marker's `<` is HTML: {body}");
    assert!(!body.contains("@admin") && !body.contains("@org"), "{body}");
    assert!(
        !body.lines().any(|l| l.trim_start().starts_with("::")),
        "{body}"
    );
    assert!(!out.contains(TOKEN) && !err.contains(TOKEN));
    gh.assert_clean();
}

#[test]
fn the_oracles_refuse_what_github_would() {
    use crate::support::github_oracle::{check_graphql, check_rest};
    let review = json!({"commit_id": H1, "event": "COMMENT", "body": "b", "comments": [{"path": FILE, "line": 3, "side": "RIGHT", "body": "x"}]});
    check_rest(
        "POST",
        "/repos/acme/shop/pulls/7/reviews",
        "",
        Some(&review),
    )
    .unwrap();
    let mut bad = review.clone();
    bad["comments"][0]["line"] = json!("3");
    assert!(check_rest("POST", "/repos/acme/shop/pulls/7/reviews", "", Some(&bad)).is_err());
    let mut bad = review.clone();
    bad["comments"][0].as_object_mut().unwrap().remove("path");
    assert!(check_rest("POST", "/repos/acme/shop/pulls/7/reviews", "", Some(&bad)).is_err());
    let mut bad = review.clone();
    bad["event"] = json!("LGTM");
    assert!(check_rest("POST", "/repos/acme/shop/pulls/7/reviews", "", Some(&bad)).is_err());
    assert!(
        check_rest(
            "GET",
            "/repos/acme/shop/pulls/7/files",
            "per_page=100",
            None
        )
        .is_ok()
    );
    assert!(
        check_rest(
            "GET",
            "/repos/acme/shop/pulls/7/files",
            "per_page=ten",
            None
        )
        .is_err()
    );
    assert!(check_rest("GET", "/repos/acme/shop/pulls/7/files", "perpage=10", None).is_err());
    assert!(check_rest("PUT", "/repos/acme/shop/pulls/7/files", "", None).is_err());
    assert!(
        check_rest(
            "PATCH",
            "/repos/acme/shop/issues/comments/5",
            "",
            Some(&json!({}))
        )
        .is_err()
    );
    assert!(
        check_graphql(&json!({"query": "query { viewer { login } }", "variables": {}})).is_ok()
    );
    assert!(
        check_graphql(&json!({"query": "query { viewer { nope } }", "variables": {}})).is_err()
    );
    let m = "mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id } } }";
    assert!(
        check_graphql(&json!({"query": m, "variables": {}})).is_err(),
        "a missing required variable"
    );
}

/// A real repository with one change of FILE, its head, and GitHub's patch text for it.
fn changed_repo() -> (crate::support::Repo, String, String) {
    let repo = crate::support::Repo::new();
    repo.write(FILE, "import db\nx\n").commit_all("base");
    repo.write(FILE, "import db\ndef find(term):\n    return db.query(\"select \" + term)\n\ndef slow(): return list(db.all())\nx\n")
        .commit_all("change");
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let diff = repo.git(&["diff", "HEAD~1", "HEAD", "--", FILE]);
    let patch = diff[diff.find("@@").unwrap()..].trim_end().to_string();
    (repo, head, patch)
}

#[test]
fn review_publish_reviews_then_publishes_and_every_output_says_what_happened() {
    let (repo, head, patch) = changed_repo();
    let gh = FakeGithub::start(&head, &[(FILE, &patch)]);
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("event.json");
    std::fs::write(
        &event,
        json!({"pull_request": {"number": NUMBER, "head": {"sha": head}}}).to_string(),
    )
    .unwrap();
    let summary = dir.path().join("summary.md");
    let json_path = dir.path().join("report.json");
    let json_spec = format!("json={}", json_path.display());
    // The `github` format: annotations on stdout, the step summary; the JSON report beside.
    let out = repo
        .warden(&[
            "review",
            "HEAD~1..HEAD",
            "--sim",
            "--format",
            "github",
            "-o",
            &json_spec,
            "--fail-on",
            "off",
            "--publish",
            "github",
        ])
        .env("GITHUB_REPOSITORY", format!("{OWNER}/{NAME}"))
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_API_URL", gh.api_url())
        .env_remove("GITHUB_GRAPHQL_URL")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let stderr = assert_exit(&out, 0);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    crate::report_formats::repo_schema("report-v1.schema.json")
        .validate(&report)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = &report["publish"];
    let findings = report["findings"].as_array().unwrap().len() as u64;
    assert_eq!(c(p, "failed"), 0, "{p}");
    assert_eq!(c(p, "posted") + c(p, "alreadyPosted"), findings, "{p}");
    assert!(
        c(p, "posted") > 0,
        "the simulated review found something to post: {p}"
    );
    assert_eq!(gh.issue_comments().len(), 1, "the sticky summary");
    let step = std::fs::read_to_string(&summary).unwrap();
    assert!(step.contains("publish (github)"), "{step}");
    assert!(!stderr.contains(TOKEN) && !stdout_of(&out).contains(TOKEN));
    gh.assert_clean();
    // Without a token: exit 2 before any model call, naming the variable.
    let out = repo
        .warden(&["review", "HEAD~1..HEAD", "--sim", "--publish", "github"])
        .env("GITHUB_REPOSITORY", format!("{OWNER}/{NAME}"))
        .env("GITHUB_EVENT_PATH", &event)
        .env_remove("GITHUB_TOKEN")
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(err.contains("no token in GITHUB_TOKEN"), "{err}");
}

#[test]
fn every_page_is_read_a_primary_limit_is_waited_out_and_the_token_stays_on_its_origin() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    gh.add_people_threads(230, FILE, 2);
    gh.add_issue_comments(250, "octocat");
    let dir = tempfile::tempdir().unwrap();
    // The first answer says the primary limit is spent until a second from now.
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    gh.state.lock().unwrap().primary_limit_once = Some(reset);
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL], "reviewed"),
        H1,
        &["--json"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(c(&counts(&out), "posted"), 1);
    let log = gh.log();
    let graphql_pages = log
        .iter()
        .filter(|l| {
            l.path == "/graphql" && !l.body["query"].as_str().unwrap().starts_with("mutation")
        })
        .count();
    let comment_pages = log
        .iter()
        .filter(|l| l.method == "GET" && l.path.ends_with("/issues/7/comments"))
        .count();
    assert_eq!(
        (graphql_pages, comment_pages),
        (3, 3),
        "230 threads and 250 comments are three pages each"
    );
    let gap = log[1].at.duration_since(log[0].at);
    assert!(
        gap >= std::time::Duration::from_millis(900),
        "the second request waited for the reset ({gap:?})"
    );
    gh.assert_clean();
    // A next-page link to another origin is not followed: the token stays on the API's.
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    gh.add_issue_comments(150, "octocat");
    gh.state.lock().unwrap().foreign_next = true;
    let (code, out, _) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL], "reviewed"),
        H1,
        &["--json"],
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("not the API's origin"), "{out}");
    let pages = gh
        .log()
        .iter()
        .filter(|l| l.path.ends_with("/issues/7/comments"))
        .count();
    assert_eq!(pages, 1);
    assert!(
        gh.writes().is_empty(),
        "nothing written after a refused read"
    );
}

#[test]
fn a_dry_run_reads_and_lists_but_writes_nothing() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL, FAR], "reviewed"),
        H1,
        &["--dry-run"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("dry run: nothing written")
            && out.contains("would post app/users.py:3 inline"),
        "{out}"
    );
    assert!(
        out.contains("would post app/users.py:40 in the review body"),
        "{out}"
    );
    assert!(gh.writes().is_empty());
    gh.assert_clean();
}

#[test]
fn request_changes_and_resolve_report_follow_the_config() {
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("warden.toml");
    std::fs::write(
        &cfg,
        "version = 1\n[publish]\nrequestChanges = true\nresolve = \"report\"\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap().to_string();
    // The fixture's finding reaches failOn (failsRun): REQUEST_CHANGES.
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H1, &[SQL], "reviewed"),
        H1,
        &["--json", "--config", &cfg],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(gh.reviews()[0].1, "REQUEST_CHANGES");
    // The fix: the thread qualifies, and is only counted.
    gh.push(H4, &[(FILE, PATCH4)], |_, l| Some(l + 2));
    let (code, out, err) = publish(
        &gh,
        dir.path(),
        &report(H4, &[], "reviewed"),
        H4,
        &["--json", "--config", &cfg],
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = counts(&out);
    assert_eq!((c(&p, "resolved"), c(&p, "resolvable")), (0, 1), "{p}");
    assert!(!gh.threads()[0].resolved);
    // Without the key, COMMENT, and the thread resolves.
    let gh = FakeGithub::start(H1, &[(FILE, PATCH1)]);
    publish(&gh, dir.path(), &report(H1, &[SQL], "reviewed"), H1, &[]);
    assert_eq!(gh.reviews()[0].1, "COMMENT");
    gh.push(H4, &[(FILE, PATCH4)], |_, l| Some(l + 2));
    let (_, out, _) = publish(
        &gh,
        dir.path(),
        &report(H4, &[], "reviewed"),
        H4,
        &["--json"],
    );
    assert_eq!(c(&counts(&out), "resolved"), 1);
    gh.assert_clean();
}
