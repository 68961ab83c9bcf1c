//! A newcomer's whole path with the real binary from a real release archive: unpack what
//! `scripts/package` makes, see the built-in demo, `warden init`, review a branch on the
//! simulator route init wrote (before and after committing it), the plan and a SARIF
//! file by its extension at 80 columns, install shell completions.

use crate::support::{assert_exit, stderr_of, stdout_of};
use crate::support::{fresh_cache_dir, repo_adding};
use std::path::{Path, PathBuf};
use std::process::Command;

fn run(bin: &Path, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .env_remove("CI")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("WARDEN_REDIS_URL")
        .env("NO_COLOR", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("WARDEN_CACHE_DIR", fresh_cache_dir())
        .output()
        .unwrap();
    (out.status.code().unwrap(), stdout_of(&out), stderr_of(&out))
}

/// The archive `scripts/package` makes around the built binary, unpacked: its folder.
fn unpacked_release(into: &Path) -> PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("warden");
    let dist = into.join("dist");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("scripts/package"))
        .args(["x86_64-unknown-linux-musl", "0.1.0"])
        .arg(&bin)
        .arg(&dist)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let archive = stdout_of(&out).trim().to_string();
    let unpack = into.join("unpacked");
    std::fs::create_dir(&unpack).unwrap();
    let tar = Command::new("tar")
        .args(["-xzf", &archive, "-C"])
        .arg(&unpack)
        .status()
        .unwrap();
    assert!(tar.success());
    unpack.join("warden-v0.1.0-x86_64-unknown-linux-musl")
}

#[test]
fn a_newcomer_goes_from_the_release_archive_to_a_reviewed_branch() {
    let tmp = tempfile::tempdir().unwrap();
    let release = unpacked_release(tmp.path());
    for f in [
        "warden",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "warden.toml.example",
    ] {
        assert!(release.join(f).exists(), "the archive carries {f}");
    }
    let warden = release.join("warden");

    // 1. The demo, from a folder with nothing in it.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let (code, out, err) = run(&warden, &empty, &["review", "--sim", "--demo"]);
    assert_eq!(code, 1, "the demo has high-severity findings: {err}");
    assert!(
        out.contains("app/users.py") && out.contains("Review complete"),
        "{out}"
    );
    assert!(
        !err.contains("result cache"),
        "the sim cache note is for -v: {err}"
    );

    // 2. `warden init` in a project with a branch to review.
    let r = repo_adding("src/db.rs");
    let (code, _, err) = run(&warden, r.path(), &["init"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("next:"), "{err}");

    // 3. The README's next command, as written: `warden review` with warden.toml still
    // untracked reviews the branch (not "uncommitted changes" with nothing left), says so
    // on its first line, and is complete on the starter's simulated route.
    let (code, out, err) = run(&warden, r.path(), &["review"]);
    assert_eq!(
        code, 1,
        "the SQL built by concatenation is high: {out}\n{err}"
    );
    assert!(
        out.starts_with("warden review: branch feat vs its merge-base with main"),
        "{out}"
    );
    assert!(out.contains("src/db.rs") && out.contains("SQL"), "{out}");
    assert!(out.contains("Review complete"), "{out}");
    r.commit_all("warden init");

    // The same once committed: the change, not the starter.
    let (code, out, err) = run(&warden, r.path(), &["review"]);
    assert_eq!(
        code, 1,
        "the SQL built by concatenation is high: {out}\n{err}"
    );
    assert!(out.contains("src/db.rs") && out.contains("SQL"), "{out}");
    assert!(
        out.contains("skipped before review (`warden plan` says why)"),
        "the starter is skipped, and the hint names the command: {out}"
    );
    let (_, plan, _) = run(&warden, r.path(), &["plan", "--json"]);
    assert!(plan.contains("\"warden-init\""), "{plan}");

    // The plan and a SARIF file by its extension, in an 80-column terminal (COLUMNS).
    let out = Command::new(&warden)
        .args(["plan"])
        .current_dir(r.path())
        .env_remove("CI")
        .env("COLUMNS", "80")
        .env("WARDEN_CACHE_DIR", fresh_cache_dir())
        .output()
        .unwrap();
    let plan = stdout_of(&out);
    assert!(plan.contains("src/db.rs"), "{plan}");
    assert!(plan.lines().all(|l| l.chars().count() <= 80), "{plan}");
    let sarif = tmp.path().join("warden.sarif");
    let out = Command::new(&warden)
        .args(["review", "-o"])
        .arg(&sarif)
        .current_dir(r.path())
        .env_remove("CI")
        .env("COLUMNS", "80")
        .env("WARDEN_CACHE_DIR", fresh_cache_dir())
        .output()
        .unwrap();
    let err = assert_exit(&out, 1);
    assert!(err.lines().all(|l| l.chars().count() <= 80), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    assert_eq!(doc["version"], "2.1.0", "-o by extension writes SARIF");

    // 4. Completions for the shell.
    let (code, out, err) = run(&warden, r.path(), &["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("complete -F _warden"), "{out}");
}
