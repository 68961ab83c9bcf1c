//! `--baseline FILE`: each figure's change against an earlier evaluation's JSON report,
//! overall and per skill × route, so "model A vs B", "tools on vs off" or "verification
//! on vs off" is one evaluation each and a comparison.

use super::comparison::{Change, Comparison, GroupChange};
use super::metrics::Metrics;
use super::report::{EvalReport, Group};
use crate::error::{Error, Result};
use crate::text::escape;
use std::fmt::Write;
use std::path::Path;

const MAX_BASELINE_BYTES: u64 = 256 * 1024 * 1024;

/// Reads an earlier `warden eval --json` report.
pub fn load(path: &Path) -> Result<EvalReport> {
    let bytes = crate::capped_read::read(path, MAX_BASELINE_BYTES).map_err(|_| {
        Error::Usage(format!(
            "--baseline {}: cannot read the file (or it is over 256 MiB)",
            path.display()
        ))
    })?;
    let report: EvalReport = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Usage(format!(
            "--baseline {}:{}:{}: not a warden eval JSON report ({e}); write one with `warden eval --json -o FILE`",
            path.display(),
            e.line(),
            e.column()
        ))
    })?;
    if report.kind != "warden-eval" {
        return Err(Error::Usage(format!(
            "--baseline {}: kind {:?} is not warden-eval",
            path.display(),
            report.kind
        )));
    }
    Ok(report)
}

fn figures(m: &Metrics) -> Vec<(&'static str, Option<f64>)> {
    vec![
        ("precision", m.precision),
        ("recall", m.recall),
        ("recallOfAll", m.recall_of_all),
        ("f1", m.f1),
        ("truePositives", Some(m.true_positives as f64)),
        ("falsePositives", Some(m.false_positives as f64)),
        ("misses", Some(m.misses as f64)),
        ("notReviewed", Some(m.not_reviewed as f64)),
        ("findingsPerCase", m.findings_per_case),
        (
            "falsePositivesPerCleanCase",
            m.false_positives_per_clean_case,
        ),
        ("costPerCaseUsd", m.cost_per_case_usd),
        ("costPerTruePositiveUsd", m.cost_per_true_positive_usd),
        ("msPerCase", m.ms_per_case),
        ("msPerTruePositive", m.ms_per_true_positive),
        ("inputTokens", Some(m.input_tokens as f64)),
        ("outputTokens", Some(m.output_tokens as f64)),
    ]
}

fn changes(before: Option<&Metrics>, after: Option<&Metrics>) -> Vec<Change> {
    let none = Metrics::default();
    let b = figures(before.unwrap_or(&none));
    let a = figures(after.unwrap_or(&none));
    b.into_iter()
        .zip(a)
        .map(|((metric, x), (_, y))| {
            let x = before.and(x);
            let y = after.and(y);
            Change {
                metric: metric.into(),
                before: x,
                after: y,
                change: x.zip(y).map(|(x, y)| ((y - x) * 1e6).round() / 1e6 + 0.0),
            }
        })
        .collect()
}

/// `now` against `base`.
pub fn compare(file: &Path, base: &EvalReport, now: &EvalReport) -> Comparison {
    let key = |g: &Group| (g.skill.clone(), g.route.clone());
    let mut keys: Vec<(String, Option<String>)> =
        base.groups.iter().chain(&now.groups).map(key).collect();
    keys.sort();
    keys.dedup();
    let find = |r: &EvalReport, k: &(String, Option<String>)| {
        r.groups
            .iter()
            .find(|g| key(g) == *k)
            .map(|g| g.metrics.clone())
    };
    Comparison {
        file: file.display().to_string(),
        routes: base.settings.routes.clone(),
        overall: changes(Some(&base.overall), Some(&now.overall)),
        groups: keys
            .iter()
            .map(|k| GroupChange {
                skill: k.0.clone(),
                route: k.1.clone(),
                changes: changes(find(base, k).as_ref(), find(now, k).as_ref()),
            })
            .collect(),
    }
}

fn show(x: Option<f64>) -> String {
    match x {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.4}"),
        None => "—".into(),
    }
}

/// The comparison for people: one line per figure of the overall row.
pub fn text(c: &Comparison) -> String {
    let mut s = format!(
        "\nagainst baseline {} (routes {})\n",
        escape::inline(&c.file),
        escape::inline(&c.routes.join(", "))
    );
    for ch in &c.overall {
        let delta = match ch.change {
            Some(d) if d > 0.0 => format!("+{}", show(Some(d))),
            Some(d) => show(Some(d)),
            None => "—".into(),
        };
        let _ = writeln!(
            s,
            "  {:<28} {:>10} → {:<10} ({delta})",
            ch.metric,
            show(ch.before),
            show(ch.after)
        );
    }
    s
}
