//! `warden eval --from-history N`: a corpus from the repository's own last N fix commits
//! (Greptile's method). A fix F turned buggy code (F^) into fixed code (F), so reviewing
//! `F..F^` — base F, head F^ — is a change that puts the bug back, and the lines the fix
//! changed, on F^'s side, are where a good review of it points. Merges, reverts,
//! whitespace-only fixes, fixes that touch no code file and fixes over the size limit are
//! left out and counted.

use super::case::{Case, Corpus, Reference, Shape};
use super::hunks::{self, FileHunks};
use crate::diff::Target;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// Which commits count as fixes.
#[derive(Debug, Clone)]
pub struct Filter {
    /// A commit whose subject matches is a fix candidate.
    pub pattern: regex::Regex,
    /// The most changed lines (code files, whitespace ignored) a fix may have.
    pub max_lines: u32,
}

/// The default fix pattern: a word such as fix, fixes, fixed, bug, bugfix or hotfix.
pub const DEFAULT_PATTERN: &str = r"(?i)\b(fix(e[sd])?|bug(fix)?|hotfix)\b";
/// The default size limit of a fix, in changed lines.
pub const DEFAULT_MAX_LINES: u32 = 60;
/// How many commits are looked at, at most, whatever N is.
const MAX_WALK: usize = 100_000;

/// File names that are code (by extension).
const CODE: &[&str] = &[
    "rs", "py", "js", "jsx", "ts", "tsx", "mjs", "cjs", "go", "java", "kt", "kts", "scala", "c",
    "h", "cc", "cpp", "cxx", "hpp", "hh", "cs", "rb", "php", "swift", "m", "mm", "sh", "bash",
    "zsh", "pl", "lua", "ex", "exs", "erl", "hs", "ml", "clj", "dart", "r", "jl", "sql", "vue",
    "svelte", "zig", "nim", "groovy", "ps1",
];

fn is_code(path: &str) -> bool {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| CODE.contains(&e.to_ascii_lowercase().as_str()))
}

/// Why a fix candidate was left out (the keys of [`Corpus::left_out`]).
fn left_out_reason(
    commit: &git2::Commit,
    repo: &git2::Repository,
    filter: &Filter,
) -> Result<std::result::Result<Vec<Reference>, &'static str>> {
    if commit.parent_count() > 1 {
        return Ok(Err("merge"));
    }
    let message = String::from_utf8_lossy(commit.message_bytes());
    let message = message.as_ref();
    if message.starts_with("Revert ") || message.contains("This reverts commit") {
        return Ok(Err("revert"));
    }
    let Ok(parent) = commit.parent(0) else {
        return Ok(Err("first commit"));
    };
    let code = |files: Vec<FileHunks>| -> Vec<FileHunks> {
        files
            .into_iter()
            .filter(|f| !f.binary && (is_code(&f.path) || is_code(&f.old_path)))
            .collect()
    };
    let all = code(hunks::between(repo, parent.id(), commit.id(), false)?);
    if all.is_empty() {
        return Ok(Err("no code file"));
    }
    let real = code(hunks::between(repo, parent.id(), commit.id(), true)?);
    if real.iter().all(|f| f.hunks.is_empty()) {
        return Ok(Err("whitespace only"));
    }
    let changed: u32 = real
        .iter()
        .flat_map(|f| &f.hunks)
        .map(|h| h.old_lines + h.new_lines)
        .sum();
    if changed > filter.max_lines {
        return Ok(Err("too large"));
    }
    let subject = message.lines().next().unwrap_or("").to_string();
    let references = real
        .iter()
        .flat_map(|f| {
            let subject = &subject;
            f.hunks.iter().map(move |h| {
                let (start_line, end_line) = hunks::old_span(h);
                Reference {
                    path: f.old_path.clone(),
                    start_line,
                    end_line,
                    text: format!("the fix {subject:?} changed these lines"),
                }
            })
        })
        .collect();
    Ok(Ok(references))
}

/// The last `n` fix commits reachable from HEAD of the repository at `dir`, newest first.
pub fn load(dir: &Path, n: usize, filter: &Filter) -> Result<Corpus> {
    let repo = crate::diff::git::open_repo(dir)?;
    let root = repo
        .workdir()
        .ok_or_else(|| Error::Git("--from-history needs a repository with a working tree".into()))?
        .to_path_buf();
    let mut walk = repo.revwalk().map_err(|e| Error::git("history", e))?;
    walk.push_head()
        .map_err(|e| Error::git("--from-history: HEAD", e))?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .map_err(|e| Error::git("history", e))?;
    let mut cases = Vec::new();
    let mut left_out: BTreeMap<String, usize> = BTreeMap::new();
    for id in walk.take(MAX_WALK) {
        if cases.len() >= n {
            break;
        }
        let id = id.map_err(|e| Error::git("history", e))?;
        let commit = repo.find_commit(id).map_err(|e| Error::git("history", e))?;
        let subject = String::from_utf8_lossy(commit.summary_bytes().unwrap_or(b"")).into_owned();
        if !filter.pattern.is_match(&subject) {
            continue;
        }
        match left_out_reason(&commit, &repo, filter)? {
            Err(reason) => *left_out.entry(reason.to_string()).or_default() += 1,
            Ok(references) => {
                let fix = id.to_string();
                let parent = commit.parent_id(0).map_err(|e| Error::git("history", e))?;
                cases.push(Case {
                    id: format!("{} {}", &fix[..10], subject),
                    origin: format!("commit {fix}"),
                    dir: root.clone(),
                    target: Target::Range {
                        base: fix,
                        head: parent.to_string(),
                        symmetric: false,
                    },
                    references,
                });
            }
        }
    }
    if cases.is_empty() {
        let why: Vec<String> = left_out.iter().map(|(k, v)| format!("{v} {k}")).collect();
        return Err(Error::Usage(format!(
            "--from-history: no fix commit in {} matches {:?} (left out: {}): change --fix-pattern or --max-fix-lines",
            root.display(),
            filter.pattern.as_str(),
            if why.is_empty() {
                "none".to_string()
            } else {
                why.join(", ")
            }
        )));
    }
    Ok(Corpus {
        source: format!("{} (last {n} fixes)", root.display()),
        shape: Shape::History,
        cases,
        left_out,
    })
}
