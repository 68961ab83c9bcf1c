//! The formats that put reviews where people look (reviewdog, GitLab Code Quality, a PR
//! comment) and SARIF as GitHub code scanning ingests it, on the shared report fixture:
//! snapshots, schema validation, and the fields schemas do not catch.

use crate::report_formats::{assert_valid, fixture, repo_schema, sarif_schema};
use serde_json::Value;
use warden::render::{self, markdown};
use warden::report::{Finding, Report, ReviewOutcome};
use warden::severity::Severity;

fn lines_json(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn rdjsonl_is_one_valid_reviewdog_diagnostic_per_finding() {
    let r = fixture();
    let text = render::rdjson::render_lines(&r);
    let schema = repo_schema("reviewdog-rdf-diagnostic.json");
    let lines = lines_json(&text);
    assert_eq!(lines.len(), r.findings.len());
    for d in &lines {
        assert_valid(&schema, d);
        assert_eq!(d["source"]["name"], "warden");
    }
    let sqli = &lines[0];
    assert_eq!(sqli["severity"], "ERROR");
    assert_eq!(sqli["code"]["value"], "warden/security-review");
    assert_eq!(sqli["location"]["path"], "app/users.py");
    assert_eq!(sqli["location"]["range"]["start"]["line"], 18);
    assert!(sqli["message"].as_str().unwrap().contains("SQL injection"));
    assert!(
        sqli.get("suggestions").is_none(),
        "no replacement, no suggestion"
    );
    let unwrap = &lines[1];
    assert_eq!(unwrap["severity"], "WARNING");
    assert_eq!(
        unwrap["suggestions"][0]["text"],
        "    let port = cfg.port()?;\n"
    );
    assert_eq!(unwrap["suggestions"][0]["range"]["end"]["line"], 9);
    insta::assert_snapshot!("rdjsonl", text);
}

#[test]
fn rdjson_is_one_valid_diagnostic_result() {
    let text = render::rdjson::render_result(&fixture());
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_valid(&repo_schema("reviewdog-rdf-diagnostic-result.json"), &doc);
    assert_eq!(doc["diagnostics"].as_array().unwrap().len(), 2);
    insta::assert_snapshot!("rdjson", text);
}

#[test]
fn severities_map_to_each_tools_scale() {
    let mut r = fixture();
    let template = r.findings[0].clone();
    r.findings = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| Finding {
        severity: *s,
        id: format!("W{i:016x}"),
        ..template.clone()
    })
    .collect();
    let rd: Vec<String> = lines_json(&render::rdjson::render_lines(&r))
        .iter()
        .map(|d| d["severity"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rd, ["ERROR", "ERROR", "WARNING", "INFO", "INFO"]);
    let gl: Value = serde_json::from_str(&render::gitlab::render(&r)).unwrap();
    let gl: Vec<&str> = gl
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["severity"].as_str().unwrap())
        .collect();
    assert_eq!(gl, ["blocker", "critical", "major", "minor", "info"]);
}

#[test]
fn gitlab_code_quality_fingerprints_survive_line_shifts_and_are_unique() {
    let r = fixture();
    let text = render::gitlab::render(&r);
    let issues: Value = serde_json::from_str(&text).unwrap();
    let first = &issues[0];
    assert_eq!(first["check_name"], "warden/security-review");
    assert_eq!(first["severity"], "critical");
    assert_eq!(first["location"]["path"], "app/users.py");
    assert_eq!(first["location"]["lines"]["begin"], 18);
    assert!(
        first["description"]
            .as_str()
            .unwrap()
            .starts_with("SQL injection")
    );
    // The fingerprint is the finding id: the same after the code moves down 10 lines.
    let mut moved = fixture();
    moved.findings[0].start_line += 10;
    moved.findings[0].end_line += 10;
    let moved: Value = serde_json::from_str(&render::gitlab::render(&moved)).unwrap();
    assert_eq!(first["fingerprint"], moved[0]["fingerprint"]);
    assert_eq!(first["fingerprint"], r.findings[0].id.as_str());
    // Two findings with one id (the same line text twice) still get distinct fingerprints.
    let mut twice = fixture();
    let mut copy = twice.findings[0].clone();
    copy.start_line = 40;
    copy.end_line = 40;
    twice.findings.push(copy);
    let twice: Value = serde_json::from_str(&render::gitlab::render(&twice)).unwrap();
    assert_ne!(twice[0]["fingerprint"], twice[2]["fingerprint"]);
    insta::assert_snapshot!("gitlab", text);
}

