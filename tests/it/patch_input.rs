//! `--diff` input read as git reads it: fixtures are made by real `diff -ruN`, `diff -u`
//! and `git diff` in temp dirs, and `git apply --numstat --summary` is the judge. No file
//! the patch names may vanish or absorb another.

use crate::support::patch::*;
use crate::support::*;
use warden::diff::ChangeStatus;

fn refused(dir: &std::path::Path, patch: &[u8]) -> String {
    std::fs::write(dir.join("in.diff"), patch).unwrap();
    let out = warden()
        .current_dir(dir)
        .args(["plan", "--diff", "in.diff"])
        .output()
        .unwrap();
    let err = assert_exit(&out, 2);
    assert!(!err.contains("panicked"), "{err}");
    err
}

fn file<'a>(set: &'a warden::diff::DiffSet, path: &str) -> &'a warden::diff::FileChange {
    set.files
        .iter()
        .find(|f| f.path.to_string() == path)
        .unwrap_or_else(|| panic!("{path} missing from {:?}", set.files))
}

#[test]
fn binary_lines_of_a_plain_diff_are_files_of_their_own() {
    let t = Trees::new();
    t.put("a", "a.txt", "one\ntwo\n")
        .put("b", "a.txt", "one\n2\n");
    t.put("a", "b.bin", b"\0old").put("b", "b.bin", b"\0new");
    t.put("a", "c.txt", "gone\nfor good\n");
    t.put("b", "d.bin", b"\0\x01fresh");
    t.put("b", "e.txt", "brand new\n");
    let patch = t.diff_run();
    let text = String::from_utf8_lossy(&patch);
    assert!(
        text.contains("Binary files a/b.bin and b/b.bin differ"),
        "{text}"
    );

    let set = ours(&patch);
    assert_eq!(text_reads(&set), judged_text(&patch));
    let names: Vec<String> = set.files.iter().map(|f| f.path.to_string()).collect();
    assert_eq!(names, ["a.txt", "b.bin", "c.txt", "d.bin", "e.txt"]);
    assert!(
        !file(&set, "a.txt").binary,
        "a modified text file keeps its hunks"
    );
    assert_eq!(file(&set, "a.txt").changed(), 2);
    assert!(!file(&set, "c.txt").binary);
    assert_eq!(file(&set, "c.txt").status, ChangeStatus::Deleted);
    assert!(file(&set, "b.bin").binary && file(&set, "d.bin").binary);

    let plan = plan_patch(t.path(), &patch, &[]);
    assert_eq!(paths(&plan["files"]), ["a.txt", "e.txt"]);
    assert_eq!(skipped_reason(&plan, "c.txt").as_deref(), Some("deleted"));
    assert_eq!(skipped_reason(&plan, "b.bin").as_deref(), Some("binary"));
    assert_eq!(skipped_reason(&plan, "d.bin").as_deref(), Some("binary"));
    assert_accounts(&plan, None);
}

#[test]
fn creations_and_deletions_of_a_plain_diff_are_not_modifications() {
    let t = Trees::new();
    t.put("a", "src/old.rs", "fn old() {}\nfn older() {}\n");
    t.put("b", "src/new.rs", "fn new() {}\n");
    t.put("a", "src/kept.rs", "fn k() {}\n")
        .put("b", "src/kept.rs", "fn k2() {}\n");
    let patch = t.diff_run();
    let set = ours(&patch);
    assert_eq!(text_reads(&set), judged_text(&patch));
    assert_eq!(file(&set, "src/old.rs").status, ChangeStatus::Deleted);
    assert_eq!(file(&set, "src/new.rs").status, ChangeStatus::Added);
    assert_eq!(file(&set, "src/kept.rs").status, ChangeStatus::Modified);

    // Without timestamps (`--label`), a lone `-0,0` or `+0,0` hunk says it, as git reads it.
    t.put("b", "gone.txt", "").put("a", "gone.txt", "x\ny\n");
    let del = t.diff(&[
        "-u",
        "--label",
        "a/gone.txt",
        "--label",
        "b/gone.txt",
        "a/gone.txt",
        "/dev/null",
    ]);
    assert!(String::from_utf8_lossy(&del).contains("+0,0 @@"));
    let set = ours(&del);
    assert_eq!(text_reads(&set), judged_text(&del));
    assert_eq!(set.files[0].status, ChangeStatus::Deleted);
    assert_eq!((set.files[0].added(), set.files[0].removed()), (0, 2));
    let plan = plan_patch(t.path(), &del, &[]);
    assert_eq!(
        skipped_reason(&plan, "gone.txt").as_deref(),
        Some("deleted")
    );
    let add = t.diff(&[
        "-u",
        "--label",
        "a/n.txt",
        "--label",
        "b/n.txt",
        "/dev/null",
        "b/src/new.rs",
    ]);
    assert_eq!(ours(&add).files[0].status, ChangeStatus::Added);
    assert_eq!(text_reads(&ours(&add)), judged_text(&add));
}

