//! One file of a patch while it is read: its header facts (git's extended header or a
//! traditional `---`/`+++` pair) and hunks, then the checks and the [`FileChange`].

use super::error::ErrorKind;
use super::names;
use crate::diff::{ChangeStatus, FileChange, Hunk, RepoPath};

/// What the headers said about one file. `is_new`/`is_delete` are None while unknown (a
/// traditional header without `/dev/null` or an epoch timestamp), as in git.
#[derive(Default)]
pub(super) struct Pending {
    /// The name of a `diff --git` line whose two halves agree.
    pub def_name: Option<Vec<u8>>,
    pub old_name: Option<Vec<u8>>,
    pub new_name: Option<Vec<u8>>,
    pub is_new: Option<bool>,
    pub is_delete: Option<bool>,
    pub renamed: bool,
    pub copied: bool,
    pub old_mode: Option<u32>,
    pub new_mode: Option<u32>,
    pub binary: bool,
    pub hunks: Vec<Hunk>,
    /// The input line of each hunk's header.
    pub hunk_lines: Vec<usize>,
}

fn mode(s: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(s).ok()?;
    u32::from_str_radix(s.split_whitespace().next()?, 8).ok()
}

/// What a `---`/`+++` line inside a git header says of its side, `known` being the name
/// the header gave so far: `Some(Some(name))` for the name git reads there, `Some(None)`
/// when git reads no name there (fewer than `p` components) yet the line names this
/// file, None when the line names another file.
///
/// A line written without the `a/`/`b/` prefix (`--- f.c`, as in git's own
/// t4100/t-apply-3.patch) names this file when it reads as `known` whole: git then takes
/// whatever it reads after `p` components, which for a top-level file is nothing (the
/// `diff --git` line's name stands).
fn side_name(line: &[u8], known: Option<&[u8]>, p: usize) -> Option<Option<Vec<u8>>> {
    let name = names::git_line_name(line, p, true);
    let Some(known) = known else {
        return name.map(Some);
    };
    if name.as_deref() == Some(known) {
        return Some(name);
    }
    let whole = names::git_line_name(line, 0, true);
    (p > 0 && whole.as_deref() == Some(known)).then_some(name)
}

/// git's "inconsistent filename": a `---`/`+++` line of a rename or copy that names the
/// header's file whole, but another name once `p` components are stripped (`--- src/x.rs`
/// beside `rename from src/x.rs`, read with -p 1: a `--no-prefix` patch). Reading it either
/// way would mix stripped and whole names in one patch; it is refused, naming `-p 0`.
fn inconsistent(
    marker: &'static str,
    line: &[u8],
    header: Option<&[u8]>,
    p: usize,
) -> Result<(), ErrorKind> {
    let Some(header) = header else {
        return Ok(());
    };
    let stripped = names::git_line_name(line, p, true);
    match stripped {
        Some(s)
            if p > 0
                && s != header
                && names::git_line_name(line, 0, true).as_deref() == Some(header) =>
        {
            Err(ErrorKind::InconsistentName {
                marker,
                line_name: String::from_utf8_lossy(&s).into_owned(),
                header_name: String::from_utf8_lossy(header).into_owned(),
                p,
            })
        }
        _ => Ok(()),
    }
}

impl Pending {
    /// Applies one git extended header line; false when the line is not one (the header
    /// ends there). `rename`/`copy` names carry no `a/`/`b/`, so git strips one component
    /// fewer from them than `p` (none at its default of 1).
    pub fn git_header_line(&mut self, line: &[u8], p: usize) -> bool {
        let name = |s: &[u8]| names::git_line_name(s, p.saturating_sub(1), false);
        if let Some(m) = line.strip_prefix(b"old mode ") {
            self.old_mode = mode(m);
        } else if let Some(m) = line.strip_prefix(b"new mode ") {
            self.new_mode = mode(m);
        } else if let Some(m) = line.strip_prefix(b"deleted file mode ") {
            self.is_delete = Some(true);
            self.old_name = self.def_name.clone();
            self.old_mode = mode(m);
        } else if let Some(m) = line.strip_prefix(b"new file mode ") {
            self.is_new = Some(true);
            self.new_name = self.def_name.clone();
            self.new_mode = mode(m);
        } else if let Some(p) = line.strip_prefix(b"copy from ") {
            self.copied = true;
            self.old_name = name(p);
        } else if let Some(p) = line.strip_prefix(b"copy to ") {
            self.copied = true;
            self.new_name = name(p);
        } else if let Some(p) = line
            .strip_prefix(b"rename from ")
            .or_else(|| line.strip_prefix(b"rename old "))
        {
            self.renamed = true;
            self.old_name = name(p);
        } else if let Some(p) = line
            .strip_prefix(b"rename to ")
            .or_else(|| line.strip_prefix(b"rename new "))
        {
            self.renamed = true;
            self.new_name = name(p);
        } else if let Some(rest) = line.strip_prefix(b"index ") {
            // `index abc..def 100644`: the mode of a file whose mode did not change.
            if let Some(m) = rest.split(|c| *c == b' ').nth(1).and_then(mode) {
                self.old_mode.get_or_insert(m);
                self.new_mode.get_or_insert(m);
            }
        } else {
            return line.starts_with(b"similarity index ")
                || line.starts_with(b"dissimilarity index ");
        }
        true
    }

