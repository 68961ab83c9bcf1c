//! The result cache end to end: the real binary on real repositories against the fake
//! provider, with a cache directory the test owns. Requests are counted at the fake.

use crate::report_formats::{assert_valid, report_schema};
use crate::support::Toml;
use crate::support::fake_provider::{
    Behavior, FakeProvider, finding, findings_answer, real_bug_and_false_alarm,
};
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) const KEY_VAR: &str = "WARDEN_CACHE_KEY";

/// A repository, the fake, a config outside the repository and a cache directory.
pub(crate) struct Setup {
    pub(crate) repo: Repo,
    pub(crate) fake: FakeProvider,
    pub(crate) dir: tempfile::TempDir,
}

impl Setup {
    /// `files` files, each with two added lines (11 and 12) uncommitted.
    pub(crate) fn new(files: usize) -> Setup {
        Setup::with_repo(repo_with_changed_files(files))
    }

    pub(crate) fn with_repo(repo: Repo) -> Setup {
        let s = Setup {
            repo,
            fake: FakeProvider::start(),
            dir: tempfile::tempdir().unwrap(),
        };
        s.config("");
        s
    }

    pub(crate) fn config(&self, extra: &str) {
        let base = self.fake.base_url();
        std::fs::write(
            self.config_path(),
            Toml::new()
                .raw(&format!("{extra}\n"))
                .exec(&[
                    ("reviewBudget", "20s"),
                    ("hunkBudget", "8s"),
                    ("requestTimeout", "4s"),
                ])
                .fake_routes(&base, KEY_VAR, 2)
                .build(),
        )
        .unwrap();
    }

    pub(crate) fn config_path(&self) -> PathBuf {
        self.dir.path().join("warden.toml")
    }

    fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// `review -c CFG --skill code-review --cache-dir DIR ARGS`.
    pub(crate) fn args(&self, args: &[&str]) -> Vec<String> {
        let mut full: Vec<String> = ["review", "-c"].map(String::from).to_vec();
        full.push(self.config_path().display().to_string());
        full.extend(["--skill", "code-review"].map(String::from));
        if !args.contains(&"--cache-dir") {
            full.push("--cache-dir".into());
            full.push(self.cache_dir().display().to_string());
        }
        full.extend(args.iter().map(|a| a.to_string()));
        full
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> assert_cmd::Command {
        let mut c = warden();
        c.current_dir(self.repo.path())
            .args(self.args(args))
            .env(KEY_VAR, "sk-cache-test");
        c
    }

    /// Runs a review; returns exit code, stdout, stderr.
    pub(crate) fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(args).output().unwrap();
        let stderr = stderr_of(&out);
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code().unwrap_or(-1), stdout_of(&out), stderr)
    }

    /// A JSON review: exit code, report (schema-checked), stderr, requests it made.
    pub(crate) fn json(&self, args: &[&str]) -> (i32, Value, String, usize) {
        let before = self.fake.requests().len();
        let mut full = vec!["--json"];
        full.extend_from_slice(args);
        let (code, out, err) = self.run(&full);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        assert_valid(&report_schema(), &v);
        (code, v, err, self.fake.requests().len() - before)
    }
}