/// `git diff` output for one kind of header-only change, in a fresh repository.
fn header_only_git_diff(kind: &str) -> Vec<u8> {
    let r = Repo::new();
    r.write("m.sh", "echo hi\n").write("bin.dat", b"\0\x01\x02");
    r.write("old_name.rs", source_lines(20, "r"));
    r.commit_all("base");
    match kind {
        "mode" => {
            r.git(&["update-index", "--chmod=+x", "m.sh"]);
        }
        "binary" => {
            r.write("bin.dat", b"\0\x09\x09");
            r.git(&["add", "bin.dat"]);
        }
        "rename" => {
            r.git(&["mv", "old_name.rs", "new_name.rs"]);
        }
        "empty" => {
            r.write("empty.txt", "");
            r.git(&["add", "empty.txt"]);
        }
        other => panic!("{other}"),
    }
    r.git(&["diff", "--cached", "-M"]).into_bytes()
}

#[test]
fn a_git_header_only_block_does_not_swallow_the_plain_diff_after_it() {
    let t = Trees::new();
    t.put("a", "plain.rs", "fn a() {}\nfn b() {}\n").put(
        "b",
        "plain.rs",
        "fn a() {}\nfn c() {}\nfn d() {}\n",
    );
    let plain = t.diff(&["-u", "a/plain.rs", "b/plain.rs"]);
    for (kind, path, status) in [
        ("mode", "m.sh", ChangeStatus::Modified),
        ("binary", "bin.dat", ChangeStatus::Modified),
        ("rename", "new_name.rs", ChangeStatus::Renamed),
        ("empty", "empty.txt", ChangeStatus::Added),
    ] {
        let mut patch = header_only_git_diff(kind);
        assert!(!String::from_utf8_lossy(&patch).contains("@@"), "{kind}");
        patch.extend_from_slice(&plain);
        let set = ours(&patch);
        let names: Vec<String> = set.files.iter().map(|f| f.path.to_string()).collect();
        assert_eq!(names, [path, "plain.rs"], "{kind}");
        let head = file(&set, path);
        assert_eq!((head.status, head.changed()), (status, 0), "{kind}");
        let p = file(&set, "plain.rs");
        assert_eq!((p.added(), p.removed(), p.binary), (2, 1, false), "{kind}");
        assert_eq!(p.status, ChangeStatus::Modified, "{kind}");
        if kind == "mode" {
            assert!(head.mode_changed() && !p.mode_changed());
        }
        if kind == "binary" {
            assert!(head.binary);
            // git reads this combination the same way.
            assert_eq!(text_reads(&set), judged_text(&patch));
        }
    }
}

