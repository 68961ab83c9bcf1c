//! Rate-limit windows shared with other processes (docs/design.md section 13, fleet mode).
//!
//! A provider's remaining requests and tokens are the account's, not this process's: N
//! processes that each read "R left" and each spend R overdraw the account N times. A
//! [`SharedWindows`] store (the fleet's Redis, `crate::fleet::windows`) keeps one account
//! of each upstream's windows for every process: an attempt's take is made there too, and
//! every answer's headers go there. The local `Pacing` (`pacing.rs`) stays the
//! floor: an attempt starts only when both have room, and when the store has no word (off,
//! or it knows nothing yet) the local pacing decides alone.

use super::pacing::PauseReason;
use crate::provider::ratelimit::RateLimitInfo;
use futures_util::future::BoxFuture;
use std::time::Duration;

/// What a shared store says to an attempt's take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedTake {
    /// Taken, or the store has no word: the local pacing decides.
    Go,
    /// The shared window cannot cover the attempt: the route waits this long (until the
    /// window resets, bounded by the store) and other routes take the work meanwhile.
    Short {
        /// Requests or tokens.
        reason: PauseReason,
        /// Until the shared window's reset.
        wait: Duration,
    },
}

/// Rate-limit windows kept across processes, by route index. The engine asks [`take`]
/// after its local take succeeded and before the breaker's admission, and calls
/// [`settle`] once for every attempt that was given [`SharedTake::Go`] (with the answer's
/// headers, or none when it had none or never started), so attempts in flight across the
/// fleet are counted as spoken for.
///
/// [`take`]: SharedWindows::take
/// [`settle`]: SharedWindows::settle
pub trait SharedWindows: Send + Sync {
    /// Takes one request and `tokens` of the route's shared windows for an attempt about
    /// to start.
    fn take(&self, route: usize, tokens: u64) -> BoxFuture<'_, SharedTake>;
    /// An attempt given [`SharedTake::Go`] ended: what its answer said of the windows.
    fn settle(&self, route: usize, info: Option<RateLimitInfo>) -> BoxFuture<'_, ()>;
}
