//! The `warden` binary: parse arguments, run, map the result to an exit code.

use clap::Parser;

fn main() {
    let cli = warden::cli::Cli::parse();
    let code = match warden::app::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // Messages name repository paths and quote provider text: escaped lines.
            eprintln!(
                "{} {}",
                console::style("error:").red().bold().for_stderr(),
                warden::report::escape::block(&err.to_string())
            );
            err.exit_code()
        }
    };
    std::process::exit(code);
}
