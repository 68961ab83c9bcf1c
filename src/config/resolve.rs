//! Raw TOML → validated [`Settings`]. Every error points at the file, line and column of
//! the offending value and says what is expected instead.

use super::ctx::Ctx;
use super::raw::{RawBreaker, RawChunking, RawConfig, RawDefaults, RawExecution, S};
use super::route_settings::*;
use super::routes::{resolve_routes, route_from_selector};
use super::settings::*;
use super::skills::{output_thresholds, resolve_skills, resolve_triggers};
use crate::error::Error;
use crate::path_rules::PathRules;
use crate::severity::{Confidence, FailOn, Severity};

/// Keys Warden knows and warden deliberately does not use: warned about by name.
const WARDEN_ONLY_KEYS: &[&str] = &[
    "defaults.agent.effort",
    "defaults.runtime",
    "defaults.batchDelayMs",
    "defaults.auxiliaryMaxRetries",
    "defaults.auxiliary",
    "defaults.synthesis",
    "logs",
    "service",
    "defaults.output.commentOnSuccess",
    "triggers.remote",
    "triggers.schedule",
    "triggers.output.commentOnSuccess",
];

/// The warning for a key path serde_ignored reported, when it is a Warden setting warden
/// does not use; None for a key nobody documents (an unknown key, placed and matched by
/// `unknown_keys`).
pub(super) fn ignored_key_warning(key: &str) -> Option<String> {
    let known = WARDEN_ONLY_KEYS
        .iter()
        .any(|k| key == *k || key.starts_with(&format!("{k}.")));
    known.then(|| format!("`{key}` is a Warden setting warden does not use; it is ignored"))
}

pub(super) fn resolve(raw: RawConfig, ctx: &Ctx) -> Result<Settings, Error> {
    let mut s = Settings {
        config_path: Some(ctx.path.to_path_buf()),
        ..Settings::default()
    };
    check_version(&raw, ctx)?;
    let d = &raw.defaults;
    resolve_thresholds(&mut s, d, ctx)?;
    resolve_paths(&mut s, d, ctx)?;
    s.default_branch = d.default_branch.clone();
    s.verification = d
        .verification
        .as_ref()
        .and_then(|v| v.enabled)
        .unwrap_or(false);
    let sc = &d.scan;
    let dl = ScanLimits::default();
    s.scan = ScanLimits {
        max_files: sc.max_files.map_or(dl.max_files, |n| n as usize),
        max_changed_lines: sc
            .max_changed_lines
            .map_or(dl.max_changed_lines, |n| n as usize),
        max_file_bytes: sc.max_file_bytes.unwrap_or(dl.max_file_bytes),
        max_file_lines: sc.max_file_lines.map_or(dl.max_file_lines, |n| n as usize),
    };
    s.chunking = resolve_chunking(&d.chunking, ctx)?;
    s.execution = resolve_execution(&raw.execution, ctx)?;
    let (mode, bounds, deny) = super::tools::resolve(&raw.execution, d, ctx)?;
    s.execution.tools = mode;
    s.execution.tool_bounds = bounds;
    s.tool_deny = deny;
    if let Some(c) = &raw.cache {
        s.cache = super::cache::resolve(c, ctx)?;
    }
    if let Some(f) = &raw.fleet {
        s.fleet = super::fleet::resolve(f, ctx)?;
    }
    if let Some(p) = &raw.publish {
        s.publish = super::publish::resolve(p).map_err(|(at, msg)| ctx.err_at(at, msg))?;
    }
    let default_cap = match &raw.runner.concurrency {
        Some(c) => ctx.positive(c, "runner.concurrency")? as usize,
        None => 4,
    };
    s.instructions =
        super::guidance::resolve(&raw.instructions).map_err(|(at, msg)| ctx.err_at(at, msg))?;
    s.routes = resolve_routes(&raw.routes, ctx, default_cap)?;
    if s.execution.cost_budget.is_some() {
        for r in s.routes.iter().filter(|r| r.prices.is_none()) {
            if r.provider != ProviderKind::OpenRouter {
                s.warnings.push(format!(
                    "route `{}` has no inputPrice/outputPrice: execution.costBudget can count only the cost its provider reports; set both prices (USD per million tokens) to bound its spend",
                    r.name
                ));
            }
        }
    }
    if s.routes.is_empty() {
        let model = d
            .model
            .as_ref()
            .or(d.agent.as_ref().and_then(|a| a.model.as_ref()));
        if let Some(m) = model {
            s.routes
                .push(route_from_selector(m, ctx, default_cap, &mut s.warnings)?);
        }
    }
    let skills = resolve_skills(&raw.skills, ctx, &s.routes, &mut s.warnings)?;
    s.skills = skills.entries;
    s.inline_skills = skills.inline;
    s.triggers = resolve_triggers(&raw.triggers, ctx, &mut s.warnings)?;
    if let Some(v) = &raw.execution.max_findings_per_answer {
        let n = max_findings_per_answer(v, ctx)?;
        for r in &mut s.routes {
            r.max_findings_per_answer = n;
        }
    }
    Ok(s)
}