#[test]
fn sarif_carries_what_code_scanning_requires() {
    let sarif: Value = serde_json::from_str(&render::sarif::render(&fixture())).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    for rule in rules {
        for field in [
            "/shortDescription/text",
            "/fullDescription/text",
            "/help/text",
            "/help/markdown",
        ] {
            let text = rule.pointer(field).and_then(Value::as_str).unwrap_or("");
            assert!(!text.trim().is_empty(), "{} lacks {field}", rule["id"]);
        }
    }
    let code_review = rules
        .iter()
        .find(|r| r["id"] == "warden/code-review")
        .unwrap();
    assert!(
        code_review["fullDescription"]["text"]
            .as_str()
            .unwrap()
            .contains("logic errors")
    );
    let help_md = code_review["help"]["markdown"].as_str().unwrap();
    assert!(help_md.contains("\\`unwrap()\\`"), "{help_md}");
    assert!(!help_md.contains("<b>"), "skill text is escaped: {help_md}");
    // The result shows the code it points at, with context.
    let loc = &run["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["region"]["snippet"]["text"], "line 18\n");
    assert_eq!(loc["contextRegion"]["startLine"], 16);
    assert_eq!(loc["contextRegion"]["endLine"], 20);
    assert!(
        loc["contextRegion"]["snippet"]["text"]
            .as_str()
            .unwrap()
            .starts_with("line 16\n")
    );
    // Which commit of which repository.
    let vcp = &run["versionControlProvenance"][0];
    assert_eq!(vcp["repositoryUri"], "https://github.com/acme/shop");
    assert_eq!(
        vcp["revisionId"],
        "0123456789abcdef0123456789abcdef01234567"
    );
    assert_eq!(vcp["branch"], "feature/users");
    // Without a repository address there is no provenance (SARIF requires the URI).
    let mut bare = fixture();
    bare.vcs = None;
    let bare: Value = serde_json::from_str(&render::sarif::render(&bare)).unwrap();
    assert!(bare["runs"][0].get("versionControlProvenance").is_none());
    assert_valid(&sarif_schema(), &bare);
}

#[test]
fn markdown_comment_has_a_verdict_links_what_was_not_reviewed_and_a_marker() {
    let body = markdown::render(&fixture());
    let mut lines = body.lines();
    assert_eq!(lines.next(), Some(markdown::MARKER));
    let verdict = lines.next().unwrap();
    assert!(verdict.contains("PARTIAL"), "{verdict}");
    assert!(
        verdict.contains("2 findings (1 high, 1 medium)"),
        "{verdict}"
    );
    assert!(verdict.contains("2 of 4 units NOT reviewed"), "{verdict}");
    assert!(
        body.contains("[line 18](https://github.com/acme/shop/blob/0123456789abcdef0123456789abcdef01234567/app/users.py#L18)"),
        "{body}"
    );
    let not_reviewed = body
        .split("### Not reviewed")
        .nth(1)
        .expect("a Not reviewed section");
    assert!(
        not_reviewed.contains("timed_out") && not_reviewed.contains("skipped"),
        "{not_reviewed}"
    );
    assert_eq!(not_reviewed.matches("`web/app.js`").count(), 2);
    let details = body.split("<details>").nth(1).expect("routes folded");
    assert!(details.contains("| primary |") && details.contains("</details>"));
    insta::assert_snapshot!("markdown", body);

    // Without the repository's address there are no links, and a complete review has no
    // Not reviewed section.
    let mut r = fixture();
    r.vcs = None;
    r.outcome = ReviewOutcome::Complete;
    let body = markdown::render(&r);
    assert!(!body.contains("](http"), "{body}");
    assert!(!body.contains("### Not reviewed"), "{body}");
}

#[test]
fn markdown_escapes_model_text() {
    let mut r = fixture();
    r.findings[0].title = "<img src=x onerror=alert(1)> **bold** @octocat".into();
    r.findings[0].description =
        "::error file=a::forged\n  ::set-output name=x::y\n##[warning]forged\n<details><summary>x</summary>\nuse `Vec<u8>`".into();
    r.findings[0].suggestion = Some("</details><script>alert(1)</script>".into());
    let body = markdown::render(&r);
    for line in body.lines() {
        let t = line.trim_start();
        assert!(
            !t.starts_with("::") && !t.starts_with("##["),
            "runner command in {line:?}"
        );
    }
    // Every `<` of the model's is backslash-escaped: shown, never parsed as HTML.
    // warden's own folds (routes, skipped files) open and close at a line's start.
    let own = |start: &str| body.lines().filter(|l| l.starts_with(start)).count();
    let (opened, closed) = (own("<details><summary>"), own("</details>"));
    assert_eq!((opened, closed), (2, 2), "{body}");
    for tag in ["<img", "<script", "</details", "<details", "<summary"] {
        let warden_s = match tag {
            "<details" | "<summary" => opened,
            "</details" => closed,
            _ => 0,
        };
        assert_eq!(
            body.matches(tag).count() - warden_s,
            body.matches(&format!("\\{tag}")).count(),
            "{tag} unescaped: {body}"
        );
    }
    assert_eq!(
        body.matches("<details>").count(),
        opened,
        "only warden's own: {body}"
    );
    assert!(
        body.contains("use \\`Vec\\<u8\\>\\`"),
        "shown as written: {body}"
    );
}

/// `n` findings with long descriptions, spread over severities and files.
fn many_findings(n: usize) -> Report {
    let mut r = fixture();
    let template = r.findings[0].clone();
    let severities = [
        Severity::Critical,
        Severity::High,
        Severity::Medium,
        Severity::Low,
        Severity::Info,
    ];
    r.findings = (0..n)
        .map(|i| Finding {
            id: format!("W{i:016x}"),
            severity: severities[i % 5],
            path: format!("src/module_{}.rs", i % 17),
            start_line: 1 + i as u32,
            end_line: 1 + i as u32,
            title: format!("Finding number {i} with a reasonably descriptive title"),
            description: "The model explains at length what goes wrong here. ".repeat(3),
            ..template.clone()
        })
        .collect();
    r.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    r.summary.findings = n;
    r
}

#[test]
fn a_300_finding_comment_stays_under_githubs_limit_cutting_the_least_severe() {
    let r = many_findings(300);
    let body = markdown::render(&r);
    let chars = body.chars().count();
    assert!(chars <= markdown::COMMENT_LIMIT, "{chars} characters");
    assert!(
        chars > markdown::COMMENT_LIMIT - 2_000,
        "it fills the space: {chars}"
    );
    // Every critical and high finding is shown; what was cut is said, least severe first.
    for f in r.findings.iter().filter(|f| f.severity >= Severity::High) {
        assert!(
            body.contains(&format!("Finding number {} ", f.start_line - 1)),
            "{} cut",
            f.title
        );
    }
    let note = body
        .lines()
        .find(|l| l.contains("not shown"))
        .expect("a cut note");
    assert!(note.contains("60 info"), "{note}");
    assert!(
        !note.contains("critical") && !note.contains("high"),
        "{note}"
    );
    assert!(body.contains(markdown::MARKER) && body.contains("### Not reviewed"));
}

#[test]
fn the_step_summary_stays_under_one_mib_and_says_what_was_cut() {
    let mut r = many_findings(12_000);
    for f in &mut r.findings {
        f.title = format!("{} {}", f.title, "long title ".repeat(30));
    }
    let summary = render::summary_md::render(&r);
    assert!(summary.len() < 1024 * 1024, "{} bytes", summary.len());
    let note = summary
        .lines()
        .find(|l| l.contains("not shown"))
        .expect("a cut note");
    assert!(note.contains("info"), "{note}");
    assert!(
        summary.contains("### Routes"),
        "the tables after the findings survive"
    );
    // A small report is not cut.
    assert!(!render::summary_md::render(&fixture()).contains("not shown"));
}
