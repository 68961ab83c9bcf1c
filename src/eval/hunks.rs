//! Hunks between two commits, with no context lines, as the corpus loaders need them:
//! the lines a fix changed (`history.rs`) and where an old-side comment lands on the new
//! side (`jsonl.rs`, `side: LEFT`).

use crate::error::{Error, Result};
use git2::{DiffOptions, Oid, Repository};

/// One hunk: `old_lines` lines from `old_start` became `new_lines` lines from `new_start`
/// (a count of 0 puts its start on the line before, as in a unified diff header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
}

/// One changed file and its hunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileHunks {
    /// Its path on the new side (the old one for a deletion).
    pub path: String,
    /// Its path on the old side (the new one for an addition).
    pub old_path: String,
    /// Git saw binary content.
    pub binary: bool,
    pub hunks: Vec<Hunk>,
}

/// The files and hunks from commit `old` to commit `new`; with `ignore_whitespace`, hunks
/// that only change whitespace are left out.
pub(crate) fn between(
    repo: &Repository,
    old: Oid,
    new: Oid,
    ignore_whitespace: bool,
) -> Result<Vec<FileHunks>> {
    let tree = |id: Oid| {
        repo.find_commit(id)
            .and_then(|c| c.tree())
            .map_err(|e| Error::git(&format!("commit {id}"), e))
    };
    let (old_tree, new_tree) = (tree(old)?, tree(new)?);
    let mut opts = DiffOptions::new();
    opts.context_lines(0).ignore_whitespace(ignore_whitespace);
    let diff = repo
        .diff_tree_to_tree(Some(&old_tree), Some(&new_tree), Some(&mut opts))
        .map_err(|e| Error::git("diff", e))?;
    let mut files: Vec<FileHunks> = Vec::new();
    let name = |f: git2::DiffFile| f.path().map(|p| p.to_string_lossy().into_owned());
    for (i, delta) in diff.deltas().enumerate() {
        let new_path = name(delta.new_file());
        let old_path = name(delta.old_file());
        let path = new_path.clone().or(old_path.clone()).unwrap_or_default();
        let mut entry = FileHunks {
            old_path: old_path.unwrap_or_else(|| path.clone()),
            path,
            binary: delta.flags().is_binary(),
            hunks: Vec::new(),
        };
        if let Ok(Some(patch)) = git2::Patch::from_diff(&diff, i) {
            entry.binary |= delta.flags().is_binary();
            for h in 0..patch.num_hunks() {
                if let Ok((hunk, _)) = patch.hunk(h) {
                    entry.hunks.push(Hunk {
                        old_start: hunk.old_start(),
                        old_lines: hunk.old_lines(),
                        new_start: hunk.new_start(),
                        new_lines: hunk.new_lines(),
                    });
                }
            }
        }
        files.push(entry);
    }
    Ok(files)
}

/// The old side's changed lines of `hunk` (a pure insertion: the lines around where it
/// went, which the old side keeps).
pub(crate) fn old_span(hunk: &Hunk) -> (u32, u32) {
    if hunk.old_lines == 0 {
        (hunk.old_start.max(1), hunk.old_start + 1)
    } else {
        (hunk.old_start, hunk.old_start + hunk.old_lines - 1)
    }
}

/// Where old-side line `line` is on the new side: an unchanged line moves by the lines
/// inserted and removed before it; a removed line lands on what replaced it (or, if
/// nothing did, on the next new line), as the answer contract asks findings on removed
/// lines to be placed.
pub(crate) fn old_to_new(hunks: &[Hunk], line: u32) -> (u32, u32) {
    let mut shift: i64 = 0;
    for h in hunks {
        if h.old_lines == 0 {
            if line <= h.old_start {
                break;
            }
        } else if line < h.old_start {
            break;
        } else if line < h.old_start + h.old_lines {
            return if h.new_lines == 0 {
                (h.new_start + 1, h.new_start + 1)
            } else {
                (h.new_start, h.new_start + h.new_lines - 1)
            };
        }
        shift += i64::from(h.new_lines) - i64::from(h.old_lines);
    }
    let at = (i64::from(line) + shift).max(1) as u32;
    (at, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(old_start: u32, old_lines: u32, new_start: u32, new_lines: u32) -> Hunk {
        Hunk {
            old_start,
            old_lines,
            new_start,
            new_lines,
        }
    }

    #[test]
    fn old_lines_move_past_insertions_and_removals_and_removed_lines_land_on_their_replacement() {
        // 2 lines inserted after old line 3; old 10..11 replaced by new 12..14; old 20 removed.
        let hunks = [h(3, 0, 4, 2), h(10, 2, 12, 3), h(20, 1, 22, 0)];
        assert_eq!(old_to_new(&hunks, 2), (2, 2));
        assert_eq!(old_to_new(&hunks, 3), (3, 3));
        assert_eq!(old_to_new(&hunks, 4), (6, 6));
        assert_eq!(old_to_new(&hunks, 10), (12, 14));
        assert_eq!(old_to_new(&hunks, 12), (15, 15));
        assert_eq!(old_to_new(&hunks, 20), (23, 23));
        assert_eq!(old_to_new(&hunks, 19), (22, 22));
        assert_eq!(old_to_new(&hunks, 21), (23, 23));
    }

    #[test]
    fn a_fix_that_only_inserts_points_at_the_lines_around_the_gap() {
        assert_eq!(old_span(&h(7, 0, 8, 3)), (7, 8));
        assert_eq!(old_span(&h(0, 0, 1, 2)), (1, 1));
        assert_eq!(old_span(&h(7, 2, 7, 1)), (7, 8));
    }
}
