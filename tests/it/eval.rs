//! `warden eval` end to end: the real binary over case folders, JSONL corpora and a
//! repository's history, against the fake provider as a scripted oracle (it finds the
//! references chosen, misses the others, adds false positives at chosen lines), so every
//! figure is asserted exactly.

use crate::support::Toml;
use crate::support::fake_provider::{Behavior, FakeProvider};
use crate::support::oracle::{Oracle, case_folder};
use crate::support::{Repo, warden};
use crate::support::{assert_exit, stderr_of, stdout_of};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// A corpus folder and a config over the fake's two routes (cap 4 each).
struct Bench {
    fake: FakeProvider,
    dir: tempfile::TempDir,
}

impl Bench {
    fn new(oracle: &Oracle) -> Bench {
        let fake = FakeProvider::start();
        oracle.install(&fake);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("cases")).unwrap();
        let toml = Toml::new()
            .fake_routes(&fake.base_url(), "EVAL_TEST_KEY", 4)
            .exec(&[("maxAttempts", "1")])
            .build();
        std::fs::write(dir.path().join("eval.toml"), toml).unwrap();
        Bench { fake, dir }
    }

    fn cases(&self) -> std::path::PathBuf {
        self.dir.path().join("cases")
    }

    /// `warden eval cases/ -c eval.toml --skill code-review --json ARGS`: (exit, report).
    fn eval(&self, args: &[&str]) -> (i32, Value) {
        let out = warden()
            .current_dir(self.dir.path())
            .env("EVAL_TEST_KEY", "sk-test")
            .args([
                "eval",
                "cases",
                "-c",
                "eval.toml",
                "--skill",
                "code-review",
                "--json",
                "-q",
            ])
            .args(args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let report = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout_of(&out), stderr_of(&out)));
        (out.status.code().unwrap_or(-1), report)
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a figure: {v}"))
}

fn schema_check(report: &Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/eval-report-v1.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn two_of_five_found_and_one_false_positive_give_f1_as_the_harmonic_mean() {
    // Precision 2/3 and recall 2/5 differ: F1 is 2PR/(P+R) = 0.5, not either of them
    // nor their arithmetic mean (0.533).
    let oracle = Oracle::new().finds("src/a.rs", &[10, 20, 5]);
    let b = Bench::new(&oracle);
    case_folder(
        &b.cases(),
        "five",
        "src/a.rs",
        60,
        &[(10, 10), (20, 20), (30, 30), (40, 40), (50, 50)],
    );
    let (code, r) = b.eval(&[]);
    assert_eq!(code, 0, "{r:#}");
    let o = &r["overall"];
    assert_eq!(
        (
            n(&o["truePositives"]),
            n(&o["falsePositives"]),
            n(&o["misses"])
        ),
        (2, 1, 3)
    );
    let (p, rc, f1) = (f(&o["precision"]), f(&o["recall"]), f(&o["f1"]));
    assert!((p - 2.0 / 3.0).abs() < 1e-3, "precision {p}");
    assert!((rc - 0.4).abs() < 1e-9, "recall {rc}");
    assert!(
        (f1 - 0.5).abs() < 1e-3,
        "f1 {f1} (precision {p}, recall {rc})"
    );
    assert!((f(&r["groups"][0]["f1"]) - 0.5).abs() < 1e-3, "{r:#}");
}

#[test]
fn three_of_five_found_and_two_false_positives_give_precision_recall_f1_of_point_six() {
    let oracle = Oracle::new().finds("src/a.rs", &[10, 20, 30, 5, 57]);
    let b = Bench::new(&oracle);
    case_folder(
        &b.cases(),
        "five",
        "src/a.rs",
        60,
        &[(10, 10), (20, 20), (30, 30), (40, 40), (50, 50)],
    );
    let (code, r) = b.eval(&[]);
    assert_eq!(code, 0, "{r:#}");
    let o = &r["overall"];
    assert_eq!(
        (
            n(&o["truePositives"]),
            n(&o["falsePositives"]),
            n(&o["misses"])
        ),
        (3, 2, 2)
    );
    assert_eq!(
        (f(&o["precision"]), f(&o["recall"]), f(&o["f1"])),
        (0.6, 0.6, 0.6)
    );
    assert_eq!(n(&o["notReviewed"]), 0);
    assert_eq!(f(&o["findingsPerCase"]), 5.0);
    // One skill, one route: its row is the overall figures.
    let groups = r["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:#?}");
    assert_eq!(
        (groups[0]["skill"].as_str(), groups[0]["route"].as_str()),
        (Some("code-review"), Some("primary"))
    );
    assert_eq!(f(&groups[0]["precision"]), 0.6);
    let verdicts: Vec<&str> = r["cases"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts.iter().filter(|v| **v == "true-positive").count(),
        3
    );
    schema_check(&r);
}

#[test]
fn the_line_window_edge_is_inclusive_and_the_flag_moves_it() {
    // References at 10 and 30; findings 3 lines below the first and 4 above the second.
    let oracle = Oracle::new().finds("src/w.rs", &[13, 26]);
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "window", "src/w.rs", 40, &[(10, 10), (30, 30)]);
    let (_, r) = b.eval(&[]);
    let o = &r["overall"];
    assert_eq!(
        (
            n(&o["truePositives"]),
            n(&o["falsePositives"]),
            n(&o["misses"])
        ),
        (1, 1, 1)
    );
    let (_, r) = b.eval(&["--line-window", "4"]);
    assert_eq!(n(&r["overall"]["truePositives"]), 2);
    let (_, r) = b.eval(&["--line-window", "0"]);
    assert_eq!(n(&r["overall"]["truePositives"]), 0);
    assert_eq!(r["settings"]["lineWindow"], 0);
}

