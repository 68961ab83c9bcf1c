//! Why a patch was refused, and where.

/// A refused patch: the 1-based line of the input at fault and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct PatchError {
    /// The 1-based line of the input at fault.
    pub line: usize,
    /// What is wrong there.
    pub kind: ErrorKind,
}

/// What is wrong with a patch. Messages name the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    #[error(
        "no diff found: expected unified diff text with `diff --git` or `---`/`+++` file headers (for example the output of `git diff`)"
    )]
    /// Nothing in the input looks like a diff.
    NoDiff,
    #[error("hunk header before any file header: expected `diff --git` or `---`/`+++` lines first")]
    /// A `@@` line before any file header.
    HunkWithoutFile,
    #[error("malformed hunk header: expected `@@ -START[,COUNT] +START[,COUNT] @@`")]
    /// A `@@` line that does not parse.
    MalformedHunkHeader,
    #[error(
        "line number out of range in the hunk header: warden reads line numbers up to 4294967295"
    )]
    /// A line number beyond u32 (git's own limit).
    LineNumberTooLarge,
    #[error(
        "combined diffs (`diff --cc`, from a merge) are not supported: diff the merge against one parent instead, e.g. `git diff MERGE^1 MERGE`"
    )]
    /// A combined diff of a merge.
    Combined,
    #[error(
        "hunk ends early: the input stops with {old} old and {new} new lines still expected by its `@@` header"
    )]
    /// The input ends inside a hunk.
    Truncated {
        /// Old-side lines still expected.
        old: u32,
        /// New-side lines still expected.
        new: u32,
    },
    #[error(
        "hunk ends early: expected {old} more old and {new} more new lines (each starting with ' ', '+' or '-') as its `@@` header says"
    )]
    /// A line that is not hunk text inside a hunk.
    ShortHunk {
        /// Old-side lines still expected.
        old: u32,
        /// New-side lines still expected.
        new: u32,
    },
    #[error(
        "line does not fit its hunk: the `@@` header leaves {old} old and {new} new lines here"
    )]
    /// A line the header's counts leave no room for.
    Misfit {
        /// Old-side lines still expected.
        old: u32,
        /// New-side lines still expected.
        new: u32,
    },
    #[error(
        "a `+`/`-` line after the hunk at line {header} is complete: its `@@` header counts fewer lines than follow it; fix the counts"
    )]
    /// A diff line after a hunk whose counts are met.
    LineAfterHunk {
        /// The line of that hunk's header.
        header: usize,
    },
    #[error(
        "{path}: this hunk overlaps the hunk at line {other}: a file's hunks must cover separate lines (was the patch pasted twice?)"
    )]
    /// Two hunks of one file cover the same lines.
    OverlappingHunks {
        /// The file.
        path: String,
        /// The line of the other hunk's header.
        other: usize,
    },
    #[error(
        "the file header names no file: expected `diff --git a/PATH b/PATH`, `rename from`/`rename to`, or `---`/`+++` lines with a path"
    )]
    /// A file header without a path.
    MissingName,
    #[error(
        "`{line_name}` (the `{marker}` line after stripping {p} leading component(s)) is not `{header_name}`, the file the header's rename or copy line names: a patch written by `git diff --no-prefix` has no `a/` and `b/` to strip; read it with -p 0 (git apply refuses it as well)"
    )]
    /// A `---`/`+++` name that, stripped, is not the file a rename or copy line named.
    InconsistentName {
        /// `---` or `+++`.
        marker: &'static str,
        /// The name the line gives after stripping.
        line_name: String,
        /// The name the header's rename or copy line gave.
        header_name: String,
        /// Components stripped.
        p: usize,
    },
    #[error("{path}: the patch creates this file, yet its hunks have old lines")]
    /// A created file whose hunks have old lines.
    NewFileWithOldLines {
        /// The file.
        path: String,
    },
    #[error("{path}: the patch deletes this file, yet its hunks have new lines")]
    /// A deleted file whose hunks have new lines.
    DeletedFileWithNewLines {
        /// The file.
        path: String,
    },
}
