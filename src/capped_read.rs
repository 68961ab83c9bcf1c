//! Reading a file that may be hostile (a pull request's warden.toml or SKILL.md) without
//! letting its size choose the memory spent (DESIGN.md §13): the size is checked from the
//! metadata before anything is read, and the read stops one byte past the cap should the
//! file grow meanwhile.

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

/// The whole file, if it holds at most `cap` bytes.
pub(crate) fn read(path: &Path, cap: u64) -> Result<Vec<u8>, Refused> {
    let meta = std::fs::metadata(path).map_err(Refused::Io)?;
    if meta.len() > cap {
        return Err(Refused::Over(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(Refused::Io)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(Refused::Io)?;
    if bytes.len() as u64 > cap {
        return Err(Refused::Over(bytes.len() as u64));
    }
    Ok(bytes)
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
}