pub(crate) fn sources(v: &Value) -> Vec<&str> {
    v["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["source"].as_str().unwrap())
        .collect()
}

/// The findings as a script reads them (everything but nothing).
pub(crate) fn findings(v: &Value) -> &Vec<Value> {
    v["findings"].as_array().unwrap()
}

pub(crate) fn high_at(line: u32, title: &str) -> Behavior {
    Behavior::Answer(findings_answer(json!([finding(line, "high", title)])))
}

#[test]
fn an_identical_rerun_makes_no_request_and_reports_the_same_findings() {
    let s = Setup::new(3);
    s.fake.script("primary", vec![high_at(11, "Off by one")]);
    let (code, cold, _, asked) = s.json(&[]);
    assert_eq!((code, asked), (1, 3), "{cold}");
    assert_eq!(sources(&cold), ["model"; 3]);
    assert_eq!(cold["summary"]["fromCache"], 0);
    assert!(cold["units"][0]["cachedAt"].is_null());
    assert_eq!(cold["units"][0]["model"], "primary");

    let (code, warm, err, asked) = s.json(&[]);
    assert_eq!(
        (code, asked),
        (1, 0),
        "an identical rerun asks nothing: {err}"
    );
    assert_eq!(
        findings(&warm),
        findings(&cold),
        "the same findings, ids and lines"
    );
    assert_eq!(sources(&warm), ["cache"; 3]);
    assert_eq!(warm["summary"]["fromCache"], 3);
    assert_eq!(warm["outcome"], "complete");
    let unit = &warm["units"][0];
    assert_eq!(unit["status"], "reviewed");
    assert_eq!(unit["route"], "primary");
    assert_eq!(unit["model"], "primary");
    assert!(
        unit["attempts"].as_array().unwrap().is_empty(),
        "no attempt was made"
    );
    assert!(
        unit["cachedAt"].as_str().unwrap().starts_with("20"),
        "RFC 3339: {unit}"
    );
    assert_eq!(warm["routes"]["primary"]["calls"], 0);
    assert_eq!(warm["counters"]["attempts"], 0);

    let (code, text, _) = s.run(&["--color", "never"]);
    assert_eq!(code, 1);
    assert!(text.contains("3 of 3 units from cache"), "{text}");
    // SARIF results and GitHub annotations do not change with where a result came from.
    let (_, sarif_warm, _) = s.run(&["--format", "sarif"]);
    let (_, gh_warm, _) = s.run(&["--format", "github"]);
    let (_, sarif_cold, _) = s.run(&["--format", "sarif", "--no-cache"]);
    let (_, gh_cold, _) = s.run(&["--format", "github", "--no-cache"]);
    let results = |t: &str| serde_json::from_str::<Value>(t).unwrap()["runs"][0]["results"].clone();
    assert_eq!(results(&sarif_warm), results(&sarif_cold));
    let annotations = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("::"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(annotations(&gh_warm), annotations(&gh_cold));
    assert!(!annotations(&gh_warm).is_empty());
}

/// A file of 200 numbered lines, with `top` extra lines inserted at the start and lines
/// 150–151 (counted before the insertion) changed.
fn long_file(top: usize, changed: bool) -> String {
    let mut out = String::new();
    for i in 0..top {
        out.push_str(&format!("// inserted {i}\n"));
    }
    for i in 1..=200 {
        if changed && (150..=151).contains(&i) {
            out.push_str(&format!("    let changed_{i} = unchecked({i});\n"));
        } else {
            out.push_str(&format!("    let line_{i} = compute({i});\n"));
        }
    }
    out
}

#[test]
fn a_push_above_an_unchanged_chunk_asks_only_the_new_chunk_and_moves_cached_findings() {
    let repo = Repo::new();
    repo.write("src/a.rs", long_file(0, false))
        .commit_all("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("src/a.rs", long_file(0, true))
        .commit_all("first push");
    let s = Setup::with_repo(repo);
    s.fake.script(
        "primary",
        vec![
            high_at(150, "Unchecked call"),
            Behavior::Answer(findings_answer(json!([]))),
        ],
    );
    let (_, first, _, asked) = s.json(&["main..feature"]);
    assert_eq!(asked, 1, "{first}");
    assert_eq!(findings(&first)[0]["startLine"], 150);

    // The second push inserts five lines at the top, far above the reviewed chunk.
    s.repo
        .write("src/a.rs", long_file(5, true))
        .commit_all("second push");
    let (code, second, _, asked) = s.json(&["main..feature"]);
    assert_eq!(code, 1);
    assert_eq!(asked, 1, "only the new chunk is asked: {second}");
    let req = &s.fake.requests()[1];
    assert!(
        req.body.to_string().contains("Lines under review: 1-")
            && req.body.to_string().contains("+ // inserted 0"),
        "the request is about the inserted lines: {}",
        req.body
    );
    let units = second["units"].as_array().unwrap();
    assert_eq!(units.len(), 2);
    let moved = units.iter().find(|u| u["source"] == "cache").unwrap();
    let before = &first["units"][0];
    let shift = |v: &Value| v.as_u64().unwrap() + 5;
    assert_eq!(
        (moved["startLine"].as_u64(), moved["endLine"].as_u64()),
        (
            Some(shift(&before["startLine"])),
            Some(shift(&before["endLine"]))
        ),
        "the chunk moved down by the five inserted lines"
    );
    let fresh = units.iter().find(|u| u["source"] == "model").unwrap();
    assert_eq!(fresh["startLine"], 1);
    let f = &findings(&second)[0];
    assert_eq!(
        (f["title"].as_str(), f["startLine"].as_u64()),
        (Some("Unchecked call"), Some(155))
    );
    assert_eq!(second["summary"]["fromCache"], 1);
}

#[test]
fn a_corrupt_cache_file_warns_reviews_cold_and_keeps_the_exit_code() {
    let s = Setup::new(2);
    s.fake.script("primary", vec![high_at(12, "Leak")]);
    let (code, cold, _, asked) = s.json(&[]);
    assert_eq!((code, asked), (1, 2));
    let db = s.cache_dir().join("cache.sqlite");
    assert!(db.is_file());
    std::fs::write(&db, b"garbage, not a database ".repeat(500)).unwrap();
    for log in ["cache.sqlite-wal", "cache.sqlite-shm"] {
        let _ = std::fs::remove_file(s.cache_dir().join(log));
    }

    let (code, again, err, asked) = s.json(&[]);
    assert_eq!(code, 1, "the same exit code");
    assert_eq!(asked, 2, "a cold review: every unit asked");
    assert_eq!(findings(&again), findings(&cold));
    assert_eq!(sources(&again), ["model"; 2]);
    assert_eq!(err.matches("warning:").count(), 1, "one warning: {err}");
    assert!(
        err.contains("corrupt") && err.contains("moved it aside"),
        "{err}"
    );
    let aside: Vec<String> = std::fs::read_dir(s.cache_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("cache.sqlite.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "the damaged file is kept aside");

    // The fresh database took the cold review's answers.
    let (_, _, err, asked) = s.json(&[]);
    assert_eq!(asked, 0);
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn a_locked_or_unwritable_cache_warns_once_and_the_review_completes() {
    let s = Setup::new(2);
    s.fake.script("primary", vec![high_at(11, "Leak")]);
    let (code, _, _, _) = s.json(&[]);
    assert_eq!(code, 1);
    // Another process holds the database exclusively (as a stuck writer would).
    let holder = rusqlite::Connection::open(s.cache_dir().join("cache.sqlite")).unwrap();
    holder
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM entries WHERE 0; COMMIT;")
        .unwrap();
    let (code, v, err, asked) = s.json(&[]);
    assert_eq!((code, asked), (1, 2), "cold and complete: {err}");
    assert_eq!(v["outcome"], "complete");
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("locked"), "{err}");
    let reported = v["warnings"].as_array().unwrap();
    assert_eq!(reported.len(), 1, "{reported:#?}");
    assert_eq!(reported[0]["source"], "cache");
    assert!(reported[0]["message"].as_str().unwrap().contains("locked"));
    drop(holder);

    // A cache directory that cannot exist (a file is in the way).
    let blocker = s.dir.path().join("blocker");
    std::fs::write(&blocker, "x").unwrap();
    let bad = blocker.join("cache");
    let (code, v, err, asked) = s.json(&["--cache-dir", bad.to_str().unwrap()]);
    assert_eq!((code, asked), (1, 2));
    assert_eq!(v["outcome"], "complete");
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(err.contains("cannot use the cache directory"), "{err}");
}

#[test]
fn two_concurrent_reviews_sharing_a_cache_directory_both_complete() {
    let s = Setup::new(6);
    // Slow enough answers (3 rounds of 600 ms at the route's cap of 2) that the two runs
    // overlap; the fake proves they did (below).
    s.fake.script(
        "primary",
        vec![Behavior::DelayHeaders(
            Duration::from_millis(600),
            Box::new(high_at(11, "Race")),
        )],
    );
    let spawn = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("warden"))
            .current_dir(s.repo.path())
            .args(s.args(&["--json"]))
            .env(KEY_VAR, "sk-cache-test")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        let err = assert_exit(&out, 1);
        assert!(!err.contains("warning"), "{err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["outcome"], "complete");
        assert_eq!(findings(&v).len(), 6);
    }
    // One run keeps at most 2 requests to `primary` in flight (its cap): more at one
    // instant means both runs were reviewing at once.
    let spans: Vec<_> = s
        .fake
        .wait_all_closed(Duration::from_secs(2))
        .into_iter()
        .filter(|r| r.model == "primary")
        .map(|r| (r.at, r.finished_at.or(r.hung_up_at).unwrap()))
        .collect();
    let most_at_once = spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(a, b)| a <= start && start < b)
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(
        most_at_once > 2,
        "the two reviews did not overlap: at most {most_at_once} requests to primary at once"
    );
    let (_, v, _, asked) = s.json(&[]);
    assert_eq!(asked, 0, "both runs' answers are in the shared cache");
    assert_eq!(findings(&v).len(), 6);
}

#[test]
fn failures_are_never_cached() {
    let s = Setup::new(2);
    s.fake.script("primary", vec![Behavior::status(400)]);
    s.fake.script("fallback", vec![Behavior::status(400)]);
    let (code, v, _, _) = s.json(&[]);
    // A 400 on every route is a setup error: nothing reviewed, exit 2 (not 3, weather).
    assert_eq!(code, 2);
    assert_eq!(v["summary"]["reviewed"], 0);
    s.fake.script("primary", vec![high_at(11, "Found later")]);
    let (code, v, _, asked) = s.json(&[]);
    assert_eq!((code, asked), (1, 2), "failed units are asked again");
    assert_eq!(sources(&v), ["model"; 2]);
}

#[test]
fn the_key_holds_the_model_and_the_skill_text() {
    let s = Setup::new(1);
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 1);
    let cfg = std::fs::read_to_string(s.config_path()).unwrap();
    std::fs::write(
        s.config_path(),
        cfg.replace("model = \"primary\"", "model = \"primary-v2\""),
    )
    .unwrap();
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 1, "another model is another key");
    // A repository skill that overrides the built-in one changes the instructions.
    s.repo.write(
        ".agents/skills/code-review/SKILL.md",
        "---\nname: code-review\ndescription: Stricter review\n---\nReview every line twice.\n",
    );
    // Committed, so the skill file is not itself part of the change under review.
    s.repo.git(&["add", ".agents"]);
    s.repo.git(&["commit", "-q", "-m", "skill"]);
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 1, "other skill instructions are another key");
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 0);
}

