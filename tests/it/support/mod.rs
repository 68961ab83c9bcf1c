//! Test support: real git repositories in temp dirs, the real binary, and checks that
//! read like a user's session.

#![allow(dead_code)]

pub mod agent;
pub mod fake_context;
pub mod fake_github;
pub mod fake_gitlab;
pub mod fake_provider;
pub mod github_oracle;
pub use fake_provider::{fake_models, fake_tools, fake_wire};
pub mod litellm;
pub mod llama;
pub mod oracle;
pub mod output;
pub use output::{assert_exit, assert_success, stderr_of, stdout_of};
pub mod otlp_receiver;
pub mod patch;
pub mod redis;
pub mod resp;
pub mod review;
pub mod scripted;
pub mod tls_ca;
pub mod toml_text;
pub use toml_text::Toml;

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// A path and its (added, removed) lines; None for binary files.
pub type NumstatRow = (String, Option<(usize, usize)>);

/// A git repository in a temp dir, driven with the git CLI as a user would.
pub struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    /// An empty repository on branch `main`.
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs git in the repository with a fixed identity; panics with git's stderr on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"])
            .args(["-c", "protocol.file.allow=always"])
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", self.path())
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    pub fn remove(&self, rel: &str) -> &Self {
        std::fs::remove_file(self.path().join(rel)).unwrap();
        self
    }

    pub fn commit_all(&self, msg: &str) -> &Self {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", msg]);
        self
    }

    pub fn config(&self, toml: &str) -> &Self {
        self.write("warden.toml", toml)
    }

    /// `warden ARGS` in this repository.
    pub fn warden(&self, args: &[&str]) -> Command {
        let mut cmd = warden();
        cmd.current_dir(self.path()).args(args);
        cmd
    }

    /// `warden plan --json ARGS`, asserting success, parsed.
    pub fn plan(&self, args: &[&str]) -> Value {
        let mut full = vec!["plan", "--json"];
        full.extend_from_slice(args);
        plan_json(self.warden(&full))
    }

    /// Added and removed lines per path according to `git diff --numstat ARGS` (binary
    /// files as None): the independent oracle for the accounting invariant.
    pub fn numstat(&self, args: &[&str]) -> Vec<NumstatRow> {
        let mut full = vec!["diff", "--numstat", "-z", "--find-renames"];
        full.extend_from_slice(args);
        let out = self.git(&full);
        let mut rows = Vec::new();
        let mut parts = out.split('\0').filter(|s| !s.is_empty());
        while let Some(head) = parts.next() {
            let mut cols = head.splitn(3, '\t');
            let a = cols.next().unwrap();
            let r = cols.next().unwrap();
            let path = cols.next().unwrap_or("");
            let path = if path.is_empty() {
                // a rename: the old path, then the new one, as separate fields
                let _old = parts.next();
                parts.next().unwrap().to_string()
            } else {
                path.to_string()
            };
            rows.push((path, a.parse().ok().zip(r.parse().ok())));
        }
        rows
    }
}

/// Runs a `warden plan --json …` command, asserting it succeeds; its plan, parsed.
pub fn plan_json(mut cmd: Command) -> Value {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "warden failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("plan JSON")
}

/// The warden binary with an environment that cannot leak from the developer's shell.
/// Each run gets its own empty result cache: runs share answers only when a test sets
/// `WARDEN_CACHE_DIR` (or `--cache-dir`) itself.
pub fn warden() -> Command {
    let mut cmd = Command::cargo_bin("warden").expect("binary built");
    cmd.env_remove("NO_COLOR")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("CI")
        .env_remove("GITHUB_SERVER_URL")
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("GITHUB_SHA")
        .env_remove("GITHUB_HEAD_REF")
        .env_remove("GITHUB_REF_NAME")
        .env_remove("WARDEN_REDIS_URL")
        .env_remove("COLUMNS")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("WARDEN_CACHE_DIR", fresh_cache_dir());
    cmd
}

/// A new, not yet created cache directory under the target's temp dir. Directories of
/// test processes that have ended are removed on first use.
pub fn fresh_cache_dir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    static CLEAN: std::sync::Once = std::sync::Once::new();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("warden-caches");
    CLEAN.call_once(|| {
        for e in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next().unwrap_or("");
            if !Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    root.join(format!("{}-{n}", std::process::id()))
}

pub fn paths(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

pub fn skipped_reason(plan: &Value, path: &str) -> Option<String> {
    plan["skippedFiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"] == path)
        .map(|s| s["reason"].as_str().unwrap().to_string())
}

pub fn planned<'a>(plan: &'a Value, path: &str) -> Option<&'a Value> {
    plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
}

fn n(v: &Value) -> usize {
    v.as_u64().unwrap() as usize
}

