//! `warden review` end to end: the real binary on temp repositories against the fake
//! provider over loopback, and against the built-in simulator.

use crate::report_formats::{assert_valid, report_schema, sarif_schema};
use crate::support::Toml;
use crate::support::fake_provider::{
    Behavior, FakeProvider, finding, findings_answer, real_bug_and_false_alarm,
};
use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub(crate) const KEY_VAR: &str = "WARDEN_E2E_KEY";
pub(crate) const CANARY: &str = "sk-canary-e2e-5f1c2a";

/// A repository with one uncommitted change per file, and a config pointing at the fake.
pub(crate) struct Session {
    pub(crate) repo: Repo,
    pub(crate) fake: FakeProvider,
    /// The config lives outside the repository so it is not part of the diff.
    pub(crate) cfg: tempfile::TempDir,
}

impl Session {
    pub(crate) fn new(files: usize) -> Session {
        let s = Session {
            repo: repo_with_changed_files(files),
            fake: FakeProvider::start(),
            cfg: tempfile::tempdir().unwrap(),
        };
        s.config(&[]);
        s
    }

    /// Writes warden.toml with a primary (OpenAI protocol) and a fallback (Anthropic);
    /// `overrides` replace [execution] defaults.
    pub(crate) fn config(&self, overrides: &[(&str, &str)]) {
        let base = self.fake.base_url();
        let mut exec = vec![
            ("reviewBudget", "5s"),
            ("hunkBudget", "2s"),
            ("requestTimeout", "800ms"),
            ("connectTimeout", "300ms"),
            ("firstTokenTimeout", "500ms"),
            ("idleTimeout", "300ms"),
        ];
        for (k, v) in overrides {
            exec.retain(|(e, _)| e != k);
            exec.push((k, v));
        }
        self.write_config(
            &Toml::new()
                .exec(&exec)
                .raw("\n")
                .fake_routes(&base, KEY_VAR, 1)
                .build(),
        );
    }

    pub(crate) fn write_config(&self, text: &str) {
        std::fs::write(self.config_path(), text).unwrap();
    }

    pub(crate) fn config_path(&self) -> std::path::PathBuf {
        self.cfg.path().join("warden.toml")
    }

    pub(crate) fn review(&self, args: &[&str]) -> (i32, String, String) {
        let cfg = self.config_path();
        let mut full = vec!["review", "-c", cfg.to_str().unwrap()];
        full.extend_from_slice(args);
        let out = self
            .repo
            .warden(&full)
            .env(KEY_VAR, CANARY)
            .output()
            .unwrap();
        let stdout = stdout_of(&out);
        let stderr = stderr_of(&out);
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            !stdout.contains(CANARY) && !stderr.contains(CANARY),
            "the key leaked"
        );
        (out.status.code().unwrap_or(-1), stdout, stderr)
    }

    pub(crate) fn review_json(&self, args: &[&str]) -> (i32, Value) {
        let mut full = vec!["--json", "--skill", "code-review"];
        full.extend_from_slice(args);
        let (code, out, err) = self.review(&full);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        assert_valid(&report_schema(), &v);
        (code, v)
    }
}

