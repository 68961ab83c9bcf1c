//! The module graph is layered (ARCHITECTURE.md, "Layers"): `scripts/check-layers` passes
//! on the crate as it is, and fails, naming the file, on an upward import or a loop, and
//! when the circles between the files of one folder grow past the budget it prints.

use crate::support::{assert_exit, stderr_of, stdout_of};
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
    src_plus(&[(file.to_string(), extra.to_string())])
}

/// A copy of the real `src/` with each text appended to its file (a new file if missing).
fn src_plus(files: &[(String, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        dir.path(),
    );
    for (file, extra) in files {
        let path = dir.path().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(extra);
        std::fs::write(&path, text).unwrap();
    }
    dir
}

/// The real tree's circles and budget, read from the line every run prints:
/// (circles, largest, budget's most circles, budget's largest).
fn circle_figures() -> (usize, usize, usize, usize) {
    let out = check(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let stdout = stdout_of(&out);
    let line = stdout
        .lines()
        .find(|l| l.contains("file circles inside folders"))
        .unwrap_or_else(|| panic!("no circles line in {stdout}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    // "N file circles inside folders, the largest of L files (budget: at most C circles,
    // none over F files; goal: at most 2, none over 3)"
    assert_eq!(numbers.len(), 6, "{line}");
    (numbers[0], numbers[1], numbers[2], numbers[3])
}

/// `count` files in src/text/ importing each other round a ring.
fn ring(tag: &str, count: usize) -> Vec<(String, String)> {
    (0..count)
        .map(|i| {
            let next = (i + 1) % count;
            (
                format!("text/zz_{tag}_{i}.rs"),
                format!(
                    "use super::zz_{tag}_{next}::R{next};\npub struct R{i}(pub Box<R{next}>);\n"
                ),
            )
        })
        .collect()
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
    let stdout = stdout_of(&out);
    assert!(out.status.success(), "{stdout}{}", stderr_of(&out));
    assert!(stdout.contains(" 0 loops, 0 problems"), "{stdout}");
    assert!(
        stdout.contains("file circles inside folders")
            && stdout.contains("goal: at most 2, none over 3)"),
        "every run prints the circles, the budget and the goal: {stdout}"
    );
    let (circles, largest, most, max_files) = circle_figures();
    assert!(circles <= most && largest <= max_files, "{stdout}");
}

#[test]
fn more_file_circles_than_the_budget_fail() {
    let (circles, _, most, _) = circle_figures();
    let mut files = Vec::new();
    for k in 0..=most.saturating_sub(circles) {
        files.extend(ring(&format!("c{k}"), 2));
    }
    let dir = src_plus(&files);
    let out = check(dir.path());
    let stderr = assert_exit(&out, 1);
    assert!(
        stderr.contains(&format!(
            "{} file circles inside folders, over the budget of {most}",
            most + 1
        )),
        "{stderr}"
    );
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("src/text/: 2 files: zz_c0_0.rs, zz_c0_1.rs"),
        "{stdout}"
    );
}

#[test]
fn a_file_circle_larger_than_the_budget_fails_and_shows_its_imports() {
    let (_, _, _, max_files) = circle_figures();
    let dir = src_plus(&ring("big", max_files + 1));
    let out = check(dir.path());
    let stderr = assert_exit(&out, 1);
    assert!(
        stderr.contains(&format!(
            "src/text: a circle of {} files, over the budget of {max_files}: zz_big_0.rs, zz_big_1.rs",
            max_files + 1
        )),
        "{stderr}"
    );
    // A failing run names each import that ties the circle, with its line.
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("zz_big_0.rs -> zz_big_1.rs  (src/text/zz_big_0.rs:1)"),
        "{stdout}"
    );
}

#[test]
fn a_circle_through_a_re_export_and_a_crate_path_counts_but_comments_and_strings_do_not() {
    let files: Vec<(String, String)> = [
        // zz_a takes B from the folder's face, which re-exports it from zz_b.
        ("text/mod.rs", "\nmod zz_a;\nmod zz_b;\npub use zz_b::B;\n"),
        ("text/zz_a.rs", "use super::B;\npub struct A(pub B);\n"),
        (
            "text/zz_b.rs",
            "pub struct B;\npub fn make() -> crate::text::zz_a::A {\n    crate::text::zz_a::A(B)\n}\n",
        ),
        // zz_d imports zz_c; zz_c names zz_d only in a comment, strings and its tests.
        (
            "text/zz_c.rs",
            "pub struct C;\n// use super::zz_d::D;\n/* super::zz_d::D */\npub const S: &str = \"super::zz_d::D\";\npub const R: &str = r#\"use super::zz_d::D;\"#;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        ("text/zz_d.rs", "use super::zz_c::C;\npub struct D(pub C);\n"),
    ]
    .iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
    let dir = src_plus(&files);
    let out = Command::new("python3")
        .arg(script())
        .arg("--circles")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains("src/text/: 2 files: zz_a.rs, zz_b.rs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("zz_a.rs -> zz_b.rs  (src/text/zz_a.rs:1)")
            && stdout.contains("zz_b.rs -> zz_a.rs  (src/text/zz_b.rs:2)"),
        "{stdout}"
    );
    assert!(!stdout.contains("zz_c.rs"), "{stdout}");
}

#[test]
fn an_upward_import_fails_and_names_the_file_and_line() {
    let dir = src_with(
        "engine/clock.rs",
        "\n#[allow(unused_imports)]\nuse crate::report::Report;\n",
    );
    let out = check(dir.path());
    let stderr = assert_exit(&out, 1);
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
    let stderr = assert_exit(&out, 1);
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
    let stderr = assert_exit(&out, 1);
    assert!(
        stderr.contains("src/newthing: a module that no layer names"),
        "{stderr}"
    );
}

fn house_figures(src: &Path) -> String {
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/house-figures"))
        .arg(src)
        .output()
        .expect("python3 runs scripts/house-figures");
    assert_exit(&out, 0);
    stdout_of(&out)
}

/// The first number after `label` on the line that starts with it.
fn figure(text: &str, label: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no `{label}` in {text}"));
    line[label.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn house_figures_count_long_files_long_functions_string_errors_and_visibility() {
    let before = house_figures(src_plus(&[]).path());
    let long_body: String = (0..90).map(|i| format!("    let _x{i} = {i};\n")).collect();
    let filler: String = (0..700).map(|i| format!("// line {i}\n")).collect();
    let dir = src_plus(&[
        (
            "text/zz_long.rs".to_string(),
            format!(
                "pub fn long() -> Result<(), String> {{\n{long_body}    Ok(())\n}}\npub(crate) fn short() -> Result<Vec<u8>, String> {{ Ok(vec![]) }}\n{filler}"
            ),
        ),
        // Test code is not the library's: a long test and a String error in it count apart.
        (
            "text/zz_tested.rs".to_string(),
            format!(
                "#[cfg(test)]\nmod tests {{\n    fn helper() -> Result<(), String> {{ Ok(()) }}\n    #[test]\n    fn long() {{\n{long_body}    }}\n}}\n"
            ),
        ),
    ]);
    let after = house_figures(dir.path());
    let grew = |label: &str| figure(&after, label) - figure(&before, label);
    assert_eq!(grew("files over 600 lines: "), 1, "{after}");
    assert_eq!(grew("functions over 80 lines: "), 1, "{after}");
    assert_eq!(
        grew("Result<_, String> in the library: "),
        2,
        "two library functions return it: {after}"
    );
    assert_eq!(grew("library items: "), 1, "one more pub item: {after}");
    let tests_line = |t: &str| {
        let l = t
            .lines()
            .find(|l| l.starts_with("functions over 80"))
            .unwrap()
            .to_string();
        figure(&l[l.find("(and").unwrap()..], "(and ")
    };
    assert_eq!(tests_line(&after) - tests_line(&before), 1, "{after}");
    assert!(
        after.contains("dependencies in two versions (built into warden): unknown"),
        "with no Cargo.toml beside src/ the duplicates are unknown, not zero: {after}"
    );
}
