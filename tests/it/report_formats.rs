//! Every renderer on one shared fixture (a partial review with findings, a failover and
//! units that were not reviewed), snapshot-tested; JSON validated against the shipped
//! schema and SARIF against the official SARIF 2.1.0 schema.

use std::collections::BTreeMap;
use std::path::Path;
use warden::engine::{BreakerState, UnitStatus};
use warden::report::{
    self, AttemptReport, Finding, Report, ReviewOutcome, RouteMetrics, SkillInfo, SourceContext,
    Summary, UnitReport, Vcs,
};
use warden::scan::Skipped;
use warden::severity::{Confidence, FailOn, Severity};
use warden::trust::{ConfigFrom, SkillSource, TrustReport};

fn finding(skill: &str, sev: Severity, path: &str, line: u32, title: &str, desc: &str) -> Finding {
    Finding {
        id: format!("W{:016x}", line as u64 * 7919),
        skill: skill.into(),
        severity: sev,
        confidence: Confidence::High,
        title: title.into(),
        description: desc.into(),
        suggestion: None,
        path: path.into(),
        start_line: line,
        end_line: line,
        route: "primary".into(),
        model: "kimi-k2".into(),
        verification: None,
        line_text: format!("line {line}"),
        replacement: None,
        context: Some(SourceContext {
            start_line: line - 2,
            end_line: line + 2,
            text: (line - 2..=line + 2)
                .map(|n| format!("line {n}\n"))
                .collect(),
        }),
    }
}

fn attempt(n: u32, route: &str, outcome: &str, stage: Option<&str>, ms: u64) -> AttemptReport {
    AttemptReport {
        number: n,
        route: route.into(),
        provider: if route == "primary" {
            "openrouter"
        } else {
            "anthropic"
        }
        .into(),
        model: "m".into(),
        model_answered: (outcome == "ok").then(|| "m".to_string()),
        outcome: outcome.into(),
        stage: stage.map(str::to_string),
        started_ms: 0,
        duration_ms: ms,
        deadline_ms: 120_000,
        headers_ms: Some(40),
        ttft_ms: (outcome == "ok").then_some(900),
        http_status: Some(200),
        request_id: Some("req-1".into()),
        input_tokens: Some(1200),
        output_tokens: Some(80),
        cost: None,
        retry_after_ms: None,
        probe: false,
        reason: if outcome == "ok" {
            "1 finding".into()
        } else {
            "no token within 90s".into()
        },
    }
}

fn metrics(calls: usize, ok: usize, timeouts: usize, state: BreakerState) -> RouteMetrics {
    RouteMetrics {
        calls,
        ok,
        timeouts,
        timeouts_by_stage: Default::default(),
        unavailable: 0,
        rate_limited: 0,
        failed: 0,
        cancelled: 0,
        retries: 0,
        failovers_from: timeouts,
        failovers_to: 0,
        p50_ms: Some(4200),
        p95_ms: Some(90_000),
        max_ms: Some(90_000),
        ttft_p50_ms: Some(900),
        ttft_p95_ms: Some(1500),
        units_not_reviewed: 1,
        peak_in_flight: 2,
        max_concurrency: 4,
        input_tokens: 2400,
        output_tokens: 160,
        cost: None,
        breaker: report::BreakerReport {
            state,
            opens: u32::from(state != BreakerState::Closed),
            time_open_ms: 0,
        },
    }
}

