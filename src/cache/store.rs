//! The storage seam: a small trait that holds sealed values by key. The SQLite store is the
//! local level; a shared level (Redis, for fleets) implements the same trait.

use super::key::{Key, hex};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// A stored value with its checksum. Sealed when written, checked when read: a value whose
/// bytes no longer match (a bad disk, a torn write, a hand edit) is a miss, never data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The stored bytes.
    pub value: Vec<u8>,
    /// SHA-256 of `value`, hex.
    pub checksum: String,
}

impl Blob {
    /// Seals `value` with its checksum.
    pub(crate) fn seal(value: Vec<u8>) -> Blob {
        let checksum = hex(&Sha256::digest(&value));
        Blob { value, checksum }
    }

    /// Whether the bytes still match their checksum.
    pub(crate) fn intact(&self) -> bool {
        hex(&Sha256::digest(&self.value)) == self.checksum
    }
}

/// Why a store could not serve. Every variant is a reason to review as if cold, never a
/// reason to fail the review.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file is damaged; it was moved aside (if it could be).
    #[error("{}: the cache database is corrupt ({detail}); {}", path.display(), moved(moved_to))]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What the database reported.
        detail: String,
        /// Where it was moved aside, if it could be.
        moved_to: Option<PathBuf>,
    },
    /// Another process holds the database longer than the store waits.
    #[error("{}: the cache database is locked by another process ({detail})", path.display())]
    Locked {
        /// The database file.
        path: PathBuf,
        /// What the database reported.
        detail: String,
    },
    /// The directory or file cannot be created or written.
    #[error("{}: cannot use the cache directory ({detail}): point --cache-dir or WARDEN_CACHE_DIR at a writable directory", path.display())]
    Unwritable {
        /// The directory or file.
        path: PathBuf,
        /// What the operating system reported.
        detail: String,
    },
    /// The file is a cache of another (newer) warden.
    #[error("{}: the cache was written by another version of warden (format {found}); run `warden cache clear` or use another --cache-dir", path.display())]
    Incompatible {
        /// The database file.
        path: PathBuf,
        /// The format it has.
        found: i64,
    },
    /// Anything else the database reported.
    #[error("{}: {detail}", path.display())]
    Other {
        /// The database file.
        path: PathBuf,
        /// What the database reported.
        detail: String,
    },
}

/// `warden cache` fails on a store error; the bottom `Error` carries it boxed.
impl From<StoreError> for crate::Error {
    fn from(e: StoreError) -> Self {
        crate::Error::Cache(Box::new(e))
    }
}

fn moved(to: &Option<PathBuf>) -> String {
    match to {
        Some(p) => format!("moved it aside to {}", p.display()),
        None => "it could not be moved aside".into(),
    }
}

/// Unix time in milliseconds; the store's clock is passed in, so tests choose it.
pub type Millis = u64;

/// A level of the result cache. Implementations never panic on bad data and never block
/// past their own bounded wait.
pub trait Store: Send + Sync {
    /// Where the store lives, for messages.
    fn location(&self) -> String;

    /// The blob stored under each key (None: not there, or older than the store's maxAge).
    /// Blobs are returned as stored: the caller checks [`Blob::intact`].
    fn get_many(&self, keys: &[Key], now: Millis) -> Result<Vec<Option<Blob>>, StoreError>;

    /// Stores `entries` (replacing what their keys held) and marks `used` keys as used
    /// `now`, for least-recently-used eviction; then evicts past the store's limits.
    fn put_many(
        &self,
        entries: &[(Key, Blob)],
        used: &[Key],
        now: Millis,
    ) -> Result<(), StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_byte_breaks_the_seal() {
        let mut b = Blob::seal(b"{\"findings\":[]}".to_vec());
        assert!(b.intact());
        b.value[3] ^= 1;
        assert!(!b.intact());
    }
}