#[test]
fn two_findings_on_one_bug_are_one_true_positive_and_one_duplicate() {
    let oracle = Oracle::new().finds("src/d.rs", &[11, 10]);
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "dup", "src/d.rs", 20, &[(10, 10)]);
    let (_, r) = b.eval(&[]);
    let o = &r["overall"];
    assert_eq!(
        (
            n(&o["truePositives"]),
            n(&o["falsePositives"]),
            n(&o["duplicates"])
        ),
        (1, 1, 1)
    );
    let findings = r["cases"][0]["findings"].as_array().unwrap();
    let at =
        |line: u64| findings.iter().find(|x| x["startLine"] == line).unwrap()["verdict"].clone();
    // The nearer one takes the bug.
    assert_eq!(at(10), "true-positive");
    assert_eq!(at(11), "duplicate");
}

#[test]
fn every_finding_on_a_clean_case_is_a_false_positive() {
    let oracle = Oracle::new()
        .finds("src/clean.rs", &[3, 7])
        .finds("src/bug.rs", &[5]);
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "a-clean", "src/clean.rs", 10, &[]);
    case_folder(&b.cases(), "b-bug", "src/bug.rs", 10, &[(5, 5)]);
    let (_, r) = b.eval(&[]);
    let o = &r["overall"];
    assert_eq!((n(&o["cases"]), n(&o["cleanCases"])), (2, 1));
    assert_eq!((n(&o["truePositives"]), n(&o["falsePositives"])), (1, 2));
    assert_eq!(f(&o["falsePositivesPerCleanCase"]), 2.0);
    assert_eq!(f(&o["precision"]), 0.333333);
    assert_eq!(f(&o["recall"]), 1.0);
    assert_eq!(r["corpus"]["cleanCases"], 1);
}

