//! Raw TOML → validated [`Settings`]. Every error points at the file, line and column of
//! the offending value and says what is expected instead.

use super::raw::{RawBreaker, RawConfig, RawExecution, RawRoute, RawSkill, S};
use super::settings::*;
use crate::error::Error;
use crate::scan::path_rules::PathRules;
use crate::severity::{Confidence, FailOn, Severity};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// Keys Warden knows and warden deliberately does not use: warned about by name.
const WARDEN_ONLY_KEYS: &[&str] = &[
    "defaults.maxTurns",
    "defaults.agent.maxTurns",
    "defaults.agent.effort",
    "defaults.runtime",
    "defaults.batchDelayMs",
    "defaults.auxiliaryMaxRetries",
    "defaults.auxiliary",
    "defaults.synthesis",
    "logs",
    "service",
];

/// Turns a key path reported by serde_ignored into a warning line.
pub(super) fn ignored_key_warning(key: &str) -> String {
    let known = WARDEN_ONLY_KEYS
        .iter()
        .any(|k| key == *k || key.starts_with(&format!("{k}.")));
    if known {
        format!("`{key}` is a Warden setting warden does not use; it is ignored")
    } else {
        format!("unknown key `{key}` is ignored; check its spelling against warden.toml.example")
    }
}

pub(super) struct Ctx<'a> {
    pub path: &'a Path,
    pub src: &'a str,
}