    /// Takes a `---`/`+++` pair into a git header when it names this same file (git's
    /// rules: `/dev/null` exactly on the side a creation or deletion lacks). A pair naming
    /// another file is not taken: it starts a plain diff of its own after a header-only
    /// block (mode change, binary, rename, empty new file).
    pub fn take_git_names(&mut self, old: &[u8], new: &[u8], p: usize) -> Result<bool, ErrorKind> {
        let created = self.is_new == Some(true);
        let deleted = self.is_delete == Some(true);
        let (old_null, new_null) = (names::is_dev_null(old), names::is_dev_null(new));
        if old_null != created || (new_null && !deleted) || (deleted && !new_null) {
            return Ok(false);
        }
        if self.renamed || self.copied {
            if !old_null {
                inconsistent("---", old, self.old_name.as_deref(), p)?;
            }
            if !new_null {
                inconsistent("+++", new, self.new_name.as_deref(), p)?;
            }
        }
        let known_old = self.old_name.clone().or_else(|| self.def_name.clone());
        let known_new = self.new_name.clone().or_else(|| self.def_name.clone());
        let read = |line: &[u8], null: bool, known: Option<Vec<u8>>| {
            if null {
                Some(None)
            } else {
                side_name(line, known.as_deref(), p)
            }
        };
        let (Some(old_name), Some(new_name)) = (
            read(old, old_null, known_old),
            read(new, new_null, known_new),
        ) else {
            return Ok(false);
        };
        if let Some(n) = old_name {
            self.old_name.get_or_insert(n);
        }
        if let Some(n) = new_name {
            self.new_name.get_or_insert(n);
        }
        Ok(true)
    }

    /// git's check after a `diff --git` header: the file must be named somewhere.
    pub fn settle_git_names(&mut self) -> Result<(), ErrorKind> {
        if self.old_name.is_none() && self.new_name.is_none() {
            let def = self.def_name.clone().ok_or(ErrorKind::MissingName)?;
            self.old_name = Some(def.clone());
            self.new_name = Some(def);
        }
        let created = self.is_new == Some(true);
        let deleted = self.is_delete == Some(true);
        if (self.new_name.is_none() && !deleted) || (self.old_name.is_none() && !created) {
            return Err(ErrorKind::MissingName);
        }
        Ok(())
    }

    pub fn path(&self) -> RepoPath {
        let name = if self.is_delete == Some(true) {
            self.old_name.as_ref().or(self.new_name.as_ref())
        } else {
            self.new_name.as_ref().or(self.old_name.as_ref())
        };
        RepoPath::from_bytes(name.cloned().unwrap_or_default())
    }

    /// Settles creation/deletion as git does (old lines rule out a creation, new lines a
    /// deletion, and so does a second hunk), checks the hunks agree with it, and builds
    /// the file. Errors carry the path; the caller adds the line.
    pub fn finish(mut self) -> Result<FileChange, ErrorKind> {
        let old_lines: u64 = self.hunks.iter().map(|h| u64::from(h.old_lines)).sum();
        let new_lines: u64 = self.hunks.iter().map(|h| u64::from(h.new_lines)).sum();
        let several = self.hunks.len() > 1;
        if self.is_new.is_none() && (old_lines > 0 || several) {
            self.is_new = Some(false);
        }
        if self.is_delete.is_none() && (new_lines > 0 || several) {
            self.is_delete = Some(false);
        }
        // Still unknown: one hunk with no old lines (or no new ones). `git apply
        // --summary` calls that a creation (or deletion), and so does warden.
        if self.hunks.len() == 1 {
            if self.is_new.is_none() {
                self.is_new = Some(true);
                self.is_delete = Some(false);
            } else if self.is_delete.is_none() {
                self.is_delete = Some(true);
            }
        }
        let path = self.path();
        // `"a/"` unquotes to an empty name; git prints it, but no file can be reviewed
        // under it (joined to the repository it names the top folder).
        if path.as_bytes().is_empty() {
            return Err(ErrorKind::MissingName);
        }
        let (created, deleted) = (self.is_new == Some(true), self.is_delete == Some(true));
        if created && old_lines > 0 {
            return Err(ErrorKind::NewFileWithOldLines {
                path: path.to_string(),
            });
        }
        if deleted && new_lines > 0 {
            return Err(ErrorKind::DeletedFileWithNewLines {
                path: path.to_string(),
            });
        }
        let status = if created {
            ChangeStatus::Added
        } else if deleted {
            ChangeStatus::Deleted
        } else if self.renamed {
            ChangeStatus::Renamed
        } else if self.copied {
            ChangeStatus::Copied
        } else {
            ChangeStatus::Modified
        };
        let old_path = match status {
            ChangeStatus::Renamed | ChangeStatus::Copied => self
                .old_name
                .map(RepoPath::from_bytes)
                .filter(|p| *p != path),
            _ => None,
        };
        let gitlink = |m: Option<u32>| m == Some(0o160000);
        Ok(FileChange {
            path,
            old_path,
            status,
            binary: self.binary,
            submodule: gitlink(self.old_mode) || gitlink(self.new_mode),
            old_mode: self.old_mode,
            new_mode: self.new_mode,
            hunks: self.hunks,
        })
    }
}