#[test]
fn a_judge_route_that_rejects_a_pair_turns_its_match_into_a_false_positive_and_a_miss() {
    // The judge says the finding at line 20 is another problem than the bug there.
    let oracle = Oracle::new()
        .finds("src/j.rs", &[10, 20])
        .judge(|pair| pair["finding"]["title"] != "problem at line 20");
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "judged", "src/j.rs", 30, &[(10, 10), (20, 20)]);
    let (_, without) = b.eval(&[]);
    assert_eq!(n(&without["overall"]["truePositives"]), 2);
    assert!(without["judge"].is_null());
    assert_eq!(oracle.judge_requests(), 0);
    let (_, r) = b.eval(&["--judge", "fallback"]);
    let o = &r["overall"];
    assert_eq!(
        (
            n(&o["truePositives"]),
            n(&o["falsePositives"]),
            n(&o["misses"])
        ),
        (1, 1, 1)
    );
    let j = &r["judge"];
    assert_eq!(
        (
            j["route"].as_str(),
            n(&j["pairs"]),
            n(&j["accepted"]),
            n(&j["rejected"]),
            n(&j["unjudged"])
        ),
        (Some("fallback"), 2, 1, 1, 0)
    );
    assert_eq!(oracle.judge_requests(), 1);
    // The judge's tokens are its own: the reviews' figures are the same with or without it.
    assert!(n(&j["inputTokens"]) > 0, "{j}");
    assert_eq!(o["inputTokens"], without["overall"]["inputTokens"]);
    schema_check(&r);
}

#[test]
fn a_judge_route_that_is_not_configured_is_a_usage_error_before_any_review() {
    let oracle = Oracle::new();
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "c", "src/c.rs", 5, &[(1, 1)]);
    let out = warden()
        .current_dir(b.dir.path())
        .args(["eval", "cases", "-c", "eval.toml", "--judge", "nope"])
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("--judge nope") && err.contains("primary, fallback"),
        "{err}"
    );
    assert!(b.fake.requests().is_empty());
}

#[test]
fn an_unreviewed_unit_keeps_its_references_apart_from_the_model_misses() {
    let oracle = Oracle::new()
        .finds("src/ok.rs", &[2])
        .fails("src/down.rs", Behavior::status(400));
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "a-ok", "src/ok.rs", 10, &[(2, 2), (8, 8)]);
    case_folder(&b.cases(), "b-down", "src/down.rs", 10, &[(4, 4), (6, 6)]);
    let (code, r) = b.eval(&[]);
    assert_eq!(
        code, 3,
        "something was not reviewed: exit 3 as a partial review"
    );
    let o = &r["overall"];
    assert_eq!(
        (
            n(&o["truePositives"]),
            n(&o["misses"]),
            n(&o["notReviewed"])
        ),
        (1, 1, 2)
    );
    assert_eq!(f(&o["recall"]), 0.5);
    assert_eq!(f(&o["recallOfAll"]), 0.25);
    let listed = r["notReviewed"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(
        (listed[0]["case"].as_str(), listed[0]["kind"].as_str()),
        (Some("b-down"), Some("unit"))
    );
    assert_eq!(n(&listed[0]["references"]), 2);
    assert_eq!(listed[0]["at"]["path"], "src/down.rs");
    // The skill's not-reviewed references sit in their own row, under no route.
    let row = r["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["route"].is_null())
        .expect("a not-reviewed row");
    assert_eq!((n(&row["notReviewed"]), n(&row["misses"])), (2, 0));
    let refs = r["cases"][1]["references"].as_array().unwrap();
    assert!(
        refs.iter().all(|x| x["result"] == "not-reviewed"),
        "{refs:#?}"
    );
}

#[test]
fn runs_3_give_each_figure_spread_over_the_runs() {
    // Three runs of one case: the oracle finds 3, then 2, then 1 of its 3 references.
    let oracle =
        Oracle::new().finds_per_call("src/s.rs", vec![vec![5, 10, 15], vec![5, 10], vec![5]]);
    let b = Bench::new(&oracle);
    case_folder(
        &b.cases(),
        "spread",
        "src/s.rs",
        20,
        &[(5, 5), (10, 10), (15, 15)],
    );
    let (_, r) = b.eval(&["--runs", "3"]);
    assert_eq!(r["runs"].as_array().unwrap().len(), 3);
    let recall = &r["spread"]["recall"];
    assert_eq!(
        (f(&recall["min"]), f(&recall["max"]), f(&recall["mean"])),
        (0.333333, 1.0, 0.666667)
    );
    assert_eq!(f(&recall["stdev"]), 0.272166);
    assert_eq!(n(&recall["runs"]), 3);
    // Pooled over the runs: 6 of 9.
    assert_eq!(
        (n(&r["overall"]["truePositives"]), n(&r["overall"]["cases"])),
        (6, 3)
    );
    assert_eq!(f(&r["spread"]["precision"]["min"]), 1.0);
}

#[test]
fn a_baseline_prints_each_figure_s_change() {
    let oracle = Oracle::new().finds_per_call("src/b.rs", vec![vec![5], vec![5, 9], vec![5, 9]]);
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "base", "src/b.rs", 12, &[(5, 5), (9, 9)]);
    let (_, first) = b.eval(&[]);
    std::fs::write(b.dir.path().join("before.json"), first.to_string()).unwrap();
    let (_, r) = b.eval(&["--baseline", "before.json"]);
    let change = |m: &str| {
        r["baseline"]["overall"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["metric"] == m)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (
            f(&change("recall")["before"]),
            f(&change("recall")["after"]),
            f(&change("recall")["change"])
        ),
        (0.5, 1.0, 0.5)
    );
    assert_eq!(f(&change("truePositives")["change"]), 1.0);
    schema_check(&r);
    // The text report says it too.
    let out = warden()
        .current_dir(b.dir.path())
        .args([
            "eval",
            "cases",
            "-c",
            "eval.toml",
            "--skill",
            "code-review",
            "-q",
            "--baseline",
            "before.json",
        ])
        .output()
        .unwrap();
    let text = stdout_of(&out);
    assert!(text.contains("against baseline before.json"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("recall ") && l.contains("(+0.5")),
        "{text}"
    );
}

