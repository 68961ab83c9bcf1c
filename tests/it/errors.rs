//! Bad input: a clear message naming the thing and the fix, exit 2, never a panic.

use crate::support::*;

fn fails_with(mut cmd: impl std::borrow::BorrowMut<assert_cmd::Command>, needles: &[&str]) {
    let out = cmd.borrow_mut().output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for n in needles {
        assert!(err.contains(n), "expected {n:?} in: {err}");
    }
}

fn repo() -> Repo {
    let r = Repo::new();
    r.write("src/a.rs", source_lines(3, "a")).commit_all("base");
    r.write("src/a.rs", source_lines(4, "a"));
    r
}

#[test]
fn not_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(
        warden().current_dir(dir.path()).arg("plan"),
        &["not a git repository", "--diff"],
    );
}

#[test]
fn unknown_ref() {
    fails_with(
        repo().warden(&["plan", "nope..HEAD"]),
        &["unknown ref `nope`"],
    );
}

#[test]
fn conflicting_selection_flags() {
    fails_with(
        repo().warden(&["plan", "--staged", "--diff", "x.diff"]),
        &["--staged and --diff"],
    );
}

#[test]
fn malformed_toml_names_file_line_and_column() {
    let r = repo();
    r.config("version = 1\n[defaults\nfailOn = \"high\"\n");
    fails_with(r.warden(&["plan"]), &["warden.toml:2:"]);
}

#[test]
fn a_value_of_the_wrong_type() {
    let r = repo();
    r.config("version = 1\n[execution]\nmaxAttempts = \"two\"\n");
    fails_with(r.warden(&["plan"]), &["warden.toml:3:15", "invalid type"]);
}

#[test]
fn invalid_glob() {
    let r = repo();
    r.config("version = 1\n[defaults]\nignorePaths = [\"src/[a\"]\n");
    fails_with(
        r.warden(&["plan"]),
        &["warden.toml:3:", "invalid glob `src/[a`"],
    );
}

#[test]
fn invalid_duration() {
    let r = repo();
    r.config("version = 1\n[execution]\nreviewBudget = \"fifteen minutes\"\n");
    fails_with(
        r.warden(&["plan"]),
        &["warden.toml:3:16", "execution.reviewBudget", "\"15m\""],
    );
}

#[test]
fn unsupported_version_and_unknown_provider() {
    let r = repo();
    r.config("version = 2\n");
    fails_with(r.warden(&["plan"]), &["version 2 is not supported"]);
    r.config("version = 1\n[[routes]]\nname = \"x\"\nprovider = \"openia\"\nmodel = \"m\"\n");
    fails_with(
        r.warden(&["plan"]),
        &["warden.toml:4:12", "unknown provider `openia`", "openai"],
    );
}

#[test]
fn missing_config_file() {
    fails_with(
        repo().warden(&["plan", "-c", "nope.toml"]),
        &["nope.toml", "config file not found"],
    );
}

#[test]
fn malformed_diff_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.diff"),
        "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n",
    )
    .unwrap();
    fails_with(
        warden()
            .current_dir(dir.path())
            .args(["plan", "--diff", "bad.diff"]),
        &["bad.diff:4:", "hunk ends early"],
    );
    fails_with(
        warden()
            .current_dir(dir.path())
            .args(["plan", "--diff", "-"])
            .write_stdin("this is not a diff\n"),
        &["stdin:1:", "no diff found"],
    );
    fails_with(
        warden()
            .current_dir(dir.path())
            .args(["plan", "--diff", "missing.diff"]),
        &["--diff missing.diff", "cannot read"],
    );
}

#[test]
fn skill_file_without_front_matter() {
    let r = repo();
    r.write(
        ".warden/skills/broken/SKILL.md",
        "Just a prompt with no front matter.\n",
    );
    fails_with(
        r.warden(&["plan"]),
        &[".warden/skills/broken/SKILL.md", "no front matter"],
    );
}

#[test]
fn unknown_flag_value() {
    fails_with(repo().warden(&["plan", "--format", "xml"]), &["--format"]);
}

