//! Files warden writes (reports, traces, plans, the starter config) are written as a
//! temporary file beside the destination and renamed over it (docs/design.md §14): a link
//! the change planted at the destination is replaced, never followed, so the file it
//! points to is left untouched, and a reader never sees half a report.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written: the temporary beside `path`, renamed over it by
/// [`AtomicFile::commit`]; dropped uncommitted, the temporary is removed.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    temp: PathBuf,
    file: File,
    committed: bool,
}

/// Distinguishes the temporaries of one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

impl AtomicFile {
    /// Creates the temporary beside `path` (`create_new`: an existing file or link of
    /// that name is an error, never opened).
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut temp_name = std::ffi::OsString::from(".");
        temp_name.push(name);
        temp_name.push(format!(".warden-{}-{n}.tmp", std::process::id()));
        let temp = dir.join(temp_name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            temp,
            file,
            committed: false,
        })
    }

    /// The temporary file, to write to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// A second handle on the temporary (a buffered writer that outlives `self`'s
    /// borrow).
    pub fn handle(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the temporary and renames it over the destination (a link there is
    /// replaced, not followed).
    pub fn commit(mut self) -> io::Result<()> {
        self.file.flush()?;
        std::fs::rename(&self.temp, &self.path)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Where a file warden writes goes: a regular file (or a link inside the repository, or
/// nothing yet) is replaced through a temporary; a device, a pipe or a socket (`-o
/// /dev/stdout`, a process substitution's `/dev/fd/63`) is written in place, unless it is
/// reached through a link inside the repository, which is replaced like any link there.
#[derive(Debug)]
pub enum Output {
    /// Written to a temporary, renamed over the path.
    Replace(AtomicFile),
    /// Written in place (not a regular file).
    Direct(PathBuf, File),
}

impl Output {
    /// Opens `path` for writing; `checkout`: the repository whose links are never followed.
    /// A directory is refused.
    pub fn open(path: &Path, checkout: Option<&Path>) -> io::Result<Output> {
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && inside(path, checkout) {
            return AtomicFile::create(path).map(Output::Replace);
        }
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is a directory",
            )),
            Ok(m) if !m.is_file() => {
                let f = OpenOptions::new().write(true).open(path)?;
                Ok(Output::Direct(path.to_path_buf(), f))
            }
            _ => AtomicFile::create(path).map(Output::Replace),
        }
    }

    /// The file to write to.
    pub fn file(&mut self) -> &mut File {
        match self {
            Output::Replace(a) => a.file(),
            Output::Direct(_, f) => f,
        }
    }

    /// A second handle on the file to write to.
    pub fn handle(&self) -> io::Result<File> {
        match self {
            Output::Replace(a) => a.handle(),
            Output::Direct(_, f) => f.try_clone(),
        }
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        match self {
            Output::Replace(a) => a.path(),
            Output::Direct(p, _) => p,
        }
    }

    /// Flushes, and renames a temporary over the destination.
    pub fn commit(self) -> io::Result<()> {
        match self {
            Output::Replace(a) => a.commit(),
            Output::Direct(_, mut f) => f.flush(),
        }
    }
}

/// Whether `path` lies inside `checkout` (its folder resolved, the name as given).
fn inside(path: &Path, checkout: Option<&Path>) -> bool {
    let Some(root) = checkout.and_then(|c| c.canonicalize().ok()) else {
        return false;
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parent.canonicalize().is_ok_and(|p| p.starts_with(&root))
}

/// Writes `bytes` to `path` through a temporary beside it.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.file().write_all(bytes)?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_destination_is_replaced_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep").unwrap();
        let out = dir.path().join("report.sarif");
        std::os::unix::fs::symlink(&target, &out).unwrap();
        write(&out, b"report").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&out).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "report");
        // No temporary is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_in_place_unless_a_link_in_the_repository_reaches_them() {
        let dir = tempfile::tempdir().unwrap();
        let null = Path::new("/dev/null");
        assert!(matches!(
            Output::open(null, Some(dir.path())).unwrap(),
            Output::Direct(..)
        ));
        let link = dir.path().join("warden.sarif");
        std::os::unix::fs::symlink(null, &link).unwrap();
        let out = Output::open(&link, Some(dir.path())).unwrap();
        assert!(matches!(out, Output::Replace(..)), "{out:?}");
        out.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert!(Output::open(dir.path(), None).is_err(), "a directory");
    }

    #[test]
    fn an_uncommitted_file_leaves_nothing_and_the_destination_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.json");
        std::fs::write(&out, "old").unwrap();
        let mut f = AtomicFile::create(&out).unwrap();
        f.file().write_all(b"half").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
