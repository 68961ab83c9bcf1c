//! The GitHub Action (`action.yml`) and the example CI configurations in `docs/ci/`:
//! valid against GitHub's schemas (YAML parsed as YAML 1.2, so a workflow's `on:` key stays
//! the string "on"), their shell steps parse, and the action's review step, run for real
//! against the fake provider, passes its inputs through and reports outcome and exit code.

use crate::report_formats::{assert_valid, repo_schema, sarif_schema};
use crate::review_e2e::{CANARY, KEY_VAR, Session};
use crate::support::fake_provider::{Behavior, finding, findings_answer};
use crate::support::{stderr_of, stdout_of};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

pub(crate) fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub(crate) fn load_yaml(path: &Path) -> Yaml {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut docs =
        YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(docs.len(), 1, "{}: one document", path.display());
    docs.remove(0)
}

/// YAML as JSON for schema validation. Mapping keys must be strings: a YAML 1.1 loader
/// would read `on:` as the boolean true, and the workflow schema would reject it.
pub(crate) fn to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(r) => r.parse::<f64>().map(Value::from).unwrap_or(Value::Null),
        Yaml::Integer(i) => json!(i),
        Yaml::String(s) => json!(s),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => {
            let mut m = Map::new();
            for (k, v) in h {
                let Yaml::String(key) = k else {
                    panic!("a mapping key that is not a string: {k:?}");
                };
                m.insert(key.clone(), to_json(v));
            }
            Value::Object(m)
        }
        Yaml::Null => Value::Null,
        other => panic!("unsupported YAML node {other:?}"),
    }
}

/// Every `run:` script with its shell, anywhere in the document.
pub(crate) fn run_steps(v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(run)) = m.get("run") {
                let shell = m.get("shell").and_then(Value::as_str).unwrap_or("bash");
                out.push((shell.to_string(), run.clone()));
            }
            m.values().for_each(|x| run_steps(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| run_steps(x, out)),
        _ => {}
    }
}

pub(crate) fn assert_shell_parses(shell: &str, script: &str, origin: &str) {
    let out = std::process::Command::new(shell)
        .args(["-n", "-c", script])
        .output()
        .unwrap_or_else(|e| panic!("{shell}: {e}"));
    assert!(
        out.status.success(),
        "{origin}: {shell} -n rejects a step: {}\n{script}",
        stderr_of(&out)
    );
}

fn action() -> Value {
    to_json(&load_yaml(&repo_file("action.yml")))
}

#[test]
fn the_action_validates_and_keeps_inputs_out_of_its_scripts() {
    let a = action();
    assert_valid(&repo_schema("github-action.json"), &a);
    assert_eq!(a["runs"]["using"], "composite");
    let inputs = a["inputs"].as_object().unwrap();
    for name in [
        "base-ref", "outputs", "config", "budget", "fail-on", "format",
    ] {
        assert!(inputs.contains_key(name), "input {name}");
    }
    for name in ["outcome", "exit-code"] {
        assert!(
            a["outputs"][name]["value"]
                .as_str()
                .unwrap()
                .contains("steps.review.outputs.")
        );
    }
    // Every input used is declared; none is spliced into a script (injection): scripts
    // read them from the environment.
    let text = std::fs::read_to_string(repo_file("action.yml")).unwrap();
    for used in text.split("inputs.").skip(1) {
        let name: String = used
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        assert!(inputs.contains_key(&name), "inputs.{name} is not declared");
    }
    let mut scripts = Vec::new();
    run_steps(&a, &mut scripts);
    assert!(scripts.len() >= 3);
    for (shell, script) in &scripts {
        assert!(
            !script.contains("${{"),
            "an expression inside a script:\n{script}"
        );
        assert_shell_parses(shell, script, "action.yml");
    }
}

#[test]
fn the_example_workflows_validate_and_their_on_key_stays_a_string() {
    let schema = repo_schema("github-workflow.json");
    let mut checked = 0;
    for entry in std::fs::read_dir(repo_file("docs/ci")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(name.starts_with("github-") && name.ends_with(".yml")) {
            continue;
        }
        let yaml = load_yaml(&path);
        let Yaml::Hash(top) = &yaml else {
            panic!("{name}: not a mapping")
        };
        assert!(
            top.contains_key(&Yaml::String("on".into())),
            "{name}: `on` must load as the string \"on\""
        );
        assert!(!top.contains_key(&Yaml::Boolean(true)), "{name}");
        let wf = to_json(&yaml);
        assert_valid(&schema, &wf);
        // What a YAML 1.1 loader would hand the schema is rejected: the check has teeth.
        let mut as_yaml11 = wf.clone();
        let on = as_yaml11.as_object_mut().unwrap().remove("on").unwrap();
        as_yaml11["true"] = on;
        assert!(!schema.is_valid(&as_yaml11), "{name}");
        let mut scripts = Vec::new();
        run_steps(&wf, &mut scripts);
        for (shell, script) in &scripts {
            assert_shell_parses(shell, script, &name);
        }
        // Each uses the action, and asks only for formats warden has.
        let steps: Vec<&Value> = wf["jobs"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|j| j["steps"].as_array().unwrap())
            .collect();
        let warden = steps
            .iter()
            .find(|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("warden-review/warden@"))
            })
            .unwrap_or_else(|| panic!("{name} does not use the action"));
        for spec in warden["with"]["outputs"].as_str().unwrap_or("").lines() {
            let spec: warden::report::OutputSpec = spec.trim().parse().unwrap();
            assert!(spec.format.is_some(), "{name}: {spec:?} names no format");
        }
        checked += 1;
    }
    assert_eq!(
        checked, 6,
        "code scanning, reviewdog, sticky comment, sharded, publish split (review, publish)"
    );
}

