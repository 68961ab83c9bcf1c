//! `-o/--output [FORMAT=]PATH` end to end: several formats from one run at no extra cost,
//! every output opened before the first request (a bad path costs no money), and a
//! report that cannot be written at the end printed to stderr rather than lost.

use crate::report_formats::{assert_valid, repo_schema, report_schema, sarif_schema};
use crate::review_e2e::{CANARY, KEY_VAR, Session};
use crate::support::assert_exit;
use crate::support::fake_provider::{Behavior, finding, findings_answer};
use serde_json::{Value, json};

fn answer_one_finding(s: &Session) {
    s.fake
        .default_behavior(Behavior::Answer(findings_answer(json!([finding(
            11,
            "high",
            "Off-by-one in the loop"
        )]))));
}

#[test]
fn three_formats_from_one_run_send_the_requests_of_one() {
    let s = Session::new(3);
    answer_one_finding(&s);
    let (code, single) = s.review_json(&[]);
    assert_eq!(code, 1);
    let one_run = s.fake.requests().len();
    assert_eq!(one_run, 3, "one request per unit");

    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name);
    let specs = [
        format!("sarif={}", out("w.sarif").display()),
        format!("rdjsonl={}", out("w.rdjsonl").display()),
        format!("markdown={}", out("comment.md").display()),
    ];
    let (code, multi) = s.review_json(&[
        "--output", &specs[0], "--output", &specs[1], "-o", &specs[2],
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        s.fake.requests().len() - one_run,
        one_run,
        "no second review"
    );
    assert_eq!(
        multi["findings"].as_array().unwrap().len(),
        3,
        "stdout still has the --json report"
    );
    assert_eq!(single["findings"], multi["findings"]);

    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(out("w.sarif")).unwrap()).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 3);
    let rd = std::fs::read_to_string(out("w.rdjsonl")).unwrap();
    let schema = repo_schema("reviewdog-rdf-diagnostic.json");
    assert_eq!(rd.lines().count(), 3);
    for line in rd.lines() {
        assert_valid(&schema, &serde_json::from_str(line).unwrap());
    }
    let md = std::fs::read_to_string(out("comment.md")).unwrap();
    assert!(
        md.starts_with(
            "<!-- warden:review -->\n❌ **warden** review complete: 3 findings (3 high) (3 at `failOn`: the run fails)"
        ),
        "{md}"
    );
}

