//! Relevance scores for kept files. The caps (`maxFiles`, `maxChangedLines`) are applied
//! to files sorted by this score, so a cap drops the least relevant files first. Every
//! point of the score comes with a reason a person can read in `warden plan`.

use crate::diff::{FileChange, LineKind};

/// How relevant a file is, and why (shown by `warden plan`).
#[derive(Debug, Clone)]
pub struct Score {
    /// Higher is reviewed first.
    pub value: i32,
    /// What raised or lowered it.
    pub reasons: Vec<String>,
}

impl Score {
    fn add(&mut self, points: i32, why: impl Into<String>) {
        self.value += points;
        let sign = if points >= 0 { "+" } else { "" };
        self.reasons
            .push(format!("{} ({sign}{points})", why.into()));
    }
}

const SOURCE_EXT: &[&str] = &[
    "rs", "go", "py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "java", "kt", "kts", "c", "h", "cc",
    "cpp", "cxx", "hpp", "cs", "rb", "php", "swift", "scala", "sh", "bash", "zsh", "sql", "m",
    "mm", "ex", "exs", "erl", "hs", "ml", "lua", "pl", "pm", "r", "dart", "vue", "svelte", "zig",
    "nim", "clj", "fs", "groovy", "ps1", "sol",
];
const CONFIG_EXT: &[&str] = &[
    "toml",
    "yaml",
    "yml",
    "json",
    "ini",
    "cfg",
    "conf",
    "tf",
    "hcl",
    "gradle",
    "xml",
    "properties",
    "env",
    "nix",
];
const CONFIG_NAMES: &[&str] = &[
    "dockerfile",
    "makefile",
    "justfile",
    "containerfile",
    "procfile",
];
const DOC_EXT: &[&str] = &[
    "md", "rst", "txt", "adoc", "org", "tex", "html", "css", "scss",
];

/// Security-sensitive areas: (name, path fragments, fragments of added lines).
const AREAS: &[(&str, &[&str], &[&str])] = &[
    (
        "auth",
        &[
            "auth",
            "login",
            "session",
            "oauth",
            "jwt",
            "passw",
            "credential",
            "acl",
            "rbac",
        ],
        &[
            "password",
            "authenticat",
            "authoriz",
            "jwt",
            "oauth",
            "csrf",
            "is_admin",
            "bearer",
        ],
    ),
    (
        "crypto",
        &["crypt", "cipher", "tls", "ssl", "cert"],
        &[
            "encrypt",
            "decrypt",
            "cipher",
            "hmac",
            "md5",
            "sha1",
            "private_key",
            "nonce",
        ],
    ),
    (
        "sql",
        &["sql", "query", "migration"],
        &[
            "select ",
            "insert into",
            "delete from",
            "update ",
            ".query(",
            ".execute(",
            "raw(",
        ],
    ),
    (
        "shell/exec",
        &["exec", "shell", "spawn", "command"],
        &[
            "exec(",
            "spawn(",
            "subprocess",
            "system(",
            "popen",
            "shell=true",
            "child_process",
            "command::new",
            "eval(",
        ],
    ),
    (
        "deserialization",
        &["serial", "pickle", "marshal"],
        &[
            "pickle.load",
            "yaml.load",
            "unserialize",
            "deserializ",
            "readobject",
            "marshal.load",
        ],
    ),
    (
        "permissions",
        &["perm", "privilege", "sudo"],
        &[
            "chmod",
            "chown",
            "setuid",
            "0o777",
            "0777",
            "sudo",
            "privilege",
        ],
    ),
    (
        "network input",
        &[
            "handler",
            "controller",
            "upload",
            "webhook",
            "/api/",
            "server",
            "route",
        ],
        &[
            "request.",
            "req.body",
            "req.query",
            "headers[",
            "upload",
            "listen(",
            "recv(",
        ],
    ),
];

/// What a file is for, by its path: the base of its score.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Source,
    Config,
    Docs,
    Other,
    /// Tests, benchmarks, fixtures and scripts: they exercise or drive the code, and
    /// rank below it whatever they contain.
    Support(&'static str),
}

const FIXTURE_DIRS: &[&str] = &[
    "fixtures",
    "fixture",
    "testdata",
    "test-data",
    "test_data",
    "examples",
    "example",
    "samples",
    "sample",
    "snapshots",
    "__snapshots__",
    "mocks",
    "__mocks__",
];
const BENCH_DIRS: &[&str] = &["benches", "bench", "benchmarks", "benchmark"];
const TEST_DIRS: &[&str] = &["test", "tests", "spec", "specs", "__tests__", "e2e"];
const SCRIPT_DIRS: &[&str] = &["scripts", "script", "hack"];
const SCRIPT_EXT: &[&str] = &["sh", "bash", "zsh", "fish", "ps1", "bat", "cmd"];

/// The highest score of a test, benchmark, fixture or script: below any source file
/// (40 base + at least 2 for its size, - 10 if it only deletes).
const SUPPORT_CAP: i32 = 29;

fn kind(path: &str, name: &str, ext: &str) -> Kind {
    let in_dir = |dirs: &[&str]| {
        dirs.iter()
            .any(|d| path.starts_with(&format!("{d}/")) || path.contains(&format!("/{d}/")))
    };
    let named = |parts: &[&str]| parts.iter().any(|p| name.contains(p));
    if in_dir(FIXTURE_DIRS) {
        Kind::Support("fixture or example data")
    } else if in_dir(BENCH_DIRS) || named(&["_bench.", ".bench.", "_benchmark."]) {
        Kind::Support("benchmark code")
    } else if in_dir(TEST_DIRS)
        || named(&["_test.", ".test.", ".spec.", "_spec.", "_tests."])
        || name.starts_with("test_")
        || matches!(name, "tests.rs" | "conftest.py")
    {
        Kind::Support("test code")
    } else if in_dir(SCRIPT_DIRS) || SCRIPT_EXT.contains(&ext) {
        Kind::Support("script")
    } else if SOURCE_EXT.contains(&ext) {
        Kind::Source
    } else if CONFIG_EXT.contains(&ext) || CONFIG_NAMES.contains(&name) {
        Kind::Config
    } else if DOC_EXT.contains(&ext) || in_dir(&["docs"]) {
        Kind::Docs
    } else {
        Kind::Other
    }
}

