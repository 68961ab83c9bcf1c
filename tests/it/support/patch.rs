//! Patch text made by real tools (`diff -ruN`, `diff -u`, `git diff`) and read by the
//! judge, `git apply --numstat --summary`, so warden's patch parser is checked against
//! how git itself reads the same bytes.

use std::path::Path;
use std::process::Command;
use warden::diff::{ChangeStatus, DiffSet};

/// `warden plan --json --diff in.diff ARGS` in `dir` with `patch` as in.diff, asserting
/// success, parsed.
pub fn plan_patch(dir: &Path, patch: &[u8], args: &[&str]) -> serde_json::Value {
    std::fs::write(dir.join("in.diff"), patch).unwrap();
    let mut cmd = super::warden();
    cmd.current_dir(dir)
        .args(["plan", "--json", "--diff", "in.diff"])
        .args(args);
    super::plan_json(cmd)
}

/// Two directory trees, `a/` (old) and `b/` (new), in a temp dir.
pub struct Trees {
    dir: tempfile::TempDir,
}

impl Trees {
    pub fn new() -> Trees {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::create_dir(dir.path().join("b")).unwrap();
        Trees { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `rel` under `side` ("a" or "b").
    pub fn put(&self, side: &str, rel: &str, content: impl AsRef<[u8]>) -> &Self {
        let p = self.path().join(side).join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
        self
    }

    /// `diff -ruN a b`, run from the parent directory as people do.
    pub fn diff_run(&self) -> Vec<u8> {
        self.diff(&["-ruN", "a", "b"])
    }

    /// `diff ARGS` in the trees' directory; exit status 0 or 1 (1: the inputs differ).
    pub fn diff(&self, args: &[&str]) -> Vec<u8> {
        let out = Command::new("diff")
            .args(args)
            .current_dir(self.path())
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .output()
            .expect("diff runs");
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "diff {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }
}

/// One file as git apply (or warden) reads it: path, (added, deleted) for text files,
/// and whether the patch creates or deletes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Read {
    pub path: String,
    pub counts: Option<(usize, usize)>,
    pub status: &'static str,
}

/// `git apply --numstat -z` and `git apply --summary` on `patch`, outside any repository.
pub fn judge(patch: &[u8]) -> Vec<Read> {
    judge_with(patch, &[])
}

/// As [`judge`], with more arguments for `git apply` (`-p0`).
pub fn judge_with(patch: &[u8], extra: &[&str]) -> Vec<Read> {
    let numstat = git_apply(patch, &[&["--numstat", "-z"], extra].concat());
    let summary = String::from_utf8(git_apply(patch, &[&["--summary"], extra].concat())).unwrap();
    let mut created = Vec::new();
    let mut deleted = Vec::new();
    for line in summary.lines() {
        let line = line.trim_start();
        let (list, rest) = if let Some(r) = line.strip_prefix("create ") {
            (&mut created, r)
        } else if let Some(r) = line.strip_prefix("delete ") {
            (&mut deleted, r)
        } else {
            continue;
        };
        // ` create mode 100644 NAME` (git) or ` create NAME` (traditional).
        let name = match rest.strip_prefix("mode ") {
            Some(m) => m.split_once(' ').unwrap().1,
            None => rest,
        };
        list.push(c_unquote(name));
    }
    let mut out = Vec::new();
    let mut fields = numstat.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(head) = fields.next() {
        let head = String::from_utf8_lossy(head).into_owned();
        let mut cols = head.splitn(3, '\t');
        let (a, d) = (cols.next().unwrap(), cols.next().unwrap());
        let path = match cols.next().unwrap_or("") {
            // A rename or copy: the old path, then the new one, as separate fields.
            "" => {
                fields.next();
                String::from_utf8_lossy(fields.next().unwrap()).into_owned()
            }
            p => p.to_string(),
        };
        let status = if created.contains(&path) {
            "create"
        } else if deleted.contains(&path) {
            "delete"
        } else {
            "modify"
        };
        out.push(Read {
            counts: a.parse().ok().zip(d.parse().ok()),
            path,
            status,
        });
    }
    out.sort();
    out
}

fn git_apply(patch: &[u8], args: &[&str]) -> Vec<u8> {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("git")
        .arg("apply")
        .args(args)
        .current_dir(dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.path())
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child.stdin.take().unwrap().write_all(patch).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git apply {args:?} refused the patch: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(patch)
    );
    out.stdout
}

/// Undoes git's C-style quoting of a path in `--summary` output.
fn c_unquote(s: &str) -> String {
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return s.to_string();
    };
    let bytes = inner.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let c = bytes[i + 1];
        if c.is_ascii_digit() {
            let oct = std::str::from_utf8(&bytes[i + 1..i + 4]).unwrap();
            out.push(u8::from_str_radix(oct, 8).unwrap());
            i += 4;
        } else {
            out.push(match c {
                b'n' => b'\n',
                b't' => b'\t',
                other => other,
            });
            i += 2;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// warden's reading of `patch`, in the judge's terms. Binary files are listed with no
/// counts, as git does.
pub fn ours(patch: &[u8]) -> DiffSet {
    warden::diff::patch_text::parse(patch, "test.diff").unwrap_or_else(|e| {
        panic!(
            "warden refused the patch: {e}\n{}",
            String::from_utf8_lossy(patch)
        )
    })
}

/// The text files of `set` as [`Read`] rows, sorted.
pub fn text_reads(set: &DiffSet) -> Vec<Read> {
    let mut out: Vec<Read> = set
        .files
        .iter()
        .filter(|f| !f.binary)
        .map(|f| Read {
            path: f.path.to_string(),
            counts: Some((f.added(), f.removed())),
            status: match f.status {
                ChangeStatus::Added => "create",
                ChangeStatus::Deleted => "delete",
                _ => "modify",
            },
        })
        .collect();
    out.sort();
    out
}

/// The judge's rows for files git reads as text.
pub fn judged_text(patch: &[u8]) -> Vec<Read> {
    judge(patch)
        .into_iter()
        .filter(|r| r.counts.is_some())
        .collect()
}
