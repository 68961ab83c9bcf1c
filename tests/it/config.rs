//! Warden v1 configs load; our keys validate; unknown keys warn once by name.

use crate::support::*;

const WARDEN_V1: &str = r#"version = 1

[defaults]
failOn = "medium"
reportOn = "low"
minConfidence = "medium"
maxFindings = 20
ignorePaths = ["docs/**"]
defaultBranch = "main"
model = "anthropic/claude-sonnet-4-5"
maxTurns = 30
runtime = "claude"
batchDelayMs = 100

[defaults.agent]
maxTurns = 10
effort = "high"

[defaults.auxiliary]
model = "x"

[defaults.verification]
enabled = true

[defaults.scan]
maxFiles = 150
maxChangedLines = 10000
maxFileBytes = 1048576
maxFileLines = 3000

[defaults.chunking]
maxContextFiles = 10
filePatterns = [{ pattern = "**/*.sql", mode = "whole-file" }]

[defaults.chunking.coalesce]
enabled = true
maxGapLines = 30
maxChunkSize = 8000

[[skills]]
name = "security-review"
paths = ["src/**"]
failOn = "high"

[[skills.triggers]]
type = "pull_request"
actions = ["opened"]

[[skills]]
name = "team-skill"
remote = "acme/skills@abc123"

[runner]
concurrency = 3

[logs]
retentionDays = 7
"#;

#[test]
fn a_warden_v1_file_loads_and_names_each_ignored_key_once() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.config(WARDEN_V1);
    r.write("src/a.rs", source_lines(3, "a"));
    let out = r.warden(&["plan", "--json"]).output().unwrap();
    let stderr = assert_exit(&out, 0);
    for key in [
        "defaults.runtime",
        "defaults.batchDelayMs",
        "defaults.agent.effort",
        "defaults.auxiliary",
        "logs",
    ] {
        assert_eq!(
            stderr.matches(&format!("`{key}`")).count(),
            1,
            "{key} in:\n{stderr}"
        );
    }
    // Warden's turn caps are the tool loop's maxTurns now (docs/design.md §14): not warned.
    for key in ["defaults.maxTurns", "defaults.agent.maxTurns"] {
        assert!(!stderr.contains(&format!("`{key}`")), "{key} in:\n{stderr}");
    }
    assert!(
        stderr.contains("team-skill"),
        "remote skill warned: {stderr}"
    );
    assert!(stderr.contains("pull_request"), "trigger warned: {stderr}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["skills"], serde_json::json!(["security-review"]));
    assert!(planned(&plan, "src/a.rs").is_some());

    // -q keeps stderr clean of Warden settings warden does not use (they are no mistake;
    // unknown keys are shown even then: see below).
    let out = r.warden(&["plan", "--json", "-q"]).output().unwrap();
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));
    // A review's report keeps the same warnings, each once, even when -q silences stderr.
    let out = r
        .warden(&["review", "--sim", "--json", "-q"])
        .output()
        .unwrap();
    assert!(out.stderr.is_empty());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().all(|w| w["source"] == "config"),
        "{warnings:#?}"
    );
    for key in ["defaults.runtime", "logs"] {
        let named = warnings
            .iter()
            .filter(|w| w["message"].as_str().unwrap().contains(&format!("`{key}`")))
            .count();
        assert_eq!(named, 1, "{key} in {warnings:#?}");
    }
}

#[test]
fn an_explicit_config_file_is_used_over_discovery() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.config("version = 1\n[defaults]\nignorePaths = [\"src/**\"]\n");
    r.write("other.toml", "version = 1\n");
    r.write("src/a.rs", source_lines(3, "a"));
    assert_eq!(
        skipped_reason(&r.plan(&[]), "src/a.rs").as_deref(),
        Some("ignored")
    );
    assert!(planned(&r.plan(&["-c", "other.toml"]), "src/a.rs").is_some());
}

