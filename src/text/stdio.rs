//! Writing to stdout and stderr without panicking. `println!`/`eprintln!` panic when the
//! stream is closed (`warden … 2>&1 | head -n 1`), and a panic there would lose the `-o`
//! files and the step summary still to be written and change the exit code. Here a closed
//! stream is not an error: stderr is best effort, and stdout reports a closed pipe as
//! done. Every line also passes the output guard ([`super::escape::guard`]).

use std::io::Write;

/// Prints `line` and a newline on stderr, guarded; a failure to write is ignored (there is
/// nowhere left to say it).
pub fn eprint_line(line: &str) {
    // Wrapped at words to a terminal's width (or COLUMNS): every line a person reads fits.
    let width = super::wrap::stderr_columns();
    let wrapped = super::wrap::block(line, 4, width);
    let mut text = super::escape::guard(wrapped.trim_end_matches('\n')).into_owned();
    text.push('\n');
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// Writes `text` to stdout as it is (callers guard what needs it: GitHub annotations are
/// warden's own commands). A closed stdout (`warden | head`) is not an error: warden
/// stops writing quietly, as ripgrep does.
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}
