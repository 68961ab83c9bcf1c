use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

/// A path inside the repository as git stores it: `/`-separated bytes that need not be
/// UTF-8. Shown lossily to people; matched against globs byte for byte on Unix.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoPath(Vec<u8>);

impl RepoPath {
    /// A path from git's bytes (not necessarily UTF-8).
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Self {
        RepoPath(bytes.into())
    }

    /// The path's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The path for display and JSON; invalid UTF-8 becomes U+FFFD.
    pub fn display(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.0)
    }

    /// The path as a filesystem path relative to the repository root.
    pub fn to_path(&self) -> PathBuf {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            Path::new(std::ffi::OsStr::from_bytes(&self.0)).to_path_buf()
        }
        #[cfg(not(unix))]
        {
            PathBuf::from(self.display().into_owned())
        }
    }

    /// The final component, lowercased, for extension and name rules.
    pub fn file_name_lower(&self) -> String {
        let name = self.0.rsplit(|b| *b == b'/').next().unwrap_or(&self.0);
        String::from_utf8_lossy(name).to_lowercase()
    }
}

impl fmt::Debug for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.display())
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

impl Serialize for RepoPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.display())
    }
}

impl<'de> Deserialize<'de> for RepoPath {
    /// Reports carry paths as (lossy) text; reading one back gives those bytes.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(|s| RepoPath(s.into_bytes()))
    }
}

impl From<&str> for RepoPath {
    fn from(s: &str) -> Self {
        RepoPath(s.as_bytes().to_vec())
    }
}