fn check_version(raw: &RawConfig, ctx: &Ctx) -> Result<(), Error> {
    match &raw.version {
        Some(v) if *v.get_ref() == 1 => Ok(()),
        Some(v) => Err(ctx.err(
            v,
            format!(
                "version {} is not supported: this warden reads `version = 1` files",
                v.get_ref()
            ),
        )),
        None => Err(ctx.err_at(
            0,
            "missing `version = 1` at the top of the file (warden reads Warden v1 configs)",
        )),
    }
}

/// `[defaults] failOn, reportOn, minConfidence, maxFindings`, over Warden's earlier
/// `[defaults.output] failOn, commentOn, maxFindings` (the newer key wins).
fn resolve_thresholds(s: &mut Settings, d: &RawDefaults, ctx: &Ctx) -> Result<(), Error> {
    if let Some(o) = &d.output {
        let out = output_thresholds(o, ctx, "defaults.output")?;
        s.fail_on = out.fail_on.unwrap_or(s.fail_on);
        s.report_on = out.report_on.unwrap_or(s.report_on);
        s.max_findings = out.max_findings.or(s.max_findings);
    }
    if let Some(v) = &d.fail_on {
        s.fail_on = ctx.parse::<FailOn>(v, "defaults.failOn")?;
    }
    if let Some(v) = &d.report_on {
        s.report_on = ctx.parse::<Severity>(v, "defaults.reportOn")?;
    }
    if let Some(v) = &d.min_confidence {
        s.min_confidence = ctx.parse::<Confidence>(v, "defaults.minConfidence")?;
    }
    if let Some(n) = d.max_findings {
        s.max_findings = Some(n as usize);
    }
    Ok(())
}

/// Ignores (`defaults.ignorePaths`, `defaults.ignore.paths`, Warden's
/// `defaults.filters.ignorePaths`, in that order) and `defaults.filters.paths`.
fn resolve_paths(s: &mut Settings, d: &RawDefaults, ctx: &Ctx) -> Result<(), Error> {
    let filters = d.filters.as_ref();
    let lists = [
        (d.ignore_paths.as_ref(), "defaults.ignorePaths"),
        (
            d.ignore.as_ref().and_then(|i| i.paths.as_ref()),
            "defaults.ignore.paths",
        ),
        (
            filters.and_then(|f| f.ignore_paths.as_ref()),
            "defaults.filters.ignorePaths",
        ),
    ];
    let mut ignore: Vec<String> = Vec::new();
    for (v, key) in lists {
        if let Some(v) = v {
            ctx.rules(v, key)?;
            ignore.extend(v.get_ref().iter().cloned());
        }
    }
    s.ignore = PathRules::new(&ignore).expect("each list was validated above");
    if let Some(p) = filters.and_then(|f| f.paths.as_ref()) {
        s.default_paths = Some(ctx.rules(p, "defaults.filters.paths")?);
    }
    Ok(())
}

fn resolve_chunking(ch: &RawChunking, ctx: &Ctx) -> Result<Chunking, Error> {
    let mut chunking = Chunking::default();
    if ch.enabled == Some(false) {
        chunking.default_mode = ChunkMode::WholeFile;
    }
    for fp in ch.file_patterns.iter().flatten() {
        let mode = match fp.mode.get_ref().as_str() {
            "per-hunk" => ChunkMode::PerHunk,
            "whole-file" => ChunkMode::WholeFile,
            "skip" => ChunkMode::Skip,
            other => {
                return Err(ctx.err(
                    &fp.mode,
                    format!(
                        "defaults.chunking.filePatterns: unknown mode `{other}`: expected per-hunk, whole-file or skip"
                    ),
                ));
            }
        };
        let pattern = fp.pattern.get_ref().clone();
        let rules = PathRules::new(std::slice::from_ref(&pattern)).map_err(|(_, why)| {
            ctx.err(
                &fp.pattern,
                format!("defaults.chunking.filePatterns: invalid glob `{pattern}`: {why}"),
            )
        })?;
        chunking.file_patterns.push(FilePattern {
            pattern,
            rules,
            mode,
        });
    }
    if let Some(e) = ch.coalesce.enabled {
        chunking.coalesce = e;
    }
    if let Some(g) = ch.coalesce.max_gap_lines {
        chunking.max_gap_lines = g;
    }
    if let Some(m) = &ch.coalesce.max_chunk_size {
        if *m.get_ref() < 200 {
            return Err(ctx.err(
                m,
                "defaults.chunking.coalesce.maxChunkSize: must be at least 200 characters",
            ));
        }
        chunking.max_chunk_size = *m.get_ref() as usize;
    }
    if let Some(c) = ch.context_lines {
        chunking.context_lines = c;
    }
    if let Some(c) = ch.max_context_files {
        chunking.max_context_files = c as usize;
    }
    Ok(chunking)
}

