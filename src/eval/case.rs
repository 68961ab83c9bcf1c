//! What an evaluation reviews: cases (a change and the problems a good review of it
//! reports), gathered into a corpus by one of the loaders (`jsonl.rs`, `folders.rs`,
//! `history.rs`). A case with no references is a clean case: every finding on it is a
//! false positive.

use crate::diff::Target;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A problem a good review of the case reports: a line range of the new side of the
/// change (findings carry new-file lines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    /// The file.
    pub path: String,
    /// First new-file line.
    pub start_line: u32,
    /// Last new-file line.
    pub end_line: u32,
    /// What the reviewer said (for people and the judge).
    #[serde(default)]
    pub text: String,
}

/// One change to review and what a good review of it finds.
#[derive(Debug, Clone)]
pub struct Case {
    /// A name for people (unique in the corpus).
    pub id: String,
    /// Where the case was defined (`corpus.jsonl:12`, a folder, a commit).
    pub origin: String,
    /// Where the review runs: the repository (or, for a patch, the directory warden runs
    /// in).
    pub dir: PathBuf,
    /// What is reviewed.
    pub target: Target,
    /// What a good review reports; empty: a clean case.
    pub references: Vec<Reference>,
}

/// Which loader made the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// AACR-Bench-shaped JSONL over local clones.
    Jsonl,
    /// warden's case folders (`case.json`).
    Folders,
    /// The repository's own fix commits, reversed.
    History,
}

/// The cases of one evaluation.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The file, folder or repository it came from, for people.
    pub source: String,
    /// Which loader made it.
    pub shape: Shape,
    /// The cases, in the order they are reviewed.
    pub cases: Vec<Case>,
    /// Candidates left out, by reason (history: merges, reverts, whitespace-only fixes…).
    pub left_out: BTreeMap<String, usize>,
}

/// Checks a reference's lines, naming `origin` (`file:line`) in the error.
pub(crate) fn checked(reference: Reference, origin: &str) -> Result<Reference> {
    if reference.path.trim().is_empty() {
        return Err(Error::Usage(format!(
            "{origin}: a reference has an empty path: give the file the comment is on"
        )));
    }
    if reference.start_line == 0 || reference.end_line < reference.start_line {
        return Err(Error::Usage(format!(
            "{origin}: reference on {} has lines {}..{}: lines are 1-based and the end is at least the start",
            reference.path, reference.start_line, reference.end_line
        )));
    }
    Ok(reference)
}

/// A commit of `repo` named by `rev`, or an error naming where it was asked for.
pub(crate) fn commit_in(
    repo: &git2::Repository,
    clone: &Path,
    rev: &str,
    origin: &str,
) -> Result<String> {
    repo.revparse_single(rev)
        .and_then(|o| o.peel_to_commit())
        .map(|c| c.id().to_string())
        .map_err(|_| {
            Error::Usage(format!(
                "{origin}: commit {rev} is not in {}: fetch it into that clone (warden eval never uses the network)",
                clone.display()
            ))
        })
}

/// Opens the git repository at `dir`, or an error naming where it was asked for.
pub(crate) fn open_clone(dir: &Path, origin: &str) -> Result<git2::Repository> {
    git2::Repository::open(dir).map_err(|e| {
        Error::Usage(format!(
            "{origin}: {} is not a git repository ({}): clone it there first",
            dir.display(),
            e.message()
        ))
    })
}
