//! What the plan lets through: the scan caps on patch input as on git input, lines longer
//! than a chunk, the changed-lines cap filling with what still fits, relevance of tests
//! and scripts, and files with nothing to review.

use crate::support::patch::plan_patch;
use crate::support::*;
use serde_json::Value;

fn plan_diff(dir: &std::path::Path, patch: &[u8], config: Option<&str>) -> Value {
    match config {
        Some(c) => {
            std::fs::write(dir.join("limits.toml"), c).unwrap();
            plan_patch(dir, patch, &["-c", "limits.toml"])
        }
        None => plan_patch(dir, patch, &[]),
    }
}

fn max_prompt(plan: &Value) -> u64 {
    plan["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["promptChars"].as_u64().unwrap())
        .max()
        .unwrap_or(0)
}

/// The prompt around a chunk (skill text, instructions, fences) stays well under this.
const PROMPT_OVERHEAD: u64 = 12_000;

#[test]
fn a_50_mb_one_line_file_in_a_patch_is_not_planned_as_one_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let mut patch =
        b"diff --git a/web/big.js b/web/big.js\nnew file mode 100644\n--- /dev/null\n+++ b/web/big.js\n@@ -0,0 +1 @@\n+"
            .to_vec();
    patch.extend(std::iter::repeat_n(b'x', 50_000_000));
    patch.push(b'\n');

    // maxFileBytes applies to what the patch shows of the new side.
    let plan = plan_diff(dir.path(), &patch, None);
    assert_eq!(
        skipped_reason(&plan, "web/big.js").as_deref(),
        Some("too-large:bytes")
    );
    assert_eq!(plan["units"].as_array().unwrap().len(), 0);

    // Let it through the byte cap: the line is cut to maxChunkSize, never sent whole.
    let cfg = "version = 1\n[defaults.scan]\nmaxFileBytes = 100000000\n";
    let plan = plan_diff(dir.path(), &patch, Some(cfg));
    assert!(planned(&plan, "web/big.js").is_some(), "{plan}");
    let biggest = max_prompt(&plan);
    assert!(
        biggest > 0 && biggest < 8_000 + PROMPT_OVERHEAD,
        "{biggest}"
    );
    assert_accounts(&plan, None);
}

#[test]
fn the_line_cap_applies_to_patch_input() {
    let dir = tempfile::tempdir().unwrap();
    let patch = "--- a/src/deep.rs\n+++ b/src/deep.rs\n@@ -5000,2 +5000,2 @@\n a\n-b\n+c\n";
    let plan = plan_diff(dir.path(), patch.as_bytes(), None);
    assert_eq!(
        skipped_reason(&plan, "src/deep.rs").as_deref(),
        Some("too-large:lines")
    );
    // With the cap lifted, the last line number there is is chunked without overflow.
    let edge =
        "--- a/src/edge.rs\n+++ b/src/edge.rs\n@@ -4294967294,2 +4294967294,2 @@\n a\n-b\n+c\n";
    let cfg = "version = 1\n[defaults.scan]\nmaxFileLines = 4294967295\n";
    let plan = plan_diff(dir.path(), edge.as_bytes(), Some(cfg));
    let unit = &plan["units"][0];
    assert_eq!(unit["endLine"], 4294967295u64, "{plan}");
}

#[test]
fn long_lines_are_cut_with_a_marker_in_diff_lines_and_context() {
    let r = Repo::new();
    let long = format!("const S: &str = \"{}\";\n", "y".repeat(200_000));
    let body = format!("{}{long}{}", source_lines(3, "a"), source_lines(3, "b"));
    r.write("src/wide.rs", &body).commit_all("base");
    // The long line changes in one place and is context of another change.
    r.write(
        "src/wide.rs",
        body.replace("a_1 =", "a_one =").replace("yyyy\"", "yyyz\""),
    );
    r.config("version = 1\n[defaults.scan]\nmaxFileBytes = 10000000\n");
    let plan = r.plan(&[]);
    assert!(planned(&plan, "src/wide.rs").is_some(), "{plan}");
    let biggest = max_prompt(&plan);
    assert!(biggest < 8_000 + PROMPT_OVERHEAD, "{biggest}");

    // The same through the library: every chunk within maxChunkSize, the cut marked.
    let settings = {
        let mut s = warden::config::Settings::default();
        s.scan.max_file_bytes = 10_000_000;
        s
    };
    let catalog = warden::skills::discover(None).unwrap();
    let active = warden::skills::select(&catalog, &settings, &[]).unwrap();
    let repo = git2::Repository::open(r.path()).unwrap();
    let sel = warden::diff::git::select(&repo, &warden::diff::Target::Default, None).unwrap();
    let plan = warden::plan::build(&sel.diff, &sel.content, &settings, &active);
    let file = plan
        .files
        .iter()
        .find(|f| f.path.to_string() == "src/wide.rs")
        .unwrap();
    let mut cut = 0;
    for c in &file.chunks {
        let texts = c
            .lines
            .iter()
            .map(|l| l.text.as_str())
            .chain(c.context_before.iter().map(|(_, t)| t.as_str()))
            .chain(c.context_after.iter().map(|(_, t)| t.as_str()));
        for t in texts {
            assert!(t.len() < settings.chunking.max_chunk_size, "{}", t.len());
            cut += usize::from(t.contains("characters cut"));
        }
    }
    assert!(
        cut >= 2,
        "the removed, added and context copies are cut: {cut}"
    );
}

