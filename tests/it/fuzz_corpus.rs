//! Every committed fuzz corpus file (`fuzz/corpus/<target>/`) replayed through the same
//! invariant checks the cargo-fuzz targets run (`warden::fuzzing`), so CI covers the
//! corpus on stable without nightly or libFuzzer.

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_file_keeps_its_targets_invariants() {
    let mut failures = Vec::new();
    for (target, check) in warden::fuzzing::TARGETS {
        let files = corpus(target);
        // A corpus that went missing would make this test pass vacuously.
        assert!(
            files.len() >= 5,
            "fuzz/corpus/{target} holds {} files; expected the committed seeds",
            files.len()
        );
        for file in files {
            let data = std::fs::read(&file).unwrap();
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                failures.push(file.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "invariants broken by: {failures:#?}");
}

#[test]
fn every_target_has_a_corpus_and_a_fuzz_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for (target, _) in warden::fuzzing::TARGETS {
        let source = root.join("fuzz_targets").join(format!("{target}.rs"));
        let text = std::fs::read_to_string(&source)
            .unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        assert!(
            text.contains(&format!("warden::fuzzing::{target}::check")),
            "{} does not drive warden::fuzzing::{target}::check",
            source.display()
        );
        assert!(
            manifest.contains(&format!("name = \"{target}\"")),
            "fuzz/Cargo.toml has no [[bin]] {target}"
        );
    }
}