/// The most findings one answer may keep: 1 to 10,000 (a cap past that bounds nothing a
/// report can show).
fn max_findings_per_answer(v: &S<u32>, ctx: &Ctx) -> Result<usize, Error> {
    const MAX: u32 = 10_000;
    match *v.get_ref() {
        n @ 1..=MAX => Ok(n as usize),
        n => Err(ctx.err(
            v,
            format!("execution.maxFindingsPerAnswer: {n} is not a cap: write a whole number from 1 to {MAX} (the default is {})", crate::findings::DEFAULT_MAX_FINDINGS_PER_ANSWER),
        )),
    }
}

/// Answers of back-pressure a unit may take: 1 to 1,000 (the review budget bounds the
/// wait in any case; past that a unit's bounces say nothing more).
fn max_bounces(v: &S<u32>, ctx: &Ctx) -> Result<u32, Error> {
    const MAX: u32 = 1_000;
    match *v.get_ref() {
        n @ 1..=MAX => Ok(n),
        n => Err(ctx.err(
            v,
            format!("execution.maxBounces: {n} is not a bound: write a whole number from 1 to {MAX} (the default is {})", crate::config::DEFAULT_MAX_BOUNCES),
        )),
    }
}

fn resolve_execution(e: &RawExecution, ctx: &Ctx) -> Result<Execution, Error> {
    let d = Execution::default();
    let b: &RawBreaker = &e.breaker;
    let db = d.breaker;
    let failure_rate = match &b.failure_rate {
        Some(v) => {
            let r = *v.get_ref();
            if !(r > 0.0 && r <= 1.0) {
                return Err(ctx.err(
                    v,
                    "execution.breaker.failureRate: must be a share greater than 0 and at most 1 (for example 0.5)",
                ));
            }
            r
        }
        None => db.failure_rate,
    };
    Ok(Execution {
        review_budget: ctx.duration(&e.review_budget, "execution.reviewBudget", d.review_budget)?,
        hunk_budget: ctx.duration(&e.hunk_budget, "execution.hunkBudget", d.hunk_budget)?,
        request_timeout: ctx.duration(
            &e.request_timeout,
            "execution.requestTimeout",
            d.request_timeout,
        )?,
        connect_timeout: ctx.duration(
            &e.connect_timeout,
            "execution.connectTimeout",
            d.connect_timeout,
        )?,
        first_token_timeout: ctx.duration(
            &e.first_token_timeout,
            "execution.firstTokenTimeout",
            d.first_token_timeout,
        )?,
        idle_timeout: ctx.duration(&e.idle_timeout, "execution.idleTimeout", d.idle_timeout)?,
        max_attempts: match &e.max_attempts {
            Some(v) => ctx.positive(v, "execution.maxAttempts")?,
            None => d.max_attempts,
        },
        max_bounces: match &e.max_bounces {
            Some(v) => max_bounces(v, ctx)?,
            None => d.max_bounces,
        },
        routing: match &e.routing {
            Some(v) => Routing::parse(v.get_ref()).ok_or_else(|| {
                ctx.err(
                    v,
                    format!(
                        "execution.routing: unknown policy `{}`: expected \"ordered\" or \"spillover\"",
                        v.get_ref()
                    ),
                )
            })?,
            None => d.routing,
        },
        cost_budget: match &e.cost_budget {
            Some(v) => Some(ctx.usd(v, "execution.costBudget")?),
            None => None,
        },
        tools: d.tools,
        tool_bounds: d.tool_bounds,
        breaker: BreakerSettings {
            window: ctx.duration(&b.window, "execution.breaker.window", db.window)?,
            min_calls: match &b.min_calls {
                Some(v) => ctx.positive(v, "execution.breaker.minCalls")?,
                None => db.min_calls,
            },
            failure_rate,
            open_for: ctx.duration(&b.open_for, "execution.breaker.openFor", db.open_for)?,
            half_open_probes: match &b.half_open_probes {
                Some(v) => ctx.positive(v, "execution.breaker.halfOpenProbes")?,
                None => db.half_open_probes,
            },
        },
    })
}
