//! SARIF 2.1.0 as GitHub code scanning ingests it. Rule ids are stable (`warden/<skill>`)
//! and every rule carries `fullDescription` and `help` (text and Markdown) from the
//! skill; results carry the code they point at (`region.snippet`, `contextRegion`) and
//! fingerprints that survive line shifts; the run names the repository, revision and
//! branch (`versionControlProvenance`); every unit that was not reviewed is a tool
//! execution notification with `executionSuccessful: false` on the invocation, and so is
//! each warning of the run (level `warning`).

use crate::report::{Cut, Finding, Report, ReviewOutcome, UnitReport, Warning};
use crate::severity::Severity;
use crate::text::escape::md_inline;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

/// The SARIF rule of a skill: `warden/<skill>`, stable across runs.
pub fn rule_id(skill: &str) -> String {
    format!("warden/{skill}")
}

/// A unit's first skill (a consolidated unit has several; its rule is the first's).
fn first_skill(u: &UnitReport) -> &str {
    u.skills.first().unwrap_or(&u.skill)
}

/// A rule for `skill`: its description and instructions summary as GitHub shows them.
fn rule(r: &Report, skill: &str) -> Value {
    let info = r.skills.iter().find(|s| s.name == skill);
    let generic = format!("Findings of the warden skill {skill}.");
    let description = info
        .map(|i| i.description.trim())
        .filter(|d| !d.is_empty())
        .unwrap_or(&generic);
    let summary = info.map(|i| i.summary.trim()).unwrap_or("");
    // Skill text is repository content: escaped, one Markdown line per line.
    let md_lines = |s: &str| {
        s.lines()
            .map(|l| md_inline(l.trim()))
            .collect::<Vec<_>>()
            .join("  \n")
    };
    let (full, help_md) = if summary.is_empty() {
        (description.to_string(), md_lines(description))
    } else {
        (
            format!("{description}\n\n{summary}"),
            format!("**{}**\n\n{}", md_inline(description), md_lines(summary)),
        )
    };
    json!({
        "id": rule_id(skill),
        "name": skill,
        "shortDescription": {"text": description},
        "fullDescription": {"text": full},
        "help": {"text": full, "markdown": help_md},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["warden", "ai-review"]},
    })
}

/// The finding's region, with the code it covers when the chunk had it.
fn region(f: &Finding) -> (Value, Option<Value>) {
    let end = f.end_line.max(f.start_line);
    let mut region = json!({"startLine": f.start_line, "endLine": end});
    let Some(ctx) = &f.context else {
        return (region, None);
    };
    if let Some(text) = ctx.lines(f.start_line, end) {
        region["snippet"] = json!({"text": text});
    }
    let context = json!({
        "startLine": ctx.start_line,
        "endLine": ctx.end_line,
        "snippet": {"text": ctx.text},
    });
    (region, Some(context))
}

/// The run's `versionControlProvenance` (SARIF needs a repository URI for it).
fn provenance(r: &Report) -> Option<Value> {
    let vcs = r.vcs.as_ref()?;
    let mut d = json!({
        "repositoryUri": vcs.repository_uri.as_ref()?,
        "mappedTo": {"uriBaseId": "%SRCROOT%"},
    });
    if let Some(rev) = &vcs.revision {
        d["revisionId"] = json!(rev);
    }
    if let Some(b) = &vcs.branch {
        d["branch"] = json!(b);
    }
    Some(json!([d]))
}

/// RFC 3986 path characters that stay as they are: unreserved, sub-delims, `@` and the
/// `/` separator (`:` is encoded, so a first segment cannot read as a scheme).
const PATH_KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b'@');

/// A repository path as a SARIF `artifactLocation.uri`: a relative URI reference, so a
/// space, `%`, `#`, `?`, a newline or a non-ASCII letter is percent-encoded (as UTF-8),
/// as code scanning and SARIF viewers decode it.
fn uri(path: &str) -> String {
    percent_encoding::utf8_percent_encode(path, PATH_KEEP).to_string()
}

/// One finding as a SARIF result.
/// `fingerprint` is the finding's id made unique in the report ([`super::unique_ids`]):
/// code scanning merges results that share one into one alert.
fn result(f: &Finding, rule_index: usize, fingerprint: &str) -> Value {
    let mut message = f.title.clone();
    if !f.description.is_empty() {
        message = format!("{message}: {}", f.description);
    }
    if let Some(s) = &f.suggestion {
        message = format!("{message} Suggestion: {s}");
    }
    let (region, context) = region(f);
    let mut location = json!({
        "artifactLocation": {"uri": uri(&f.path), "uriBaseId": "%SRCROOT%"},
        "region": region,
    });
    if let Some(c) = context {
        location["contextRegion"] = c;
    }
    json!({
        "ruleId": rule_id(&f.skill),
        "ruleIndex": rule_index,
        "level": level(f.severity),
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
        // The finding id hashes skill, path, title and line text, not the line.
        "partialFingerprints": {
            "wardenFinding/v1": fingerprint.trim_start_matches('W'),
        },
        "properties": {
            "id": f.id,
            "severity": f.severity,
            "confidence": f.confidence,
            "route": f.route,
            "model": f.model,
        },
    })
}

