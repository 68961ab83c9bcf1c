//! Unit tests of the patch reader on hand-written text; tests/it/patch_input.rs checks
//! real tool output against `git apply`.

use super::*;
use crate::diff::ChangeStatus;

#[test]
fn parses_plain_unified_diff_and_git_extended_headers() {
    let text = b"--- a/foo.txt\t2024-01-01\n+++ b/foo.txt\n@@ -1,2 +1,3 @@\n one\n+two\n three\n\
diff --git a/old.rs b/new.rs\nsimilarity index 90%\nrename from old.rs\nrename to new.rs\n\
diff --git a/bin.png b/bin.png\nBinary files a/bin.png and b/bin.png differ\n\
diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
    let set = parse(text, "test").unwrap();
    let names: Vec<String> = set.files.iter().map(|f| f.path.to_string()).collect();
    assert_eq!(names, ["foo.txt", "new.rs", "bin.png", "run.sh"]);
    assert_eq!(set.files[0].added(), 1);
    assert_eq!(set.files[1].status, ChangeStatus::Renamed);
    assert_eq!(
        set.files[1].old_path.as_ref().unwrap().to_string(),
        "old.rs"
    );
    assert!(set.files[2].binary);
    assert!(set.files[3].mode_changed());
}

#[test]
fn copies_and_deletions() {
    let text = b"diff --git a/a.rs b/b.rs\nsimilarity index 95%\ncopy from a.rs\ncopy to b.rs\n--- a/a.rs\n+++ b/b.rs\n@@ -1 +1,2 @@\n x\n+y\n\
diff --git a/gone.rs b/gone.rs\ndeleted file mode 100644\n--- a/gone.rs\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n";
    let set = parse(text, "t").unwrap();
    assert_eq!(set.files[0].status, ChangeStatus::Copied);
    assert_eq!(set.files[0].path.to_string(), "b.rs");
    assert_eq!(set.files[0].old_path.as_ref().unwrap().to_string(), "a.rs");
    assert_eq!(set.files[1].status, ChangeStatus::Deleted);
    assert_eq!(set.files[1].path.to_string(), "gone.rs");
    assert_eq!(set.files[1].removed(), 2);
}

#[test]
fn unquotes_octal_escaped_non_utf8_paths() {
    let text = b"diff --git \"a/caf\\303\\251\" \"b/caf\\303\\251\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/caf\\303\\251\"\n@@ -0,0 +1 @@\n+x\n";
    let set = parse(text, "t").unwrap();
    assert_eq!(set.files[0].path.to_string(), "café");
    assert_eq!(set.files[0].status, ChangeStatus::Added);
}

#[test]
fn short_hunk_is_an_error_with_a_line_number() {
    let text = b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n";
    let err = parse(text, "p.diff").unwrap_err().to_string();
    assert!(err.starts_with("p.diff:4:"), "{err}");
    assert!(err.contains("hunk ends early"), "{err}");
}

#[test]
fn text_without_any_diff_is_an_error() {
    let err = parse(b"hello\nworld\n", "stdin").unwrap_err().to_string();
    assert!(err.contains("no diff found"), "{err}");
}

#[test]
fn crlf_and_no_newline_marker() {
    let text = b"--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n\\ No newline at end of file\r\n+b\r\n\\ No newline at end of file\r\n";
    let set = parse(text, "t").unwrap();
    let h = &set.files[0].hunks[0];
    assert_eq!((h.added(), h.removed()), (1, 1));
    assert_eq!(h.lines[1].text, "b");
}

fn files(text: &[u8]) -> Vec<FileChange> {
    parse_bytes(text).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &[u8]) -> PatchError {
    parse_bytes(text).expect_err("refused")
}

#[test]
fn a_plain_binary_line_is_its_own_file_not_part_of_the_one_before() {
    let text = b"diff -ruN a/x.txt b/x.txt\n--- a/x.txt\t2024-01-01 00:00:00.000000000 +0000\n+++ b/x.txt\t1970-01-01 00:00:00.000000000 +0000\n@@ -1 +0,0 @@\n-x\nBinary files a/y.bin and b/y.bin differ\nBinary files /dev/null and b/new and old.bin differ\n";
    let f = files(text);
    assert_eq!(f.len(), 3);
    assert_eq!((f[0].status, f[0].binary), (ChangeStatus::Deleted, false));
    assert_eq!(
        (f[1].path.to_string().as_str(), f[1].binary),
        ("y.bin", true)
    );
    assert_eq!(f[2].path.to_string(), "new and old.bin");
    assert_eq!(f[2].status, ChangeStatus::Added);
}