#[test]
fn traditional_names_lose_timestamps_but_keep_tabs_spaces_and_quotes() {
    let t = Trees::new();
    t.put("a", "x.txt", "one\n").put("b", "x.txt", "two\n");
    let cases: [(&str, &str, &str); 3] = [
        // A timestamp after spaces, not a tab (whitespace-damaged mail).
        (
            "a/x y.txt 2024-01-01 00:00:00",
            "b/x y.txt 2024-01-02 10:11:12",
            "x y.txt",
        ),
        // A tab inside the name, then the timestamp.
        (
            "a/x\ty.txt\t2024-01-01 00:00:00.000000000 +0000",
            "b/x\ty.txt\t2024-01-02 00:00:00.000000000 +0000",
            "x\ty.txt",
        ),
        // GNU diff's quoted form, with an escaped quote inside.
        (
            "\"a/say \\\"hi\\\".txt\"\t2024-01-01 00:00:00.000000000 +0000",
            "\"b/say \\\"hi\\\".txt\"\t2024-01-02 00:00:00.000000000 +0000",
            "say \"hi\".txt",
        ),
    ];
    for (old, new, want) in cases {
        let patch = t.diff(&["-u", "--label", old, "--label", new, "a/x.txt", "b/x.txt"]);
        let set = ours(&patch);
        assert_eq!(set.files.len(), 1);
        assert_eq!(set.files[0].path.to_string(), want, "{old}");
        assert_eq!(text_reads(&set), judged_text(&patch), "{old}");
    }
    // Names with spaces as diff -ruN quotes them.
    let t = Trees::new();
    t.put("a", "sp ace.txt", "q\n")
        .put("b", "sp ace.txt", "r\n");
    t.put("a", "d/\"q\".txt", "v\n")
        .put("b", "d/\"q\".txt", "w\n");
    let patch = t.diff_run();
    assert!(String::from_utf8_lossy(&patch).contains("--- \"a/sp ace.txt\"\t"));
    let set = ours(&patch);
    assert_eq!(text_reads(&set), judged_text(&patch));
    let mut names: Vec<String> = set.files.iter().map(|f| f.path.to_string()).collect();
    names.sort();
    assert_eq!(names, ["d/\"q\".txt", "sp ace.txt"]);
}

#[test]
fn cr_only_line_ends_read_like_lf() {
    let r = Repo::new();
    r.write("a.rs", source_lines(10, "a"))
        .write("gone.rs", "x\n")
        .commit_all("base");
    r.write("a.rs", source_lines(12, "a"))
        .remove("gone.rs")
        .write("new.rs", "fn n() {}\n");
    r.git(&["add", "-A"]);
    let lf = r.git(&["diff", "--cached"]).into_bytes();
    let cr: Vec<u8> = lf
        .iter()
        .map(|b| if *b == b'\n' { b'\r' } else { *b })
        .collect();
    let (a, b) = (ours(&lf), ours(&cr));
    assert_eq!(text_reads(&a), judged_text(&lf));
    assert_eq!(text_reads(&b), text_reads(&a));
    assert_eq!(b.files.len(), 3);
}

#[test]
fn combined_diffs_are_refused_by_name() {
    let r = Repo::new();
    r.write("f.rs", "base\n").commit_all("base");
    r.git(&["checkout", "-q", "-b", "side"]);
    r.write("f.rs", "side\n").commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r.write("f.rs", "main\n").commit_all("main");
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "merge",
            "-q",
            "side",
        ])
        .current_dir(r.path())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the merge conflicts");
    r.write("f.rs", "merged\n");
    let cc = r.git(&["diff"]);
    assert!(cc.starts_with("diff --cc f.rs"), "{cc}");
    let err = refused(r.path(), cc.as_bytes());
    assert!(err.contains("in.diff:1:"), "{err}");
    assert!(err.contains("combined diff"), "{err}");
    assert!(err.contains("not supported"), "{err}");
    assert!(!err.contains("malformed hunk header"), "{err}");
}

#[test]
fn line_numbers_past_u32_are_refused_not_wrapped() {
    let dir = tempfile::tempdir().unwrap();
    let near = "--- a/x\n+++ b/x\n@@ -4294967294,3 +4294967294,3 @@\n a\n-b\n+c\n d\n";
    let err = refused(dir.path(), near.as_bytes());
    assert!(err.contains("in.diff:3:"), "{err}");
    assert!(err.contains("4294967295"), "{err}");
    let huge = "--- a/x\n+++ b/x\n@@ -1 +99999999999999999999 @@\n-a\n+b\n";
    let err = refused(dir.path(), huge.as_bytes());
    assert!(err.contains("in.diff:3:"), "{err}");
    // The last line that fits is fine.
    let edge = "--- a/x\n+++ b/x\n@@ -4294967295 +4294967295 @@\n-a\n+b\n";
    let set = ours(edge.as_bytes());
    assert_eq!(set.files[0].hunks[0].lines[1].new_no, Some(u32::MAX));
}

