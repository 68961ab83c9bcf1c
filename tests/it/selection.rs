//! Diff selection on real repositories: default target rules, ranges, and every kind of
//! change git can describe.

use crate::support::*;

fn base_repo() -> Repo {
    let r = Repo::new();
    r.write("src/lib.rs", source_lines(30, "a"))
        .write("README.md", "# demo\n")
        .commit_all("base");
    r
}

#[test]
fn dirty_tree_reviews_staged_unstaged_and_untracked_against_head() {
    let r = base_repo();
    r.write("src/lib.rs", source_lines(31, "a")); // unstaged
    r.write("src/staged.rs", "fn staged() {}\n");
    r.git(&["add", "src/staged.rs"]);
    r.write("src/new.rs", "fn untracked() {}\n"); // untracked
    let plan = r.plan(&[]);
    assert_eq!(
        plan["target"],
        "uncommitted changes on main, the default branch (vs HEAD)"
    );
    let mut got = paths(&plan["files"]);
    got.sort();
    assert_eq!(got, ["src/lib.rs", "src/new.rs", "src/staged.rs"]);
    r.git(&["add", "-A"]);
    assert_accounts(&plan, Some(&r.numstat(&["--cached", "HEAD"])));
}

#[test]
fn a_branch_is_reviewed_against_its_merge_base_with_main() {
    let r = base_repo();
    r.git(&["checkout", "-q", "-b", "topic"]);
    r.write("src/topic.rs", "fn topic() {}\n")
        .commit_all("topic work");
    r.git(&["checkout", "-q", "main"]);
    r.write("src/main_only.rs", "fn later() {}\n")
        .commit_all("main moves on");
    r.git(&["checkout", "-q", "topic"]);
    let plan = r.plan(&[]);
    assert_target(&plan, "branch topic vs its merge-base with main (");
    assert_eq!(paths(&plan["files"]), ["src/topic.rs"]);
    assert_accounts(&plan, Some(&r.numstat(&["main...HEAD"])));
}

fn run(mut cmd: assert_cmd::Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (out.status.code().unwrap(), stdout_of(&out), stderr_of(&out))
}

fn assert_target(plan: &serde_json::Value, start: &str) {
    let target = plan["target"].as_str().unwrap();
    assert!(
        target.starts_with(start) && target.ends_with("uncommitted changes included"),
        "{target}"
    );
}

/// `warden init` on a branch leaves an untracked warden.toml: the review with no target is
/// still the branch's (its commits and what is not committed yet), not the untracked file
/// alone (before: "uncommitted changes vs HEAD", and nothing left once the config was
/// skipped).
#[test]
fn a_branch_with_an_untracked_config_reviews_its_commits_and_its_uncommitted_changes() {
    let r = base_repo();
    r.git(&["checkout", "-q", "-b", "feat"]);
    r.write("src/db.rs", "fn q() {}\n").commit_all("change");
    r.write("src/lib.rs", source_lines(31, "a")); // not committed
    let (code, _, err) = run(r.warden(&["init"]));
    assert_eq!(code, 0, "{err}");
    let plan = r.plan(&[]);
    assert_target(&plan, "branch feat vs its merge-base with main (");
    let mut got = paths(&plan["files"]);
    got.sort();
    assert_eq!(got, ["src/db.rs", "src/lib.rs"]);
    assert!(skipped_reason(&plan, "warden.toml").is_some(), "{plan}");
    // In CI the config comes from the same base: the merge-base, where there is none.
    let mut in_ci = r.warden(&["plan", "--json"]);
    in_ci.env("CI", "true");
    let ci = plan_json(in_ci);
    assert_eq!(ci["target"], plan["target"]);
}

