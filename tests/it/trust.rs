//! The trust boundary, tried as a hostile pull request would: model text and repository
//! names cannot forge CI output or step outside the prompt's data fence; config and skills
//! come from the base side of the change.

use crate::report_formats::{assert_valid, report_schema};
use crate::support::fake_provider::{Behavior, FakeProvider, findings_answer};
use crate::support::*;
use serde_json::{Value, json};

const KEY_VAR: &str = "WARDEN_TRUST_KEY";
const KEY: &str = "sk-trust-canary-8d41";

/// A route config pointing at `fake`, with short budgets.
fn route_config(fake: &FakeProvider, model: &str) -> String {
    format!(
        r#"version = 1
[execution]
reviewBudget = "10s"
hunkBudget = "5s"
requestTimeout = "3s"
[[routes]]
name = "primary"
provider = "openai"
model = "{model}"
baseUrl = "{}"
apiKeyEnv = "{KEY_VAR}"
maxConcurrency = 2
"#,
        fake.base_url()
    )
}

/// `warden ARGS` in `repo` with the key set; (exit code, stdout, stderr).
fn run(repo: &Repo, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = repo.warden(args);
    cmd.env(KEY_VAR, KEY);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// What a CI log would run as a command: GitHub's `::name::` at the start of a line after
/// whitespace, its legacy `##[` anywhere, Azure's `##vso[`.
fn command_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.trim_start().starts_with("::") || l.contains("##[") || l.contains("##vso["))
        .collect()
}

/// A workflow command parsed as GitHub's runner does (`ActionCommand.TryParseV2`):
/// (name, properties, data), unescaped.
fn parse_command(line: &str) -> (String, Vec<(String, String)>, String) {
    let msg = line.trim_start().strip_prefix("::").expect("a command");
    let end = msg.find("::").expect("command info ends with ::");
    let (info, data) = (&msg[..end], &msg[end + 2..]);
    let (name, props) = info.split_once(' ').unwrap_or((info, ""));
    let unescape = |s: &str| {
        s.replace("%0D", "\r")
            .replace("%0A", "\n")
            .replace("%3A", ":")
            .replace("%2C", ",")
            .replace("%25", "%")
    };
    let props = props
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').expect("key=value");
            (k.to_string(), unescape(v))
        })
        .collect();
    let data = data
        .replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%25", "%");
    (name.to_string(), props, data)
}

const FORGED_TITLE: &str =
    "Looks fine\n::error file=/etc/passwd,line=1::owned\r##[warning]legacy \u{1b}[2J\u{1b}[31mred";
const HOSTILE_PATH: &str = "x\n::error title=path::owned ##vso[task.complete]\u{1b}[1m.py";

#[test]
fn model_text_and_file_names_cannot_forge_ci_output_lines() {
    let repo = Repo::new();
    repo.write("src/app.py", source_lines(3, "a"))
        .write(HOSTILE_PATH, source_lines(3, "b"))
        .commit_all("base");
    repo.write("src/app.py", source_lines(5, "a"))
        .write(HOSTILE_PATH, source_lines(5, "b"));
    let fake = FakeProvider::start();
    fake.script(
        "m",
        vec![Behavior::Answer(findings_answer(json!([{
            "severity": "high", "confidence": "high", "title": FORGED_TITLE,
            "description": "first\n::warning file=a,line=2::forged\n  ##[error]also forged",
            "suggestion": "::notice::x\n\u{1b}]0;title\u{7}", "line": 4
        }])))],
    );
    let cfg = tempfile::tempdir().unwrap();
    let cfg_path = cfg.path().join("warden.toml");
    std::fs::write(&cfg_path, route_config(&fake, "m")).unwrap();
    let cfg_arg = cfg_path.to_str().unwrap();
    let review = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["review", "-c", cfg_arg, "--skill", "code-review", "-v"];
        args.extend_from_slice(extra);
        run(&repo, &args, env)
    };

    // Text, with the terminal's colours on: only warden's own escape sequences.
    let (code, text, err) = review(&["--color", "always"], &[]);
    assert_eq!(code, 1, "{text}\n{err}");
    assert_eq!(command_lines(&text), Vec::<&str>::new(), "{text}");
    assert_eq!(command_lines(&err), Vec::<&str>::new(), "{err}");
    assert!(
        !text.contains("\u{1b}[2J") && !text.contains("\u{1b}]0;"),
        "model escape sequences reached the terminal: {text:?}"
    );
    let (_, plain, _) = review(&["--color", "never"], &[]);
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert!(
        plain.contains("Looks fine\\n::error file=/etc/passwd"),
        "escaped, visible: {plain}"
    );

    // GitHub annotations and the step summary.
    let summary = cfg.path().join("summary.md");
    let (code, gh, err) = review(
        &["--format", "github"],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
    );
    assert_eq!(code, 1, "{gh}\n{err}");
    assert_eq!(command_lines(&err), Vec::<&str>::new(), "{err}");
    let lines: Vec<&str> = gh.lines().collect();
    assert_eq!(lines.len(), 3, "two findings and the summary notice: {gh}");
    let mut files = Vec::new();
    for line in &lines {
        assert!(!line.contains("##[") && !line.contains("##vso["), "{line}");
        let (name, props, data) = parse_command(line);
        if name == "notice" {
            assert_eq!(props, [("title".to_string(), "warden".to_string())]);
            continue;
        }
        assert_eq!(name, "error", "{line}");
        let keys: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["file", "line", "endLine", "title"], "{line}");
        assert_eq!(props[1].1, "4");
        let title = &props[3].1;
        assert!(
            title.starts_with("[high] Looks fine\n::error file=/etc/passwd,line=1::owned"),
            "the title stays inside its property: {title:?}"
        );
        assert!(data.starts_with("first\n::warning"), "{data:?}");
        files.push(props[0].1.clone());
    }
    files.sort();
    // Newlines survive (percent-encoded, as the runner decodes them); an ESC and a marker
    // are shown as visible escapes: the runner has no encoding for them.
    assert_eq!(
        files,
        [
            "src/app.py",
            "x\n::error title=path::owned ##vso\\[task.complete]\\u{1b}[1m.py"
        ]
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(command_lines(&md), Vec::<&str>::new(), "{md}");
    assert!(!md.contains('\u{1b}'), "{md:?}");

    // JSON keeps the data exactly, and no line of it is a command either.
    let (_, json_out, _) = review(&["--json"], &[]);
    assert_eq!(command_lines(&json_out), Vec::<&str>::new(), "{json_out}");
    let v: Value = serde_json::from_str(&json_out).unwrap();
    assert_valid(&report_schema(), &v);
    assert_eq!(v["findings"][0]["title"], FORGED_TITLE);
}
