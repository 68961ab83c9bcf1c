//! The unified-diff parser (`--diff` input): the invariants live in `warden::fuzzing::patch`, shared with the corpus
//! replay test that runs under `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| warden::fuzzing::patch::check(data));
