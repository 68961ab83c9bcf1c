//! The diff model: what changed, as plain data. Produced from a repository by
//! [`git`] (git2) or from unified diff text by [`patch_text`]; consumed by the scan
//! policy and the chunker, which never touch git themselves.

pub mod content;
mod default_pick;
pub mod git;
pub mod patch_text;
mod refs;
mod repo_path;
pub mod target;

pub(crate) use default_pick::{DefaultPick, pick as pick_default};
pub use repo_path::RepoPath;
pub use target::Target;

use serde::Serialize;

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeStatus {
    /// A new file.
    Added,
    /// A removed file.
    Deleted,
    /// Changed in place.
    Modified,
    /// Moved (perhaps with changes); `old_path` says from where.
    Renamed,
    /// Copied from `old_path` (perhaps with changes).
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
    /// How it changed.
    pub status: ChangeStatus,
    /// Binary content: nothing a model can review line by line.
    pub binary: bool,
    /// A submodule pointer (gitlink) changed.
    pub submodule: bool,
    /// The file mode before (`0o100644`, `0o100755`, …), when known.
    pub old_mode: Option<u32>,
    /// The file mode after, when known.
    pub new_mode: Option<u32>,
    /// Its hunks in new-file order.
    pub hunks: Vec<Hunk>,
}

/// One hunk as git prints it (`@@ -a,b +c,d @@`).
#[derive(Debug, Clone)]
pub struct Hunk {
    /// First old-side line.
    pub old_start: u32,
    /// Old-side lines the hunk covers.
    pub old_lines: u32,
    /// First new-side line.
    pub new_start: u32,
    /// New-side lines the hunk covers.
    pub new_lines: u32,
    /// Its lines in order.
    pub lines: Vec<Line>,
}

/// What a hunk line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// Unchanged (on both sides).
    Context,
    /// Only on the new side.
    Added,
    /// Only on the old side.
    Removed,
}

/// One line of a hunk, without its line terminator (`\n` or `\r\n`).
#[derive(Debug, Clone)]
pub struct Line {
    /// Context, added or removed.
    pub kind: LineKind,
    /// Its old-side number (None for added lines).
    pub old_no: Option<u32>,
    /// Its new-side number (None for removed lines).
    pub new_no: Option<u32>,
    /// Its text (lossy UTF-8).
    pub text: String,
}

/// The selected diff: the files and a description of what was compared.
#[derive(Debug, Clone, Default)]
pub struct DiffSet {
    /// Every changed file, in diff order.
    pub files: Vec<FileChange>,
    /// For people: "working tree vs HEAD", "main...feature", "patch from stdin".
    pub description: String,
}

impl Hunk {
    /// Added lines in this hunk.
    pub fn added(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Added)
            .count()
    }
    /// Removed lines in this hunk.
    pub fn removed(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| l.kind == LineKind::Removed)
            .count()
    }
}

impl FileChange {
    /// Added lines in this file.
    pub fn added(&self) -> usize {
        self.hunks.iter().map(Hunk::added).sum()
    }
    /// Removed lines in this file.
    pub fn removed(&self) -> usize {
        self.hunks.iter().map(Hunk::removed).sum()
    }
    /// Added plus removed lines: the unit every accounting in the plan is made in.
    pub fn changed(&self) -> usize {
        self.added() + self.removed()
    }
    /// Whether the file mode changed (e.g. it became executable).
    pub fn mode_changed(&self) -> bool {
        matches!((self.old_mode, self.new_mode), (Some(a), Some(b)) if a != b)
    }
}

impl DiffSet {
    /// Changed lines of every file: what the plan accounts for.
    pub fn changed_lines(&self) -> usize {
        self.files.iter().map(FileChange::changed).sum()
    }
}
