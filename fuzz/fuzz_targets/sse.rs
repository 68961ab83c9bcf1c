//! The SSE reader (a provider's event stream) fed in random splits: the invariants live in
//! `warden::fuzzing::sse`, shared with the corpus replay test that runs under `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| warden::fuzzing::sse::check(data));
