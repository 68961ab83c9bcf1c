//! The diff model: what changed, as plain data. Produced from a repository by
//! [`git`] (git2) or from unified diff text by [`patch_text`]; consumed by the scan
//! policy and the chunker, which never touch git themselves.

pub mod content;
pub mod git;
pub mod patch_text;
mod repo_path;
pub mod target;

pub use repo_path::RepoPath;
pub use target::Target;

use serde::Serialize;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeStatus {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
    /// A file became a symlink or the other way round.
    TypeChange,
}

/// One changed file.
#[derive(Debug, Clone)]
pub struct FileChange {
    /// The path on the new side (the old path for deletions).
    pub path: RepoPath,
    /// The path on the old side when it differs (renames, copies).
    pub old_path: Option<RepoPath>,
    pub status: ChangeStatus,
    pub binary: bool,
    /// A submodule pointer (gitlink) changed.
    pub submodule: bool,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    pub hunks: Vec<Hunk>,
}

/// One hunk as git prints it (`@@ -a,b +c,d @@`).
#[derive(Debug, Clone)]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    pub lines: Vec<Line>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// One line of a hunk, without its line terminator (`\n` or `\r\n`).
#[derive(Debug, Clone)]
pub struct Line {
    pub kind: LineKind,
    pub old_no: Option<u32>,
    pub new_no: Option<u32>,
    pub text: String,
}

/// The selected diff: the files and a description of what was compared.
#[derive(Debug, Clone, Default)]
pub struct DiffSet {
    pub files: Vec<FileChange>,
    /// For people: "working tree vs HEAD", "main...feature", "patch from stdin".
    pub description: String,
}

impl Hunk {
    pub fn added(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Added)
            .count()
    }
    pub fn removed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Removed)
            .count()
    }
}

impl FileChange {
    pub fn added(&self) -> usize {
        self.hunks.iter().map(Hunk::added).sum()
    }
    pub fn removed(&self) -> usize {
        self.hunks.iter().map(Hunk::removed).sum()
    }
    /// Added plus removed lines: the unit every accounting in the plan is made in.
    pub fn changed(&self) -> usize {
        self.added() + self.removed()
    }
    pub fn mode_changed(&self) -> bool {
        matches!((self.old_mode, self.new_mode), (Some(a), Some(b)) if a != b)
    }
}

impl DiffSet {
    pub fn changed_lines(&self) -> usize {
        self.files.iter().map(FileChange::changed).sum()
    }
}
