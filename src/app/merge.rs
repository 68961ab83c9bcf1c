//! `warden merge`: read the shard reports, join them in the library, write the outputs
//! and exit as the whole review would have.

use super::cli::MergeArgs;
use super::setup_color;
use std::path::PathBuf;
use warden::error::{Error, Result};
use warden::outputs::Outputs;
use warden::render::Layout;

pub(super) fn merge_cmd(args: &MergeArgs) -> Result<i32> {
    setup_color(&args.ui, args.outputs.iter().any(|o| o.format.is_none()));
    let mut inputs = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Merge {
            path: path.clone(),
            message: format!(
                "cannot read the file ({e}): give the report of `warden review --shard K/N --json`"
            ),
        })?;
        inputs.push((path.clone(), text));
    }
    let report = warden::report::merge(&inputs)?;
    if !args.ui.quiet {
        for m in &report.missing_shards {
            warden::text::stdio::eprint_line(&format!(
                "{} shard {}/{} is missing: its {} units were not reviewed",
                console::style("warning:").yellow().for_stderr(),
                m.index,
                m.count,
                m.units
            ));
        }
    }
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let checkout = std::env::current_dir()
        .ok()
        .and_then(|d| warden::prepare::repo_root(&d));
    let outputs = Outputs::open(
        args.format()?,
        &args.outputs,
        step_summary,
        checkout.as_deref(),
    )?
    .text_layout(Layout::for_stdout(args.ui.verbose));
    outputs.write(&report)?;
    Ok(report.exit_code())
}