/// A partial review: two findings (one with characters that need escaping), one unit
/// reviewed after a failover, one timed out, one skipped.
pub fn fixture() -> Report {
    let sqli = finding(
        "security-review",
        Severity::High,
        "app/users.py",
        18,
        "SQL injection, via \"term\"",
        "User input reaches the query: 100% exploitable.\nUse bound parameters.",
    );
    let mut unwrap = finding(
        "code-review",
        Severity::Medium,
        "src/config.rs",
        9,
        "unwrap() can panic",
        "Return an error instead.",
    );
    unwrap.route = "fallback".into();
    unwrap.suggestion = Some("use `?`".into());
    unwrap.replacement = Some("    let port = cfg.port()?;\n".into());
    let units = vec![
        UnitReport {
            skill: "security-review".into(),
            skills: vec!["security-review".into()],
            path: "app/users.py".into(),
            start_line: 1,
            end_line: 25,
            optional: false,
            status: UnitStatus::Reviewed,
            route: Some("primary".into()),
            reason: "reviewed by primary".into(),
            routes_tried: vec!["primary".into()],
            attempts: vec![attempt(1, "primary", "ok", None, 4200)],
            findings: vec![sqli.clone()],
        },
        UnitReport {
            skill: "code-review".into(),
            skills: vec!["code-review".into()],
            path: "src/config.rs".into(),
            start_line: 2,
            end_line: 14,
            optional: false,
            status: UnitStatus::Reviewed,
            route: Some("fallback".into()),
            reason: "reviewed by fallback".into(),
            routes_tried: vec!["primary".into(), "fallback".into()],
            attempts: vec![
                attempt(1, "primary", "timeout", Some("first_token"), 90_000),
                attempt(2, "fallback", "ok", None, 2100),
            ],
            findings: vec![unwrap.clone()],
        },
        UnitReport {
            skill: "security-review".into(),
            skills: vec!["security-review".into()],
            path: "web/app.js".into(),
            start_line: 1,
            end_line: 8,
            optional: false,
            status: UnitStatus::TimedOut,
            route: None,
            reason: "less than half the hunk budget left".into(),
            routes_tried: vec!["primary".into()],
            attempts: vec![attempt(1, "primary", "timeout", Some("total"), 120_000)],
            findings: vec![],
        },
        UnitReport {
            skill: "code-review".into(),
            skills: vec!["code-review".into()],
            path: "web/app.js".into(),
            start_line: 1,
            end_line: 8,
            optional: false,
            status: UnitStatus::Skipped,
            route: None,
            reason: "the review budget ran out before the unit started".into(),
            routes_tried: vec![],
            attempts: vec![],
            findings: vec![],
        },
    ];
    let mut routes = BTreeMap::new();
    routes.insert("primary".to_string(), metrics(3, 1, 2, BreakerState::Open));
    routes.insert(
        "fallback".to_string(),
        metrics(1, 1, 0, BreakerState::Closed),
    );
    Report {
        schema_version: 1,
        outcome: ReviewOutcome::Partial,
        target: "main...HEAD (clean tree)".into(),
        duration_ms: 900_000,
        budget_ms: 900_000,
        budget_expired: true,
        interrupted: false,
        summary: Summary {
            units: 4,
            reviewed: 2,
            timed_out: 1,
            unavailable: 0,
            failed: 0,
            cancelled: 0,
            skipped: 1,
            findings: 2,
            findings_dropped: 0,
        },
        counters: report::Counters {
            attempts: 4,
            timeouts: 2,
            failovers: 1,
            retries: 0,
            units_not_reviewed: 2,
        },
        units,
        findings: vec![sqli, unwrap],
        verification: None,
        skipped_files: vec![Skipped {
            path: "package-lock.json".into(),
            reason: "builtin:lockfile".into(),
            detail: "built-in ignore (lockfile)".into(),
            added: 1,
            removed: 1,
        }],
        route_order: vec!["primary".into(), "fallback".into()],
        routes,
        fail_on: "high".into(),
        report_on: Severity::Low,
        min_confidence: Confidence::Medium,
        skills: vec![
            SkillInfo {
                name: "code-review".into(),
                description: "Finds bugs, broken logic and risky changes in a diff.".into(),
                summary: "Look for defects:\n\n- logic errors;\n- `unwrap()` on input <b>the code</b> should expect.".into(),
                origin: SkillSource::BuiltIn,
                path: None,
                overrides_builtin: false,
            },
            SkillInfo {
                name: "security-review".into(),
                description: "Finds exploitable security weaknesses introduced by a diff.".into(),
                summary: "Report only weaknesses an attacker could plausibly exploit.".into(),
                origin: SkillSource::Base,
                path: Some(".warden/skills/security-review/SKILL.md".into()),
                overrides_builtin: true,
            },
        ],
        vcs: Some(Vcs {
            repository_uri: Some("https://github.com/acme/shop".into()),
            revision: Some("0123456789abcdef0123456789abcdef01234567".into()),
            branch: Some("feature/users".into()),
            web_url: Some("https://github.com/acme/shop".into()),
        }),
        trust: Some(TrustReport {
            config_from: ConfigFrom::Base,
            commit: Some("1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into()),
            reason: "CI is set".into(),
            config_file: Some("1a2b3c4:warden.toml".into()),
            changed_by_review: vec!["warden.toml".into()],
        }),
    }
}

/// A schema from the repository's `schemas/` folder.
pub fn repo_schema(name: &str) -> jsonschema::Validator {
    schema(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("schemas")
            .join(name),
    )
}

fn schema(path: &Path) -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

pub fn assert_valid(validator: &jsonschema::Validator, doc: &serde_json::Value) {
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

pub fn report_schema() -> jsonschema::Validator {
    schema(&Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/report-v1.schema.json"))
}

pub fn sarif_schema() -> jsonschema::Validator {
    schema(&Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/sarif-schema-2.1.0.json"))
}

#[test]
fn text_report() {
    console::set_colors_enabled(false);
    let text = report::text::render(&fixture());
    assert!(text.contains("NOT REVIEWED: 2 of 4 units"), "{text}");
    assert!(!text.contains("No findings"), "{text}");
    insta::assert_snapshot!("text", text);
}

#[test]
fn json_report_matches_its_schema() {
    let json = serde_json::to_value(fixture()).unwrap();
    assert_valid(&report_schema(), &json);
    insta::assert_json_snapshot!("json", json);
}

#[test]
fn sarif_report_validates_against_the_official_schema() {
    let sarif: serde_json::Value =
        serde_json::from_str(&report::sarif::render(&fixture())).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let inv = &sarif["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    assert_eq!(
        inv["toolExecutionNotifications"].as_array().unwrap().len(),
        2
    );
    // Rule ids are stable per skill; fingerprints do not depend on line numbers.
    assert_eq!(
        sarif["runs"][0]["results"][0]["ruleId"],
        "warden/security-review"
    );
    let mut moved = fixture();
    moved.findings[0].start_line += 10;
    moved.findings[0].end_line += 10;
    let moved: serde_json::Value = serde_json::from_str(&report::sarif::render(&moved)).unwrap();
    assert_eq!(
        sarif["runs"][0]["results"][0]["partialFingerprints"],
        moved["runs"][0]["results"][0]["partialFingerprints"]
    );
    insta::assert_snapshot!(
        "sarif",
        report::sarif::render(&fixture()).replace(env!("CARGO_PKG_VERSION"), "VERSION")
    );
}

#[test]
fn github_annotations_and_step_summary() {
    let gh = report::github::render(&fixture());
    assert!(gh.contains("::error file=app/users.py,line=18,endLine=18,title=[high] SQL injection%2C via \"term\" (security-review)::User input reaches the query: 100%25 exploitable.%0AUse bound parameters."), "{gh}");
    assert!(gh.contains("::warning file=web/app.js,line=1,endLine=8,title=NOT reviewed (timed_out) by security-review::"), "{gh}");
    insta::assert_snapshot!("github", gh);
    insta::assert_snapshot!("step_summary", report::summary_md::render(&fixture()));
}

#[test]
fn exit_codes_follow_fail_on_and_completeness() {
    let r = fixture();
    assert_eq!(r.exit_code(FailOn::At(Severity::High)), 1);
    assert_eq!(
        r.exit_code(FailOn::At(Severity::Critical)),
        3,
        "partial, no finding at critical"
    );
    assert_eq!(r.exit_code(FailOn::Off), 3);
    let mut complete = fixture();
    complete.outcome = ReviewOutcome::Complete;
    assert_eq!(complete.exit_code(FailOn::Off), 0);
    assert_eq!(complete.exit_code(FailOn::At(Severity::Medium)), 1);
}