#[test]
fn the_example_config_loads_without_warnings() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("warden.toml.example"),
    )
    .unwrap();
    r.config(&example);
    let out = r.warden(&["plan", "--json"]).output().unwrap();
    assert_exit(&out, 0);
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));
}

// ---- policy resolved once; Warden's earlier layout ---------------------------------------

/// `warden ARGS` on the demo diff with `config` (outside any repository); (code, JSON, stderr).
fn demo(config: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warden.toml");
    std::fs::write(&path, config).unwrap();
    let out = warden()
        .current_dir(dir.path())
        .args(args)
        .args(["--json", "-c", path.to_str().unwrap(), "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code().unwrap(), v, stderr)
}

fn severities(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["severity"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn with_every_skill_at_fail_on_off_a_high_finding_exits_0() {
    let cfg = "version = 1\n[defaults]\nfailOn = \"high\"\n\
               [[skills]]\nname = \"code-review\"\nfailOn = \"off\"\n\
               [[skills]]\nname = \"security-review\"\nfailOn = \"off\"\n";
    let (code, v, err) = demo(cfg, &["review", "--sim"]);
    assert_eq!(v["outcome"], "complete", "{err}");
    assert!(severities(&v).contains(&"high".to_string()), "{v}");
    assert_eq!(code, 0, "failOn = off on every skill: {v}");
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["failsRun"] == false)
    );
    // One skill that fails on high is enough to fail the run.
    let cfg = cfg.replacen("failOn = \"off\"", "failOn = \"high\"", 2);
    let cfg = cfg.replacen(
        "failOn = \"high\"\n[[skills]]\nname = \"code-review\"\nfailOn = \"high\"",
        "failOn = \"high\"\n[[skills]]\nname = \"code-review\"\nfailOn = \"off\"",
        1,
    );
    let (code, v, _) = demo(&cfg, &["review", "--sim"]);
    assert_eq!(code, 1, "security-review fails on its high findings: {v}");
    // The command line wins over every skill.
    let (code, _, _) = demo(&cfg, &["review", "--sim", "--fail-on", "off"]);
    assert_eq!(code, 0);
}

#[test]
fn per_skill_report_on_and_max_findings_filter_the_report() {
    let cfg = "version = 1\n\
               [[skills]]\nname = \"code-review\"\nreportOn = \"high\"\n\
               [[skills]]\nname = \"security-review\"\nmaxFindings = 1\n";
    let (_, v, _) = demo(cfg, &["review", "--sim", "--fail-on", "off"]);
    let by_skill = |s: &str| -> Vec<String> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["skill"] == s)
            .map(|f| f["severity"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        by_skill("code-review").is_empty(),
        "medium and info are below its reportOn: {v}"
    );
    assert_eq!(by_skill("security-review").len(), 1, "{v}");
}

/// Warden's own repository's config in early 2026 (earlier layout), with its skills.
const EARLIER_LAYOUT: &str = r#"version = 1

[defaults.output]
# Fail check on high+ severity findings (critical, high)
failOn = "high"
# Show annotations for medium+ severity findings
commentOn = "medium"

[[triggers]]
name = "find-bugs"
event = "pull_request"
actions = ["opened", "synchronize", "reopened"]
skill = "find-bugs"

[[triggers]]
name = "testing-guidelines"
event = "pull_request"
actions = ["opened", "synchronize", "reopened"]
skill = "testing-guidelines"

[triggers.filters]
paths = ["tests/**"]
"#;

fn earlier_layout_repo() -> Repo {
    let r = Repo::new();
    for skill in ["find-bugs", "testing-guidelines", "unused-skill"] {
        r.write(
            &format!(".warden/skills/{skill}/SKILL.md"),
            format!("---\nname: {skill}\ndescription: {skill}\n---\nReview the change.\n"),
        );
    }
    r.config(EARLIER_LAYOUT);
    r.write("src/users.py", "def f():\n    return 1\n");
    r.write("tests/test_users.py", "def test_f():\n    assert True\n");
    r.commit_all("base");
    r.write(
        "src/users.py",
        "def f(term):\n    query = \"SELECT id FROM users WHERE name = '\" + term + \"'\"\n    el.innerHTML = term\n    # TODO: paginate\n    return 1\n",
    );
    r.write(
        "tests/test_users.py",
        "def test_f():\n    assert f('x') == 1\n",
    );
    r
}

#[test]
fn warden_s_earlier_layout_runs_exactly_its_triggers_skills_with_its_output_thresholds() {
    let r = earlier_layout_repo();
    let out = r.warden(&["plan", "--json"]).output().unwrap();
    let stderr = assert_exit(&out, 0);
    assert!(
        !stderr.contains("unknown key"),
        "both layouts are understood: {stderr}"
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        plan["skills"],
        serde_json::json!(["find-bugs", "testing-guidelines"])
    );
    // [triggers.filters] paths: testing-guidelines only reviews tests/.
    for u in plan["units"].as_array().unwrap() {
        if u["skill"] == "testing-guidelines" {
            assert!(u["path"].as_str().unwrap().starts_with("tests/"), "{u}");
        }
    }

    let out = r.warden(&["review", "--sim", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "complete", "{v}");
    assert_eq!(v["failOn"], "high");
    assert_eq!(
        v["reportOn"], "medium",
        "commentOn is the lowest severity shown"
    );
    let skills: std::collections::BTreeSet<&str> = v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["skill"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["find-bugs", "testing-guidelines"].into());
    let sev = severities(&v);
    assert!(sev.contains(&"high".to_string()), "{v}");
    assert!(
        sev.iter()
            .all(|s| s == "high" || s == "medium" || s == "critical"),
        "nothing below commentOn: {sev:?}"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "failOn = high from [defaults.output]"
    );
}

#[test]
fn in_ci_earlier_layout_triggers_match_the_event_and_its_action() {
    let r = earlier_layout_repo();
    let cfg = EARLIER_LAYOUT.replacen(
        "event = \"pull_request\"\nactions = [\"opened\", \"synchronize\", \"reopened\"]\nskill = \"find-bugs\"",
        "event = \"issues\"\nactions = [\"opened\"]\nskill = \"find-bugs\"",
        1,
    );
    r.config(&cfg);
    r.commit_all("config");
    r.write("src/users.py", "def f(term):\n    return term\n");
    let event = r.path().join("event.json");
    std::fs::write(&event, r#"{"action": "synchronize"}"#).unwrap();
    let plan = |name: &str| -> serde_json::Value {
        let out = r
            .warden(&["plan", "--json"])
            .env("CI", "true")
            .env("GITHUB_EVENT_NAME", name)
            .env("GITHUB_EVENT_PATH", &event)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(
        plan("pull_request")["skills"],
        serde_json::json!(["testing-guidelines"])
    );
    assert_eq!(
        plan("issues")["skills"],
        serde_json::json!([]),
        "issues/opened only"
    );
    // Locally every trigger's skill runs.
    assert_eq!(
        r.plan(&[])["skills"],
        serde_json::json!(["find-bugs", "testing-guidelines"])
    );
}

#[test]
fn when_a_file_mixes_layouts_the_newer_key_wins() {
    let cfg = "version = 1\n[defaults]\nfailOn = \"critical\"\nreportOn = \"low\"\n\
               [defaults.output]\nfailOn = \"low\"\ncommentOn = \"high\"\nmaxFindings = 2\n";
    let (code, v, _) = demo(cfg, &["review", "--sim"]);
    assert_eq!(v["failOn"], "critical");
    assert_eq!(v["reportOn"], "low");
    assert_eq!(
        v["findings"].as_array().unwrap().len(),
        4,
        "maxFindings 2 per skill: {v}"
    );
    assert_eq!(code, 0, "no critical finding in the demo");
}

#[test]
fn inline_skills_and_warden_s_per_skill_model() {
    let cfg = "version = 1\n\
               [[skills]]\nname = \"api-review\"\ndescription = \"Consistent APIs\"\nprompt = \"Check naming.\"\n\
               [skills.tools]\nallowed = [\"Read\"]\n\
               [[triggers]]\nname = \"api\"\nevent = \"pull_request\"\nactions = [\"opened\"]\nskill = \"api-review\"\nmodel = \"claude-opus\"\n\
               [triggers.output]\nfailOn = \"off\"\n";
    let (code, v, stderr) = demo(cfg, &["review", "--sim"]);
    assert!(
        v["units"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["skill"] == "api-review"),
        "{v}"
    );
    assert_eq!(code, 0, "the trigger's failOn = off: {v}");
    // `[skills.tools]` is the inline skill's allowed tools now (docs/design.md §14).
    assert!(!stderr.contains("`skills.tools`"), "{stderr}");
    assert!(
        stderr.contains("trigger `api`") && stderr.contains("model") && stderr.contains("routes"),
        "{stderr}"
    );
    let cfg =
        "version = 1\n[[skills]]\nname = \"code-review\"\nmodel = \"anthropic/claude-opus\"\n";
    let (_, _, stderr) = demo(cfg, &["review", "--sim"]);
    assert!(
        stderr.contains("skill `code-review`: `model = \"anthropic/claude-opus\"` is not used")
            && stderr.contains("routes = [\"that-route\"]"),
        "the per-skill model is named and routes suggested: {stderr}"
    );
}

#[test]
fn a_skill_s_routes_restrict_it_to_those_routes_in_that_order() {
    let cfg = "version = 1\n\
               [[routes]]\nname = \"fast\"\nprovider = \"sim\"\ntimeScale = 600\n\
               [[routes]]\nname = \"careful\"\nprovider = \"sim\"\ntimeScale = 600\n\
               [[skills]]\nname = \"security-review\"\nroutes = [\"careful\"]\n\
               [[skills]]\nname = \"code-review\"\n";
    let (_, v, err) = demo(cfg, &["review"]);
    assert_eq!(v["outcome"], "complete", "{err}");
    for u in v["units"].as_array().unwrap() {
        let want = if u["skill"] == "security-review" {
            "careful"
        } else {
            "fast"
        };
        assert_eq!(u["route"], want, "{u}");
        assert!(
            u["routesTried"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r == want),
            "{u}"
        );
    }
    // A name that is not a route is a config error at its line.
    let bad = cfg.replace("routes = [\"careful\"]", "routes = [\"carefull\"]");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("warden.toml"), bad).unwrap();
    let out = warden()
        .current_dir(dir.path())
        .args(["plan", "-c", "warden.toml", "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("warden.toml:12:")
            && err.contains("`carefull`")
            && err.contains("fast, careful"),
        "{err}"
    );
}

#[test]
fn warden_s_chunking_switch_off_reviews_whole_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warden.toml");
    std::fs::write(&path, "version = 1\n[defaults.chunking]\nenabled = false\n").unwrap();
    let out = warden()
        .current_dir(dir.path())
        .args(["plan", "--json", "-c", path.to_str().unwrap(), "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = plan["files"].as_array().unwrap();
    assert!(!files.is_empty());
    assert!(files.iter().all(|f| f["mode"] == "whole-file"), "{plan}");
}

#[test]
fn a_warden_toml_that_is_no_file_is_an_error_not_a_silent_default() {
    let r = Repo::new();
    r.write("src/a.rs", "fn a() {}\n").commit_all("base");
    r.write("src/a.rs", "fn a() { b() }\n");
    let toml = r.path().join("warden.toml");
    std::os::unix::fs::symlink(r.path().join("shared/warden.toml"), &toml).unwrap();
    for cmd in [vec!["plan"], vec!["review", "--sim"], vec!["skills"]] {
        let out = r.warden(&cmd).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
        assert!(
            err.starts_with(&format!("error: {}: is not a file", toml.display())),
            "{cmd:?}: {err}"
        );
    }
    std::fs::remove_file(&toml).unwrap();
    std::fs::create_dir(&toml).unwrap();
    let out = r.warden(&["plan"]).output().unwrap();
    assert_exit(&out, 2);
    // With the link's target in place, the config loads.
    std::fs::remove_dir(&toml).unwrap();
    r.write("shared/warden.toml", "version = 1\n");
    std::os::unix::fs::symlink(r.path().join("shared/warden.toml"), &toml).unwrap();
    r.plan(&[]);
}

#[test]
fn max_concurrency_auto_loads_and_a_bad_cap_is_an_error_naming_its_place() {
    let r = Repo::new();
    r.write("src/a.rs", "fn a() {}\n").commit_all("base");
    r.write("src/a.rs", "fn a() { b() }\n");
    let config = |cap: &str| {
        format!(
            "version = 1\n\n[[routes]]\nname = \"primary\"\nprovider = \"sim\"\nmaxConcurrency = {cap}\n"
        )
    };
    r.config(&config("\"auto\""));
    r.plan(&[]);
    let out = r.warden(&["review", "--json"]).output().unwrap();
    assert_exit(&out, 0);
    for bad in ["\"fast\"", "0", "-1", "1e9", "100000"] {
        r.config(&config(bad));
        for cmd in [vec!["plan"], vec!["review"]] {
            let out = r.warden(&cmd).output().unwrap();
            let err = stderr_of(&out);
            assert_eq!(out.status.code(), Some(2), "{bad} {cmd:?}: {err}");
            assert!(
                err.contains("warden.toml:6:18: route `primary` maxConcurrency:")
                    && err.contains("\"auto\""),
                "{bad} {cmd:?}: {err}"
            );
            assert!(!err.contains("panicked"), "{err}");
        }
    }
}

/// A misspelt key is named with its file and line and the key meant, even under `-q`
/// (before: no line, no suggestion, and nothing at all under `-q`).
#[test]
fn an_unknown_key_names_its_line_and_the_key_meant_even_under_quiet() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.config("version = 1\n\n[defaults]\nfailOnn = \"high\"\n\n[execution]\nfailOn = \"low\"\n");
    r.write("README.md", "y\n");
    for args in [&["plan"][..], &["plan", "-q"]] {
        let out = r.warden(args).output().unwrap();
        let err = assert_exit(&out, 0);
        assert!(
            err.contains("warden.toml:4: unknown key `defaults.failOnn`")
                && err.contains("did you mean `failOn`?"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("warden.toml:7: unknown key `execution.failOn`")
                && err.contains("did you mean `[defaults] failOn`?"),
            "a key in the wrong table names its table: {err}"
        );
        assert!(err.contains("warden init --example"), "{err}");
    }
}

/// `--strict-config` or `strictConfig = true` make an unknown key an error (exit 2) at its
/// file:line:column, before anything is reviewed.
#[test]
fn strict_config_refuses_unknown_keys() {
    let r = Repo::new();
    r.write("README.md", "x\n").commit_all("base");
    r.config("version = 1\n[defaults]\nreportOnn = \"low\"\n");
    r.write("README.md", "y\n");
    let out = r
        .warden(&["review", "--sim", "--strict-config"])
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(
        err.contains("warden.toml:3:1: unknown key `defaults.reportOnn`"),
        "{err}"
    );
    assert!(err.contains("did you mean `reportOn`?"), "{err}");
    r.config("version = 1\nstrictConfig = true\n[defaults]\nreportOnn = \"low\"\n");
    let out = r.warden(&["plan"]).output().unwrap();
    assert_exit(&out, 2);
    assert!(stderr_of(&out).contains("warden.toml:4:1:"));
    // A clean config passes strict mode.
    r.config("version = 1\nstrictConfig = true\n[defaults]\nreportOn = \"low\"\n");
    assert_eq!(
        r.warden(&["plan", "--strict-config"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(0)
    );
}
