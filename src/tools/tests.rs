//! Hostile calls: each ends as an error answer the model reads, none leaks a byte from
//! outside the tree, from git's data or from a denied file, none panics or hangs.

use super::*;
use std::fs;
use std::path::PathBuf;

const OUTSIDE: &str = "OUTSIDE-THE-TREE-7f3a";
const SECRET: &str = "DB_PASSWORD=hunter2-5e1c";

/// A repository (committed) beside a folder outside it, with the hostile shapes in it.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret.txt"), format!("{OUTSIDE}\n")).unwrap();
    let root = dir.path().join("repo");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(
        root.join("src/lib.rs"),
        "pub fn parse_header(x: &str) -> u32 {\n    x.len() as u32\n}\n\nfn caller() {\n    parse_header(\"a\");\n}\n",
    )
    .unwrap();
    fs::write(root.join(".env"), format!("{SECRET}\n")).unwrap();
    fs::write(root.join("README.md"), "# demo\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::symlink;
        symlink(outside.join("secret.txt"), root.join("abs_link.txt")).unwrap();
        symlink("../outside/secret.txt", root.join("rel_link.txt")).unwrap();
        symlink("../outside", root.join("out_dir")).unwrap();
        symlink(".env", root.join("notes.txt")).unwrap();
        symlink("src/lib.rs", root.join("lib_link.rs")).unwrap();
    }
    let repo = git2::Repository::init(&root).unwrap();
    fs::write(root.join(".git/config.extra"), OUTSIDE).unwrap();
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::FORCE, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("t", "t@example.com").unwrap();
    repo.commit(Some("HEAD"), &sig, &sig, "one", &tree, &[])
        .unwrap();
    Fixture { _dir: dir, root }
}

fn work(f: &Fixture) -> Toolbox {
    Toolbox::work_tree(&f.root, &[], 32 * 1024).unwrap()
}

fn head(f: &Fixture) -> Toolbox {
    let head = Head::Commit {
        repo: f.root.clone(),
        rev: "HEAD".into(),
    };
    Toolbox::open(&head, &[], 32 * 1024, Arc::new(str::to_string)).unwrap()
}

fn refused(tb: &Toolbox, tool: &str, args: &str, says: &str) {
    let a = tb.call(tool, args);
    assert!(a.is_error, "{tool} {args}: not refused: {}", a.content);
    assert!(a.content.contains(says), "{tool} {args}: {}", a.content);
    assert!(!a.content.contains(OUTSIDE) && !a.content.contains("hunter2"));
}

