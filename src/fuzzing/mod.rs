//! Invariant checks for fuzzing, shared by the cargo-fuzz targets in `fuzz/` and the
//! corpus replay test (`tests/it/fuzz_corpus.rs`), so the two cannot drift apart.
//!
//! Each `check` takes arbitrary bytes, drives one parser the way warden drives it on
//! hostile input (a `--diff` patch, a provider's stream, a model's answer, a
//! `warden.toml`, a `SKILL.md`, a route's `baseUrl`) and panics when an invariant breaks. A panic inside the
//! parser itself is a finding too. Not part of warden's API: hidden from the docs and
//! kept to these entry points.

pub mod config;
pub mod findings;
pub mod patch;
pub mod skill;
pub mod sse;
pub mod url;

/// An invariant check: panics when `data` breaks one.
pub type Check = fn(&[u8]);

/// Every fuzz target: its name (the `fuzz/fuzz_targets/<name>.rs` file and the
/// `fuzz/corpus/<name>/` folder) and its check.
pub const TARGETS: &[(&str, Check)] = &[
    ("patch", patch::check),
    ("findings", findings::check),
    ("config", config::check),
    ("skill", skill::check),
    ("sse", sse::check),
    ("url", url::check),
];

/// FNV-1a: a stable hash of the input, so choices derived from it (chunk ranges, split
/// points) are the same every time the same input is replayed.
pub(crate) fn hash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
