//! Which skills run and with which settings, in both layouts of Warden's v1 file:
//! `[[skills]]` entries (the newer layout; `routes` restricts a skill to named routes),
//! `[[triggers]]` with `[triggers.filters]` and `[triggers.output]` (the earlier layout),
//! and skills defined inline with `prompt`.

use super::ctx::Ctx;
use super::raw::{RawFilters, RawOutput, RawSkill, RawTrigger, S};
use super::route_settings::Route;
use super::settings::*;
use crate::error::Error;
use crate::severity::{FailOn, Severity};

/// The `[[skills]]` table: settings entries and inline definitions.
pub(super) struct Skills {
    pub entries: Vec<SkillConfig>,
    pub inline: Vec<InlineSkill>,
}

/// Resolves `[[skills]]`. `routes` are the configured route names (a skill's `routes`
/// must name some of them).
pub(super) fn resolve_skills(
    raw: &[RawSkill],
    ctx: &Ctx,
    routes: &[Route],
    warnings: &mut Vec<String>,
) -> Result<Skills, Error> {
    let mut out = Skills {
        entries: Vec::new(),
        inline: Vec::new(),
    };
    for sk in raw {
        let name = sk.name.get_ref().trim().to_string();
        if name.is_empty() {
            return Err(ctx.err(&sk.name, "skills.name: must not be empty"));
        }
        if let Some(prompt) = &sk.prompt {
            out.inline.push(inline_skill(sk, &name, prompt, ctx)?);
            continue;
        }
        let Some(cfg) = resolve_skill(sk, &name, ctx, routes, warnings)? else {
            continue;
        };
        if out.entries.iter().any(|x| x.name == cfg.name) {
            return Err(ctx.err(
                &sk.name,
                format!("skill `{name}` is configured twice: merge the two [[skills]] entries"),
            ));
        }
        out.entries.push(cfg);
    }
    check_consolidated(raw, &out.entries, ctx)?;
    Ok(out)
}

/// Warden's earlier layout: `[[skills]] name, description, prompt` defines a skill.
fn inline_skill(
    sk: &RawSkill,
    name: &str,
    prompt: &S<String>,
    ctx: &Ctx,
) -> Result<InlineSkill, Error> {
    if prompt.get_ref().trim().is_empty() {
        return Err(ctx.err(prompt, format!("skill `{name}`: prompt must not be empty")));
    }
    let allowed_tools = match &sk.tools {
        Some(t) => super::tools::skill_tools(t, ctx)?,
        None => Vec::new(),
    };
    Ok(InlineSkill {
        name: name.to_string(),
        description: sk.description.clone().unwrap_or_default(),
        prompt: prompt.get_ref().clone(),
        allowed_tools,
    })
}

fn resolve_skill(
    sk: &RawSkill,
    name: &str,
    ctx: &Ctx,
    routes: &[Route],
    warnings: &mut Vec<String>,
) -> Result<Option<SkillConfig>, Error> {
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
    if let Some(m) = &sk.model {
        warnings.push(model_warning(&format!("skill `{name}`"), m.get_ref()));
    }
    let mut cfg = SkillConfig::named(name);
    cfg.named_at = Some(ctx.place(&sk.name));
    let filters = RawFilters {
        paths: sk.paths.clone(),
        ignore_paths: sk.ignore_paths.clone(),
    };
    apply_filters(&mut cfg, &filters, ctx, &format!("skills `{name}`"))?;
    cfg.fail_on = parse_opt(ctx, &sk.fail_on, "skills.failOn")?;
    cfg.report_on = parse_opt(ctx, &sk.report_on, "skills.reportOn")?;
    cfg.min_confidence = parse_opt(ctx, &sk.min_confidence, "skills.minConfidence")?;
    cfg.max_findings = sk.max_findings.map(|n| n as usize);
    cfg.consolidate = sk.consolidate.unwrap_or(false);
    if let Some(list) = &sk.routes {
        cfg.routes = Some(skill_routes(list, name, routes, ctx)?);
    }
    if let Some(t) = &sk.tools {
        cfg.tools = Some(super::tools::skill_tools(t, ctx)?);
    }
    if let Some(v) = &sk.max_turns {
        cfg.max_turns = Some(super::tools::max_turns(v, "skills.maxTurns", ctx)?);
    }
    Ok(Some(cfg))
}

/// Warden's per-skill (or per-trigger) `model` has no meaning here: routes pick models.
fn model_warning(what: &str, model: &str) -> String {
    format!(
        "{what}: `model = \"{model}\"` is not used (warden sends every unit to its routes); to pin the skill to a model, define a [[routes]] entry for it and set routes = [\"that-route\"] on the skill"
    )
}