#[test]
fn verdicts_are_cached_with_the_answer() {
    let s = Setup::new(1);
    s.config("[defaults.verification]\nenabled = true");
    let (two, confirmed) = real_bug_and_false_alarm();
    s.fake.script(
        "primary",
        vec![Behavior::Answer(two), Behavior::Answer(confirmed)],
    );
    let (_, cold, _, asked) = s.json(&[]);
    assert_eq!(asked, 2, "a review request and a verification request");
    let (code, warm, _, asked) = s.json(&[]);
    assert_eq!((code, asked), (1, 0), "{warm}");
    assert_eq!(findings(&warm), findings(&cold));
    assert_eq!(findings(&warm)[0]["verification"], "confirmed");
    assert_eq!(warm["verification"]["rejected"], 1);
    // Without the pass, the cached answer is the model's whole answer.
    s.config("");
    let (_, off, _, asked) = s.json(&[]);
    assert_eq!(asked, 0);
    assert_eq!(findings(&off).len(), 2);
}

#[test]
fn no_cache_flag_and_config_leave_no_trace() {
    let s = Setup::new(1);
    s.json(&["--no-cache"]);
    let (_, _, _, asked) = s.json(&["--no-cache"]);
    assert_eq!(asked, 1);
    s.config("[cache]\nenabled = false");
    s.json(&[]);
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 1);
    assert!(!s.cache_dir().exists(), "nothing was written");
}

