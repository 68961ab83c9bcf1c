//! A route's `baseUrl`: the invariants live in `warden::fuzzing::url`, shared with the corpus
//! replay test that runs under `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| warden::fuzzing::url::check(data));