#[test]
fn a_header_only_git_block_ends_where_another_files_names_begin() {
    let text = b"diff --git a/m.sh b/m.sh\nold mode 100644\nnew mode 100755\n--- a/other.rs\n+++ b/other.rs\n@@ -1 +1 @@\n-a\n+b\n";
    let f = files(text);
    assert_eq!(f.len(), 2);
    assert!(f[0].mode_changed() && f[0].hunks.is_empty());
    assert_eq!(
        (f[1].path.to_string().as_str(), f[1].changed()),
        ("other.rs", 2)
    );
    // A new empty file: its own `---` would be /dev/null, so a named one is another file.
    let text = b"diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n--- a/o\n+++ b/o\n@@ -1 +1 @@\n-a\n+b\n";
    let f = files(text);
    assert_eq!(
        (f[0].status, f[1].status),
        (ChangeStatus::Added, ChangeStatus::Modified)
    );
}

#[test]
fn combined_and_overflowing_and_unnamed_input_is_refused() {
    let e = refused(b"diff --cc f\nindex a,b..c\n--- a/f\n+++ b/f\n@@@ -1,1 -1,1 +1,1 @@@\n");
    assert_eq!((e.line, e.kind), (1, ErrorKind::Combined));
    let e = refused(b"--- a/x\n+++ b/x\n@@ -4294967290,10 +1 @@\n");
    assert_eq!((e.line, e.kind), (3, ErrorKind::LineNumberTooLarge));
    let e = refused(b"diff --git a/x b/y\nold mode 100644\nnew mode 100755\n");
    assert_eq!((e.line, e.kind), (1, ErrorKind::MissingName));
    let e = refused(b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n");
    assert_eq!(
        (e.line, e.kind),
        (6, ErrorKind::LineAfterHunk { header: 3 })
    );
    let e = refused(b"--- /dev/null\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n");
    assert!(
        matches!(e.kind, ErrorKind::NewFileWithOldLines { .. }),
        "{e}"
    );
}

#[test]
fn out_of_order_hunks_are_sorted_and_overlapping_ones_refused() {
    let text = b"--- a/x\n+++ b/x\n@@ -10,2 +10,3 @@\n a\n+b\n c\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n";
    let f = files(text);
    let starts: Vec<u32> = f[0].hunks.iter().map(|h| h.new_start).collect();
    assert_eq!(starts, [1, 10]);
    let text = b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n@@ -2,2 +2,2 @@\n-c\n+d\n e\n";
    let e = refused(text);
    assert_eq!(e.line, 7);
    assert_eq!(
        e.kind,
        ErrorKind::OverlappingHunks {
            path: "x".into(),
            other: 3
        }
    );
}

#[test]
fn mail_text_around_a_patch_is_skipped() {
    let text = b"From abc Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n x | 2 +-\n\ndiff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n-- \n2.43.0\n\n";
    let f = files(text);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].changed(), 2);
}