/// The invariant: planned + skipped files account for every file and every changed line,
/// checked inside the plan and against git's own numbers when `oracle` is given.
pub fn assert_accounts(plan: &Value, oracle: Option<&[NumstatRow]>) {
    let files = plan["files"].as_array().unwrap();
    let skipped = plan["skippedFiles"].as_array().unwrap();
    let totals = &plan["totals"];
    let mut seen = BTreeSet::new();
    for f in files.iter().chain(skipped) {
        assert!(
            seen.insert(f["path"].as_str().unwrap().to_string()),
            "{} listed twice",
            f["path"]
        );
    }
    assert_eq!(files.len() + skipped.len(), n(&totals["filesInDiff"]));
    for f in files {
        let chunks = f["chunks"].as_array().unwrap();
        assert!(!chunks.is_empty(), "{} planned with no chunk", f["path"]);
        let ca: usize = chunks.iter().map(|c| n(&c["added"])).sum();
        let cr: usize = chunks.iter().map(|c| n(&c["removed"])).sum();
        assert_eq!(
            (ca, cr),
            (n(&f["added"]), n(&f["removed"])),
            "chunks of {} lose lines",
            f["path"]
        );
    }
    let lines: usize = files
        .iter()
        .chain(skipped)
        .map(|f| n(&f["added"]) + n(&f["removed"]))
        .sum();
    assert_eq!(lines, n(&totals["changedLines"]));
    if let Some(rows) = oracle {
        let want: BTreeSet<String> = rows.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(seen, want, "files differ from git diff --numstat");
        for (path, counts) in rows {
            let Some((a, r)) = counts else { continue };
            let f = files
                .iter()
                .chain(skipped)
                .find(|f| f["path"] == path.as_str())
                .unwrap();
            assert_eq!(
                (n(&f["added"]), n(&f["removed"])),
                (*a, *r),
                "line counts of {path}"
            );
        }
    }
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// A repository on branch `feat` whose one commit adds `path` holding an injectable SQL
/// query (which the simulator reports) to a base of `src/lib.rs`.
pub fn repo_adding(path: &str) -> Repo {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn a() {}\n").commit_all("base");
    r.git(&["checkout", "-q", "-b", "feat"]);
    r.write(
        path,
        "fn q(id: &str) { run(\"SELECT * FROM t WHERE id=\" + id).unwrap(); }\n",
    )
    .commit_all("change");
    r
}

/// A repository with `files` files (`src/f{i}.rs`, 10 lines) committed, and two lines
/// (11 and 12) added to each, uncommitted.
pub fn repo_with_changed_files(files: usize) -> Repo {
    repo_with_grown_files(files, "f", 10)
}

/// A repository with `files` files (`src/{prefix}{i}.rs`, `lines` lines) committed, and
/// two lines added at the end of each, uncommitted: one hunk per file.
pub fn repo_with_grown_files(files: usize, prefix: &str, lines: usize) -> Repo {
    let repo = Repo::new();
    for i in 0..files {
        let name = format!("{prefix}{i}");
        repo.write(&format!("src/{name}.rs"), source_lines(lines, &name));
    }
    repo.commit_all("base");
    for i in 0..files {
        let name = format!("{prefix}{i}");
        repo.write(&format!("src/{name}.rs"), source_lines(lines + 2, &name));
    }
    repo
}

/// Two `[[routes]]` on the fake at `base`: `primary` (OpenAI protocol, model `primary`) and
/// `fallback` (Anthropic, model `fallback`), each with `cap` slots and the key in `key_var`.
pub fn fake_routes(base: &str, key_var: &str, cap: usize) -> String {
    [("primary", "openai"), ("fallback", "anthropic")]
        .iter()
        .map(|(name, provider)| {
            format!(
                "[[routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{name}\"\nbaseUrl = \"{base}\"\napiKeyEnv = \"{key_var}\"\nmaxConcurrency = {cap}\n"
            )
        })
        .collect()
}

/// Lines of Rust-looking source, numbered so every line is distinct.
pub fn source_lines(n: usize, tag: &str) -> String {
    (1..=n)
        .map(|i| format!("    let {tag}_{i} = compute({i});\n"))
        .collect()
}

/// Tests that saturate the CPU on purpose (a flooding provider) and tests that measure
/// time to within 100 ms must not run at the same time on a small machine: the first
/// take this lock exclusively, the second shared.
static CPU: std::sync::RwLock<()> = std::sync::RwLock::new(());

pub fn cpu_hungry() -> std::sync::RwLockWriteGuard<'static, ()> {
    CPU.write().unwrap_or_else(|e| e.into_inner())
}

pub fn timing_sensitive() -> std::sync::RwLockReadGuard<'static, ()> {
    CPU.read().unwrap_or_else(|e| e.into_inner())
}