fn ranked(plan: &Value) -> Vec<String> {
    paths(&plan["files"])
}

#[test]
fn the_changed_lines_cap_keeps_filling_with_files_that_fit() {
    let r = Repo::new();
    r.write("README.md", "# base\n").commit_all("base");
    r.write(
        "src/auth/login.rs",
        format!("fn login(password: &str) {{}}\n{}", source_lines(5, "a")),
    );
    r.write("src/core.rs", source_lines(5, "c"));
    r.write("docs/notes.md", "some notes\n");
    r.write("tests/fixtures/sample.rs", source_lines(5, "f"));
    r.config("version = 1\n[defaults.scan]\nmaxChangedLines = 10\n");
    r.git(&["add", "warden.toml"]);
    r.git(&["commit", "-q", "-m", "config"]);
    let plan = r.plan(&[]);
    // 6 lines, then 5 would make 11: skipped; the 1-line file still fits; 5 more do not.
    assert_eq!(ranked(&plan), ["src/auth/login.rs", "docs/notes.md"]);
    let detail = |p: &str| {
        plan["skippedFiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["path"] == p)
            .map(|s| {
                (
                    s["reason"].clone(),
                    s["detail"].as_str().unwrap().to_string(),
                )
            })
            .unwrap()
    };
    let (reason, core) = detail("src/core.rs");
    assert_eq!(reason, "limit:maxChangedLines");
    assert!(
        core.contains("5 changed lines would make 11, over maxChangedLines 10"),
        "{core}"
    );
    let (_, sample) = detail("tests/fixtures/sample.rs");
    assert!(
        sample.contains("5 changed lines would make 12, over maxChangedLines 10"),
        "{sample}"
    );
    assert_accounts(&plan, None);
}

#[test]
fn tests_benches_fixtures_and_scripts_rank_below_the_code_they_exercise() {
    let r = Repo::new();
    r.write("README.md", "# base\n").commit_all("base");
    let keywords = "fn t() { authenticate(password); db.query(\"select * from users\"); Command::new(\"sh\").spawn(); }\n";
    let big = |tag: &str| format!("{keywords}{}", source_lines(200, tag));
    r.write(
        "src/util.rs",
        "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
    );
    r.write("src/lib.rs", source_lines(2, "l"));
    r.write("tests/auth_query_test.rs", big("t"));
    r.write("src/auth/session_test.go", big("g"));
    r.write("web/login.spec.ts", big("w"));
    r.write("benches/query_bench.rs", big("b"));
    r.write("tests/fixtures/auth_query.rs", big("f"));
    r.write("scripts/exec_deploy.sh", big("s"));
    r.write("tools/run_query.py", big("p"));
    let plan = r.plan(&[]);
    let order = ranked(&plan);
    let is_core = |p: &str| matches!(p, "src/util.rs" | "src/lib.rs" | "tools/run_query.py");
    let last_core = order.iter().rposition(|p| is_core(p)).unwrap();
    let first_other = order.iter().position(|p| !is_core(p)).unwrap();
    assert!(last_core < first_other, "{order:?}");
    let reasons = planned(&plan, "tests/auth_query_test.rs").unwrap()["reasons"].to_string();
    assert!(!reasons.contains("security-sensitive"), "{reasons}");
}

#[test]
fn symlinks_and_hunks_without_changed_lines_are_skipped_with_a_reason() {
    let r = Repo::new();
    r.write("src/real.rs", source_lines(3, "r"))
        .commit_all("base");
    #[cfg(unix)]
    std::os::unix::fs::symlink("real.rs", r.path().join("src/link.rs")).unwrap();
    r.write("src/other.rs", source_lines(2, "o"));
    let plan = r.plan(&[]);
    #[cfg(unix)]
    assert_eq!(
        skipped_reason(&plan, "src/link.rs").as_deref(),
        Some("symlink")
    );
    assert!(planned(&plan, "src/other.rs").is_some());
    assert_accounts(&plan, None);

    // The same link as patch text, and a file whose only hunk has no lines.
    r.git(&["add", "-A"]);
    let mut patch = r.git(&["diff", "--cached"]);
    patch.push_str("--- a/src/hollow.rs\n+++ b/src/hollow.rs\n@@ -0,0 +0,0 @@\n");
    let plan = plan_diff(r.path(), patch.as_bytes(), None);
    #[cfg(unix)]
    assert_eq!(
        skipped_reason(&plan, "src/link.rs").as_deref(),
        Some("symlink")
    );
    assert_eq!(
        skipped_reason(&plan, "src/hollow.rs").as_deref(),
        Some("no-content-change")
    );
    assert!(planned(&plan, "src/other.rs").is_some());
    assert_accounts(&plan, None);
}
