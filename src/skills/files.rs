//! Where skill files are read from. A local review reads the working tree; a trusted
//! review reads a commit (see `crate::trust`), so that a change cannot rewrite the
//! instructions it is reviewed with. Discovery sees only this interface.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// What a directory entry is, after following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A folder (`NAME/SKILL.md`).
    Dir,
    /// A file (`NAME.md`).
    File,
}

/// A read-only view of repository files by `/`-separated path relative to the root.
pub trait SkillFiles {
    /// The entries directly under `dir`, sorted by name; empty when `dir` is absent.
    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>>;
    /// The text of the file at `path`; None when there is no such file.
    fn read(&self, path: &str) -> Result<Option<String>>;
}

/// The working tree (or any folder) at `root`.
pub struct WorkTree<'a>(pub &'a Path);

impl SkillFiles for WorkTree<'_> {
    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>> {
        let Ok(entries) = std::fs::read_dir(self.0.join(dir)) else {
            return Ok(Vec::new());
        };
        let mut out: Vec<(String, EntryKind)> = entries
            .filter_map(|e| e.ok())
            .map(|e| {
                let kind = if e.path().is_dir() {
                    EntryKind::Dir
                } else {
                    EntryKind::File
                };
                (e.file_name().to_string_lossy().into_owned(), kind)
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn read(&self, path: &str) -> Result<Option<String>> {
        let full: PathBuf = self.0.join(path);
        if !full.is_file() {
            // A dangling symlink named like a skill is an error, as reading it would be.
            if full.symlink_metadata().is_ok() && !full.is_dir() {
                return Err(Error::io(&full, std::io::ErrorKind::NotFound.into()));
            }
            return Ok(None);
        }
        std::fs::read_to_string(&full)
            .map(Some)
            .map_err(|e| Error::io(&full, e))
    }
}
