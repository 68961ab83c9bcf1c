//! `warden.toml` text to settings or a typed error: the invariants live in `warden::fuzzing::config`, shared with the corpus
//! replay test that runs under `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| warden::fuzzing::config::check(data));
