//! `warden publish`: check the report, publish it, say what happened (text line or JSON,
//! and the step summary). Exit 0 when every write went through (or nothing was due,
//! or the head moved and nothing was written), 3 when a write failed, 2 for a report or
//! context it refuses.

use super::cli::{PublishArgs, PublishTo};
use std::io::Write;
use warden::error::Result;
use warden::publish::{self, context::ContextFlags, context::Forge};
use warden::report::published::Published;
use warden::text::{escape, stdio};

pub(super) fn publish_cmd(args: &PublishArgs) -> Result<i32> {
    let root = std::env::current_dir()
        .ok()
        .and_then(|d| warden::prepare::repo_root(&d));
    let settings = warden::config::load(args.config.as_deref(), root.as_deref())?;
    let pargs = publish::Args {
        report: Some(args.report.clone()),
        forge: match args.to {
            PublishTo::Github => Forge::Github,
            PublishTo::Gitlab => Forge::Gitlab,
        },
        flags: ContextFlags {
            repo: args.repo.clone(),
            number: args.pr,
            head: args.head.clone(),
            api_url: args.api_url.clone(),
            graphql_url: args.graphql_url.clone(),
        },
        dry_run: args.dry_run,
        budget: args.budget.unwrap_or(publish::DEFAULT_BUDGET),
    };
    let env = |k: &str| std::env::var(k).ok();
    let req = publish::prepare(&pargs, &settings.publish, &env)?;
    let outcome = publish::run_blocking(req);
    let p = &outcome.published;
    emit(p, args.json);
    Ok(if p.failed > 0 { 3 } else { 0 })
}

/// The text line (with notes) or the JSON object on stdout, and the line in the step
/// summary.
pub(super) fn emit(p: &Published, json: bool) {
    if json {
        let doc = serde_json::json!({ "publish": p });
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let _ = stdio::print(&format!("{}\n", escape::json_doc(&text)));
    } else {
        let mut text = format!("{}\n", escape::inline(&p.line()));
        for n in &p.notes {
            text.push_str(&format!("  {}\n", escape::inline(n)));
        }
        let _ = stdio::print(&escape::guard(&text));
    }
    step_summary(p);
}

pub(super) fn step_summary(p: &Published) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
    {
        let line = escape::guard(&escape::md_inline(&p.line())).into_owned();
        let _ = writeln!(f, "\n{line}");
    }
}