/// `warden cache ARGS` in the setup's repository, with only `env` deciding the location.
pub(crate) fn cache_cmd(s: &Setup, args: &[&str], env: &[(&str, &Path)]) -> (i32, String) {
    let mut c = warden();
    c.current_dir(s.repo.path())
        .arg("cache")
        .args(args)
        .env_remove("WARDEN_CACHE_DIR")
        .env_remove("XDG_CACHE_HOME");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let err = stderr_of(&out);
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code().unwrap_or(-1), stdout_of(&out))
}

#[test]
fn cache_path_stats_and_clear() {
    let s = Setup::new(2);
    let home = s.dir.path().join("home");
    let xdg = s.dir.path().join("xdg");
    let env_dir = s.dir.path().join("env");
    let (code, out) = cache_cmd(&s, &["path"], &[("HOME", &home)]);
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        home.join(".cache/warden/cache.sqlite").to_str().unwrap()
    );
    let (_, out) = cache_cmd(&s, &["path"], &[("HOME", &home), ("XDG_CACHE_HOME", &xdg)]);
    assert_eq!(
        out.trim(),
        xdg.join("warden/cache.sqlite").to_str().unwrap()
    );
    let (_, out) = cache_cmd(
        &s,
        &["path"],
        &[("XDG_CACHE_HOME", &xdg), ("WARDEN_CACHE_DIR", &env_dir)],
    );
    assert_eq!(out.trim(), env_dir.join("cache.sqlite").to_str().unwrap());
    s.repo
        .config("version = 1\n[cache]\ndir = \"from-config\"\n");
    let (_, out) = cache_cmd(&s, &["path"], &[("XDG_CACHE_HOME", &xdg)]);
    assert_eq!(
        out.trim(),
        s.repo
            .path()
            .join("from-config/cache.sqlite")
            .to_str()
            .unwrap()
    );
    s.repo.remove("warden.toml");
    let flag = s.cache_dir();
    let (_, out) = cache_cmd(
        &s,
        &["path", "--cache-dir", flag.to_str().unwrap()],
        &[("WARDEN_CACHE_DIR", &env_dir)],
    );
    assert_eq!(out.trim(), flag.join("cache.sqlite").to_str().unwrap());
    assert!(!flag.exists(), "path creates nothing");

    let dir = ("WARDEN_CACHE_DIR", flag.as_path());
    let (code, out) = cache_cmd(&s, &["stats", "--json"], &[dir]);
    assert_eq!((code, out.contains("\"entries\": 0")), (0, true), "{out}");
    assert!(!flag.exists(), "stats of no cache creates none");
    s.json(&[]);
    let (_, out) = cache_cmd(&s, &["stats", "--json"], &[dir]);
    let st: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["entries"], 2);
    assert!(st["bytes"].as_u64().unwrap() > 0);
    assert_eq!(st["maxSize"], 256 * 1024 * 1024);
    let (_, text) = cache_cmd(&s, &["stats"], &[dir]);
    assert!(text.contains("2 answer(s)"), "{text}");
    let (code, out) = cache_cmd(&s, &["clear"], &[dir]);
    assert_eq!(code, 0);
    assert!(out.contains("cleared 2"), "{out}");
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 2, "a cleared cache answers nothing");
}

