//! The `warden` binary: parse arguments, run, map the result to an exit code.

use clap::Parser;

fn main() {
    let cli = warden::cli::Cli::parse();
    let code = match warden::app::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!(
                "{} {err}",
                console::style("error:").red().bold().for_stderr()
            );
            err.exit_code()
        }
    };
    std::process::exit(code);
}
