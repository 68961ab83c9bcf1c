//! The code cites only documents in the repository: `scripts/cite-check` lists each
//! citation of a document a clone does not have (the team's shared files, `../shared/…`),
//! naming file and line, and `--fix` rewrites each to the document that holds the same
//! rules, keeping its section number, after which the check passes.
//!
//! The outside documents' names are put together at run time, so that this file is no
//! citation itself (the check reads tests/ too).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cite_check(root: &Path, fix: bool) -> Output {
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("scripts/cite-check"));
    if fix {
        cmd.arg("--fix");
    }
    cmd.arg(root)
        .output()
        .expect("python3 runs scripts/cite-check")
}

/// An outside document's file name: `DESIGN` gives the shared design notes' name.
fn outside(stem: &str) -> String {
    format!("{stem}.md")
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

/// A small tree with the repository's own contract pages.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for page in ["docs/design.md", "docs/providers.md"] {
        write(dir.path(), page, &read(&repo(), page));
    }
    dir
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).to_string()
}

#[test]
fn outside_citations_fail_by_file_and_line_and_the_fix_keeps_their_sections() {
    let (design, providers, publishing) = (
        outside("DESIGN"),
        outside("PROVIDERS"),
        outside("PUBLISHING"),
    );
    let shared = format!("../{}", "shared");
    let dir = tree();
    let root = dir.path();
    write(root, "schemas/x.json", "{}\n");
    let src = format!(
        "//! Budgets nest ({design} §4, rule 1).\n\
         /// As {providers} words them.\n\
         // see {shared}/{design} section 13, and {design}'s defaults\n\
         // the schema in {shared}/schemas/x.json\n\
         let forbidden = [\"{design}\"]; // cite-check: not a citation\n\
         // docs/design.md §14 is already in the repository\n"
    );
    write(root, "src/a.rs", &src);
    write(
        root,
        "tests/it/b.rs",
        &format!("// {publishing}: threads\n"),
    );
    write(
        root,
        "docs/page.md",
        &format!("See [the contract](../{shared}/{design}).\n"),
    );

    let out = cite_check(root, false);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for line in [
        format!("src/a.rs:1: `{design}` is not in the repository: cite docs/design.md instead"),
        format!(
            "src/a.rs:2: `{providers}` is not in the repository: cite docs/providers.md instead"
        ),
        format!("src/a.rs:3: `{shared}/{design}` is not in the repository"),
        format!(
            "src/a.rs:4: `{shared}/schemas/x.json` is not in the repository: cite schemas/x.json instead"
        ),
        format!(
            "tests/it/b.rs:1: `{publishing}` is not in the repository: cite docs/design.md §15 instead"
        ),
        format!("docs/page.md:1: `../{shared}/{design}`"),
    ] {
        assert!(stderr.contains(&line), "missing `{line}` in:\n{stderr}");
    }
    assert!(!stderr.contains("src/a.rs:5"), "{stderr}");
    assert!(
        text(&out.stdout).contains("7 citations of documents outside the repository in 3 files"),
        "{}",
        text(&out.stdout)
    );

    let out = cite_check(root, true);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("rewrote 7 citations"));
    assert_eq!(
        read(root, "src/a.rs"),
        format!(
            "//! Budgets nest (docs/design.md §4, rule 1).\n\
             /// As docs/providers.md words them.\n\
             // see docs/design.md section 13, and docs/design.md's defaults\n\
             // the schema in schemas/x.json\n\
             let forbidden = [\"{design}\"]; // cite-check: not a citation\n\
             // docs/design.md §14 is already in the repository\n"
        )
    );
    // No publishing page in this tree: its rules are the contract's section 15.
    assert_eq!(
        read(root, "tests/it/b.rs"),
        "// docs/design.md §15: threads\n"
    );
    // A link is rewritten relative to the page that holds it.
    assert_eq!(
        read(root, "docs/page.md"),
        "See [the contract](design.md).\n"
    );
    assert_eq!(cite_check(root, false).status.code(), Some(0));
}

#[test]
fn a_section_the_contract_does_not_have_fails() {
    let dir = tree();
    // (put together at run time, so that this file cites no missing section itself)
    let missing = format!("docs/design.md section {}", 99);
    write(
        dir.path(),
        "src/a.rs",
        &format!("// docs/design.md §14 holds\n// {missing} does not\n"),
    );
    let out = cite_check(dir.path(), false);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("src/a.rs:2: docs/design.md has no section 99"),
        "{stderr}"
    );
    assert!(!stderr.contains("src/a.rs:1"), "{stderr}");
}

#[test]
fn a_citation_with_nowhere_to_go_is_listed_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let providers = outside("PROVIDERS");
    let src = format!("// as {providers} says\n");
    write(dir.path(), "src/a.rs", &src);
    let out = cite_check(dir.path(), true);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "src/a.rs:1: {providers}: none of docs/providers.md exists (left as it is)"
        )),
        "{stderr}"
    );
    assert_eq!(read(dir.path(), "src/a.rs"), src);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "target" || name == "corpus" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn the_fix_on_a_copy_of_the_repository_leaves_a_tree_that_passes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for part in [
        "src", "tests", "benches", "docs", "fuzz", "scripts", ".ci", "skills", "schemas",
    ] {
        copy_tree(&repo().join(part), &root.join(part));
    }
    for file in ["README.md", "ARCHITECTURE.md", "Cargo.toml"] {
        std::fs::copy(repo().join(file), root.join(file)).unwrap();
    }
    // The contract keeps the shared notes' section numbers, which the fix relies on.
    let design = read(root, "docs/design.md");
    for n in 1..=15 {
        assert!(
            design.lines().any(|l| l.starts_with(&format!("## {n}. "))),
            "docs/design.md has no section {n}"
        );
    }
    let before = cite_check(root, false);
    let listed = text(&before.stderr)
        .lines()
        .filter(|l| l.contains("is not in the repository"))
        .count();
    let fixed = cite_check(root, true);
    assert_eq!(
        fixed.status.code(),
        Some(0),
        "{}{}",
        text(&fixed.stdout),
        text(&fixed.stderr)
    );
    assert!(
        text(&fixed.stdout).contains(&format!("rewrote {listed} citations")),
        "every citation listed is rewritten: {listed} listed, {}",
        text(&fixed.stdout)
    );
    assert!(
        text(&fixed.stdout).contains("0 citations of documents outside the repository"),
        "{}",
        text(&fixed.stdout)
    );
}
