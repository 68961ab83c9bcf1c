//! A new user's first session with the real binary and the built-in simulator: what the
//! progress lines say, what the reports print, and how `-o` values are read.

use crate::report_formats::{assert_valid, sarif_schema};
use crate::support::{Repo, repo_adding};
use crate::support::{assert_exit, stderr_of, stdout_of};
use serde_json::Value;

/// A repository whose branch `feat` adds one source file (one chunk: 2 units with the
/// default skills) with an injectable SQL query the simulator reports.
fn repo_with_a_change() -> Repo {
    repo_adding("src/db.rs")
}

fn run(r: &Repo, args: &[&str]) -> (i32, String, String) {
    let out = r.warden(args).output().unwrap();
    (out.status.code().unwrap(), stdout_of(&out), stderr_of(&out))
}

/// `warden review main..feat --sim=healthy -q --format FORMAT`.
fn sim_review(r: &Repo, format: &str) -> (i32, String, String) {
    let args = [
        "review",
        "main..feat",
        "--sim=healthy",
        "-q",
        "--format",
        format,
    ];
    run(r, &args)
}

#[test]
fn progress_lines_start_once_the_plan_and_routes_are_known() {
    let r = repo_with_a_change();
    let (_, _, stderr) = run(&r, &["review", "main..feat", "--sim=healthy", "--json"]);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!lines.is_empty(), "{stderr}");
    for l in &lines {
        assert!(
            l.contains("/2 units done") && l.contains("sim-primary") && l.contains("sim-fallback"),
            "every status line has the plan's total and the routes: {stderr}"
        );
        assert!(!l.contains("0/0 units"), "{stderr}");
        assert!(!l.contains("budget left 0s"), "{stderr}");
    }
}

#[test]
fn reports_never_print_a_negative_zero_cost() {
    let r = repo_with_a_change();
    for format in ["json", "sarif"] {
        let (code, stdout, stderr) = sim_review(&r, format);
        assert_eq!(code, 1, "{stderr}");
        assert!(!stdout.contains("-0.0"), "{format}: {stdout}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        let summary = if format == "json" {
            &v["summary"]
        } else {
            &v["runs"][0]["invocations"][0]["properties"]["summary"]
        };
        let cost = summary["costUsd"].as_f64().unwrap();
        assert!(
            cost == 0.0 && cost.is_sign_positive(),
            "{format}: {summary}"
        );
    }
}