#[test]
fn a_jsonl_corpus_with_a_missing_clone_or_commit_is_an_error_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repo::new();
    repo.write("a.py", "x = 1\n").commit_all("one");
    repo.write("a.py", "x = 2\n").commit_all("two");
    let clones = dir.path().join("clones");
    std::fs::create_dir_all(clones.join("acme")).unwrap();
    std::os::unix::fs::symlink(repo.path(), clones.join("acme/shop")).unwrap();
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let good = format!(
        r#"{{"repo": "acme/shop", "base_commit": "{head}^", "head_commit": "{head}", "reference_comments": []}}"#
    );
    let gone = r#"{"repo": "acme/shop", "base_commit": "HEAD", "head_commit": "0123456789abcdef0123456789abcdef01234567", "reference_comments": []}"#;
    let other =
        r#"{"repo": "https://github.com/acme/other.git", "base_commit": "a", "head_commit": "b"}"#;
    for (lines, want) in [
        (
            format!("{good}\n\n{gone}\n"),
            "corpus.jsonl:3: commit 0123456789abcdef0123456789abcdef01234567 is not in",
        ),
        (
            format!("{good}\n{other}\n"),
            "corpus.jsonl:2: no clone of https://github.com/acme/other.git under --repos",
        ),
        (
            format!("{good}\nnot json\n"),
            "corpus.jsonl:2: not a corpus case",
        ),
    ] {
        std::fs::write(dir.path().join("corpus.jsonl"), lines).unwrap();
        let out = warden()
            .current_dir(dir.path())
            .args(["eval", "--sim", "corpus.jsonl", "--repos", "clones"])
            .output()
            .unwrap();
        let err = assert_exit(&out, 2);
        assert!(err.contains(want), "want {want:?} in {err}");
    }
}