#[test]
fn empty_hunks_and_empty_input() {
    let f = files(b"--- a/x\n+++ b/x\n@@ -0,0 +0,0 @@\n");
    assert_eq!((f.len(), f[0].changed()), (1, 0));
    assert!(files(b"").is_empty());
    assert!(files(b"\n \n").is_empty());
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "diff --git a/x b/x",
        "diff --git \"a/q\\303\" b/q",
        "diff --cc x",
        "--- a/x",
        "--- /dev/null",
        "+++ b/x\t1970-01-01 00:00:00 +0000",
        "+++ /dev/null",
        "@@ -1,2 +1 @@",
        "@@ -0,0 +1,3 @@ fn",
        "@@ -4294967295 +4294967295 @@",
        "@@ -1 +1,4294967295 @@",
        "@@@ -1 -1 +1 @@@",
        "+",
        "-",
        " ",
        "",
        "\\ No newline at end of file",
        "Binary files a/x and b/x differ",
        "Binary files \"a/\\q",
        "GIT binary patch",
        "new file mode 100644",
        "deleted file mode 120000",
        "old mode 100644",
        "new mode 160000",
        "rename from \"x",
        "rename to y",
        "copy from a/",
        "index 1..2 100644",
        "-- ",
    ];

    fn line() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            4 => prop::sample::select(PIECES).prop_map(|s| s.as_bytes().to_vec()),
            1 => prop::collection::vec(any::<u8>(), 0..12),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, .. ProptestConfig::default() })]

        /// Any input gives files or a typed error, never a panic; what is read is
        /// consistent with its own hunk headers.
        #[test]
        fn any_input_reads_or_is_refused(
            lines in prop::collection::vec(line(), 0..24),
            ends in prop::sample::select(vec!["\n", "\r\n", "\r"]),
        ) {
            let input: Vec<u8> = lines.join(ends.as_bytes());
            match parse_bytes(&input) {
                Ok(files) => {
                    for f in &files {
                        for h in &f.hunks {
                            prop_assert!(h.added() <= h.new_lines as usize);
                            prop_assert!(h.removed() <= h.old_lines as usize);
                        }
                        for w in f.hunks.windows(2) {
                            prop_assert!(w[0].new_start <= w[1].new_start);
                        }
                    }
                }
                Err(e) => prop_assert!(e.line >= 1 && e.line <= input.len() + 1),
            }
        }
    }
}

/// Found by the `patch` fuzz target: a quoted name that is empty once its `-p`
/// component is gone (`"b/"`, `""`) gave a file with an empty path.
#[test]
fn an_empty_quoted_name_names_no_file() {
    for text in [
        &b"--- \n+++ \"\"\n"[..],
        b"--- a/x\n+++ \"b/\"\n@@ -1 +1 @@\n-a\n+b\n",
        b"diff --git \"a/\" \"b/\"\n--- \"a/\"\n+++ \"b/\"\n@@ -1 +1 @@\n-a\n+b\n",
    ] {
        let err = parse(text, "p.diff").unwrap_err().to_string();
        assert!(err.contains("names no file"), "{err}");
    }
}

/// The four shapes of issue 20, each read as `git apply --numstat` reads it.
mod git_reads_these {
    use super::*;

    fn read(text: &[u8]) -> Vec<(String, usize, usize, ChangeStatus)> {
        files(text)
            .iter()
            .map(|f| (f.path.to_string(), f.added(), f.removed(), f.status))
            .collect()
    }

