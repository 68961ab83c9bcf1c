//! `warden completions SHELL` and `warden man`: generated from the same clap definitions
//! the parser uses, so they cannot drift from the flags.

use clap::CommandFactory;
use warden::cli::{Cli, CompletionsArgs};
use warden::error::{Error, Result};

pub(super) fn completions_cmd(args: &CompletionsArgs) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "warden", &mut out);
    write_stdout(&out)
}

pub(super) fn man_cmd() -> Result<i32> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(|e| Error::io("<stdout>", e))?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<i32> {
    let text = String::from_utf8_lossy(bytes);
    warden::outputs::write_stdout(&text).map_err(|e| Error::io("<stdout>", e))?;
    Ok(0)
}
