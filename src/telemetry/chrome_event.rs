//! The Trace Event format's records (a metadata name, an instant, a complete slice) and
//! its time units: the vocabulary both `chrome.rs` and `chrome_load.rs` write in, in a
//! file of its own so neither imports the other for it.

use serde_json::{Value, json};
use std::time::Duration;

pub(super) fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

pub(super) fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

pub(super) fn meta(pid: u64, tid: Option<u64>, what: &str, name: &str) -> Value {
    let mut m = json!({"ph": "M", "pid": pid, "name": what, "args": {"name": name}});
    if let Some(t) = tid {
        m["tid"] = json!(t);
    }
    m
}

pub(super) fn instant(
    name: String,
    ts: Duration,
    pid: u64,
    tid: u64,
    scope: &str,
    args: Value,
) -> Value {
    json!({"name": name, "cat": "event", "ph": "i", "s": scope, "ts": us(ts), "pid": pid, "tid": tid, "args": args})
}

pub(super) fn slice(
    name: String,
    cat: &str,
    start: Duration,
    end: Duration,
    pid: u64,
    tid: u64,
    args: Value,
) -> Value {
    json!({"name": name, "cat": cat, "ph": "X", "ts": us(start), "dur": us(end.saturating_sub(start)), "pid": pid, "tid": tid, "args": args})
}
