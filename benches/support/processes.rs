//! What the whole-process fleet benches share: a repository with one unit per file, and N
//! concurrent `warden review` processes over it, started `stagger` apart.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The env var the benches' routes read their key from.
pub const KEY_VAR: &str = "WARDEN_BENCH_KEY";

/// `git ARGS` in `dir`, as a committer named `b`; panics when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=b", "-c", "user.email=b@example.com"])
        .args(args)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// A repository with `files` files, each with two uncommitted added lines (one unit each).
pub fn repo(dir: &Path, files: usize) {
    git(dir, &["init", "-q", "-b", "main"]);
    let lines = |n: usize, f: usize| -> String {
        (1..=n)
            .map(|i| format!("    let f{f}_{i} = compute({i});\n"))
            .collect()
    };
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for f in 0..files {
        std::fs::write(dir.join(format!("src/f{f}.rs")), lines(10, f)).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "base"]);
    for f in 0..files {
        std::fs::write(dir.join(format!("src/f{f}.rs")), lines(12, f)).unwrap();
    }
}

/// Runs `processes` reviews of `repo` with `bin` and the config at `cfg`, each started
/// `stagger` after the one before, and waits for all. Units reviewed and units, summed
/// over their JSON reports.
pub fn reviews(
    bin: &Path,
    repo: &Path,
    cfg: &Path,
    processes: usize,
    stagger: Duration,
) -> (u64, u64) {
    let children: Vec<_> = (0..processes)
        .map(|i| {
            if i > 0 {
                std::thread::sleep(stagger);
            }
            Command::new(bin)
                .current_dir(repo)
                .args(["review", "--json", "-q", "--no-cache"])
                .args(["--skill", "code-review", "-c"])
                .arg(cfg)
                .env(KEY_VAR, "sk-bench")
                .env_remove("CI")
                .env_remove("WARDEN_REDIS_URL")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("warden")
        })
        .collect();
    let (mut reviewed, mut units) = (0, 0);
    for c in children {
        let out = c.wait_with_output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
        reviewed += v["summary"]["reviewed"].as_u64().unwrap();
        units += v["summary"]["units"].as_u64().unwrap();
    }
    (reviewed, units)
}
