//! Why a patch was refused, and where.

/// A refused patch: the 1-based line of the input at fault and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct PatchError {
    pub line: usize,
    pub kind: ErrorKind,
}

/// What is wrong with a patch. Messages name the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error(
        "no diff found: expected unified diff text with `diff --git` or `---`/`+++` file headers (for example the output of `git diff`)"
    )]
    NoDiff,
    #[error("hunk header before any file header: expected `diff --git` or `---`/`+++` lines first")]
    HunkWithoutFile,
    #[error("malformed hunk header: expected `@@ -START[,COUNT] +START[,COUNT] @@`")]
    MalformedHunkHeader,
    #[error(
        "line number out of range in the hunk header: warden reads line numbers up to 4294967295"
    )]
    LineNumberTooLarge,
    #[error(
        "combined diffs (`diff --cc`, from a merge) are not supported: diff the merge against one parent instead, e.g. `git diff MERGE^1 MERGE`"
    )]
    Combined,
    #[error(
        "hunk ends early: the input stops with {old} old and {new} new lines still expected by its `@@` header"
    )]
    Truncated { old: u32, new: u32 },
    #[error(
        "hunk ends early: expected {old} more old and {new} more new lines (each starting with ' ', '+' or '-') as its `@@` header says"
    )]
    ShortHunk { old: u32, new: u32 },
    #[error(
        "line does not fit its hunk: the `@@` header leaves {old} old and {new} new lines here"
    )]
    Misfit { old: u32, new: u32 },
    #[error(
        "a `+`/`-` line after the hunk at line {header} is complete: its `@@` header counts fewer lines than follow it; fix the counts"
    )]
    LineAfterHunk { header: usize },
    #[error(
        "{path}: this hunk overlaps the hunk at line {other}: a file's hunks must cover separate lines (was the patch pasted twice?)"
    )]
    OverlappingHunks { path: String, other: usize },
    #[error(
        "the file header names no file: expected `diff --git a/PATH b/PATH`, `rename from`/`rename to`, or `---`/`+++` lines with a path"
    )]
    MissingName,
    #[error("{path}: the patch creates this file, yet its hunks have old lines")]
    NewFileWithOldLines { path: String },
    #[error("{path}: the patch deletes this file, yet its hunks have new lines")]
    DeletedFileWithNewLines { path: String },
}