/// On the default branch the review is the uncommitted changes; with none, the one line
/// says so and never "Review complete: 0 of 0", in a text file written with -o too.
#[test]
fn on_the_default_branch_with_nothing_uncommitted_the_review_says_why() {
    let r = base_repo();
    let (code, out, err) = run(r.warden(&["review", "--sim"]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Nothing to review: the selection has no changes (uncommitted changes on main, the default branch"),
        "{out}"
    );
    let file = r.path().join("out.txt");
    let file_arg = format!("text={}", file.display());
    let (code, _, err) = run(r.warden(&["review", "--sim", "-o", &file_arg]));
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("Nothing to review: the selection has no changes"),
        "{text}"
    );
    assert!(!text.contains("Review complete"), "{text}");
    assert!(!text.contains("No findings in the 0"), "{text}");
}

#[test]
fn clean_tree_prefers_origin_head_then_master() {
    let r = Repo::new();
    r.git(&["checkout", "-q", "-b", "master"]);
    r.write("a.rs", "fn a() {}\n").commit_all("base");
    r.git(&["checkout", "-q", "-b", "feature"]);
    r.write("b.rs", "fn b() {}\n").commit_all("feature");
    let plan = r.plan(&[]);
    assert_target(&plan, "branch feature vs its merge-base with master (");
    assert_eq!(paths(&plan["files"]), ["b.rs"]);

    // A configured default branch wins.
    r.git(&["branch", "trunk", "feature"]);
    r.config("version = 1\n[defaults]\ndefaultBranch = \"trunk\"\n");
    r.git(&["add", "warden.toml"]);
    r.git(&["commit", "-q", "-m", "config"]);
    let plan = r.plan(&[]);
    assert_target(&plan, "branch feature vs its merge-base with trunk (");
    assert_eq!(paths(&plan["files"]), ["warden.toml"]);
}

#[test]
fn staged_reviews_only_the_index() {
    let r = base_repo();
    r.write("src/staged.rs", "fn staged() {}\n");
    r.git(&["add", "src/staged.rs"]);
    r.write("src/lib.rs", source_lines(32, "a"));
    let plan = r.plan(&["--staged"]);
    assert_eq!(paths(&plan["files"]), ["src/staged.rs"]);
    assert_accounts(&plan, Some(&r.numstat(&["--cached"])));
}

#[test]
fn ranges_refs_and_base_head_flags() {
    let r = base_repo();
    r.write("one.rs", "fn one() {}\n").commit_all("one");
    r.write("two.rs", "fn two() {}\n").commit_all("two");
    let two_dot = r.plan(&["HEAD~2..HEAD~1"]);
    assert_eq!(paths(&two_dot["files"]), ["one.rs"]);
    let flags = r.plan(&["--base", "HEAD~2", "--head", "HEAD~1"]);
    assert_eq!(paths(&flags["files"]), ["one.rs"]);
    let base_only = r.plan(&["--base", "HEAD~1"]);
    assert_eq!(paths(&base_only["files"]), ["two.rs"]);
    let three_dot = r.plan(&["HEAD~2...HEAD"]);
    let mut got = paths(&three_dot["files"]);
    got.sort();
    assert_eq!(got, ["one.rs", "two.rs"]);
    // REF alone compares the working tree with REF, like `git diff REF`.
    r.write("three.rs", "fn three() {}\n");
    let mut got = paths(&r.plan(&["HEAD~1"])["files"]);
    got.sort();
    assert_eq!(got, ["three.rs", "two.rs"]);
}

#[test]
fn renames_deletes_modes_binaries_and_submodules_are_each_accounted_for() {
    let r = base_repo();
    r.write("src/moved.rs", source_lines(40, "m"))
        .write("src/pure_move.rs", source_lines(20, "p"))
        .write("gone.rs", source_lines(5, "g"))
        .write("run.sh", "#!/bin/sh\necho hi\n")
        .write("blob.dat", [0u8, 1, 2, 3, 0, 255])
        .commit_all("more");
    let sub = Repo::new();
    sub.write("x.txt", "x\n").commit_all("sub one");
    r.git(&[
        "submodule",
        "add",
        "-q",
        sub.path().to_str().unwrap(),
        "deps/sub",
    ]);
    r.commit_all("add submodule");
    let before = r.git(&["rev-parse", "HEAD"]).trim().to_string();

    r.git(&["mv", "src/moved.rs", "src/renamed.rs"]);
    let mut moved = source_lines(40, "m");
    moved.push_str("    let extra = 1;\n");
    r.write("src/renamed.rs", moved);
    r.git(&["mv", "src/pure_move.rs", "src/pure_moved.rs"]);
    r.remove("gone.rs");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let p = r.path().join("run.sh");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    r.write("blob.dat", [0u8, 9, 9, 9, 0, 255]);
    sub.write("x.txt", "y\n").commit_all("sub two");
    r.git(&["-C", "deps/sub", "pull", "-q"]);
    r.commit_all("changes");

    let range = format!("{before}..HEAD");
    let plan = r.plan(&[&range]);
    let renamed = planned(&plan, "src/renamed.rs").expect("rename with edits is planned");
    assert_eq!(renamed["status"], "renamed");
    assert_eq!(renamed["oldPath"], "src/moved.rs");
    assert_eq!(renamed["added"], 1);
    assert_eq!(
        skipped_reason(&plan, "src/pure_moved.rs").as_deref(),
        Some("no-content-change")
    );
    assert_eq!(skipped_reason(&plan, "gone.rs").as_deref(), Some("deleted"));
    assert_eq!(
        skipped_reason(&plan, "run.sh").as_deref(),
        Some("no-content-change")
    );
    assert_eq!(skipped_reason(&plan, "blob.dat").as_deref(), Some("binary"));
    assert_eq!(
        skipped_reason(&plan, "deps/sub").as_deref(),
        Some("submodule")
    );
    assert_accounts(&plan, Some(&r.numstat(&[&range])));
}

#[test]
fn non_utf8_names_crlf_and_missing_final_newline() {
    let r = base_repo();
    r.write("win.rs", "fn a() {\r\n    one();\r\n}\r\n")
        .write("tail.rs", "fn t() {}\nlast")
        .commit_all("base files");
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.rs");
        std::fs::write(r.path().join(name), "fn cafe() {}\n").unwrap();
    }
    r.write("win.rs", "fn a() {\r\n    one();\r\n    two();\r\n}\r\n");
    r.write("tail.rs", "fn t() {}\nlast changed");
    let plan = r.plan(&[]);
    let win = planned(&plan, "win.rs").unwrap();
    assert_eq!(
        (win["added"].as_u64(), win["removed"].as_u64()),
        (Some(1), Some(0))
    );
    let tail = planned(&plan, "tail.rs").unwrap();
    assert_eq!(
        (tail["added"].as_u64(), tail["removed"].as_u64()),
        (Some(1), Some(1))
    );
    #[cfg(unix)]
    assert!(planned(&plan, "caf\u{fffd}.rs").is_some(), "{plan}");
    assert_accounts(&plan, None);
}