    /// git's own t/t4100/t-apply-3.patch: a `diff --git` header whose `---`/`+++` lines
    /// have no `a/`/`b/` prefix. git reads one file, and later files keep their names.
    #[test]
    fn a_prefixless_name_pair_inside_a_git_header() {
        let text = b"diff --git a/Documentation/ls.txt b/Documentation/ls.txt\n\
--- a/Documentation/ls.txt\n+++ b/Documentation/ls.txt\n@@ -1,2 +1,2 @@\n-a\n+b\n c\n\
diff --git a/ls-tree.c b/ls-tree.c\ndissimilarity index 82%\n--- ls-tree.c\n+++ ls-tree.c\n\
@@ -1,2 +1,3 @@\n-x\n+y\n+z\n w\n\
diff --git a/tree.c b/tree.c\n--- a/tree.c\n+++ b/tree.c\n@@ -5 +5 @@\n-p\n+q\n";
        use ChangeStatus::Modified as M;
        assert_eq!(
            read(text),
            [
                ("Documentation/ls.txt".into(), 1, 1, M),
                ("ls-tree.c".into(), 2, 1, M),
                ("tree.c".into(), 1, 1, M),
            ]
        );
        // With timestamps, as `diff -u` writes them, and in a folder: git reads the
        // name after its first component, as `-p1` says.
        let text = b"diff --git a/d/x.c b/d/x.c\n--- d/x.c\t2005-05-26 01:00:00 +0000\n\
+++ d/x.c\t2005-05-27 01:00:00 +0000\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(read(text), [("x.c".into(), 1, 1, M)]);
        // A pair naming another file after a header-only block stays a file of its own.
        let text =
            b"diff --git a/m.sh b/m.sh\nold mode 100644\nnew mode 100755\n--- o.c\n+++ o.c\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(
            read(text),
            [("m.sh".into(), 0, 0, M), ("o.c".into(), 1, 1, M)]
        );
    }

    /// `git log --remerge-diff`: a note right after `diff --git`. git skips that
    /// `diff --git` line and reads the `---`/`+++` pair after the note; a header with
    /// only the note names no file.
    #[test]
    fn a_diff_git_line_followed_by_no_header_line_is_no_file() {
        let text = b"diff --git a/f.txt b/f.txt\nremerge CONFLICT (content): Merge conflict in f.txt\n\
index 39f7b50..121cba9 100644\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,1 @@\n-<<<<<<< a\n-=======\n->>>>>>> b\n+MERGED\n\
diff --git a/g.txt b/g.txt\nremerge CONFLICT (modify/delete): g.txt deleted in b\n\
diff --git a/h.txt b/h.txt\nindex 1..2 100644\n--- a/h.txt\n+++ b/h.txt\n@@ -1 +1 @@\n-a\n+b\n";
        use ChangeStatus::Modified as M;
        assert_eq!(
            read(text),
            [("f.txt".into(), 1, 3, M), ("h.txt".into(), 1, 1, M)]
        );
        assert!(files(b"diff --git a/g b/g\nremerge CONFLICT (content)\n").is_empty());
        // git's refusal stands where the header cannot name a file.
        let e = refused(b"diff --git a/x b/y\nremerge CONFLICT (rename)\n");
        assert_eq!((e.line, e.kind), (1, ErrorKind::MissingName));
    }

    /// `git diff` of a CSV file with CR-only line ends: each side is one long line of
    /// the patch, full of lone CRs. git splits lines at LF only.
    #[test]
    fn lone_crs_inside_the_lines_of_an_lf_patch() {
        let rows = |changed: usize| -> String {
            (0..40)
                .map(|i| format!("{i},row{}\r", if i == changed { 99 } else { i }))
                .collect()
        };
        let text = format!(
            "diff --git a/data.csv b/data.csv\nindex 1..2 100644\n--- a/data.csv\n+++ b/data.csv\n\
@@ -1 +1 @@\n-{}\n\\ No newline at end of file\n+{}\n\\ No newline at end of file\n",
            rows(100),
            rows(7)
        );
        let f = files(text.as_bytes());
        assert_eq!((f.len(), f[0].added(), f[0].removed()), (1, 1, 1));
        // The CR before the LF goes with it, as in any CRLF patch.
        assert_eq!(f[0].hunks[0].lines[1].text, rows(7).trim_end_matches('\r'));
        // A patch whose lines all end in a lone CR still reads, as before.
        let cr = b"--- a/x\r+++ b/x\r@@ -1 +1 @@\r-a\r+b\r";
        assert_eq!(read(cr), [("x".into(), 1, 1, ChangeStatus::Modified)]);
        // And its errors name its own lines.
        let e = refused(b"--- a/x\r+++ b/x\r@@ -1,2 +1 @@\r-a\r+b\rjunk\r");
        assert_eq!(e.line, 6);
    }

    /// `@@ -6 +0 @@`: each count defaults to 1, and a range with lines that starts at 0
    /// starts at the beginning of the file, as git applies it.
    #[test]
    fn a_range_starting_at_zero_with_the_default_count() {
        let f = files(b"--- a/x\n+++ b/x\n@@ -6 +0 @@\n-b\n+c\n");
        let h = &f[0].hunks[0];
        assert_eq!(
            (h.old_start, h.old_lines, h.new_start, h.new_lines),
            (6, 1, 1, 1)
        );
        assert_eq!((h.lines[0].old_no, h.lines[1].new_no), (Some(6), Some(1)));
        assert_eq!(f[0].status, ChangeStatus::Modified);
        let f = files(b"--- a/x\n+++ b/x\n@@ -0,2 +1,2 @@\n a\n-b\n+c\n");
        assert_eq!(f[0].hunks[0].lines[0].old_no, Some(1));
    }
}