#[test]
fn an_output_in_a_missing_directory_fails_before_any_request() {
    let s = Session::new(2);
    answer_one_finding(&s);
    let missing = s.cfg.path().join("no/such/dir/report.json");
    let (code, _, err) = s.review(&["--json", "-o", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&*missing.to_string_lossy()) && err.contains("cannot create"),
        "{err}"
    );
    assert_eq!(s.fake.requests().len(), 0, "nothing was sent");

    let spec = format!("sarif={}", s.cfg.path().join("nope/w.sarif").display());
    let (code, _, err) = s.review(&["--output", &spec]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(s.fake.requests().len(), 0, "nothing was sent");
    assert!(!missing.exists());
}

#[test]
fn an_unwritable_step_summary_fails_before_any_request() {
    let s = Session::new(2);
    answer_one_finding(&s);
    let cfg = s.config_path();
    for summary in [
        s.cfg.path().join("no/such/dir/summary.md"),
        s.cfg.path().to_path_buf(), // a directory
    ] {
        let out = s
            .repo
            .warden(&["review", "-c", cfg.to_str().unwrap(), "--format", "github"])
            .env(KEY_VAR, CANARY)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .output()
            .unwrap();
        let err = assert_exit(&out, 2);
        assert!(err.contains("GITHUB_STEP_SUMMARY"), "{err}");
        assert_eq!(s.fake.requests().len(), 0, "nothing was sent");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_at_the_end_is_printed_to_stderr() {
    let s = Session::new(1);
    answer_one_finding(&s);
    // /dev/full opens, then every write fails with "no space left on device".
    let (code, _, err) = s.review(&["--json", "--skill", "code-review", "-o", "/dev/full"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(s.fake.requests().len(), 1, "the review ran");
    assert!(
        err.contains("/dev/full: cannot write the json report"),
        "{err}"
    );
    let json_start = err.find("{\n").expect("the report on stderr");
    let report: Value = serde_json::from_str(
        err[json_start..]
            .split("\nerror:")
            .next()
            .unwrap()
            .trim_end(),
    )
    .unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_valid(&report_schema(), &report);
    assert_eq!(report["findings"][0]["title"], "Off-by-one in the loop");
}

#[test]
fn the_same_finding_from_two_skills_is_reported_once() {
    let s = Session::new(1);
    answer_one_finding(&s);
    let (code, out, err) = s.review(&[
        "--json",
        "--skill",
        "code-review",
        "--skill",
        "security-review",
    ]);
    assert_eq!(code, 1, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s.fake.requests().len(), 2, "both skills reviewed the chunk");
    assert_eq!(v["findings"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["summary"]["findings"], 1);
    assert_eq!(v["summary"]["findingsDropped"], 1);
    let in_units: usize = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["findings"].as_array().unwrap().len())
        .sum();
    assert_eq!(in_units, 1, "units agree with the findings list");
}

#[test]
fn a_partial_reviews_comment_lists_what_was_not_reviewed_and_links_the_head_commit() {
    let s = Session::new(3);
    s.fake.script(
        "primary",
        vec![
            Behavior::Answer(findings_answer(json!([finding(
                11,
                "medium",
                "Shadowed value"
            )]))),
            Behavior::status(400),
        ],
    );
    s.repo.commit_all("change");
    let head = s.repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    let md_path = dir.path().join("comment.md");
    let sarif_path = dir.path().join("w.sarif");
    let cfg = s.config_path();
    let out = s
        .repo
        .warden(&[
            "review",
            "-c",
            cfg.to_str().unwrap(),
            "--skill",
            "code-review",
            "HEAD~1..HEAD",
            "-o",
            &format!("markdown={}", md_path.display()),
            "-o",
            &format!("sarif={}", sarif_path.display()),
        ])
        .env(KEY_VAR, CANARY)
        .env("GITHUB_SERVER_URL", "https://github.example.com")
        .env("GITHUB_REPOSITORY", "acme/shop")
        .env("GITHUB_HEAD_REF", "feature/x")
        .output()
        .unwrap();
    assert_exit(&out, 3);
    let md = std::fs::read_to_string(&md_path).unwrap();
    assert!(md.contains("2 of 3 units NOT reviewed"), "{md}");
    let section = md
        .split("### Not reviewed")
        .nth(1)
        .expect("Not reviewed section");
    assert_eq!(section.matches("| failed |").count(), 2, "{section}");
    let url = format!("https://github.example.com/acme/shop/blob/{head}/src/");
    assert!(
        md.contains(&url),
        "links point at the reviewed commit: {md}"
    );
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_path).unwrap()).unwrap();
    let vcp = &sarif["runs"][0]["versionControlProvenance"][0];
    assert_eq!(vcp["repositoryUri"], "https://github.example.com/acme/shop");
    assert_eq!(vcp["revisionId"], head.as_str());
    assert_eq!(vcp["branch"], "feature/x");
}

#[test]
fn bad_output_specs_are_usage_errors() {
    let s = Session::new(1);
    let (code, _, err) = s.review(&["-o", "a.json", "-o", "b.json"]);
    assert_eq!(code, 2);
    assert!(err.contains("only one bare PATH"), "{err}");
    let (code, _, err) = s.review(&["-o", "sarif=x", "-o", "rdjson=x"]);
    assert_eq!(code, 2);
    assert!(err.contains("same file"), "{err}");
    let (code, _, err) = s.review(&["-o", "sarif="]);
    assert_eq!(code, 2);
    assert!(err.contains("no path after"), "{err}");
    assert_eq!(s.fake.requests().len(), 0);
}

/// `-o PATH` with no format flag writes the format its extension names (before: the text
/// report, whatever the name); a format flag still wins; an extension that names no format
/// is refused naming the flag before any request; a format written as a flag says how to
/// ask for it (before: `--sarif` suggested `--shard`).
#[test]
fn a_bare_path_s_extension_names_its_format() {
    let s = Session::new(1);
    answer_one_finding(&s);
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();

    let (code, out, err) = s.review(&["-q", "-o", &path("w.sarif")]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "the bare path takes stdout's report: {out}");
    let sarif: Value = serde_json::from_str(&read("w.sarif")).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let (_, _, err) = s.review(&["-q", "-o", &path("w.json")]);
    let json: Value = serde_json::from_str(&read("w.json")).unwrap_or_else(|e| panic!("{e}{err}"));
    assert_valid(&report_schema(), &json);
    s.review(&["-q", "-o", &path("comment.md")]);
    assert!(
        read("comment.md").contains("<!-- warden"),
        "{}",
        read("comment.md")
    );
    s.review(&["-q", "-o", &path("w.jsonl")]);
    for line in read("w.jsonl").lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    // A format flag says otherwise.
    s.review(&["-q", "--format", "text", "-o", &path("t.json")]);
    assert!(
        read("t.json").starts_with("warden review:"),
        "{}",
        read("t.json")
    );
    let before = s.fake.requests().len();

    let (code, _, err) = s.review(&["-o", &path("w.xml")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("-o/--output") && err.contains("`.xml`"),
        "{err}"
    );
    assert!(err.contains("sarif="), "how to name a format: {err}");
    let (code, _, err) = s.review(&["--sarif"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--format sarif") && !err.contains("--shard"),
        "{err}"
    );
    assert_eq!(
        s.fake.requests().len(),
        before,
        "refused before any request"
    );
}
