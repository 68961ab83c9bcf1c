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
        inside(self.0, path, &full)?;
        read_capped(&full, Path::new(path))
    }
}

/// A skill file reached through a symlink that leaves the repository is refused, as a
/// review of a commit refuses it: its text would go to the model as instructions.
fn inside(root: &Path, path: &str, full: &Path) -> Result<()> {
    let (Ok(root), Ok(target)) = (root.canonicalize(), full.canonicalize()) else {
        return Ok(());
    };
    if target.starts_with(&root) {
        return Ok(());
    }
    Err(Error::Skill {
        path: PathBuf::from(path),
        message: format!(
            "is reached through a symlink to {}, outside the repository: warden does not send files from outside the repository to the model; copy the skill into the repository or remove the link",
            target.display()
        ),
    })
}

/// Reads a skill file after checking its size: one over [`MAX_SKILL_BYTES`] is an error
/// before any of it is read (and a file that grows while read stops at the cap).
fn read_capped(full: &Path, shown: &Path) -> Result<Option<String>> {
    let bytes = crate::capped_read::read(full, MAX_SKILL_BYTES).map_err(|e| match e {
        crate::capped_read::Refused::Over(size) => Error::Skill {
            path: shown.to_path_buf(),
            message: too_big(size),
        },
        crate::capped_read::Refused::Io(e) => Error::io(full, e),
    })?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Error::Skill {
            path: shown.to_path_buf(),
            message: "not UTF-8 text: save the file as UTF-8".into(),
        })
}

/// The largest skill file warden reads (docs/design.md §13): a prompt past it would cost more
/// than any review should spend on instructions.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The message for a skill file of `size` bytes, over [`MAX_SKILL_BYTES`].
pub(crate) fn too_big(size: u64) -> String {
    format!(
        "is {size} bytes, over the {} KiB cap for a skill file: shorten it (the prompt is sent with every request)",
        MAX_SKILL_BYTES / 1024
    )
}
