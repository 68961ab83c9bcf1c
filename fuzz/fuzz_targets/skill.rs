//! `SKILL.md` front matter: the invariants live in `warden::fuzzing::skill`, shared with the corpus
//! replay test that runs under `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| warden::fuzzing::skill::check(data));
