//! Section 13 on the Chrome timeline: each route's effective limit as a counter track
//! (`limit`, with its ceiling), its pauses (a Retry-After or its rate-limit headers) as
//! slices on a `paused` track, and each answer of back-pressure as an instant.

use super::event::{instant, slice, us};
use serde_json::{Value, json};
use std::time::Duration;

/// The route process's track for its pauses (slots are 1 … maxConcurrency).
pub(super) const PAUSE_TID: u64 = 0;

/// The limit's counter sample at `ts`.
pub(super) fn limit(ts: Duration, pid: u64, limit: usize, ceiling: usize) -> Value {
    json!({"name": "limit", "cat": "limit", "ph": "C", "ts": us(ts), "pid": pid,
           "args": {"limit": limit, "ceiling": ceiling}})
}

/// A pause of the route's new attempts, from `ts` to `until`.
pub(super) fn paused(ts: Duration, until: Duration, pid: u64, reason: &str) -> Value {
    slice(
        format!("paused ({reason})"),
        "pause",
        ts,
        until,
        pid,
        PAUSE_TID,
        json!({"reason": reason}),
    )
}

/// An attempt answered with back-pressure.
pub(super) fn back_pressure(
    ts: Duration,
    pid: u64,
    unit: usize,
    retry_after: Option<Duration>,
) -> Value {
    let name = match retry_after {
        Some(d) => format!("back-pressure (retry after {}ms)", d.as_millis()),
        None => "back-pressure".to_string(),
    };
    instant(
        name,
        ts,
        pid,
        1,
        "p",
        json!({"unit": unit, "retryAfterMs": retry_after.map(|d| d.as_millis() as u64)}),
    )
}