#[test]
fn a_mistyped_output_format_or_stdout_dash_is_refused_not_made_a_file() {
    let r = repo_with_a_change();
    for (spec, says) in [
        ("sarf=w.sarif", "unknown format `sarf`"),
        ("xml=w.xml", "unknown format `xml`"),
        ("json=-", "use --format json"),
        ("-", "leave out -o"),
    ] {
        let (code, stdout, stderr) =
            run(&r, &["review", "main..feat", "--sim=healthy", "-o", spec]);
        assert_eq!(code, 2, "{spec}: {stderr}");
        assert!(stdout.is_empty(), "{spec}: {stdout}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains("--output") && stderr.contains(says),
            "{spec}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    for left in ["sarf=w.sarif", "xml=w.xml", "-"] {
        assert!(!r.path().join(left).exists(), "{left} was created");
    }
    // A path with `=` in it is still a path when it looks like one.
    let (code, _, stderr) = run(
        &r,
        &[
            "review",
            "main..feat",
            "--sim=healthy",
            "-q",
            "-o",
            "./a=b.txt",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    let text = std::fs::read_to_string(r.path().join("a=b.txt")).unwrap();
    assert!(text.starts_with("warden review: main..feat"), "{text}");
}

#[test]
fn file_errors_of_plan_and_merge_name_the_flag_or_file_and_the_fix() {
    let r = repo_with_a_change();
    let missing = r.path().join("no/such/dir/plan.json");
    let missing = missing.to_str().unwrap();
    let (code, stdout, stderr) = run(&r, &["plan", "main..feat", "--json", "-o", missing]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with(&format!("error: -o {missing}: cannot write the file ("))
            && stderr.contains("create its directory"),
        "{stderr}"
    );
    let gone = r.path().join("shard-1.json");
    let gone = gone.to_str().unwrap();
    let (code, _, stderr) = run(&r, &["merge", gone]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: {gone}: cannot read the file ("))
            && stderr.contains("warden review --shard K/N --json"),
        "{stderr}"
    );
}

#[test]
fn sarif_locations_are_uri_references_and_not_rooted_at_the_filesystem_root() {
    let r = repo_adding("src/my db #1 ü.rs");
    let (code, stdout, stderr) = sim_review(&r, "sarif");
    assert_eq!(code, 1, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_valid(&sarif_schema(), &v);
    let run0 = &v["runs"][0];
    let results = run0["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{stdout}");
    for res in results {
        let loc = &res["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(loc["uri"], "src/my%20db%20%231%20%C3%BC.rs", "{loc}");
        assert_eq!(loc["uriBaseId"], "%SRCROOT%");
    }
    let base = &run0["originalUriBaseIds"]["%SRCROOT%"];
    assert!(
        base.get("uri").is_none(),
        "no made-up file:/// root: {base}"
    );
    // The text report still shows the path as it is.
    let (_, text, _) = run(&r, &["review", "main..feat", "--sim=healthy", "-q"]);
    assert!(text.contains("\nsrc/my db #1 ü.rs\n"), "{text}");
}

#[test]
fn a_command_after_options_is_a_usage_error_that_says_where_it_goes() {
    let r = repo_with_a_change();
    let dir = r.path().to_str().unwrap();
    let out = crate::support::warden()
        .args(["-C", dir, "plan", "main..feat"])
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(out.stdout.is_empty());
    assert!(
        err.starts_with("error: `plan` comes after options")
            && err.contains("`warden plan [OPTIONS]`")
            && err.contains("`warden review plan`"),
        "{err}"
    );
    // Options before a target still review it.
    let out = crate::support::warden()
        .args(["-C", dir, "main..feat", "--sim=healthy", "-q"])
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert!(stdout_of(&out).starts_with("warden review: main..feat"));
}

#[test]
fn the_same_line_twice_gives_two_code_scanning_fingerprints() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    r.git(&["checkout", "-q", "-b", "feat"]);
    let twice = "fn f() {\n    let a = x.unwrap();\n    g();\n    let a = x.unwrap();\n}\n";
    r.write("src/twice.rs", twice).commit_all("change");
    let (_, stdout, stderr) = sim_review(&r, "sarif");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let results = v["runs"][0]["results"].as_array().unwrap();
    let lines: Vec<u64> = results
        .iter()
        .map(|x| {
            x["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(lines, [2, 4], "{stdout}");
    let prints: Vec<&str> = results
        .iter()
        .map(|x| {
            x["partialFingerprints"]["wardenFinding/v1"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_ne!(prints[0], prints[1], "one alert would hide the other");
    assert_eq!(prints[1], format!("{}-2", prints[0]));
    // GitLab's fingerprints follow the same rule.
    let (_, stdout, _) = sim_review(&r, "gitlab");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let gl: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["fingerprint"].as_str().unwrap())
        .collect();
    assert_eq!(gl, [format!("W{}", prints[0]), format!("W{}", prints[1])]);
}

#[test]
fn counts_of_one_are_singular_in_the_text_report_and_the_closing_notice() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    r.git(&["checkout", "-q", "-b", "feat"]);
    r.write("src/one.rs", "fn f() {\n    let a = x.unwrap();\n}\n")
        .write("logo.png", [0x89, b'P', b'N', b'G', 0, 1, 2, 0])
        .commit_all("change");
    let (code, text, stderr) = sim_review(&r, "text");
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("\n1 file skipped before review"), "{text}");
    assert!(text.contains(" 1 finding in "), "{text}");
    let (_, gh, _) = sim_review(&r, "github");
    assert!(
        gh.ends_with("::notice title=warden::review complete: 2 of 2 units reviewed, 1 finding\n"),
        "{gh}"
    );
}