fn statuses(v: &Value) -> Vec<String> {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_complete_review_with_findings_exits_1() {
    let s = Session::new(2);
    s.fake.script(
        "primary",
        vec![Behavior::Answer(findings_answer(json!([finding(
            11,
            "high",
            "Off-by-one in the loop"
        )])))],
    );
    let (code, v) = s.review_json(&[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["outcome"], "complete");
    assert_eq!(v["summary"]["reviewed"], 2);
    assert_eq!(v["findings"].as_array().unwrap().len(), 2);
    assert_eq!(v["findings"][0]["route"], "primary");
    assert_eq!(v["routes"]["primary"]["ok"], 2);
    // The key went to the provider, in its header.
    assert_eq!(
        s.fake.requests()[0].header("authorization"),
        Some(format!("Bearer {CANARY}").as_str())
    );
    // Below --fail-on it is a success.
    let (code, _) = s.review_json(&["--fail-on", "critical"]);
    assert_eq!(code, 0);
}

#[test]
fn a_clean_complete_review_exits_0() {
    let s = Session::new(2);
    let (code, out, _) = s.review(&["--skill", "code-review", "--color", "never"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("No findings in the 2 reviewed units"), "{out}");
    assert!(!out.contains("NOT REVIEWED"), "{out}");
}

#[test]
fn a_partial_review_exits_3_with_a_banner_statuses_and_sarif_notifications() {
    let s = Session::new(3);
    // The first request is answered; the rest are rejected as malformed (not retried).
    let script = || {
        vec![
            Behavior::Answer(findings_answer(json!([]))),
            Behavior::status(400),
        ]
    };
    s.fake.script("primary", script());
    let (code, v) = s.review_json(&[]);
    assert_eq!(code, 3);
    assert_eq!(v["outcome"], "partial");
    let mut st = statuses(&v);
    st.sort();
    assert_eq!(st, ["failed", "failed", "reviewed"]);
    s.fake.script("primary", script());
    let (code, text, _) = s.review(&["--skill", "code-review", "--color", "never"]);
    assert_eq!(code, 3);
    assert!(text.contains("NOT REVIEWED: 2 of 3 units"), "{text}");
    assert!(
        text.contains("failed: bad_request is not retried"),
        "{text}"
    );
    s.fake.script("primary", script());
    let (code, sarif, _) = s.review(&["--skill", "code-review", "--format", "sarif"]);
    assert_eq!(code, 3);
    let sarif: Value = serde_json::from_str(&sarif).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let inv = &sarif["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    assert_eq!(
        inv["toolExecutionNotifications"].as_array().unwrap().len(),
        2
    );
}

#[test]
fn when_every_route_is_down_nothing_is_claimed_reviewed() {
    let s = Session::new(2);
    s.fake.script("primary", vec![Behavior::status(503)]);
    // 502, not 529: a 529 is back-pressure since docs/design.md §13 (a wait, tested in
    // engine_backpressure), and this test is about routes that are down.
    s.fake.script("fallback", vec![Behavior::status(502)]);
    let (code, v) = s.review_json(&[]);
    assert_eq!(code, 3);
    assert_eq!(v["outcome"], "unavailable");
    assert_eq!(v["summary"]["reviewed"], 0);
    assert!(statuses(&v).iter().all(|s| s == "unavailable"), "{v}");
    assert!(v["units"][0]["attempts"].as_array().unwrap().len() == 2);
    let (_, text, _) = s.review(&["--skill", "code-review", "--color", "never"]);
    assert!(
        text.contains("NOT REVIEWED: 2 of 2 units") && text.contains("UNAVAILABLE"),
        "{text}"
    );
    assert!(
        !text.contains("No findings in the"),
        "never a clean review: {text}"
    );
}

#[test]
fn a_missing_key_is_a_config_error_naming_the_variable() {
    let s = Session::new(1);
    s.write_config(
        "version = 1\n[[routes]]\nname = \"primary\"\nprovider = \"openrouter\"\nmodel = \"m\"\napiKeyEnv = \"WARDEN_NOT_SET_KEY\"\n",
    );
    let cfg = s.config_path();
    let out = s
        .repo
        .warden(&["review", "-c", cfg.to_str().unwrap()])
        .env_remove("WARDEN_NOT_SET_KEY")
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("WARDEN_NOT_SET_KEY") && err.contains("route `primary`"),
        "{err}"
    );
}

#[test]
fn no_config_explains_how_to_configure_and_how_to_try_the_sim() {
    let r = Repo::new();
    r.write("a.rs", "fn a() {}\n").commit_all("base");
    r.write("a.rs", "fn a() { b() }\n");
    let out = r.warden(&["review"]).output().unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("warden review --sim") && err.contains("warden init"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn sigterm_mid_run_writes_the_report_with_findings_so_far_and_exits_143() {
    let s = Session::new(4);
    let found = Behavior::Answer(findings_answer(json!([finding(
        11,
        "medium",
        "kept after SIGTERM"
    )])));
    s.fake
        .script("primary", vec![found.clone(), found, Behavior::Hang]);
    s.config(&[
        ("firstTokenTimeout", "30s"),
        ("requestTimeout", "30s"),
        ("hunkBudget", "60s"),
        ("reviewBudget", "60s"),
    ]);
    let out_file = s.cfg.path().join("report.json");
    let bin = assert_cmd::cargo::cargo_bin("warden");
    let child = std::process::Command::new(bin)
        .current_dir(s.repo.path())
        .args(["review", "--json", "--skill", "code-review", "-c"])
        .arg(s.config_path())
        .arg("-o")
        .arg(&out_file)
        .env(KEY_VAR, CANARY)
        .env("WARDEN_CACHE_DIR", fresh_cache_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while s.fake.requests_for("primary").len() < 3 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        s.fake.requests_for("primary").len(),
        3,
        "the third request should be hanging"
    );
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_exit(&out, 143);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_valid(&report_schema(), &v);
    assert_eq!(v["interrupted"], true);
    let mut st = statuses(&v);
    st.sort();
    assert_eq!(st, ["cancelled", "reviewed", "reviewed", "skipped"]);
    assert_eq!(
        v["findings"].as_array().unwrap().len(),
        2,
        "findings received before the signal are kept"
    );
    // The hanging request's connection was closed.
    let reqs = s.fake.wait_all_closed(Duration::from_secs(2));
    assert!(reqs.iter().all(|r| r.closed()));
}

#[test]
fn a_closed_stdout_exits_quietly() {
    let out = std::process::Command::new("bash")
        .args(["-o", "pipefail", "-c"])
        .arg(format!(
            "{} review --sim --diff {} --json -q | head -c 10",
            assert_cmd::cargo::cargo_bin("warden").display(),
            fixture("demo.diff").display()
        ))
        .env("WARDEN_CACHE_DIR", fresh_cache_dir())
        .output()
        .unwrap();
    assert_eq!(out.stdout.len(), 10);
    let err = stderr_of(&out);
    assert!(
        !err.contains("error") && !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    // The exit status is warden's own (1: the demo has high findings), not a pipe error.
    assert_exit(&out, 1);
}

#[test]
fn the_sim_reviews_the_demo_diff_with_no_key_and_no_network() {
    let (code, v) = {
        let out = warden()
            .args(["review", "--sim", "--diff"])
            .arg(fixture("demo.diff"))
            .arg("--json")
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        )
    };
    assert_valid(&report_schema(), &v);
    assert_eq!(code, 1);
    assert_eq!(v["outcome"], "complete");
    let titles: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert!(
        titles.contains(&"SQL query built by string concatenation"),
        "{titles:?}"
    );
    // An outage on the primary: every unit fails over and is still reviewed.
    let out = warden()
        .args(["review", "--sim=outage", "--json", "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "complete");
    assert!(
        v["routes"]["sim-primary"]["failoversFrom"]
            .as_u64()
            .unwrap()
            >= 1
    );
    assert!(
        v["units"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["route"] == "sim-fallback")
    );
}

#[test]
fn github_format_annotates_and_appends_the_step_summary() {
    let s = Session::new(1);
    s.fake.script(
        "primary",
        vec![Behavior::Answer(findings_answer(json!([finding(
            11,
            "high",
            "Bad, very: bad"
        )])))],
    );
    let summary = s.cfg.path().join("summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let out = s
        .repo
        .warden(&[
            "review",
            "--format",
            "github",
            "--skill",
            "code-review",
            "-c",
            s.config_path().to_str().unwrap(),
        ])
        .env(KEY_VAR, CANARY)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_exit(&out, 1);
    let gh = String::from_utf8(out.stdout).unwrap();
    assert!(gh.contains("::error file=src/f0.rs,line=11,endLine=11,title=[high] Bad%2C very%3A bad (code-review)::"), "{gh}");
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("# earlier step\n## warden review"), "{md}");
    assert!(md.contains("| primary | 1 | 1 |"), "{md}");
}

#[test]
fn the_key_never_appears_in_any_output_even_when_the_provider_echoes_it() {
    let s = Session::new(2);
    let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {CANARY}"}}}}"#);
    s.fake
        .script("primary", vec![Behavior::status_with(401, &[], &echo)]);
    s.fake
        .script("fallback", vec![Behavior::status_with(403, &[], &echo)]);
    let out_file = s.cfg.path().join("out.sarif");
    for args in [
        vec!["--json"],
        vec!["-v", "--color", "always"],
        vec!["--format", "github"],
        vec!["--format", "sarif", "-o", out_file.to_str().unwrap()],
    ] {
        let (code, _, _) = s.review(&args); // asserts no canary on stdout/stderr
        assert_eq!(code, 2, "every attempt failed on its key: setup, {args:?}");
    }
    assert!(!std::fs::read_to_string(&out_file).unwrap().contains(CANARY));
    assert!(s.fake.requests().iter().any(|r| {
        r.header("authorization")
            .is_some_and(|h| h.contains(CANARY))
    }));
}

#[test]
fn consolidated_skills_share_one_request_per_chunk_and_findings_keep_their_skill() {
    let cfg = tempfile::tempdir().unwrap();
    let path = cfg.path().join("warden.toml");
    std::fs::write(
        &path,
        "version = 1\n[[skills]]\nname = \"code-review\"\nconsolidate = true\n[[skills]]\nname = \"security-review\"\nconsolidate = true\n\
         [[routes]]\nname = \"sim\"\nprovider = \"sim\"\nprofile = \"healthy\"\ntimeScale = 600\n",
    )
    .unwrap();
    let plan = warden()
        .args(["plan", "--json", "-c", path.to_str().unwrap(), "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let plan: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let units = plan["units"].as_array().unwrap();
    assert_eq!(
        units.len() as u64,
        plan["totals"]["chunks"].as_u64().unwrap(),
        "one unit per chunk"
    );
    assert_eq!(
        units[0]["skills"],
        json!(["code-review", "security-review"])
    );

    let out = warden()
        .args(["review", "--json", "-c", path.to_str().unwrap(), "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&report_schema(), &v);
    assert_eq!(v["outcome"], "complete");
    // Three chunks: web/schema.gen.js is skipped as generated because the patch shows
    // its "DO NOT EDIT" marker on the old side (a context line); a marker only on added
    // lines would not exempt it (a change cannot exempt itself).
    assert_eq!(v["summary"]["units"], 3);
    let skill_of = |title: &str| {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["title"] == title)
            .map(|f| f["skill"].as_str().unwrap().to_string())
    };
    assert_eq!(
        skill_of("SQL query built by string concatenation").as_deref(),
        Some("security-review")
    );
    assert_eq!(
        skill_of("unwrap() can panic on bad input").as_deref(),
        Some("code-review")
    );
}

#[test]
fn the_verification_pass_removes_rejected_findings_and_is_shed_first() {
    let s = Session::new(1);
    let (two, confirmed) = real_bug_and_false_alarm();
    s.fake.script(
        "primary",
        vec![Behavior::Answer(two.clone()), Behavior::Answer(confirmed)],
    );
    let cfg = std::fs::read_to_string(s.config_path()).unwrap();
    s.write_config(&cfg.replacen(
        "version = 1\n",
        "version = 1\n[defaults.verification]\nenabled = true\n",
        1,
    ));
    let (code, v) = s.review_json(&[]);
    assert_eq!(code, 1);
    assert_eq!(v["outcome"], "complete");
    let titles: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Real bug"]);
    assert_eq!(v["findings"][0]["verification"], "confirmed");
    assert_eq!(v["verification"]["rejected"], 1);
    assert_eq!(
        s.fake.requests_for("primary").len(),
        2,
        "one review request, one verification request"
    );
    // The verification request carries the claimed findings as data.
    let body = s.fake.requests_for("primary")[1].body.to_string();
    assert!(
        body.contains("False alarm") && body.contains("verification pass"),
        "{body}"
    );

    // When the review leaves less than one hunk budget, verification is shed: both
    // findings stay, marked unverified.
    let slow = Behavior::DelayHeaders(Duration::from_millis(1500), Box::new(Behavior::Answer(two)));
    s.fake.script("primary", vec![slow]);
    s.config(&[
        ("reviewBudget", "4s"),
        ("hunkBudget", "3s"),
        ("requestTimeout", "3s"),
        ("firstTokenTimeout", "3s"),
    ]);
    let cfg = std::fs::read_to_string(s.config_path()).unwrap();
    s.write_config(&cfg.replacen(
        "version = 1\n",
        "version = 1\n[defaults.verification]\nenabled = true\n",
        1,
    ));
    let before = s.fake.requests_for("primary").len();
    let (code, v) = s.review_json(&[]);
    assert_eq!(code, 1);
    assert_eq!(
        v["outcome"], "complete",
        "verification is optional: shedding it does not make the review partial"
    );
    assert_eq!(v["findings"].as_array().unwrap().len(), 2);
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["verification"] == "unverified")
    );
    assert_eq!(v["verification"]["byStatus"]["skipped"], 1);
    assert_eq!(
        s.fake.requests_for("primary").len(),
        before + 1,
        "no verification request was sent"
    );
}

#[test]
fn progress_is_plain_timestamped_lines_on_a_pipe_and_silent_with_q() {
    let s = Session::new(2);
    let (_, _, stderr) = s.review(&["--skill", "code-review", "--json"]);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!lines.is_empty(), "{stderr}");
    assert!(
        lines
            .last()
            .unwrap()
            .contains("2/2 units done (2 reviewed, 0 not)"),
        "{stderr}"
    );
    assert!(
        lines.iter().all(|l| l.contains("s] ")),
        "timestamped: {stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no escape codes on a pipe: {stderr:?}"
    );
    let (_, _, stderr) = s.review(&["--skill", "code-review", "--json", "-q"]);
    assert!(stderr.is_empty(), "{stderr}");
}

#[test]
fn init_writes_a_starter_that_works_and_refuses_to_overwrite() {
    let r = Repo::new();
    r.write("a.rs", "fn a() {}\n").commit_all("base");
    let out = r.warden(&["init"]).output().unwrap();
    assert_exit(&out, 0);
    assert!(r.path().join("warden.toml").is_file());
    let again = r.warden(&["init"]).output().unwrap();
    assert_exit(&again, 2);
    assert!(stderr_of(&again).contains("--force"));
    assert_eq!(
        r.warden(&["init", "--force"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
    // The starter's sim route reviews a change with no key.
    r.git(&["add", "warden.toml"]);
    r.git(&["commit", "-qm", "config"]);
    r.write("a.rs", "fn a() { let x = y.unwrap(); }\n");
    let out = r.warden(&["review", "--json", "-q"]).output().unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    assert_eq!(v["outcome"], "complete");
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["title"] == "unwrap() can panic on bad input")
    );
}

#[test]
fn a_route_forced_open_by_a_401_is_never_called_again_in_the_run_not_even_by_verification() {
    let s = Session::new(2);
    s.fake.script("primary", vec![Behavior::status(401)]);
    s.fake.script(
        "fallback",
        vec![Behavior::Answer(findings_answer(json!([finding(
            11, "high", "Real bug"
        )])))],
    );
    let cfg = std::fs::read_to_string(s.config_path()).unwrap();
    s.write_config(&cfg.replacen(
        "version = 1\n",
        "version = 1\n[defaults.verification]\nenabled = true\n",
        1,
    ));
    let (_, v) = s.review_json(&[]);
    assert_eq!(
        s.fake.requests_for("primary").len(),
        1,
        "one request, then the route is open for the whole run: {v}"
    );
    assert!(v["verification"]["units"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["routes"]["primary"]["calls"], 1);
    assert_eq!(v["routes"]["primary"]["breaker"]["state"], "forced_open");
    assert_eq!(v["routes"]["primary"]["breaker"]["opens"], 1);
}

/// No unit reviewed and every failure a setup error (a bad key, an unknown model, a refused
/// request): exit 2, naming it, where before it was 3 like an outage. One route down for
/// weather beside it keeps 3: then trying again later may help.
#[test]
fn a_review_that_fails_only_on_setup_exits_2_and_says_so() {
    let s = Session::new(2);
    s.fake.script("primary", vec![Behavior::status(401)]);
    s.fake.script("fallback", vec![Behavior::status(404)]);
    let (code, _, err) = s.review(&["-q"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no unit could be reviewed"), "{err}");
    assert!(
        err.contains("route `primary`") && err.contains("route `fallback`"),
        "{err}"
    );
    let (code, v) = s.review_json(&[]);
    assert_eq!(code, 2);
    assert_eq!(
        v["outcome"], "unavailable",
        "the outcome itself is unchanged: {v}"
    );
    // Weather beside setup: exit 3 as before.
    s.fake.script("primary", vec![Behavior::status(401)]);
    s.fake.script("fallback", vec![Behavior::status(503)]);
    let (code, _, err) = s.review(&["-q"]);
    assert_eq!(code, 3, "{err}");
    assert!(!err.contains("no unit could be reviewed"), "{err}");
}