/// A two-hunk `git diff` of one file (changes at lines 2 and 40), as text.
fn two_hunk_diff() -> (Repo, String) {
    let r = Repo::new();
    r.write("src/a.rs", source_lines(50, "a"))
        .commit_all("base");
    let mut lines: Vec<String> = source_lines(50, "a").lines().map(String::from).collect();
    lines[1] = "    let changed_two = 2;".into();
    lines[39] = "    let changed_forty = 40;".into();
    r.write("src/a.rs", lines.join("\n") + "\n");
    let d = r.git(&["diff"]);
    (r, d)
}

#[test]
fn hunks_out_of_order_are_sorted_so_no_line_is_mislabelled() {
    let (r, d) = two_hunk_diff();
    let at = d
        .match_indices("\n@@ ")
        .map(|(i, _)| i + 1)
        .collect::<Vec<_>>();
    assert_eq!(at.len(), 2, "{d}");
    let (head, first, second) = (&d[..at[0]], &d[at[0]..at[1]], &d[at[1]..]);
    let swapped = format!("{head}{second}{first}");
    let in_order = ours(d.as_bytes());
    let set = ours(swapped.as_bytes());
    let starts: Vec<u32> = set.files[0].hunks.iter().map(|h| h.new_start).collect();
    let want: Vec<u32> = in_order.files[0]
        .hunks
        .iter()
        .map(|h| h.new_start)
        .collect();
    assert_eq!(starts, want);
    // Planned exactly as the patch in order: every unit's label covers its own lines, so
    // a finding on line 2 lands inside a unit (before, one unit was labelled 37-43).
    let spans = |plan: &serde_json::Value| -> Vec<(u64, u64)> {
        plan["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                (
                    u["startLine"].as_u64().unwrap(),
                    u["endLine"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let got = spans(&plan_patch(r.path(), swapped.as_bytes(), &[]));
    assert_eq!(got, spans(&plan_patch(r.path(), d.as_bytes(), &[])));
    assert!(got.iter().any(|(s, e)| *s <= 2 && 2 <= *e), "{got:?}");
}

#[test]
fn overlapping_hunks_are_refused_naming_file_and_line() {
    let (r, d) = two_hunk_diff();
    let at = d.find("\n@@ ").unwrap() + 1;
    let first_hunk_end = d[at + 1..].find("\n@@ ").unwrap() + at + 2;
    let dup = format!("{}{}", &d, &d[at..first_hunk_end]);
    let err = refused(r.path(), dup.as_bytes());
    assert!(err.contains("src/a.rs"), "{err}");
    assert!(err.contains("overlap"), "{err}");
    let header_line = dup[..dup.rfind("\n@@ ").unwrap()].lines().count() + 1;
    assert!(err.contains(&format!("in.diff:{header_line}:")), "{err}");
}

#[test]
fn git_diff_of_every_change_kind_agrees_with_git_apply() {
    let r = Repo::new();
    r.write("src/moved.rs", source_lines(40, "m"))
        .write("src/copied.rs", source_lines(30, "c"))
        .write("gone.rs", source_lines(5, "g"))
        .write("run.sh", "#!/bin/sh\necho hi\n")
        .write("noeol.txt", "a\nb")
        .write("crlf.txt", "a\r\nb\r\n")
        .write("blob.dat", [0u8, 1, 2, 3, 0, 255])
        .commit_all("base");
    r.git(&["mv", "src/moved.rs", "src/renamed.rs"]);
    r.write("src/renamed.rs", source_lines(41, "m"));
    r.write("src/copy_of.rs", source_lines(30, "c") + "    extra();\n");
    r.remove("gone.rs");
    r.write("run.sh", "#!/bin/sh\necho bye\n");
    r.write("noeol.txt", "a\nc");
    r.write("crlf.txt", "a\r\nc\r\n");
    r.write("blob.dat", [9u8, 0, 9]);
    r.write("caf\u{e9} & \"tab\tname\".rs", "fn x() {}\n");
    r.write("empty.txt", "");
    r.git(&["add", "-A"]);
    r.git(&["update-index", "--chmod=+x", "run.sh"]);
    for args in [
        vec!["diff", "--cached", "-M", "-C", "--find-copies-harder"],
        vec!["diff", "--cached", "--binary", "-M"],
        vec!["diff", "--cached", "--no-renames", "-U0"],
    ] {
        let patch = r.git(&args).into_bytes();
        let set = ours(&patch);
        assert_eq!(text_reads(&set), judged_text(&patch), "{args:?}");
        // Every file git lists is there, binary or not, once.
        let mut want: Vec<String> = judge(&patch).into_iter().map(|r| r.path).collect();
        let mut got: Vec<String> = set.files.iter().map(|f| f.path.to_string()).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{args:?}");
        assert!(file(&set, "blob.dat").binary);
        assert!(file(&set, "run.sh").mode_changed());
    }
}

/// git's numbers for `patch`, as the plan's accounting oracle.
fn git_rows(patch: &[u8]) -> Vec<NumstatRow> {
    judge(patch)
        .into_iter()
        .map(|r| (r.path, r.counts))
        .collect()
}

/// Plans `patch` through the binary and checks it against git: the same files, once each,
/// with git's line counts, and warden's own reading equal to git's.
fn plans_as_git_reads(dir: &std::path::Path, patch: &[u8]) -> serde_json::Value {
    let plan = plan_patch(dir, patch, &[]);
    assert_accounts(&plan, Some(&git_rows(patch)));
    assert_eq!(text_reads(&ours(patch)), judged_text(patch));
    plan
}

/// git's own t/t4100/t-apply-3.patch has this shape: a `diff --git` header whose
/// `---`/`+++` lines carry no `a/`/`b/` prefix. Before, that file was read twice (an empty
/// entry, then a plain diff) and every later file got a `b/` prefix.
#[test]
fn a_prefixless_name_pair_inside_a_git_header_reads_as_git_does() {
    let r = Repo::new();
    r.write("Documentation/ls.txt", source_lines(8, "d"))
        .write("ls-tree.c", source_lines(30, "l"))
        .write("tree.c", source_lines(10, "t"))
        .commit_all("base");
    r.write("Documentation/ls.txt", source_lines(9, "d"))
        .write("ls-tree.c", source_lines(12, "k"))
        .write("tree.c", source_lines(11, "t"));
    let d = r.git(&["diff"]);
    let patch = d
        .replace("--- a/ls-tree.c\n", "--- ls-tree.c\n")
        .replace("+++ b/ls-tree.c\n", "+++ ls-tree.c\n");
    assert!(
        patch.contains("\n--- ls-tree.c\n+++ ls-tree.c\n@@ "),
        "{patch}"
    );
    let plan = plans_as_git_reads(r.path(), patch.as_bytes());
    let mut names = paths(&plan["files"]);
    names.sort();
    assert_eq!(names, ["Documentation/ls.txt", "ls-tree.c", "tree.c"]);
}

/// `git log --remerge-diff` writes a "remerge CONFLICT" note right after `diff --git`:
/// git skips that line and reads the file from the `---`/`+++` pair after the note.
/// Before, warden listed the file twice, once as "no textual change".
#[test]
fn remerge_diff_notes_after_diff_git_read_as_git_does() {
    let r = Repo::new();
    r.write("f.txt", "a\nb\nc\n")
        .write("g.rs", source_lines(5, "g"))
        .commit_all("base");
    r.git(&["checkout", "-q", "-b", "side"]);
    r.write("f.txt", "a\nSIDE\nc\n").commit_all("side");
    r.git(&["checkout", "-q", "main"]);
    r.write("f.txt", "a\nMAIN\nc\n")
        .write("g.rs", source_lines(6, "g"))
        .commit_all("main");
    let merge = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "merge",
            "-q",
            "side",
        ])
        .current_dir(r.path())
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge conflicts");
    r.write("f.txt", "a\nMERGED\nc\n").commit_all("merge");
    let patch = r.git(&["log", "-1", "--remerge-diff", "--format="]);
    assert!(
        patch.starts_with("diff --git a/f.txt b/f.txt\nremerge CONFLICT"),
        "{patch}"
    );
    let plan = plans_as_git_reads(r.path(), patch.as_bytes());
    assert_eq!(paths(&plan["files"]), ["f.txt"]);
    assert!(
        plan["skippedFiles"].as_array().unwrap().is_empty(),
        "{plan}"
    );
}

/// `git diff` of a CSV file with CR-only line ends: each side is one line of the patch,
/// full of lone CRs. Before, the majority of lone CRs made warden split there too, and
/// the hunk "ended early".
#[test]
fn lone_crs_inside_lines_of_an_lf_patch_read_as_git_does() {
    let rows = |changed: usize| -> String {
        (0..40)
            .map(|i| format!("{i},row{}\r", if i == changed { 99 } else { i }))
            .collect()
    };
    let r = Repo::new();
    r.write("data.csv", rows(100)).commit_all("base");
    r.write("data.csv", rows(7))
        .write("load.rs", "fn load() {}\n");
    r.git(&["add", "-A"]);
    let patch = r.git(&["diff", "--cached"]);
    let line = patch
        .lines()
        .find(|l| l.starts_with('+') && l.contains(','))
        .unwrap();
    assert!(line.matches('\r').count() >= 39, "{line:?}");
    let plan = plans_as_git_reads(r.path(), patch.as_bytes());
    let mut names = paths(&plan["files"]);
    names.extend(paths(&plan["skippedFiles"]));
    names.sort();
    assert_eq!(names, ["data.csv", "load.rs"]);
}

/// `@@ -6 +0 @@`: each count defaults to 1, and a range with lines starting at 0 is the
/// beginning of the file, as git applies it. Before: "malformed hunk header".
#[test]
fn a_hunk_range_starting_at_zero_reads_as_git_does() {
    let r = Repo::new();
    r.write("src/a.rs", source_lines(10, "a"))
        .commit_all("base");
    let mut lines: Vec<String> = source_lines(10, "a").lines().map(String::from).collect();
    lines[5] = "    let changed = 6;".into();
    r.write("src/a.rs", lines.join("\n") + "\n");
    let d = r.git(&["diff", "-U0"]);
    assert!(d.contains("\n@@ -6 +6 @@"), "{d}");
    let patch = d.replace("\n@@ -6 +6 @@", "\n@@ -6 +0 @@");
    let plan = plans_as_git_reads(r.path(), patch.as_bytes());
    let unit = &plan["units"][0];
    assert_eq!(unit["path"], "src/a.rs", "{plan}");
    assert!(unit["startLine"].as_u64().unwrap() >= 1, "{unit}");
}

/// A repository whose staged change renames a file with an edit, renames one without,
/// edits one in place, flips a mode and adds a file, each in a directory.
fn every_kind_staged() -> Repo {
    let r = Repo::new();
    r.write("src/moved.rs", source_lines(40, "m"))
        .write("src/same.rs", source_lines(30, "s"))
        .write("src/kept.rs", source_lines(20, "k"))
        .write("bin/run.sh", "#!/bin/sh\necho hi\n")
        .commit_all("base");
    std::fs::create_dir(r.path().join("lib")).unwrap();
    r.git(&["mv", "src/moved.rs", "lib/renamed.rs"]);
    r.write("lib/renamed.rs", source_lines(41, "m"));
    r.git(&["mv", "src/same.rs", "lib/same.rs"]);
    r.write("src/kept.rs", source_lines(21, "k"));
    r.write("docs/new.md", "# new\n");
    r.git(&["add", "-A"]);
    r.git(&["update-index", "--chmod=+x", "bin/run.sh"]);
    r
}

/// Every path of a plan: planned files and skipped ones.
fn plan_paths(plan: &serde_json::Value) -> Vec<String> {
    let mut all = paths(&plan["files"]);
    all.extend(paths(&plan["skippedFiles"]));
    all.sort();
    all
}

/// `git diff --no-prefix` writes names without `a/`/`b/`: `-p 0` reads every one of them
/// whole, renames included, as `git apply -p0` does. Before, there was no `-p`, and the
/// default reading mixed stripped names (`kept.rs`) with whole rename names.
#[test]
fn a_no_prefix_patch_reads_whole_with_strip_zero_as_git_apply_p0() {
    let r = every_kind_staged();
    let patch = r
        .git(&["diff", "--cached", "-M", "--no-prefix"])
        .into_bytes();
    let mut want: Vec<String> = judge_with(&patch, &["-p0"])
        .into_iter()
        .map(|f| f.path)
        .collect();
    want.sort();
    assert_eq!(
        want,
        [
            "bin/run.sh",
            "docs/new.md",
            "lib/renamed.rs",
            "lib/same.rs",
            "src/kept.rs"
        ]
    );
    for flag in [["-p", "0"], ["--strip", "0"]] {
        let plan = plan_patch(r.path(), &patch, &flag);
        assert_eq!(plan_paths(&plan), want, "{flag:?}: {plan}");
        let renamed = planned(&plan, "lib/renamed.rs").expect("planned");
        assert_eq!(renamed["oldPath"], "src/moved.rs", "{plan}");
    }
    // The default is git's `-p1`: the rename's `---`/`+++` names, stripped, are not the
    // files its rename lines name. git refuses that; so does warden, naming `-p 0`.
    std::fs::write(r.path().join("in.diff"), &patch).unwrap();
    let out = r.warden(&["plan", "--diff", "in.diff"]).output().unwrap();
    let err = assert_exit(&out, 2);
    assert!(err.contains("-p 0") && err.contains("--no-prefix"), "{err}");
    assert!(err.contains("in.diff:"), "names the line: {err}");
    // `-p 2` on an a/b patch strips one directory more, as `git apply -p2`.
    let ab = r.git(&["diff", "--cached", "-M"]).into_bytes();
    let mut git_p2: Vec<String> = judge_with(&ab, &["-p2"])
        .into_iter()
        .map(|f| f.path)
        .collect();
    git_p2.sort();
    assert_eq!(plan_paths(&plan_patch(r.path(), &ab, &["-p", "2"])), git_p2);
}

#[test]
fn strip_is_for_patches_only() {
    let r = every_kind_staged();
    let out = r.warden(&["plan", "--staged", "-p", "0"]).output().unwrap();
    let err = assert_exit(&out, 2);
    assert!(err.contains("--strip") && err.contains("--diff"), "{err}");
}

/// A skipped file keeps what happened to it: a rename without edits names where it came
/// from, a mode change its modes. Before, skippedFiles[] had only a path and a reason.
#[test]
fn skipped_files_carry_their_status_old_path_and_modes() {
    let r = every_kind_staged();
    for plan in [
        r.plan(&["--staged"]),
        plan_patch(
            r.path(),
            &r.git(&["diff", "--cached", "-M"]).into_bytes(),
            &[],
        ),
    ] {
        let skipped = |path: &str| {
            plan["skippedFiles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["path"] == path)
                .unwrap_or_else(|| panic!("{path} skipped: {plan}"))
                .clone()
        };
        let same = skipped("lib/same.rs");
        assert_eq!(same["status"], "renamed", "{same}");
        assert_eq!(same["oldPath"], "src/same.rs", "{same}");
        let run = skipped("bin/run.sh");
        assert_eq!(run["status"], "modified", "{run}");
        assert_eq!(run["oldMode"], "100644", "{run}");
        assert_eq!(run["newMode"], "100755", "{run}");
    }
}

/// `git diff --no-prefix` names files without a/ and b/: read as -p 1 each lost its first
/// folder, silently. Where every file it changes is in the repository under -p 0, it is
/// read so (and said); where only some are, the error names `-p 0`.
#[test]
fn a_no_prefix_patch_is_read_with_p0_or_names_it() {
    let r = Repo::new();
    r.write("src/app/x.rs", "fn a() {}\nfn b() {}\n")
        .write("lib/y.rs", "fn y() {}\n")
        .commit_all("base");
    r.write("src/app/x.rs", "fn a() {}\nfn b() { c() }\n")
        .write("lib/y.rs", "fn y() { z() }\n");
    let patch = r.git(&["diff", "--no-prefix"]);
    r.git(&["checkout", "--", "."]);
    std::fs::write(r.path().join("np.diff"), &patch).unwrap();
    let out = r
        .warden(&["plan", "--json", "--diff", "np.diff"])
        .output()
        .unwrap();
    let err = assert_exit(&out, 0);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got = paths(&plan["files"]);
    got.sort();
    assert_eq!(got, ["lib/y.rs", "src/app/x.rs"], "{err}");
    assert!(err.contains("-p 0") && err.contains("--no-prefix"), "{err}");
    // Asked for -p 1, it strips as told.
    let plan = plan_patch(r.path(), patch.as_bytes(), &["-p", "1"]);
    let mut got = paths(&plan["files"]);
    got.sort();
    assert_eq!(got, ["app/x.rs", "y.rs"]);
    // Only some of its files found with the first folder kept: the error names -p 0.
    let partly = patch.replace("lib/y.rs", "gone/y.rs");
    let err = refused(r.path(), partly.as_bytes());
    assert!(err.contains("pass -p 0") && err.contains("1 of 2"), "{err}");
}
