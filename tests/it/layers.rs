//! The module graph is layered (ARCHITECTURE.md, "Layers"): `scripts/check-layers` passes
//! on the crate as it is, and fails, naming the file, on an upward import or a loop.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-layers")
}

fn check(src: &Path) -> Output {
    Command::new("python3")
        .arg(script())
        .arg(src)
        .output()
        .expect("python3 runs scripts/check-layers (scripts/test installs it when missing)")
}

/// A copy of the real `src/` with `extra` appended to one file.
fn src_with(file: &str, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        dir.path(),
    );
    let path = dir.path().join(file);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(extra);
    std::fs::write(&path, text).unwrap();
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn the_crate_as_it_is_has_no_upward_import_and_no_loop() {
    let out = check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 loops, 0 problems"), "{stdout}");
}

#[test]
fn an_upward_import_fails_and_names_the_file_and_line() {
    let dir = src_with(
        "engine/clock.rs",
        "\n#[allow(unused_imports)]\nuse crate::report::Report;\n",
    );
    let out = check(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("src/engine/clock.rs:"), "{stderr}");
    assert!(
        stderr.contains("`engine` (engine) imports `report`"),
        "{stderr}"
    );
}

#[test]
fn an_import_inside_a_use_group_or_a_loop_of_two_modules_fails() {
    // text is the bottom layer; importing `diff` from it inside a group is upward, and
    // with diff -> error -> ... it is also named as a loop when diff imports text back.
    let dir = src_with(
        "text/mod.rs",
        "\n#[allow(unused_imports)]\nuse crate::{severity::Severity, diff::RepoPath};\n",
    );
    let d = dir.path().join("diff/mod.rs");
    let mut t = std::fs::read_to_string(&d).unwrap();
    t.push_str("\n#[allow(unused_imports)]\nuse crate::text::escape;\n");
    std::fs::write(&d, t).unwrap();
    let out = check(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`text` (base) imports `diff`"), "{stderr}");
    assert!(
        stderr.contains("a loop of imports: diff -> text"),
        "{stderr}"
    );
}

#[test]
fn a_module_no_layer_names_fails() {
    let dir = src_with("lib.rs", "");
    std::fs::write(dir.path().join("newthing.rs"), "pub fn f() {}\n").unwrap();
    let out = check(dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("src/newthing: a module that no layer names"),
        "{stderr}"
    );
}