impl Ctx<'_> {
    pub fn err_at(&self, offset: usize, message: impl Into<String>) -> Error {
        let (line, column) = line_col(self.src, offset);
        Error::Config {
            path: self.path.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }

    fn err<T>(&self, value: &S<T>, message: impl Into<String>) -> Error {
        self.err_at(value.span().start, message)
    }

    fn parse<T: FromStr<Err = String>>(&self, v: &S<String>, key: &str) -> Result<T, Error> {
        v.get_ref()
            .parse::<T>()
            .map_err(|e| self.err(v, format!("{key}: {e}")))
    }

    fn duration(
        &self,
        v: &Option<S<String>>,
        key: &str,
        default: Duration,
    ) -> Result<Duration, Error> {
        let Some(v) = v else { return Ok(default) };
        super::parse_duration(v.get_ref()).map_err(|e| self.err(v, format!("{key}: {e}")))
    }

    fn rules(&self, v: &S<Vec<String>>, key: &str) -> Result<PathRules, Error> {
        PathRules::new(v.get_ref()).map_err(|(i, why)| {
            self.err(
                v,
                format!(
                    "{key}: invalid glob `{}`: {why}",
                    v.get_ref().get(i).map(String::as_str).unwrap_or("")
                ),
            )
        })
    }

    fn positive(&self, v: &S<u32>, key: &str) -> Result<u32, Error> {
        if *v.get_ref() == 0 {
            return Err(self.err(v, format!("{key}: must be at least 1")));
        }
        Ok(*v.get_ref())
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

pub(super) fn resolve(raw: RawConfig, ctx: &Ctx) -> Result<Settings, Error> {
    let mut s = Settings {
        config_path: Some(ctx.path.to_path_buf()),
        ..Settings::default()
    };
    match &raw.version {
        Some(v) if *v.get_ref() == 1 => {}
        Some(v) => {
            return Err(ctx.err(
                v,
                format!(
                    "version {} is not supported: this warden reads `version = 1` files",
                    v.get_ref()
                ),
            ));
        }
        None => {
            return Err(ctx.err_at(
                0,
                "missing `version = 1` at the top of the file (warden reads Warden v1 configs)",
            ));
        }
    }
    let d = &raw.defaults;
    if let Some(v) = &d.fail_on {
        s.fail_on = ctx.parse::<FailOn>(v, "defaults.failOn")?;
    }
    if let Some(v) = &d.report_on {
        s.report_on = ctx.parse::<Severity>(v, "defaults.reportOn")?;
    }
    if let Some(v) = &d.min_confidence {
        s.min_confidence = ctx.parse::<Confidence>(v, "defaults.minConfidence")?;
    }
    s.max_findings = d.max_findings.map(|n| n as usize);
    let mut ignore: Vec<String> = Vec::new();
    if let Some(v) = &d.ignore_paths {
        ctx.rules(v, "defaults.ignorePaths")?;
        ignore.extend(v.get_ref().iter().cloned());
    }
    if let Some(v) = d.ignore.as_ref().and_then(|i| i.paths.as_ref()) {
        ctx.rules(v, "defaults.ignore.paths")?;
        ignore.extend(v.get_ref().iter().cloned());
    }
    s.ignore = PathRules::new(&ignore).expect("each list was validated above");
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

    let ch = &d.chunking;
    let mut chunking = Chunking::default();
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
    s.chunking = chunking;

    for sk in &raw.skills {
        if let Some(cfg) = resolve_skill(sk, ctx, &mut s.warnings)? {
            if s.skills.iter().any(|x| x.name == cfg.name) {
                return Err(ctx.err(
                    &sk.name,
                    format!(
                        "skill `{}` is configured twice: merge the two [[skills]] entries",
                        cfg.name
                    ),
                ));
            }
            s.skills.push(cfg);
        }
    }

    s.execution = resolve_execution(&raw.execution, ctx)?;
    let default_cap = match &raw.runner.concurrency {
        Some(c) => ctx.positive(c, "runner.concurrency")? as usize,
        None => 4,
    };
    for r in &raw.routes {
        let route = resolve_route(r, ctx, default_cap)?;
        if s.routes.iter().any(|x| x.name == route.name) {
            return Err(ctx.err(
                &r.name,
                format!(
                    "route name `{}` is used twice: give each [[routes]] entry its own name",
                    route.name
                ),
            ));
        }
        s.routes.push(route);
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
    Ok(s)
}

fn resolve_skill(
    sk: &RawSkill,
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Result<Option<SkillConfig>, Error> {
    let name = sk.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(&sk.name, "skills.name: must not be empty"));
    }
    if let Some(remote) = &sk.remote {
        warnings.push(format!(
            "skill `{name}` is remote (`{remote}`): warden does not fetch skills over the network, so it is not run"
        ));
        return Ok(None);
    }
    for t in sk.triggers.iter().flatten() {
        let kind = t.kind.as_deref().unwrap_or("");
        if kind != "local" {
            warnings.push(format!(
                "skill `{name}`: trigger type `{kind}` (GitHub event matching) is ignored; warden runs the skill on every review"
            ));
        }
    }
    let paths = match &sk.paths {
        Some(p) => Some(ctx.rules(p, &format!("skills `{name}` paths"))?),
        None => None,
    };
    let ignore = match &sk.ignore_paths {
        Some(p) => ctx.rules(p, &format!("skills `{name}` ignorePaths"))?,
        None => PathRules::empty(),
    };
    Ok(Some(SkillConfig {
        paths,
        ignore,
        fail_on: sk
            .fail_on
            .as_ref()
            .map(|v| ctx.parse::<FailOn>(v, "skills.failOn"))
            .transpose()?,
        report_on: sk
            .report_on
            .as_ref()
            .map(|v| ctx.parse::<Severity>(v, "skills.reportOn"))
            .transpose()?,
        min_confidence: sk
            .min_confidence
            .as_ref()
            .map(|v| ctx.parse::<Confidence>(v, "skills.minConfidence"))
            .transpose()?,
        max_findings: sk.max_findings.map(|n| n as usize),
        model: sk.model.clone(),
        consolidate: sk.consolidate.unwrap_or(false),
        name,
    }))
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

fn resolve_route(r: &RawRoute, ctx: &Ctx, default_cap: usize) -> Result<Route, Error> {
    let name = r.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(&r.name, "routes.name: must not be empty"));
    }
    let provider = ProviderKind::parse(r.provider.get_ref()).ok_or_else(|| {
        ctx.err(
            &r.provider,
            format!(
                "route `{name}`: unknown provider `{}`: expected one of {}",
                r.provider.get_ref(),
                ProviderKind::NAMES
            ),
        )
    })?;
    let model = match (&r.model, provider) {
        (Some(m), _) if !m.get_ref().trim().is_empty() => m.get_ref().trim().to_string(),
        (_, ProviderKind::Sim) => "sim-reviewer".to_string(),
        (Some(m), _) => return Err(ctx.err(m, format!("route `{name}`: model must not be empty"))),
        (None, _) => {
            return Err(ctx.err(
                &r.name,
                format!(
                    "route `{name}`: missing `model` (for example model = \"claude-sonnet-4-5\")"
                ),
            ));
        }
    };
    if let Some(u) = &r.base_url {
        let url = u.get_ref();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ctx.err(
                u,
                format!("route `{name}`: baseUrl `{url}` must start with http:// or https://"),
            ));
        }
    }
    let mut sim = SimOptions::default();
    if let Some(p) = &r.profile {
        let known = crate::provider::sim::PROFILES;
        if !known.contains(&p.get_ref().as_str()) {
            return Err(ctx.err(
                p,
                format!(
                    "route `{name}`: unknown sim profile `{}`: expected one of {}",
                    p.get_ref(),
                    known.join(", ")
                ),
            ));
        }
        sim.profile = p.get_ref().clone();
    }
    if let Some(t) = &r.time_scale {
        if !(*t.get_ref() >= 1.0 && t.get_ref().is_finite()) {
            return Err(ctx.err(t, format!("route `{name}`: timeScale must be a number >= 1 (60 plays a minute in a second)")));
        }
        sim.time_scale = *t.get_ref();
    }
    if let Some(seed) = r.seed {
        sim.seed = seed;
    }
    Ok(Route {
        api_key_env: r
            .api_key_env
            .as_ref()
            .map(|v| v.get_ref().clone())
            .or_else(|| provider.default_key_env().map(str::to_string)),
        max_concurrency: match &r.max_concurrency {
            Some(c) => ctx.positive(c, &format!("route `{name}` maxConcurrency"))? as usize,
            None => default_cap,
        },
        stream: r.stream.unwrap_or(true),
        max_tokens: match &r.max_tokens {
            Some(t) => ctx.positive(t, &format!("route `{name}` maxTokens"))?,
            None => 4096,
        },
        base_url: r
            .base_url
            .as_ref()
            .map(|u| u.get_ref().trim_end_matches('/').to_string()),
        name,
        provider,
        model,
        sim,
    })
}

/// Warden's `[defaults] model = "provider/model"` as a single route.
fn route_from_selector(
    m: &S<String>,
    ctx: &Ctx,
    cap: usize,
    warnings: &mut Vec<String>,
) -> Result<Route, Error> {
    let sel = m.get_ref().trim();
    let (provider, model) = match sel.split_once('/') {
        Some((p, rest)) if ProviderKind::parse(p).is_some() && !rest.is_empty() => {
            (ProviderKind::parse(p).expect("checked"), rest.to_string())
        }
        _ if !sel.is_empty() => {
            warnings.push(format!(
                "defaults.model `{sel}` names no known provider prefix ({}); using it as an OpenRouter model id",
                ProviderKind::NAMES
            ));
            (ProviderKind::OpenRouter, sel.to_string())
        }
        _ => return Err(ctx.err(m, "defaults.model: must not be empty")),
    };
    Ok(Route {
        name: "default".into(),
        provider,
        model,
        api_key_env: provider.default_key_env().map(str::to_string),
        max_concurrency: cap,
        stream: true,
        base_url: None,
        max_tokens: 4096,
        sim: SimOptions::default(),
    })
}