#[test]
fn the_bundled_demo_runs_in_both_shapes_with_the_simulator_and_gives_the_same_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/eval");
    let run = |args: &[&str]| -> Value {
        let out = warden()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["eval", "--sim", "--json", "-q"])
            .args(args)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        assert_exit(&out, 0);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let folders = run(&["fixtures/eval/cases"]);
    let clones = tempfile::tempdir().unwrap();
    let repo = clones.path().join("warden/eval-demo");
    let built = std::process::Command::new(root.join("build-repo.sh"))
        .arg(&repo)
        .output()
        .unwrap();
    assert_exit(&built, 0);
    let jsonl = run(&[
        "fixtures/eval/demo.jsonl",
        "--repos",
        clones.path().to_str().unwrap(),
    ]);
    for r in [&folders, &jsonl] {
        let o = &r["overall"];
        assert_eq!(n(&r["corpus"]["cases"]), 12);
        assert!(n(&r["corpus"]["cleanCases"]) >= 3);
        // The simulator finds some references, misses others and adds noise: the demo
        // shows every kind of result.
        assert!(
            n(&o["truePositives"]) > 0
                && n(&o["misses"]) > 0
                && n(&o["falsePositives"]) > 0
                && n(&o["duplicates"]) > 0,
            "{o:#}"
        );
        schema_check(r);
    }
    for k in [
        "truePositives",
        "falsePositives",
        "misses",
        "duplicates",
        "precision",
        "recall",
    ] {
        assert_eq!(folders["overall"][k], jsonl["overall"][k], "{k}");
    }
}

#[test]
fn from_history_reviews_each_fix_reversed_and_leaves_out_merges_reverts_and_whitespace_fixes() {
    let repo = Repo::new();
    let pager = |i: &str, tail: &str| {
        format!(
            "fn page(items: &[u32], n: usize) -> u32 {{\n    let i = {i};\n{tail}items[i]\n}}\n"
        )
    };
    repo.write("src/pager.rs", pager("n + 1", "    "))
        .write("src/lib.rs", "fn first(v: &[u32]) -> u32 {\n    v[0]\n}\n")
        .commit_all("add pager");
    repo.write("src/pager.rs", pager("n", "    "))
        .commit_all("fix: off by one in page");
    repo.write("src/pager.rs", pager("n", "\t"))
        .commit_all("fix: indentation");
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.write(
        "src/lib.rs",
        "fn first(v: &[u32]) -> u32 {\n    if v.is_empty() { return 0; }\n    v[0]\n}\n",
    )
    .commit_all("fix: guard empty input");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("README.md", "shop\n").commit_all("docs");
    repo.git(&[
        "merge",
        "--no-ff",
        "-q",
        "-m",
        "Merge branch 'fix-guard'",
        "topic",
    ]);
    repo.write("src/util.rs", "fn a() {}\n")
        .commit_all("add util");
    repo.write("src/util.rs", "fn a() { b() }\n")
        .commit_all("fix: call b");
    repo.git(&["revert", "--no-edit", "HEAD"]);
    repo.write("README.md", "the shop\n")
        .commit_all("fix typo in the readme");
    repo.write("src/new.rs", "fn n() {}\n")
        .commit_all("add a feature");

    let oracle = Oracle::new().finds("src/pager.rs", &[2]);
    let fake = FakeProvider::start();
    oracle.install(&fake);
    let cfg = tempfile::tempdir().unwrap();
    std::fs::write(
        cfg.path().join("eval.toml"),
        Toml::new()
            .fake_routes(&fake.base_url(), "EVAL_TEST_KEY", 4)
            .build(),
    )
    .unwrap();
    let out = warden()
        .current_dir(repo.path())
        .args([
            "eval",
            "--from-history",
            "10",
            "--skill",
            "code-review",
            "--json",
            "-q",
            "-c",
        ])
        .arg(cfg.path().join("eval.toml"))
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let r: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    schema_check(&r);
    assert_eq!(r["corpus"]["shape"], "history");
    let left_out = &r["corpus"]["leftOut"];
    assert_eq!(
        (
            n(&left_out["merge"]),
            n(&left_out["revert"]),
            n(&left_out["whitespace only"]),
            n(&left_out["no code file"])
        ),
        (1, 1, 1, 1),
        "{left_out}"
    );
    let cases = r["cases"].as_array().unwrap();
    let ids: Vec<&str> = cases.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let case = |subject: &str| {
        cases
            .iter()
            .find(|c| c["id"].as_str().unwrap().ends_with(subject))
            .unwrap_or_else(|| panic!("{subject} in {ids:?}"))
    };
    // The fix changed line 2; reversed, the review puts `n + 1` back on line 2.
    let off_by_one = case("fix: off by one in page");
    let refs = off_by_one["references"].as_array().unwrap();
    assert_eq!(
        (
            refs.len(),
            refs[0]["path"].as_str(),
            n(&refs[0]["startLine"]),
            n(&refs[0]["endLine"])
        ),
        (1, Some("src/pager.rs"), 2, 2)
    );
    assert_eq!(refs[0]["result"], "found");
    let prompt = oracle.prompts("src/pager.rs").join("\n");
    assert!(
        prompt.contains("+     let i = n + 1;"),
        "the bug is the change under review:\n{prompt}"
    );
    assert!(prompt.contains("-     let i = n;"), "{prompt}");
    // A fix that only inserted a line points at the lines around the gap, on the old side.
    let guard = case("fix: guard empty input")["references"][0].clone();
    assert_eq!(
        (
            guard["path"].as_str(),
            n(&guard["startLine"]),
            n(&guard["endLine"])
        ),
        (Some("src/lib.rs"), 1, 2)
    );
    assert!(case("fix: call b")["references"].as_array().unwrap().len() == 1);
}

