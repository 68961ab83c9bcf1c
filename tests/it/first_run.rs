//! The first ten minutes with the real binary: help, a misspelt command, completions and
//! the manual page, the demo built into the binary, and `warden init`'s starter and next
//! step.

use crate::support::{Repo, warden};
use crate::support::{stderr_of, stdout_of};
use serde_json::Value;

fn run(mut cmd: assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (out.status.code().unwrap(), stdout_of(&out), stderr_of(&out))
}

#[test]
fn help_is_a_command_not_a_ref() {
    let r = Repo::new();
    r.write("a.rs", "x\n").commit_all("base");
    let (code, out, err) = run(r.warden(&["help"]));
    assert_eq!(code, 0, "{err}");
    for cmd in ["review", "plan", "init", "completions", "man"] {
        assert!(out.contains(cmd), "`warden help` lists `{cmd}`: {out}");
    }
    let (code, out, err) = run(r.warden(&["help", "plan"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Usage: warden plan"), "{out}");
    assert!(!err.contains("unknown ref"), "{err}");
}

#[test]
fn a_misspelt_command_is_answered_with_the_command() {
    let r = Repo::new();
    r.write("a.rs", "x\n").commit_all("base");
    let (code, _, err) = run(r.warden(&["revew"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean `warden review`?"), "{err}");
    // A ref close to the word wins: it is a misspelt ref, not a command.
    r.git(&["branch", "reviews"]);
    let (code, _, err) = run(r.warden(&["revew"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown ref `revew`"), "{err}");
    assert!(err.contains("did you mean `reviews`?"), "{err}");
    assert!(!err.contains("warden review`"), "{err}");
    // A word near nothing is an unknown ref, as before.
    let (code, _, err) = run(r.warden(&["zzzzzzzz"]));
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown ref `zzzzzzzz`") && !err.contains("did you mean"),
        "{err}"
    );
}

#[test]
fn completions_and_the_manual_come_from_the_parser() {
    let (code, out, err) = run({
        let mut c = warden();
        c.args(["completions", "bash"]);
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("_warden()") && out.contains("--sim"), "{out}");
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let (code, out, err) = run({
            let mut c = warden();
            c.args(["completions", shell]);
            c
        });
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains("review"), "{shell}: {out}");
    }
    let (code, _, err) = run({
        let mut c = warden();
        c.args(["completions", "tcsh"]);
        c
    });
    assert_eq!(code, 2);
    assert!(
        err.contains("bash") && err.contains("zsh"),
        "names the shells: {err}"
    );
    let (code, out, err) = run({
        let mut c = warden();
        c.arg("man");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".TH warden 1"), "{out}");
    assert!(
        out.contains("completions"),
        "the page lists the commands: {out}"
    );
    // A page per command, with its flags (before: one page, no subcommand flags, and
    // pointers to warden-review(1) and the others that did not exist).
    let (code, out, err) = run({
        let mut c = warden();
        c.args(["man", "review"]);
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".TH warden-review 1"), "{out}");
    assert!(
        out.contains("strict\\-config") && out.contains("trust\\-head\\-config"),
        "{out}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = run({
        let mut c = warden();
        c.args(["man", "--dir"]).arg(dir.path());
        c
    });
    assert_eq!(code, 0, "{err}");
    let (_, main_page, _) = run({
        let mut c = warden();
        c.arg("man");
        c
    });
    for cmd in [
        "review", "plan", "skills", "init", "cache", "eval", "simulate", "merge",
    ] {
        let page = dir.path().join(format!("warden-{cmd}.1"));
        assert!(page.is_file(), "warden-{cmd}.1 written");
        assert!(
            main_page.contains(&format!("warden\\-{cmd}(1)")),
            "warden(1) points at it: {main_page}"
        );
    }
    assert!(dir.path().join("warden.1").is_file());
    let (code, _, err) = run({
        let mut c = warden();
        c.args(["man", "nope"]);
        c
    });
    assert_eq!(code, 2);
    assert!(err.contains("no such command"), "{err}");
}

#[test]
fn the_demo_is_built_into_the_binary() {
    // A directory with nothing in it: no fixtures, no repository, no config.
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = warden();
    cmd.current_dir(dir.path())
        .args(["review", "--sim", "--demo", "--color", "never"]);
    let (code, out, err) = run(cmd);
    assert_eq!(code, 1, "the demo has high-severity findings: {err}");
    assert!(
        out.contains("app/users.py") && out.contains("HIGH"),
        "{out}"
    );
    assert!(out.contains("built-in demo"), "{out}");
    let mut cmd = warden();
    cmd.current_dir(dir.path())
        .args(["review", "--demo", "--diff", "x.diff"]);
    let (code, _, err) = run(cmd);
    assert_eq!(code, 2);
    assert!(err.contains("--diff and --demo"), "{err}");
}

#[test]
fn init_says_what_next_and_its_starter_is_not_reviewed() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    r.write("src/lib.rs", "pub fn a() { b().unwrap() }\n");
    let (code, _, err) = run(r.warden(&["init"]));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("next:") && err.contains("warden review"),
        "{err}"
    );
    let plan = r.plan(&[]);
    let skipped: Vec<&Value> = plan["skippedFiles"].as_array().unwrap().iter().collect();
    let starter = skipped
        .iter()
        .find(|s| s["path"] == "warden.toml")
        .unwrap_or_else(|| panic!("warden.toml is skipped: {plan}"));
    assert_eq!(starter["reason"], "warden-init", "{plan}");
    assert!(
        starter["detail"].as_str().unwrap().contains("unedited"),
        "says why: {starter}"
    );
    assert!(
        plan["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "src/lib.rs"),
        "the change itself is still planned: {plan}"
    );
    // One edited line, and the file is reviewed like any other.
    let edited = std::fs::read_to_string(r.path().join("warden.toml"))
        .unwrap()
        .replace("failOn = \"high\"", "failOn = \"medium\"");
    r.write("warden.toml", edited);
    let plan = r.plan(&[]);
    assert!(
        plan["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "warden.toml"),
        "{plan}"
    );
}

/// Keys of Warden's layout (`[[triggers]]`, `[defaults.agent]`, `[defaults.output]`,
/// `[defaults.filters]`, `[defaults.ignore]`), read for compatibility and documented in
/// docs/warden-config.md rather than in the example.
const WARDEN_LAYOUT: &[&str] = &[
    "triggers",
    "ignore",
    "agent",
    "output",
    "filters",
    "commentOn",
    "remote",
    "description",
    "prompt",
    "event",
    "actions",
    "skill",
    "type",
    "draft",
    "labels",
];

/// The TOML name of every field of the config reader's structs: the field in camelCase,
/// or its `#[serde(rename = "…")]`.
fn config_keys(raw: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut rename: Option<String> = None;
    for line in raw.lines().map(str::trim) {
        if let Some(r) = line.strip_prefix("#[serde(rename = \"") {
            rename = r.split('"').next().map(str::to_string);
            continue;
        }
        let Some(field) = ["pub ", "pub(crate) ", "pub(super) "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .and_then(|l| l.split_once(':'))
            .map(|(f, _)| f)
            .filter(|f| {
                f.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            })
        else {
            continue;
        };
        let camel = field
            .split('_')
            .enumerate()
            .map(|(i, p)| {
                let mut c = p.chars();
                match (i, c.next()) {
                    (0, Some(f)) => f.to_string() + c.as_str(),
                    (_, Some(f)) => f.to_ascii_uppercase().to_string() + c.as_str(),
                    _ => String::new(),
                }
            })
            .collect::<String>();
        let key = rename.take().unwrap_or(camel);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// Whether the example sets or shows `key` (`key =`, `# key =`, in an inline table,
/// `[key]`, `[[key]]`, or a table path through it).
fn documents(example: &str, key: &str) -> bool {
    example.lines().any(|l| {
        let l = l.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
        l.starts_with(&format!("{key} ="))
            || l.contains(&format!("{{ {key} ="))
            || l.contains(&format!(", {key} ="))
            || l.trim_start_matches('[')
                .split(']')
                .next()
                .is_some_and(|t| l.starts_with('[') && t.split('.').any(|p| p == key))
    })
}

#[test]
fn init_example_writes_every_key() {
    let r = Repo::new();
    let (code, _, err) = run(r.warden(&["init", "--example"]));
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(r.path().join("warden.toml")).unwrap();
    // Every key the config reader accepts (each field of `src/config/raw.rs`, as TOML
    // names it) is in what `init --example` wrote, set or commented out; Warden's own
    // layout, read for compatibility, is documented in docs/warden-config.md instead.
    let raw = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/config/raw.rs"),
    )
    .unwrap();
    let keys = config_keys(&raw);
    assert!(keys.len() > 40, "the reader's keys: {keys:?}");
    let missing: Vec<&String> = keys
        .iter()
        .filter(|k| !WARDEN_LAYOUT.contains(&k.as_str()))
        .filter(|k| !documents(&written, k))
        .collect();
    assert!(
        missing.is_empty(),
        "keys missing from init --example: {missing:?}"
    );
    let (code, _, err) = run(r.warden(&["init"]));
    assert_eq!(code, 2);
    assert!(err.contains("--force"), "{err}");
}

/// A text review with nothing to send is one line that names the selection and what to
/// try, exit 0 (before: a whole empty report).
#[test]
fn nothing_to_review_is_one_line() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    let (code, out, err) = run(r.warden(&["review", "--sim"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with("Nothing to review: the selection has no changes"),
        "{out}"
    );
    assert!(out.contains("--staged"), "what to try: {out}");
    // Only skipped files: the line names the plan command that says why.
    r.write("package-lock.json", "{}\n");
    let (code, out, _) = run(r.warden(&["review", "--sim"]));
    assert_eq!(code, 0);
    assert!(
        out.contains("1 changed file skipped") && out.contains("`warden plan`"),
        "{out}"
    );
    // JSON still gets its whole report, for scripts.
    let (code, out, _) = run(r.warden(&["review", "--sim", "--json"]));
    assert_eq!(code, 0);
    assert!(out.contains("\"schemaVersion\""), "{out}");
}

/// A small change (three files, six units) on the route `warden init` writes and on
/// `--sim`: both review it completely (before: `--sim`'s primary was the slow-tail profile
/// and timed out units of every such change).
#[test]
fn the_starter_route_and_sim_review_a_small_change_completely() {
    let r = Repo::new();
    for f in ["a", "b", "c", "d"] {
        let body: String = (1..=40).map(|i| format!("fn f{f}_{i}() {{}}\n")).collect();
        r.write(&format!("src/{f}.rs"), body);
    }
    r.commit_all("base");
    r.git(&["checkout", "-q", "-b", "feat"]);
    for f in ["a", "b", "c"] {
        let old = std::fs::read_to_string(r.path().join(format!("src/{f}.rs"))).unwrap();
        let more: String = (1..=30)
            .map(|i| format!("fn g{f}_{i}(y: Option<u8>) -> u8 {{ y.unwrap() }}\n"))
            .collect();
        r.write(&format!("src/{f}.rs"), old + &more);
    }
    r.commit_all("change");
    let (code, _, err) = run(r.warden(&["init"]));
    assert_eq!(code, 0, "{err}");
    for args in [vec!["review", "--json"], vec!["review", "--sim", "--json"]] {
        let (code, out, err) = run(r.warden(&args));
        assert_eq!(code, 0, "{args:?}: medium findings only: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["outcome"], "complete", "{args:?}: {}", v["summary"]);
        assert_eq!(v["summary"]["units"], 6, "{args:?}");
        assert_eq!(v["summary"]["reviewed"], 6, "{args:?}");
    }
}
