//! A finished command's output read as text, and the exit-code check every CLI test makes:
//! on failure it shows the exit status, stderr and stdout, and `#[track_caller]` points the
//! panic at the test's line rather than here.

use std::process::Output;

/// The command's stderr as text (lossy: a test must see whatever bytes it wrote).
pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The command's stdout as text (lossy).
pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts the command exited with `code` (a signal's death counts as no code); its
/// stderr, for the test's further checks.
#[track_caller]
pub fn assert_exit(out: &Output, code: i32) -> String {
    let err = stderr_of(out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit status {}\n--- stderr ---\n{err}\n--- stdout ---\n{}",
        out.status,
        stdout_of(out)
    );
    err
}

/// Asserts the command succeeded (exit 0); its (stdout, stderr).
#[track_caller]
pub fn assert_success(out: &Output) -> (String, String) {
    let err = assert_exit(out, 0);
    (stdout_of(out), err)
}