/// A clean case whose review did not review it is no evidence of zero false positives:
/// false positives per clean case are over clean cases reviewed (before: 0.00 over a clean
/// case no model saw).
#[test]
fn false_positives_per_clean_case_count_only_clean_cases_reviewed() {
    let oracle = Oracle::new()
        .fails("src/clean.rs", Behavior::status(500))
        .finds("src/bug.rs", &[5]);
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "a-clean", "src/clean.rs", 10, &[]);
    case_folder(&b.cases(), "b-bug", "src/bug.rs", 10, &[(5, 5)]);
    let (code, r) = b.eval(&[]);
    assert_eq!(code, 3, "the clean case was not reviewed");
    let o = &r["overall"];
    assert_eq!(n(&o["cleanCases"]), 0, "{o}");
    assert!(o["falsePositivesPerCleanCase"].is_null(), "{o}");
    assert_eq!(r["corpus"]["cleanCases"], 1, "the corpus still has one");
}

/// A bad key is a setup error: exit 2 as `warden review` gives, not 3 per case.
#[test]
fn a_bad_key_exits_2_as_review_does() {
    let oracle = Oracle::new()
        .fails("src/a.rs", Behavior::status(401))
        .fails("src/b.rs", Behavior::status(401));
    let b = Bench::new(&oracle);
    case_folder(&b.cases(), "a", "src/a.rs", 10, &[(2, 2)]);
    case_folder(&b.cases(), "b", "src/b.rs", 10, &[]);
    let out = warden()
        .current_dir(b.dir.path())
        .env("EVAL_TEST_KEY", "sk-bad")
        .args([
            "eval",
            "cases",
            "-c",
            "eval.toml",
            "--skill",
            "code-review",
            "-q",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("every case review reviewed nothing") && err.contains("route"),
        "{err}"
    );
}

/// `--strict-config` is a flag of every command that reads the config, and an unknown key
/// under it (or `strictConfig = true`) is exit 2 naming file and line, eval included
/// (before: skills and cache refused the flag; eval failed each case, exit 3).
#[test]
fn strict_config_is_the_same_for_every_command() {
    let r = Repo::new();
    r.config("version = 1\n[defaults]\nfailOnn = \"high\"\n")
        .write("src/a.rs", "fn a() {}\n")
        .commit_all("base");
    let cases = r.path().join("cases");
    case_folder(&cases, "a", "src/a.rs", 10, &[]);
    let commands: [&[&str]; 5] = [
        &["plan"],
        &["review", "--sim"],
        &["skills"],
        &["cache", "path"],
        &["eval", "--sim", "cases"],
    ];
    for cmd in commands {
        let out = r.warden(cmd).arg("--strict-config").output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(err.contains("warden.toml:3"), "{cmd:?}: {err}");
        assert!(err.contains("failOnn"), "{cmd:?}: {err}");
    }
    r.config("version = 1\nstrictConfig = true\n[defaults]\nfailOnn = \"high\"\n");
    let out = r.warden(&["eval", "--sim", "cases"]).output().unwrap();
    assert_exit(&out, 2);
}