/// Characters of each added line searched for security keywords (a minified line can be
/// megabytes long; its head says enough).
const KEYWORD_SCAN: usize = 1000;

/// Scores one kept file. `skill_paths_hit` says whether a skill's explicit `paths` match it.
pub fn score(file: &FileChange, skill_paths_hit: bool) -> Score {
    let mut s = Score {
        value: 0,
        reasons: Vec::new(),
    };
    let path = file.path.display().to_lowercase();
    let name = file.path.file_name_lower();
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let kind = kind(&path, &name, ext);
    match kind {
        Kind::Source => s.add(40, "source code"),
        Kind::Config => s.add(20, "build or config file"),
        Kind::Docs => s.add(5, "documentation"),
        Kind::Other => s.add(10, "other file"),
        Kind::Support(what) => s.add(
            if what == "fixture or example data" {
                2
            } else {
                15
            },
            what,
        ),
    }
    // Keywords in tests and scripts say what they exercise, not that they are sensitive.
    if !matches!(kind, Kind::Support(_)) {
        security_areas(file, &path, &mut s);
    }
    let changed = file.changed();
    let size_points = (((changed + 1) as f64).ln() * 3.0).round().min(15.0) as i32;
    if size_points > 0 {
        s.add(size_points, format!("{changed} changed lines"));
    }
    if skill_paths_hit {
        s.add(10, "matches a skill's paths");
    }
    if file.added() == 0 && file.removed() > 0 {
        s.add(-10, "deletions only");
    }
    if matches!(kind, Kind::Support(_)) && s.value > SUPPORT_CAP {
        s.add(SUPPORT_CAP - s.value, "ranks below source code");
    }
    s
}

/// Up to two security-sensitive areas named by the path or the added lines, 15 each.
fn security_areas(file: &FileChange, path: &str, s: &mut Score) {
    let added: String = file
        .hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == LineKind::Added)
        .take(2000)
        .map(|l| {
            let mut end = l.text.len().min(KEYWORD_SCAN);
            while !l.text.is_char_boundary(end) {
                end -= 1;
            }
            l.text[..end].to_ascii_lowercase()
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut area_points = 0;
    for (area, path_frags, text_frags) in AREAS {
        if area_points >= 30 {
            break;
        }
        let where_ = if path_frags.iter().any(|f| path.contains(f)) {
            "path"
        } else if text_frags.iter().any(|f| added.contains(f)) {
            "code"
        } else {
            continue;
        };
        area_points += 15;
        s.add(15, format!("security-sensitive: {area} ({where_})"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{ChangeStatus, Hunk, Line, RepoPath};

    fn file(path: &str, added: &[&str]) -> FileChange {
        FileChange {
            path: RepoPath::from(path),
            old_path: None,
            status: ChangeStatus::Modified,
            binary: false,
            submodule: false,
            old_mode: None,
            new_mode: None,
            hunks: vec![Hunk {
                old_start: 1,
                old_lines: 0,
                new_start: 1,
                new_lines: added.len() as u32,
                lines: added
                    .iter()
                    .enumerate()
                    .map(|(i, t)| Line {
                        kind: LineKind::Added,
                        old_no: None,
                        new_no: Some(i as u32 + 1),
                        text: t.to_string(),
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn source_outranks_docs_and_security_outranks_plain_source() {
        let docs = score(&file("README.md", &["hello"]), false);
        let src = score(&file("src/lib.rs", &["let x = 1;"]), false);
        let auth = score(&file("src/auth/login.rs", &["check(password)"]), false);
        assert!(src.value > docs.value);
        assert!(auth.value > src.value, "{auth:?}");
        assert!(
            auth.reasons
                .iter()
                .any(|r| r.contains("security-sensitive: auth"))
        );
        let fixture = score(&file("tests/fixtures/a.rs", &["x"]), false);
        assert!(fixture.value < docs.value + 5);
    }

    #[test]
    fn tests_benches_and_scripts_stay_below_any_source_file_whatever_they_contain() {
        let hot: Vec<String> = (0..500)
            .map(|i| format!("authenticate(password); db.query(\"select {i}\"); exec(cmd)"))
            .collect();
        let hot: Vec<&str> = hot.iter().map(String::as_str).collect();
        let mut quiet = file("src/util.rs", &[]);
        quiet.hunks[0].lines.push(Line {
            kind: LineKind::Removed,
            old_no: Some(1),
            new_no: None,
            text: "x".into(),
        });
        let floor = score(&quiet, false);
        assert!(floor.reasons.iter().any(|r| r.contains("deletions only")));
        for p in [
            "tests/auth_query.rs",
            "src/auth/session_test.go",
            "web/login.spec.ts",
            "benches/query.rs",
            "src/sql_bench.go",
            "scripts/auth.py",
            "deploy/exec.sh",
            "testdata/query.sql",
        ] {
            let sc = score(&file(p, &hot), true);
            assert!(sc.value < floor.value, "{p}: {sc:?} vs {floor:?}");
            assert!(!sc.reasons.iter().any(|r| r.contains("security")), "{p}");
        }
    }
}