#[test]
fn absurd_durations_are_refused_naming_the_key_or_flag_not_a_panic() {
    let r = repo();
    for (section, key) in [
        ("execution", "reviewBudget"),
        ("execution", "hunkBudget"),
        ("execution", "requestTimeout"),
        ("execution.breaker", "openFor"),
        ("execution.breaker", "window"),
    ] {
        r.config(&format!(
            "version = 1\n[{section}]\n{key} = \"18446744073709551615s\"\n[[routes]]\nname = \"sim\"\nprovider = \"sim\"\n"
        ));
        fails_with(
            r.warden(&["review", "--json"]),
            &["warden.toml:3:", &format!("{section}.{key}")],
        );
        r.config(&format!(
            "version = 1\n[{section}]\n{key} = \"8d\"\n[[routes]]\nname = \"sim\"\nprovider = \"sim\"\n"
        ));
        fails_with(
            r.warden(&["review", "--json"]),
            &[&format!("{section}.{key}"), "7 days"],
        );
    }
    r.config("version = 1\n");
    fails_with(
        r.warden(&["review", "--sim", "--budget", "18446744073709551615s"]),
        &["--budget"],
    );
    fails_with(
        r.warden(&["review", "--sim", "--budget", "8d"]),
        &["--budget", "7 days"],
    );
}

#[test]
fn dash_c_with_a_directory_says_it_is_one() {
    let r = repo();
    std::fs::create_dir(r.path().join("conf")).unwrap();
    fails_with(
        r.warden(&["plan", "-c", "conf"]),
        &["conf", "is a directory", "conf/warden.toml"],
    );
}

#[test]
fn a_shallow_clone_without_the_base_says_how_to_fetch_it() {
    let origin = Repo::new();
    origin
        .write("src/a.rs", source_lines(3, "a"))
        .commit_all("one");
    origin
        .write("src/a.rs", source_lines(4, "a"))
        .commit_all("two");
    origin.git(&["checkout", "-q", "-b", "topic"]);
    origin
        .write("src/b.rs", source_lines(2, "b"))
        .commit_all("topic");
    origin.git(&["checkout", "-q", "main"]);
    origin
        .write("src/c.rs", source_lines(2, "c"))
        .commit_all("main moves");
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    let clone = dir.path().join("clone");
    let out = std::process::Command::new("git")
        .args([
            "clone",
            "-q",
            "--depth",
            "1",
            "--no-single-branch",
            "-b",
            "topic",
        ])
        .arg(&url)
        .arg(&clone)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let run = |args: &[&str]| {
        let mut cmd = warden();
        cmd.current_dir(&clone).args(args);
        cmd
    };
    // The default target: the branch against its merge base with origin's default branch.
    fails_with(
        run(&["plan"]),
        &["shallow clone", "git fetch --deepen", "--unshallow"],
    );
    fails_with(
        run(&["plan", "origin/main...HEAD"]),
        &["shallow clone", "git fetch --deepen", "--unshallow"],
    );
    // In CI the config is read from the base too, and says the same.
    let mut in_ci = run(&["plan"]);
    in_ci.env("CI", "true");
    fails_with(
        in_ci,
        &["shallow clone", "git fetch --deepen", "--unshallow"],
    );
    // A parent the clone does not have.
    fails_with(
        run(&["plan", "HEAD~1..HEAD"]),
        &["HEAD~1", "shallow clone", "--unshallow"],
    );
}

#[cfg(unix)]
#[test]
fn a_repository_owned_by_another_user_names_safe_directory() {
    // Only root can hand a directory to another user: as root, or through `sudo -n`;
    // anywhere else the test fails and says so, rather than passing having checked nothing.
    let r = repo();
    let mut chown = if unsafe { libc::geteuid() } == 0 {
        std::process::Command::new("chown")
    } else {
        let mut sudo = std::process::Command::new("sudo");
        sudo.args(["-n", "chown"]);
        sudo
    };
    let status = chown.args(["-R", "12345:12345"]).arg(r.path()).status();
    assert!(
        status.is_ok_and(|s| s.success()),
        "this test hands a repository to another user: run it as root or with passwordless sudo"
    );
    let home = tempfile::tempdir().unwrap();
    let mut cmd = r.warden(&["plan"]);
    cmd.env("HOME", home.path());
    fails_with(
        cmd,
        &[
            "owned by another user",
            "safe.directory",
            "git config --global --add safe.directory",
        ],
    );
    let out = r
        .warden(&["plan"])
        .env("HOME", home.path())
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(!err.contains("not a git repository"), "{err}");
}

#[test]
fn a_base_url_that_is_not_a_url_is_a_config_error_not_a_panic() {
    let r = repo();
    for url in [
        "http://local host:4000/v1",
        "http://127.0.0.1:4000/v1 /chat",
        "http://",
    ] {
        r.config(&format!(
            "version = 1\n[[routes]]\nname = \"gw\"\nprovider = \"openai\"\nmodel = \"m\"\nbaseUrl = \"{url}\"\n"
        ));
        fails_with(
            r.warden(&["review", "--json"]).env("OPENAI_API_KEY", "k"),
            &["warden.toml:6:", "route `gw`", "baseUrl", "not a valid URL"],
        );
    }
}