fn parse_opt<T: std::str::FromStr<Err: std::fmt::Display>>(
    ctx: &Ctx,
    v: &Option<S<String>>,
    key: &str,
) -> Result<Option<T>, Error> {
    v.as_ref().map(|v| ctx.parse::<T>(v, key)).transpose()
}

/// `paths` and `ignorePaths` of a skill, or of a trigger's `[triggers.filters]`.
fn apply_filters(
    cfg: &mut SkillConfig,
    f: &RawFilters,
    ctx: &Ctx,
    what: &str,
) -> Result<(), Error> {
    if let Some(p) = &f.paths {
        cfg.paths = Some(ctx.rules(p, &format!("{what} paths"))?);
    }
    if let Some(p) = &f.ignore_paths {
        cfg.ignore = ctx.rules(p, &format!("{what} ignorePaths"))?;
    }
    Ok(())
}

/// `routes = ["a", "b"]`: every name is a configured route; order kept.
fn skill_routes(
    list: &S<Vec<String>>,
    skill: &str,
    routes: &[Route],
    ctx: &Ctx,
) -> Result<Vec<String>, Error> {
    let names: Vec<String> = list
        .get_ref()
        .iter()
        .map(|n| n.trim().to_string())
        .collect();
    if names.is_empty() {
        return Err(ctx.err(
            list,
            format!("skill `{skill}`: routes must name at least one route (or leave it out to use every route)"),
        ));
    }
    for n in &names {
        if !routes.iter().any(|r| r.name == *n) {
            let known: Vec<&str> = routes.iter().map(|r| r.name.as_str()).collect();
            return Err(ctx.err(
                list,
                format!(
                    "skill `{skill}`: routes names `{n}`, which is not a configured route (routes: {})",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
            ));
        }
    }
    Ok(names)
}

/// Consolidated skills share one request, so they must agree on its routes.
fn check_consolidated(raw: &[RawSkill], entries: &[SkillConfig], ctx: &Ctx) -> Result<(), Error> {
    let mut together = entries.iter().filter(|c| c.consolidate);
    let Some(first) = together.next() else {
        return Ok(());
    };
    for other in together {
        if other.routes != first.routes {
            let at = raw
                .iter()
                .find(|r| r.name.get_ref().trim() == other.name)
                .expect("entries come from raw skills");
            return Err(ctx.err(
                &at.name,
                format!(
                    "skills `{}` and `{}` are consolidated (one request) but name different routes: give them the same routes, or set consolidate = false on one",
                    first.name, other.name
                ),
            ));
        }
    }
    Ok(())
}

/// Warden's earlier layout: `[[triggers]]`, each running one skill with its filters and
/// output thresholds.
pub(super) fn resolve_triggers(
    raw: &[RawTrigger],
    ctx: &Ctx,
    warnings: &mut Vec<String>,
) -> Result<Vec<Trigger>, Error> {
    let mut out = Vec::new();
    for t in raw {
        let skill = t.skill.get_ref().trim();
        if skill.is_empty() {
            return Err(ctx.err(&t.skill, "triggers.skill: must not be empty"));
        }
        let name = t.name.clone().unwrap_or_else(|| skill.to_string());
        if let Some(m) = &t.model {
            warnings.push(model_warning(&format!("trigger `{name}`"), m.get_ref()));
        }
        let mut cfg = SkillConfig::named(skill);
        cfg.named_at = Some(ctx.place(&t.skill));
        if let Some(v) = &t.max_turns {
            cfg.max_turns = Some(super::tools::max_turns(v, "triggers.maxTurns", ctx)?);
        }
        if let Some(f) = &t.filters {
            apply_filters(&mut cfg, f, ctx, &format!("trigger `{name}` filters"))?;
        }
        if let Some(o) = &t.output {
            let out = output_thresholds(o, ctx, "triggers.output")?;
            cfg.fail_on = out.fail_on;
            cfg.report_on = out.report_on;
            cfg.max_findings = out.max_findings;
        }
        out.push(Trigger {
            name,
            event: t.event.as_ref().map(|e| e.get_ref().trim().to_string()),
            actions: t.actions.clone().unwrap_or_default(),
            config: cfg,
        });
    }
    Ok(out)
}

/// `[…output]` thresholds of Warden's earlier layout.
pub(super) struct Output {
    pub fail_on: Option<FailOn>,
    /// `commentOn`: the lowest severity shown, our `reportOn`.
    pub report_on: Option<Severity>,
    pub max_findings: Option<usize>,
}

/// `[…output] failOn, commentOn, maxFindings`.
pub(super) fn output_thresholds(o: &RawOutput, ctx: &Ctx, section: &str) -> Result<Output, Error> {
    Ok(Output {
        fail_on: parse_opt(ctx, &o.fail_on, &format!("{section}.failOn"))?,
        report_on: parse_opt(ctx, &o.comment_on, &format!("{section}.commentOn"))?,
        max_findings: o.max_findings.map(|n| n as usize),
    })
}