#[test]
fn an_empty_diff_is_an_empty_plan() {
    let r = base_repo();
    let plan = r.plan(&["HEAD..HEAD"]);
    assert_eq!(plan["totals"]["filesInDiff"], 0);
    assert_eq!(plan["totals"]["units"], 0);
    // On the default branch with a clean tree there is nothing to review either.
    let plan = r.plan(&[]);
    assert_eq!(plan["totals"]["units"], 0);
}

#[test]
fn an_empty_repository_is_an_empty_plan() {
    let r = Repo::new();
    let plan = r.plan(&[]);
    assert_eq!(plan["totals"]["filesInDiff"], 0);
    assert_eq!(plan["units"].as_array().unwrap().len(), 0);
    assert!(
        plan["target"].as_str().unwrap().contains("no commits"),
        "{plan}"
    );
    // In CI too, where the config is read from the (empty) base.
    let mut in_ci = r.warden(&["plan", "--json"]);
    in_ci.env("CI", "true");
    assert_eq!(plan_json(in_ci)["totals"]["filesInDiff"], 0);
    // Files written but not committed are uncommitted changes, as before.
    r.write("src/a.rs", source_lines(2, "a"));
    assert_eq!(paths(&r.plan(&[])["files"]), ["src/a.rs"]);
}

#[test]
fn a_patch_file_needs_no_repository() {
    let dir = tempfile::tempdir().unwrap();
    let diff = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,3 @@\n fn a() {\n+    call();\n }\n";
    std::fs::write(dir.path().join("change.diff"), diff).unwrap();
    let out = warden()
        .current_dir(dir.path())
        .args(["plan", "--json", "--diff", "change.diff"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(paths(&plan["files"]), ["src/a.rs"]);
    assert_eq!(plan["units"].as_array().unwrap().len(), 2);
    // The same diff on stdin.
    let out = warden()
        .current_dir(dir.path())
        .args(["plan", "--json", "--diff", "-"])
        .write_stdin(diff)
        .output()
        .unwrap();
    assert_exit(&out, 0);
}

#[test]
fn dash_c_runs_as_if_started_in_the_directory() {
    let r = base_repo();
    r.write("src/new.rs", "fn added() {}\n");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = warden()
        .current_dir(elsewhere.path())
        .args(["plan", "--json", "-C"])
        .arg(r.path().join("src"))
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        paths(&plan["files"]),
        ["src/new.rs"],
        "paths stay relative to the repository root"
    );
    let out = warden()
        .args(["plan", "-C", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_exit(&out, 2);
    assert!(stderr_of(&out).contains("-C /definitely/not/here: no such directory"));
}