#[test]
fn an_answer_of_the_fallback_serves_the_rerun_under_the_fallback() {
    let s = Setup::new(2);
    s.fake.script("primary", vec![Behavior::status(503)]);
    s.fake
        .script("fallback", vec![high_at(12, "Seen by the fallback")]);
    let (code, cold, _, asked) = s.json(&[]);
    assert_eq!(
        (code, asked),
        (1, 4),
        "each unit: primary 503, then the fallback"
    );
    assert!(
        cold["units"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["route"] == "fallback")
    );
    let (code, warm, _, asked) = s.json(&[]);
    assert_eq!((code, asked), (1, 0));
    assert_eq!(findings(&warm), findings(&cold));
    for u in warm["units"].as_array().unwrap() {
        assert_eq!(
            (u["source"].as_str(), u["route"].as_str()),
            (Some("cache"), Some("fallback"))
        );
        assert_eq!(u["model"], "fallback");
    }
}

#[test]
fn a_skill_limited_to_some_routes_is_served_only_by_their_answers() {
    let s = Setup::new(1);
    s.fake
        .script("primary", vec![high_at(11, "From the primary")]);
    let (_, _, _, asked) = s.json(&[]);
    assert_eq!(asked, 1);
    // The skill may now use only the fallback: the primary's cached answer does not serve it.
    s.config("[[skills]]\nname = \"code-review\"\nroutes = [\"fallback\"]");
    let (_, v, _, asked) = s.json(&[]);
    assert_eq!(asked, 1, "{v}");
    assert_eq!(s.fake.requests_for("fallback").len(), 1);
    assert_eq!(v["units"][0]["source"], "model");
    let (_, v, _, asked) = s.json(&[]);
    assert_eq!(asked, 0);
    assert_eq!(
        (
            v["units"][0]["source"].as_str(),
            v["units"][0]["route"].as_str()
        ),
        (Some("cache"), Some("fallback"))
    );
}
