//! The `warden` binary: a thin command layer over the library. It parses arguments,
//! calls `prepare` and `review::run`, renders, and maps the result to an exit code.

mod app;

use clap::Parser;

fn main() {
    let cli = warden::cli::Cli::parse();
    let code = match app::run(cli) {
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
