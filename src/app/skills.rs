//! `warden skills`: the skills found, where each comes from, and which ones run.

use super::cli::SkillsArgs;
use super::{emit, setup_color, warn};
use warden::error::Result;
use warden::prepare::{load, repo_root, start_dir};
use warden::skills::{Catalog, Skill, SkillOrigin};
use warden::text::escape;

pub(super) fn skills_cmd(args: &SkillsArgs) -> Result<i32> {
    setup_color(&args.ui, false);
    let dir = start_dir(args.dir.as_deref())?;
    let root = repo_root(&dir).unwrap_or(dir);
    let (settings, catalog, active) = load(args.config.as_deref(), Some(&root), &[])?;
    settings.refuse_unknown_keys(args.strict_config)?;
    warn(&args.ui, &settings);
    let active: Vec<String> = active.into_iter().map(|a| a.skill.name).collect();
    let text = if args.json {
        json(&catalog, &active)
    } else {
        table(&catalog, &active)
    };
    emit(None, &text)?;
    Ok(0)
}

fn origin(o: &SkillOrigin) -> String {
    match o {
        SkillOrigin::BuiltIn => "built-in".to_string(),
        SkillOrigin::Repo(p) => p.display().to_string(),
    }
}

/// A repository skill that replaces a built-in changes what a review checks: flagged.
fn overrides_builtin(catalog: &Catalog, s: &Skill) -> bool {
    s.origin != SkillOrigin::BuiltIn
        && catalog
            .shadowed
            .iter()
            .any(|(h, _)| h.name == s.name && h.origin == SkillOrigin::BuiltIn)
}

/// Where the skills `s` hides come from.
fn overrides(catalog: &Catalog, s: &Skill) -> Vec<String> {
    catalog
        .shadowed
        .iter()
        .filter(|(h, _)| h.name == s.name)
        .map(|(h, _)| origin(&h.origin))
        .collect()
}

/// `skills --json`'s `schemaVersion`: raised when a field changes meaning or goes away.
const SKILLS_SCHEMA_VERSION: u32 = 1;

/// `skills --json`: `{"schemaVersion": 1, "skills": [...]}`, each skill with its origin.
fn json(catalog: &Catalog, active: &[String]) -> String {
    let list: Vec<serde_json::Value> = catalog
        .skills
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name,
                "description": s.description,
                "allowedTools": s.allowed_tools,
                "source": origin(&s.origin),
                "origin": if s.origin == SkillOrigin::BuiltIn { "built-in" } else { "repository" },
                "active": active.contains(&s.name),
                "overrides": overrides(catalog, s),
                "overridesBuiltin": overrides_builtin(catalog, s),
            })
        })
        .collect();
    let doc = serde_json::json!({"schemaVersion": SKILLS_SCHEMA_VERSION, "skills": list});
    let doc = serde_json::to_string_pretty(&doc).expect("serializes");
    format!("{}\n", escape::json_doc(&doc))
}

fn table(catalog: &Catalog, active: &[String]) -> String {
    let mut out = String::new();
    let width = catalog
        .skills
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(0);
    for s in &catalog.skills {
        let mark = if active.contains(&s.name) { "*" } else { " " };
        let over = overrides(catalog, s);
        let over = if over.is_empty() {
            String::new()
        } else {
            format!(" (overrides {})", over.join(", "))
        };
        let flag = if overrides_builtin(catalog, s) {
            format!(" {}", console::style("OVERRIDES BUILT-IN").yellow().bold())
        } else {
            String::new()
        };
        // Names and descriptions come from repository files: escaped.
        out.push_str(&format!(
            "{mark} {:<width$}  {}{}{flag}\n      {}\n",
            console::style(escape::inline(&s.name)).cyan(),
            escape::inline(&origin(&s.origin)),
            escape::inline(&over),
            escape::inline(&s.description),
        ));
    }
    out.push_str("\n* = runs in a review with the current config (the working tree's skills; in CI and for commit ranges a review reads them from the base of the change)\n");
    out
}
