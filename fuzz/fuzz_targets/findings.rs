//! The findings extractor on a model's answer: the invariants live in `warden::fuzzing::findings`, shared with the corpus
//! replay test that runs under `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| warden::fuzzing::findings::check(data));