#[test]
fn paths_out_of_the_tree_and_git_data_are_tool_errors_in_both_sources() {
    let f = fixture();
    for tb in [work(&f), head(&f)] {
        refused(
            &tb,
            "read_file",
            r#"{"path": "../../etc/passwd"}"#,
            "`..` is refused",
        );
        refused(
            &tb,
            "read_file",
            r#"{"path": "/etc/passwd"}"#,
            "absolute paths",
        );
        refused(&tb, "read_file", r#"{"path": ".git/config"}"#, ".git");
        refused(&tb, "read_file", r#"{"path": ".git/config.extra"}"#, ".git");
        refused(&tb, "list_files", r#"{"glob": "../*"}"#, "`..` is refused");
    }
}

#[cfg(unix)]
#[test]
fn links_that_leave_the_tree_or_reach_a_secret_are_refused() {
    let f = fixture();
    let tb = work(&f);
    refused(
        &tb,
        "read_file",
        r#"{"path": "abs_link.txt"}"#,
        "leaves the repository",
    );
    refused(
        &tb,
        "read_file",
        r#"{"path": "rel_link.txt"}"#,
        "leaves the repository",
    );
    refused(
        &tb,
        "read_file",
        r#"{"path": "out_dir/secret.txt"}"#,
        "leaves the repository",
    );
    refused(
        &tb,
        "read_file",
        r#"{"path": "notes.txt"}"#,
        "looks like a secret",
    );
    // The commit's links are followed inside its tree only: out of it they lead nowhere.
    let tb = head(&f);
    refused(
        &tb,
        "read_file",
        r#"{"path": "rel_link.txt"}"#,
        "does not exist",
    );
    refused(
        &tb,
        "read_file",
        r#"{"path": "out_dir/secret.txt"}"#,
        "does not exist",
    );
    refused(
        &tb,
        "read_file",
        r#"{"path": "notes.txt"}"#,
        "looks like a secret",
    );
    let ok = tb.call("read_file", r#"{"path": "lib_link.rs"}"#);
    assert!(
        !ok.is_error && ok.content.contains("parse_header"),
        "{}",
        ok.content
    );
    // Neither search reaches past a link either.
    for tb in [work(&f), head(&f)] {
        let a = tb.call("grep", r#"{"pattern": "THE-TREE|hunter"}"#);
        assert!(!a.is_error, "{}", a.content);
        assert!(a.content.contains(": 0 matching lines"), "{}", a.content);
        assert!(!a.content.contains(OUTSIDE) && !a.content.contains("hunter2"));
    }
}

#[test]
fn a_denied_secret_file_is_neither_read_searched_nor_listed() {
    let f = fixture();
    for tb in [work(&f), head(&f)] {
        refused(
            &tb,
            "read_file",
            r#"{"path": ".env"}"#,
            "looks like a secret",
        );
        let grep = tb.call("grep", r#"{"pattern": "DB_PASSWORD"}"#);
        assert!(!grep.content.contains("hunter2"), "{}", grep.content);
        let list = tb.call("list_files", r#"{"glob": "*"}"#);
        assert!(
            !list.is_error && list.content.contains("src/lib.rs"),
            "{}",
            list.content
        );
        assert!(!list.content.contains(".env"), "{}", list.content);
    }
    // `[execution] toolDeny` extends the list.
    let tb = Toolbox::work_tree(&f.root, &["src/**".into()], 32 * 1024).unwrap();
    refused(
        &tb,
        "read_file",
        r#"{"path": "src/lib.rs"}"#,
        "deny pattern `src/**`",
    );
}

#[test]
fn a_huge_file_is_refused_with_its_size_and_not_searched() {
    let f = fixture();
    let big = "needle in a haystack\n".repeat(10 * 1024 * 1024 / 21 + 1);
    fs::write(f.root.join("big.log"), &big).unwrap();
    let tb = work(&f);
    let a = tb.call("read_file", r#"{"path": "big.log"}"#);
    assert!(
        a.is_error && a.content.contains("file cap"),
        "{}",
        a.content
    );
    assert!(a.content.contains(&big.len().to_string()), "{}", a.content);
    let g = tb.call("grep", r#"{"pattern": "needle"}"#);
    assert!(g.content.contains(": 0 matching lines"), "{}", g.content);
}

#[test]
fn catastrophic_looking_and_oversized_patterns_neither_hang_nor_crash() {
    let f = fixture();
    fs::write(
        f.root.join("src/xs.txt"),
        format!("{}\n", "x".repeat(50_000)),
    )
    .unwrap();
    let tb = work(&f);
    // Backtracking engines take exponential time here; this one is linear.
    for p in [r"(x+x+)+y", r"(a|aa)+$", r"(.*a){12}"] {
        let a = tb.call("grep", &serde_json::json!({ "pattern": p }).to_string());
        assert!(!a.is_error, "{p}: {}", a.content);
    }
    refused(
        &tb,
        "grep",
        r#"{"pattern": "(?:a{1000}){1000}"}"#,
        "compiled size",
    );
    refused(
        &tb,
        "grep",
        r#"{"pattern": "(?<=a)b"}"#,
        "not a regular expression",
    );
    let long = serde_json::json!({ "pattern": "a".repeat(2000) }).to_string();
    refused(&tb, "grep", &long, "longer than");
}

#[test]
fn arguments_that_are_not_json_or_not_the_schema_are_tool_errors() {
    let f = fixture();
    let tb = work(&f);
    refused(&tb, "read_file", r#"{"path": "#, "not valid JSON");
    refused(&tb, "read_file", "[1, 2]", "JSON object");
    refused(&tb, "read_file", r#"{"path": 7}"#, "must be a string");
    refused(&tb, "read_file", "{}", "`path` is required");
    refused(
        &tb,
        "read_file",
        r#"{"path": "src/lib.rs", "start_line": -3}"#,
        "line number",
    );
    refused(
        &tb,
        "read_file",
        r#"{"path": "src/lib.rs", "start_line": 5, "end_line": 2}"#,
        "before",
    );
    refused(&tb, "grep", r#"{"pattern": ""}"#, "empty");
    refused(
        &tb,
        "run_shell",
        r#"{"cmd": "cat /etc/passwd"}"#,
        "there is no tool",
    );
    let huge = format!(r#"{{"path": "{}"}}"#, "a".repeat(MAX_ARGUMENT_BYTES));
    refused(&tb, "read_file", &huge, "cap");
}

#[test]
fn a_read_is_numbered_fenced_and_cut_at_the_call_cap_with_where_to_go_on() {
    let f = fixture();
    let lines: String = (1..=5000)
        .map(|n| format!("line {n} ```` fence\n"))
        .collect();
    fs::write(f.root.join("src/long.txt"), &lines).unwrap();
    let tb = Toolbox::work_tree(&f.root, &[], 4096).unwrap();
    let a = tb.call("read_file", r#"{"path": "src/long.txt", "start_line": 10}"#);
    assert!(!a.is_error, "{}", a.content);
    assert!(a.bytes() <= 4096, "{} bytes", a.bytes());
    assert!(a.content.contains("    10  line 10 "), "{}", a.content);
    assert!(
        a.content
            .contains("Repository data between the fence lines")
    );
    // The fence is longer than any backtick run inside.
    assert!(a.content.contains("`````text\n"), "{}", a.content);
    let next = a.content.split("start_line ").nth(1).unwrap();
    let next: u32 = next.split(' ').next().unwrap().parse().unwrap();
    assert!(next > 10 && next < 5000);
    let b = tb.call(
        "read_file",
        r#"{"path": "./src/long.txt", "start_line": "4999", "end_line": 5000}"#,
    );
    assert!(
        b.content.contains("lines 4999-5000 of 5000"),
        "{}",
        b.content
    );
    assert!(!b.content.contains("for more"), "{}", b.content);
}

#[test]
fn the_head_source_reads_the_commit_not_the_working_tree() {
    let f = fixture();
    fs::write(f.root.join("src/lib.rs"), "uncommitted edit\n").unwrap();
    let a = head(&f).call("read_file", r#"{"path": "src/lib.rs"}"#);
    assert!(a.content.contains("parse_header") && !a.content.contains("uncommitted"));
    assert!(a.content.contains("the head commit"), "{}", a.content);
    let w = work(&f).call("read_file", r#"{"path": "src/lib.rs"}"#);
    assert!(w.content.contains("uncommitted"), "{}", w.content);
    let g = head(&f).call(
        "grep",
        r#"{"pattern": "parse_header\\(", "path_glob": "*.rs"}"#,
    );
    assert!(
        g.content.contains("src/lib.rs:1: pub fn parse_header"),
        "{}",
        g.content
    );
    assert!(g.content.contains("src/lib.rs:6:"), "{}", g.content);
}

#[test]
fn results_are_redacted_of_configured_keys_and_hashed_by_content() {
    let f = fixture();
    let key = "sk-test-0123456789abcdef0123";
    fs::write(
        f.root.join("src/config.rs"),
        format!("const K: &str = \"{key}\";\n"),
    )
    .unwrap();
    let redact: Redactor = Arc::new(move |t: &str| t.replace(key, "[redacted]"));
    let head = Head::WorkTree(f.root.clone());
    let tb = Toolbox::open(&head, &[], 32 * 1024, redact).unwrap();
    for (tool, args) in [
        ("read_file", r#"{"path": "src/config.rs"}"#),
        ("grep", r#"{"pattern": "sk-test"}"#),
    ] {
        let a = tb.call(tool, args);
        assert!(
            !a.content.contains(key) && a.content.contains("[redacted]"),
            "{}",
            a.content
        );
    }
    let one = tb.call("read_file", r#"{"path": "README.md"}"#);
    assert_eq!(
        one.hash,
        tb.call("read_file", r#"{"path": "README.md"}"#).hash
    );
    fs::write(f.root.join("README.md"), "# changed\n").unwrap();
    assert_ne!(
        one.hash,
        tb.call("read_file", r#"{"path": "README.md"}"#).hash
    );
}

#[test]
fn skill_tool_names_map_to_warden_tools_and_the_rest_are_not_tools() {
    assert_eq!(Tool::from_skill_name("Read"), Some(Tool::ReadFile));
    assert_eq!(Tool::from_skill_name("Grep"), Some(Tool::Grep));
    assert_eq!(Tool::from_skill_name("Glob"), Some(Tool::ListFiles));
    assert_eq!(Tool::from_skill_name("Bash(git diff:*)"), None);
    for t in ["Bash", "Write", "Edit", "WebFetch", "WebSearch"] {
        assert_eq!(Tool::from_skill_name(t), None);
    }
    for t in Tool::ALL {
        let d = t.definition();
        assert_eq!(d.parameters["additionalProperties"], false);
        let props = d.parameters["properties"].as_object().unwrap();
        assert_eq!(
            props.len(),
            d.parameters["required"].as_array().unwrap().len()
        );
    }
}

#[cfg(unix)]
#[test]
fn a_named_pipe_in_the_tree_is_refused_by_name_and_never_hangs_a_read_or_a_grep() {
    let f = fixture();
    let pipe = f.root.join("src/pipe.rs");
    let c = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path and a mode; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    // No writer ever opens it: a blocking open would hang here.
    let tb = work(&f);
    let a = tb.call("read_file", r#"{"path": "src/pipe.rs"}"#);
    assert!(a.is_error, "{}", a.content);
    assert!(
        a.content.contains("src/pipe.rs") && a.content.contains("named pipe"),
        "{}",
        a.content
    );
    let g = tb.call("grep", r#"{"pattern": "parse_header"}"#);
    assert!(!g.is_error, "{}", g.content);
    assert!(g.content.contains("src/lib.rs:1:"), "{}", g.content);
}

#[test]
fn a_raised_halt_stops_a_grep_and_a_listing_before_their_next_file() {
    let f = fixture();
    let tb = work(&f);
    let halt = Halt::new();
    halt.raise();
    let g = tb.call_within("grep", r#"{"pattern": "parse_header"}"#, &halt);
    assert!(
        g.content.contains("0 matching lines in 0 files"),
        "{}",
        g.content
    );
    assert!(
        g.content.contains("the unit's time ran out"),
        "{}",
        g.content
    );
    let l = tb.call_within("list_files", r#"{"glob": "**"}"#, &halt);
    assert!(
        l.content.contains("the unit's time ran out"),
        "{}",
        l.content
    );
    // Not raised: the same calls find what is there.
    let g = tb.call_within("grep", r#"{"pattern": "parse_header"}"#, &Halt::new());
    assert!(g.content.contains("src/lib.rs:1:"), "{}", g.content);
}