/// A unit that was not reviewed, as a tool execution notification.
fn notification(u: &UnitReport, rule_index: usize) -> Value {
    json!({
        "level": "error",
        "message": {"text": format!(
            "NOT reviewed ({}): {}:{}-{} by {}: {}",
            u.status.as_str(), u.path, u.start_line, u.end_line, u.skill, u.reason
        )},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": uri(&u.path), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": u.start_line.max(1), "endLine": u.end_line.max(u.start_line).max(1)},
            }
        }],
        "descriptor": {"id": "warden/not-reviewed"},
        "associatedRule": {"id": rule_id(first_skill(u)), "index": rule_index},
        "properties": {"status": u.status, "skill": u.skill, "route": u.route},
    })
}

/// A warning of the run (config, route, cache, fleet) as a tool execution notification.
fn warning(w: &Warning) -> Value {
    json!({
        "level": "warning",
        "message": {"text": w.message},
        "descriptor": {"id": "warden/warning"},
        "properties": {"source": w.source, "route": w.route},
    })
}

/// Files one limit cut, as a tool execution notification: the count and limit, the
/// first files by name, every file in its properties.
fn cut(r: &Report, c: &Cut) -> Value {
    const NAMED: usize = 20;
    let paths: Vec<String> = r.cut_paths(c).collect();
    let mut text = format!(
        "{}: {}",
        c.message(),
        paths[..paths.len().min(NAMED)].join(", ")
    );
    if paths.len() > NAMED {
        text.push_str(&format!(", and {} more", paths.len() - NAMED));
    }
    json!({
        "level": "warning",
        "message": {"text": text},
        "descriptor": {"id": "warden/cut-by-limit"},
        "properties": {"reason": c.reason, "limit": c.limit, "value": c.value, "files": c.files, "paths": paths},
    })
}

/// The report as one SARIF 2.1.0 run: a rule per skill, a result per finding, and a tool
/// execution notification per unit that was not reviewed.
pub fn render(r: &Report) -> String {
    let skills: BTreeSet<&str> = r
        .units
        .iter()
        .flat_map(|u| u.skills.iter().map(String::as_str))
        .chain(r.findings.iter().map(|f| f.skill.as_str()))
        .chain(r.skills.iter().map(|s| s.name.as_str()))
        .collect();
    let rules: Vec<Value> = skills.iter().map(|s| rule(r, s)).collect();
    let rule_index = |s: &str| skills.iter().position(|x| *x == s).unwrap_or(0);
    let results: Vec<Value> = r
        .findings
        .iter()
        .zip(super::unique_ids(&r.findings))
        .map(|(f, id)| result(f, rule_index(&f.skill), &id))
        .collect();
    let notifications: Vec<Value> = r
        .not_reviewed()
        .map(|u| notification(u, rule_index(first_skill(u))))
        .chain(r.warnings.iter().map(warning))
        .chain(r.cuts.iter().map(|c| cut(r, c)))
        .chain(super::dropped::sarif(r))
        .collect();
    let mut run = json!({
        "tool": {"driver": {
            "name": "warden",
            "version": env!("CARGO_PKG_VERSION"),
            "informationUri": "https://github.com/warden-review/warden",
            "rules": rules,
        }},
        // Where the checkout is, the consumer knows (code scanning: the repository root);
        // `file:///` would resolve every path against the filesystem's root.
        "originalUriBaseIds": {"%SRCROOT%": {"description": {
            "text": "The root of the reviewed repository: every artifact path is relative to it."
        }}},
        "results": results,
        "invocations": [{
            "executionSuccessful": r.outcome == ReviewOutcome::Complete,
            "toolExecutionNotifications": notifications,
            "properties": {
                "outcome": r.outcome,
                "summary": r.summary,
                "durationMs": r.duration_ms,
                "budgetMs": r.budget_ms,
            },
        }],
        "properties": {"target": r.target, "trust": r.trust},
    });
    if let Some(p) = provenance(r) {
        run["versionControlProvenance"] = p;
    }
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("SARIF serializes");
    s.push('\n');
    s
}
