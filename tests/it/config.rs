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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for key in [
        "defaults.maxTurns",
        "defaults.runtime",
        "defaults.batchDelayMs",
        "defaults.agent.maxTurns",
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
    assert!(
        stderr.contains("team-skill"),
        "remote skill warned: {stderr}"
    );
    assert!(stderr.contains("pull_request"), "trigger warned: {stderr}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["skills"], serde_json::json!(["security-review"]));
    assert!(planned(&plan, "src/a.rs").is_some());

    // -q keeps stderr clean.
    let out = r.warden(&["plan", "--json", "-q"]).output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