#[test]
fn the_gitlab_and_shell_examples_publish_what_warden_writes() {
    let gl = to_json(&load_yaml(&repo_file("docs/ci/gitlab-ci.yml")));
    let job = &gl["warden"];
    let report = job["artifacts"]["reports"]["codequality"].as_str().unwrap();
    let script = job["script"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(script.contains(&format!("-o gitlab={report}")), "{script}");
    assert_eq!(
        job["artifacts"]["when"], "always",
        "a partial review still publishes"
    );
    assert_shell_parses("sh", &script, "gitlab-ci.yml");
    let shell = std::fs::read_to_string(repo_file("docs/ci/plain-ci.sh")).unwrap();
    assert_shell_parses("sh", &shell, "plain-ci.sh");
}

/// The action's review step, run as the runner would: inputs in the environment.
fn run_review_step(
    s: &Session,
    inputs: &[(&str, &str)],
) -> (i32, String, String, tempfile::TempDir) {
    let a = action();
    let step = a["runs"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|st| st["id"] == "review")
        .unwrap();
    let runner = tempfile::tempdir().unwrap();
    let github_output = runner.path().join("github_output");
    let bin = assert_cmd::cargo::cargo_bin("warden");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-c", step["run"].as_str().unwrap()])
        .current_dir(s.repo.path())
        .env("PATH", path)
        .env("RUNNER_TEMP", runner.path())
        .env("GITHUB_OUTPUT", &github_output)
        .env(KEY_VAR, CANARY)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", s.repo.path());
    for k in [
        "GITHUB_STEP_SUMMARY",
        "GITHUB_SERVER_URL",
        "GITHUB_REPOSITORY",
        "GITHUB_SHA",
        "GITHUB_HEAD_REF",
        "GITHUB_REF_NAME",
        "CI",
        "NO_COLOR",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in step["env"].as_object().unwrap() {
        // The action's defaults, then the inputs given.
        let input = v
            .as_str()
            .unwrap()
            .trim_start_matches("${{ inputs.")
            .trim_end_matches(" }}");
        let default = a["inputs"][input]["default"].as_str().unwrap_or("");
        let value = inputs
            .iter()
            .find(|(n, _)| *n == input)
            .map_or(default, |(_, v)| v);
        let value = if value.contains("${{") { "" } else { value };
        cmd.env(k, value);
    }
    let out = cmd.output().unwrap();
    let outputs = std::fs::read_to_string(&github_output).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        outputs,
        stdout_of(&out) + &stderr_of(&out),
        runner,
    )
}

#[test]
fn the_actions_review_step_passes_its_inputs_and_reports_outcome_and_exit_code() {
    let s = Session::new(2);
    s.fake
        .default_behavior(Behavior::Answer(findings_answer(json!([finding(
            11,
            "high",
            "Off by one"
        )]))));
    // A pull request: branch `feature` off `main`, with `origin/main` as its base.
    s.repo.git(&["checkout", "-q", "-b", "feature"]);
    s.repo.commit_all("change");
    s.repo.git(&["remote", "add", "origin", "."]);
    s.repo.git(&["fetch", "-q", "origin"]);
    let out_dir = tempfile::tempdir().unwrap();
    let sarif = out_dir.path().join("w.sarif");
    let rd = out_dir.path().join("w.rdjsonl");
    let outputs = format!(
        "sarif={}\n  rdjsonl={}  \n\n",
        sarif.display(),
        rd.display()
    );
    let cfg = s.config_path();
    let (code, gh_out, log, _runner) = run_review_step(
        &s,
        &[
            ("base-ref", "main"),
            ("outputs", &outputs),
            ("config", cfg.to_str().unwrap()),
            ("budget", "20s"),
            ("fail-on", "high"),
            ("skills", "code-review"),
            ("args", "--color never"),
        ],
    );
    assert_eq!(code, 1, "findings at fail-on: {log}");
    assert!(gh_out.contains("exit-code=1\n"), "{gh_out}");
    assert!(gh_out.contains("outcome=complete\n"), "{gh_out}");
    assert!(
        log.contains("::error file=src/f0.rs,line=11"),
        "github annotations on the log: {log}"
    );
    assert_eq!(s.fake.requests().len(), 2, "one review, two units");
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    assert_eq!(std::fs::read_to_string(&rd).unwrap().lines().count(), 2);
    let report = gh_out
        .lines()
        .find_map(|l| l.strip_prefix("report="))
        .unwrap();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(report["target"].as_str().unwrap(), "origin/main...HEAD");

    // fail-on off: exit 0; a config error: exit 2 with outcome none.
    let (code, gh_out, _, _) = run_review_step(
        &s,
        &[
            ("config", cfg.to_str().unwrap()),
            ("fail-on", "off"),
            ("base-ref", "main"),
        ],
    );
    assert_eq!(code, 0);
    assert!(
        gh_out.contains("exit-code=0\n") && gh_out.contains("outcome=complete\n"),
        "{gh_out}"
    );
    let (code, gh_out, _, _) = run_review_step(&s, &[("config", "/nonexistent/warden.toml")]);
    assert_eq!(code, 2);
    assert!(
        gh_out.contains("exit-code=2\n") && gh_out.contains("outcome=none\n"),
        "{gh_out}"
    );
}
