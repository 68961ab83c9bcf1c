//! The shared second level of the result cache: answers kept in the fleet's Redis, so shards
//! and parallel jobs on other machines reuse each other's answers (`[fleet] cache = true`).
//!
//! The local [`Store`](super::Store) is synchronous (SQLite on this machine); the shared
//! level is asynchronous (a network call) and lives beside it in the review's async session
//! ([`ReviewCache`](super::ReviewCache)): read-through after a local miss, write-through of
//! fresh answers. Every call is bounded by the fleet handle; a failed call turns the level
//! off for the rest of the run (the fleet handle gives the one warning), and the review goes
//! on exactly as it would without a shared level.

use super::key::Key;
use super::store::Blob;
use super::{Answer, Warn};
use futures_util::future::BoxFuture;
use std::sync::Mutex;
use std::time::Duration;

/// The largest stored value the shared level writes or reads (256 KiB). A reviewed unit's
/// answer is a few KiB; anything larger stays local, and a larger value read back is a miss.
pub(crate) const MAX_VALUE_BYTES: usize = 256 * 1024;

/// Keys asked or written per round trip, so one call stays small and inside its bound.
pub(crate) const BATCH: usize = 200;

/// Why the shared level gave no answer; the cache then turns the level off for the run.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SharedError {
    /// The fleet's call failed (it has warned once).
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    /// The server answered something other than what was asked (a broken or hostile one).
    #[error("{0}")]
    BadReply(String),
    /// The store cannot answer at all.
    #[error("{0}")]
    Down(String),
}

/// A level shared between machines. Implementations bound every call and report a failed
/// call as `Err` (after their own warning, if any); they never panic on bad data.
pub trait SharedStore: Send + Sync {
    /// Where the level lives, for messages (no password).
    fn location(&self) -> String;

    /// The raw value under each key (None: not there). A value longer than
    /// [`MAX_VALUE_BYTES`] may come back cut to `MAX_VALUE_BYTES + 1` bytes: implementations
    /// must not transfer more than that per value, and the reader rejects it as too large.
    fn get_many<'a>(
        &'a self,
        keys: &'a [Key],
    ) -> BoxFuture<'a, Result<Vec<Option<Vec<u8>>>, SharedError>>;

    /// Stores each value under its key, to expire after `ttl`.
    fn put_many<'a>(
        &'a self,
        entries: &'a [(Key, Vec<u8>)],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SharedError>>;
}

/// A sealed value as the shared level holds it: the checksum's 64 hex digits, a newline,
/// then the value's bytes (the same encoding and checksum as the local level).
pub(crate) fn seal(answer: &Answer) -> Vec<u8> {
    let blob = Blob::seal(answer.to_bytes());
    let mut out = Vec::with_capacity(blob.checksum.len() + 1 + blob.value.len());
    out.extend_from_slice(blob.checksum.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&blob.value);
    out
}

/// The answer in a sealed value; None for anything else (too large, no checksum, a
/// mismatch, not an answer of this format).
pub(crate) fn unseal(bytes: &[u8]) -> Option<Answer> {
    if bytes.len() > MAX_VALUE_BYTES {
        return None;
    }
    let (sum, value) = (bytes.get(..64)?, bytes.get(65..)?);
    if bytes[64] != b'\n' {
        return None;
    }
    let blob = Blob {
        value: value.to_vec(),
        checksum: String::from_utf8(sum.to_vec()).ok()?,
    };
    blob.intact().then(|| Answer::from_bytes(&blob.value))?
}

/// The shared level as a review uses it: sealed values, batches, and off after a fault.
pub struct Shared {
    store: Box<dyn SharedStore>,
    warn: Warn,
    /// How long a written answer lives (the cache's maxAge).
    ttl: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    off: bool,
    warned_bad: bool,
}

impl Shared {
    /// The level over `store`; answers written expire after `ttl`. `warn` is told once
    /// about stored values that were not intact answers (call failures are the store's to
    /// report).
    pub fn new(store: Box<dyn SharedStore>, ttl: Duration, warn: Warn) -> Shared {
        Shared {
            store,
            warn,
            ttl,
            state: Mutex::new(State::default()),
        }
    }

    fn off(&self) -> bool {
        self.state.lock().expect("shared cache state").off
    }

    fn turn_off(&self) {
        self.state.lock().expect("shared cache state").off = true;
    }

    /// The intact answer under each key. A call that fails makes the rest misses and turns
    /// the level off for the run; a value that is not an intact answer is a miss.
    pub async fn get(&self, keys: &[Key]) -> Vec<Option<Answer>> {
        let mut out = Vec::with_capacity(keys.len());
        let mut bad = 0;
        for batch in keys.chunks(BATCH) {
            if self.off() {
                break;
            }
            match self.store.get_many(batch).await {
                Ok(values) if values.len() == batch.len() => {
                    for v in values {
                        let answer = v.as_deref().and_then(unseal);
                        bad += usize::from(v.is_some() && answer.is_none());
                        out.push(answer);
                    }
                }
                Ok(_) | Err(_) => self.turn_off(),
            }
        }
        out.resize(keys.len(), None);
        if bad > 0 {
            self.say_bad(bad);
        }
        out
    }

    fn say_bad(&self, n: usize) {
        let mut st = self.state.lock().expect("shared cache state");
        if !st.warned_bad {
            st.warned_bad = true;
            (self.warn)(&format!(
                "shared result cache {}: {n} stored answer(s) failed their checksum, did not decode or were over {} KiB; they were asked again",
                self.store.location(),
                MAX_VALUE_BYTES / 1024
            ));
        }
    }

    /// Writes `entries` (values over [`MAX_VALUE_BYTES`] stay local). A failure turns the
    /// level off; the review already has its results.
    pub async fn put(&self, entries: &[(Key, Answer)]) {
        let sealed: Vec<(Key, Vec<u8>)> = entries
            .iter()
            .map(|(k, a)| (k.clone(), seal(a)))
            .filter(|(_, v)| v.len() <= MAX_VALUE_BYTES)
            .collect();
        for batch in sealed.chunks(BATCH) {
            if self.off() {
                return;
            }
            if self.store.put_many(batch, self.ttl).await.is_err() {
                self.turn_off();
            }
        }
    }
}

#[cfg(test)]
mod tests;
