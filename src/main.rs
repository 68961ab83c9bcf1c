//! The `warden` binary: a thin command layer over the library. It parses arguments
//! (clap lives here and in `app/cli/` only), calls the library (`prepare`, then a review
//! `Session`), renders, and maps the result to an exit code. Errors are the library's
//! typed `warden::Error`, whose `exit_code` the shell returns.

mod app;

use clap::Parser;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let result = match app::cli::command_after_options(&args) {
        Some(name) => Err(warden::error::Error::Usage(format!(
            "`{name}` comes after options, where warden reads the ref to review: put the command first (`warden {name} [OPTIONS]`), or review a ref named `{name}` with `warden review {name}`"
        ))),
        None => match app::cli::format_as_flag(&args) {
            Some(message) => Err(warden::error::Error::Usage(message)),
            None => app::run(app::cli::Cli::parse_from(args)),
        },
    };
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            // Messages name repository paths and quote provider text: escaped lines.
            warden::text::stdio::eprint_line(&format!(
                "{} {}",
                console::style("error:").red().bold().for_stderr(),
                warden::text::escape::block(&err.to_string())
            ));
            err.exit_code()
        }
    };
    std::process::exit(code);
}
