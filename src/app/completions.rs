//! `warden completions SHELL` and `warden man`: generated from the same clap definitions
//! the parser uses, so they cannot drift from the flags.

use super::cli::{Cli, CompletionsArgs, ManArgs};
use clap::CommandFactory;
use warden::error::{Error, Result};

pub(super) fn completions_cmd(args: &CompletionsArgs) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "warden", &mut out);
    write_stdout(&out)
}

/// warden(1), a command's page (warden-review(1), every flag of it), or every page into
/// a folder: the pages warden(1)'s COMMANDS section names all exist.
pub(super) fn man_cmd(args: &ManArgs) -> Result<i32> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &args.dir {
        clap_mangen::generate_to(cmd, dir).map_err(|e| Error::io(dir, e))?;
        return Ok(0);
    }
    let page = match &args.command {
        None => cmd,
        Some(name) => cmd
            .get_subcommands()
            .find(|s| s.get_name() == name.as_str())
            .cloned()
            .ok_or_else(|| {
                let names: Vec<String> = Cli::command()
                    .get_subcommands()
                    .map(|s| s.get_name().to_string())
                    .collect();
                Error::Usage(format!(
                    "warden man {name}: no such command (commands: {})",
                    names.join(", ")
                ))
            })?,
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Error::io("<stdout>", e))?;
    write_stdout(&out)
}

fn write_stdout(bytes: &[u8]) -> Result<i32> {
    let text = String::from_utf8_lossy(bytes);
    warden::outputs::write_stdout(&text).map_err(|e| Error::io("<stdout>", e))?;
    Ok(0)
}
