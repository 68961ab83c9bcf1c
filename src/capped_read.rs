//! Reading a file that may be hostile (a pull request's warden.toml or SKILL.md) without
//! letting its size choose the memory spent (docs/design.md §13): the size is checked from the
//! metadata before anything is read, and the read stops one byte past the cap should the
//! file grow meanwhile. Only regular files are read (docs/design.md §15): a named pipe, socket
//! or device in a reviewed tree is refused before it is opened, and the file is opened
//! without blocking and checked again through its handle, so a pipe swapped in between
//! cannot hang the reader either.

use std::io::Read;
use std::path::Path;

/// Why a capped read gave no bytes.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The file is (at least) this many bytes, over the cap.
    Over(u64),
    /// The operating system's error.
    Io(std::io::Error),
}

/// The whole file, if it is a regular file holding at most `cap` bytes.
pub(crate) fn read(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let meta = std::fs::metadata(path).map_err(Refused::Io)?;
    regular(&meta)?;
    if meta.len() > cap {
        return Err(Refused::Over(meta.len()));
    }
    let file = open_nonblocking(path).map_err(Refused::Io)?;
    regular(&file.metadata().map_err(Refused::Io)?)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::Over(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Refuses what is not a regular file, naming its kind.
fn regular(meta: &std::fs::Metadata) -> Result<(), Refused> {
    if meta.is_file() {
        return Ok(());
    }
    Err(Refused::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("it is {}, not a regular file: it is not read", kind(meta)),
    )))
}

/// What a file that is not a regular one is, in words.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        } else if t.is_socket() {
            return "a socket";
        } else if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_symlink() {
        "a link"
    } else {
        "a special file"
    }
}

/// Opens for reading without waiting: opening a named pipe blocks until a writer comes,
/// unless `O_NONBLOCK` is set (regular files ignore the flag).
#[cfg(unix)]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_refused_with_its_size_and_one_within_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read(&path, 5).unwrap(), b"12345");
        assert!(matches!(read(&path, 4), Err(Refused::Over(5))));
        assert!(matches!(
            read(&dir.path().join("missing"), 4),
            Err(Refused::Io(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_refused_before_it_is_opened_and_says_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipe");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a mode; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        // No writer ever comes: a blocking open would hang this test.
        match read(&path, 1024) {
            Err(Refused::Io(e)) => assert!(e.to_string().contains("named pipe"), "{e}"),
            other => panic!("{other:?}"),
        }
        match read(dir.path(), 1024) {
            Err(Refused::Io(e)) => assert!(e.to_string().contains("folder"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
