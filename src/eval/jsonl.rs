//! AACR-Bench-shaped corpora: one case per JSONL line, `{repo, base_commit, head_commit,
//! reference_comments: [{path, start_line, end_line, side?, text}]}` (other keys are
//! ignored), each `repo` a local clone under `--repos DIR`. Nothing is fetched: a missing
//! clone or commit is an error naming the line that asked for it.

use super::case::{self, Case, Corpus, Reference, Shape};
use super::hunks;
use crate::diff::Target;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest corpus file read (AACR-Bench's 200 cases are a few MiB).
const MAX_CORPUS_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Deserialize)]
struct Line {
    repo: String,
    base_commit: String,
    head_commit: String,
    #[serde(default)]
    reference_comments: Vec<Comment>,
    #[serde(default, alias = "instance_id")]
    id: Option<String>,
}

#[derive(Deserialize)]
struct Comment {
    path: String,
    start_line: Option<u32>,
    end_line: Option<u32>,
    #[serde(default)]
    side: Option<String>,
    #[serde(default, alias = "body")]
    text: String,
}

/// Reads `file`, mapping each `repo` to a clone under `repos`.
pub fn load(file: &Path, repos: &Path) -> Result<Corpus> {
    let bytes = crate::capped_read::read(file, MAX_CORPUS_BYTES).map_err(|e| {
        Error::Usage(match e {
            crate::capped_read::Refused::Over(n) => format!(
                "{}: {n} bytes, over the {MAX_CORPUS_BYTES}-byte limit of a corpus: split it",
                file.display()
            ),
            crate::capped_read::Refused::Io(e) => {
                format!("{}: cannot read the corpus ({e})", file.display())
            }
        })
    })?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::Usage(format!("{}: the corpus is not UTF-8", file.display())))?;
    let mut clones: BTreeMap<String, (PathBuf, git2::Repository)> = BTreeMap::new();
    let mut cases = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let origin = format!("{}:{}", file.display(), n + 1);
        let line: Line = serde_json::from_str(raw)
            .map_err(|e| Error::Usage(format!("{origin}: not a corpus case ({e})")))?;
        if !clones.contains_key(&line.repo) {
            let dir = clone_dir(repos, &line.repo, &origin)?;
            let repo = case::open_clone(&dir, &origin)?;
            clones.insert(line.repo.clone(), (dir, repo));
        }
        let (dir, repo) = &clones[&line.repo];
        cases.push(one(line, dir, repo, &origin)?);
    }
    if cases.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no cases (one JSON object per line)",
            file.display()
        )));
    }
    Ok(Corpus {
        source: file.display().to_string(),
        shape: Shape::Jsonl,
        cases,
        left_out: BTreeMap::new(),
    })
}

fn one(line: Line, dir: &Path, repo: &git2::Repository, origin: &str) -> Result<Case> {
    let base = case::commit_in(repo, dir, &line.base_commit, origin)?;
    let head = case::commit_in(repo, dir, &line.head_commit, origin)?;
    let mut lazy_hunks: Option<Vec<hunks::FileHunks>> = None;
    let mut references = Vec::new();
    for c in line.reference_comments {
        let Some(start) = c.start_line.or(c.end_line) else {
            return Err(Error::Usage(format!(
                "{origin}: the comment on {} has no start_line or end_line",
                c.path
            )));
        };
        let end = c.end_line.unwrap_or(start);
        let (start_line, end_line) = match c.side.as_deref().map(str::to_ascii_uppercase) {
            None => (start, end),
            Some(s) if s == "RIGHT" || s == "NEW" => (start, end),
            Some(s) if s == "LEFT" || s == "OLD" => {
                if lazy_hunks.is_none() {
                    let (b, h) = (oid(&base, origin)?, oid(&head, origin)?);
                    lazy_hunks = Some(hunks::between(repo, b, h, false)?);
                }
                left_to_right(lazy_hunks.as_deref().unwrap_or(&[]), &c.path, start, end)
            }
            Some(other) => {
                return Err(Error::Usage(format!(
                    "{origin}: side {other:?} of the comment on {}: expected RIGHT or LEFT",
                    c.path
                )));
            }
        };
        references.push(case::checked(
            Reference {
                path: c.path,
                start_line,
                end_line,
                text: c.text,
            },
            origin,
        )?);
    }
    Ok(Case {
        id: line
            .id
            .unwrap_or_else(|| format!("{}@{}", line.repo, short(&head))),
        origin: origin.to_string(),
        dir: dir.to_path_buf(),
        target: Target::Range {
            base,
            head,
            symmetric: false,
        },
        references,
    })
}

fn oid(hex: &str, origin: &str) -> Result<git2::Oid> {
    git2::Oid::from_str(hex).map_err(|e| Error::git(origin, e))
}

fn short(hex: &str) -> &str {
    &hex[..hex.len().min(10)]
}

/// An old-side comment's lines on the new side of the file it names.
fn left_to_right(files: &[hunks::FileHunks], path: &str, start: u32, end: u32) -> (u32, u32) {
    let file = files.iter().find(|f| f.old_path == path || f.path == path);
    let hunks = file.map(|f| f.hunks.as_slice()).unwrap_or(&[]);
    (
        hunks::old_to_new(hunks, start).0,
        hunks::old_to_new(hunks, end).1,
    )
}

/// The clone of `repo` under `root`: `root/owner/name`, `root/name` or
/// `root/owner__name` (a URL's host and `.git` are dropped). A name that climbs out of
/// `root` is refused.
fn clone_dir(root: &Path, repo: &str, origin: &str) -> Result<PathBuf> {
    let name = repo
        .trim()
        .trim_end_matches('/')
        .trim_end_matches(".git")
        .split("://")
        .last()
        .unwrap_or("");
    let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
    // A URL names its host first: keep the last two parts.
    let parts = &parts[parts.len().saturating_sub(2)..];
    if parts.is_empty()
        || parts
            .iter()
            .any(|p| *p == ".." || *p == "." || p.contains('\\'))
    {
        return Err(Error::Usage(format!(
            "{origin}: repo {repo:?} is not a repository name (owner/name)"
        )));
    }
    let mut tried = vec![root.join(parts.join("/"))];
    if let [owner, last] = parts {
        tried.push(root.join(last));
        tried.push(root.join(format!("{owner}__{last}")));
    }
    tried.dedup();
    if let Some(dir) = tried.iter().find(|d| d.is_dir()) {
        return Ok(dir.clone());
    }
    let shown: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
    Err(Error::Usage(format!(
        "{origin}: no clone of {repo} under --repos {} (looked for {}): clone it there first (warden eval never uses the network)",
        root.display(),
        shown.join(", ")
    )))
}
