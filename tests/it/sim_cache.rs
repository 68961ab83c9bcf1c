//! The simulator stays out of the result cache: a review whose routes are all the `sim`
//! provider neither reads nor writes it (its answers are made up for the run), and says
//! so; `warden simulate` never opens it.

use crate::support::Toml;
use crate::support::{Repo, fixture, warden};
use crate::support::{assert_exit, stderr_of};
use serde_json::Value;
use std::path::Path;

/// `warden review --sim=PROFILE` over the demo diff with `dir` as the cache: exit code, the
/// JSON report, stderr.
fn sim_review(dir: &Path, profile: &str) -> (i32, Value, String) {
    let out = warden()
        .args([
            "review",
            &format!("--sim={profile}"),
            "--json",
            "-v",
            "--diff",
        ])
        .arg(fixture("demo.diff"))
        .env("WARDEN_CACHE_DIR", dir)
        .output()
        .unwrap();
    let stderr = stderr_of(&out);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code().unwrap(), report, stderr)
}

/// Whatever is in the cache directory (nothing when it was never made).
fn entries(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_sim_review_neither_reads_nor_writes_the_cache_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    for run in 0..2 {
        let (code, v, stderr) = sim_review(&dir, "healthy");
        assert_eq!(code, 1, "the demo has high findings: {stderr}");
        assert_eq!(v["outcome"], "complete");
        assert_eq!(v["summary"]["fromCache"], 0, "run {run}: {stderr}");
        assert!(
            v["units"]
                .as_array()
                .unwrap()
                .iter()
                .all(|u| u["route"].as_str().unwrap().starts_with("sim-")),
            "run {run}: every unit answered by a simulated route"
        );
        assert!(
            stderr.contains("result cache: off for simulated routes"),
            "run {run}: {stderr}"
        );
        assert!(!stderr.contains("from cache"), "run {run}: {stderr}");
        assert_eq!(entries(&dir), Vec::<String>::new(), "run {run}");
    }
    // After a healthy run, an outage shows as an outage: every unit fails over.
    let (_, v, stderr) = sim_review(&dir, "outage");
    assert_eq!(v["summary"]["fromCache"], 0, "{stderr}");
    assert!(
        v["routes"]["sim-primary"]["failoversFrom"]
            .as_u64()
            .unwrap()
            >= 1,
        "{stderr}"
    );
    assert!(
        v["units"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["route"] == "sim-fallback"),
        "{stderr}"
    );
    assert_eq!(entries(&dir), Vec::<String>::new());
    // -q keeps the note off stderr.
    let out = warden()
        .args(["review", "--sim", "-q", "--json", "--diff"])
        .arg(fixture("demo.diff"))
        .env("WARDEN_CACHE_DIR", &dir)
        .output()
        .unwrap();
    assert!(out.stderr.is_empty(), "{}", stderr_of(&out));
}

#[test]
fn sim_routes_from_the_config_and_warden_simulate_leave_the_cache_alone() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    r.write(
        "src/db.rs",
        "fn q(id: &str) { run(\"SELECT * FROM t WHERE id=\" + id).unwrap(); }\n",
    );
    r.git(&["add", "-A"]);
    let sim = [("profile", "healthy"), ("timeScale", "60")];
    r.config(
        &Toml::new()
            .route("demo", "sim", &sim)
            .route("demo-2", "sim", &sim)
            .build(),
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    for _ in 0..2 {
        let out = r
            .warden(&["review", "--staged", "--json", "-v"])
            .env("WARDEN_CACHE_DIR", &dir)
            .output()
            .unwrap();
        let stderr = stderr_of(&out);
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        assert!(v["summary"]["reviewed"].as_u64().unwrap() >= 1, "{stderr}");
        assert_eq!(v["summary"]["fromCache"], 0, "{stderr}");
        assert!(
            stderr.contains("result cache: off for simulated routes"),
            "{stderr}"
        );
    }
    let out = r
        .warden(&["simulate", "--staged", "--runs", "3"])
        .env("WARDEN_CACHE_DIR", &dir)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert_eq!(entries(&dir), Vec::<String>::new());
}

/// Every `--sim` run opened with a two-line note about the cache; it is for `-v` now.
#[test]
fn the_sim_cache_note_is_only_shown_with_verbose() {
    let out = warden()
        .args(["review", "--sim=healthy", "--json", "--diff"])
        .arg(fixture("demo.diff"))
        .output()
        .unwrap();
    let stderr = assert_exit(&out, 1);
    assert!(!stderr.contains("result cache"), "{stderr}");
}
