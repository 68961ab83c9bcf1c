//! Every renderer on one shared fixture (a partial review with findings, a failover and
//! units that were not reviewed), snapshot-tested; JSON validated against the shipped
//! schema and SARIF against the official SARIF 2.1.0 schema.

use crate::support::Toml;
use crate::support::stderr_of;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use warden::config::{Settings, SkillConfig};
use warden::diff::content::NoContent;
use warden::engine::{
    AttemptLog, BreakerState, EngineReport, RouteSummary, UnitResult, UnitStatus,
};
use warden::findings::ModelFinding;
use warden::plan::Plan;
use warden::provider::{AttemptRecord, Outcome, Stage, Usage};
use warden::render;
use warden::report::{self, Report, ReviewOutcome, SkillInfo, Vcs, Warning, WarningSource};
use warden::severity::{Confidence, FailOn, Severity};
use warden::skills::ActiveSkill;
use warden::trust::{ConfigFrom, SkillSource, TrustReport};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A new file of `n` lines "line 1" … "line n".
fn new_file(path: &str, n: u32) -> String {
    let body: String = (1..=n).map(|i| format!("+line {i}\n")).collect();
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{n} @@\n{body}"
    )
}

/// The diff every renderer test shares: two new files, one edit, and a lockfile that is
/// skipped before review.
fn patch() -> String {
    let config_rs: String = (2..=14)
        .map(|i| {
            if i == 9 {
                "-    let port = cfg.port().unwrap();\n+line 9\n".to_string()
            } else {
                format!(" line {i}\n")
            }
        })
        .collect();
    format!(
        "{}{}diff --git a/src/config.rs b/src/config.rs\n--- a/src/config.rs\n+++ b/src/config.rs\n@@ -2,13 +2,13 @@\n{config_rs}diff --git a/package-lock.json b/package-lock.json\n--- a/package-lock.json\n+++ b/package-lock.json\n@@ -1 +1 @@\n-{{}}\n+{{ }}\n",
        new_file("app/users.py", 25),
        new_file("web/app.js", 8),
    )
}

/// security-review on app/ and web/, code-review on src/ and web/.
fn skills(settings: &Settings) -> Vec<ActiveSkill> {
    let catalog = warden::skills::discover(None).unwrap();
    [
        ("security-review", ["app/**", "web/**"]),
        ("code-review", ["src/**", "web/**"]),
    ]
    .iter()
    .map(|(name, paths)| {
        let mut config = SkillConfig::named(name);
        let globs: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        config.paths = Some(warden::path_rules::PathRules::new(&globs).unwrap());
        ActiveSkill {
            skill: catalog.get(name).unwrap().clone(),
            thresholds: settings.thresholds(&config),
            config,
        }
    })
    .collect()
}

fn record(route: &str, outcome: Outcome, stage: Option<Stage>, ms: u64) -> AttemptRecord {
    let provider = if route == "primary" {
        "openrouter"
    } else {
        "anthropic"
    };
    let ok = outcome == Outcome::Ok;
    AttemptRecord {
        model_answered: ok.then(|| "kimi-k2".to_string()),
        headers: Some(MS(40)),
        ttft: ok.then_some(MS(900)),
        duration: MS(ms),
        bytes: 512,
        usage: Some(Usage {
            input_tokens: Some(1200),
            output_tokens: Some(80),
            cost: None,
            ..Default::default()
        }),
        http_status: Some(200),
        request_id: Some("req-1".into()),
        outcome,
        stage,
        reason: if ok {
            "1 finding"
        } else {
            "no token within 90s"
        }
        .into(),
        ..AttemptRecord::new(route, provider, "m", MS(120_000))
    }
}

fn model_finding(sev: Severity, line: u32, title: &str, desc: &str) -> ModelFinding {
    ModelFinding {
        severity: sev,
        confidence: Confidence::High,
        title: title.into(),
        description: desc.into(),
        line,
        end_line: line,
        suggestion: None,
        replacement: None,
        skill: None,
    }
}

/// What the engine did with each unit: the SQL injection found on the primary, the
/// unwrap found on the fallback after a failover, a unit timed out, one never started.
fn result(plan: &Plan, index: usize) -> UnitResult {
    let unit = &plan.units[index];
    // Every attempt's usage: 1,200 input and 80 output tokens at $3 / $15 per million.
    let attempt = |number, record| AttemptLog {
        number,
        started: Duration::ZERO,
        probe: false,
        cost_usd: Some(0.0048),
        record,
    };
    let mut r = UnitResult {
        unit: index,
        status: UnitStatus::Reviewed,
        route: Some("primary".into()),
        reason: "reviewed by primary".into(),
        attempts: vec![],
        routes_tried: vec!["primary".into()],
        moves: vec![],
        findings: vec![],
        dropped_findings: 0,
        dropped: vec![],
        answer_cut: false,
        findings_cut: 0,
        from_cache: None,
        tool_loop: None,
        parts: Vec::new(),
    };
    match (unit.path.to_string().as_str(), unit.skill.as_str()) {
        ("app/users.py", _) => {
            r.attempts = vec![attempt(1, record("primary", Outcome::Ok, None, 4200))];
            r.findings = vec![model_finding(
                Severity::High,
                18,
                "SQL injection, via \"term\"",
                "User input reaches the query: 100% exploitable.\nUse bound parameters.",
            )];
        }
        ("src/config.rs", _) => {
            r.route = Some("fallback".into());
            r.reason = "reviewed by fallback".into();
            r.routes_tried = vec!["primary".into(), "fallback".into()];
            r.attempts = vec![
                attempt(
                    1,
                    record("primary", Outcome::Timeout, Some(Stage::FirstToken), 90_000),
                ),
                attempt(2, record("fallback", Outcome::Ok, None, 2100)),
            ];
            let mut f = model_finding(
                Severity::Medium,
                9,
                "unwrap() can panic",
                "Return an error instead.",
            );
            f.suggestion = Some("use `?`".into());
            f.replacement = Some("    let port = cfg.port()?;\n".into());
            r.findings = vec![f];
        }
        (_, "security-review") => {
            r.status = UnitStatus::TimedOut;
            r.route = None;
            r.reason = "less than half the hunk budget left".into();
            r.attempts = vec![attempt(
                1,
                record("primary", Outcome::Timeout, Some(Stage::Total), 120_000),
            )];
        }
        _ => {
            r.status = UnitStatus::Skipped;
            r.route = None;
            r.reason = "the review budget ran out before the unit started".into();
            r.routes_tried = vec![];
        }
    }
    r
}

fn route_summary(breaker: BreakerState) -> RouteSummary {
    RouteSummary {
        breaker,
        opens: u32::from(breaker != BreakerState::Closed),
        time_open: Duration::ZERO,
        peak_in_flight: 2,
        max_concurrency: 4,
    }
}

/// The fixture built as a review builds it, with `settings` for its thresholds.
pub fn fixture_with(settings: &Settings) -> Report {
    let diff = warden::diff::patch_text::parse(patch().as_bytes(), "fixture.diff").unwrap();
    let active = skills(settings);
    let mut plan = warden::plan::build(&diff, &NoContent, settings, &active);
    plan.target = "main...HEAD (clean tree)".into();
    assert_eq!(plan.units.len(), 4, "{:#?}", plan.units);
    let engine = EngineReport {
        units: (0..plan.units.len()).map(|i| result(&plan, i)).collect(),
        elapsed: Duration::from_secs(900),
        budget: Duration::from_secs(900),
        budget_expired: true,
        interrupted: false,
        routes: BTreeMap::from([
            ("primary".to_string(), route_summary(BreakerState::Open)),
            ("fallback".to_string(), route_summary(BreakerState::Closed)),
        ]),
        route_order: vec!["primary".into(), "fallback".into()],
        routing: warden::config::Routing::Ordered,
        // The fallback's 4 permits sat free for 52.5 s while units waited: 3.5 slot-minutes.
        idle_slot_time: Duration::from_secs(210),
        cost_usd: 0.0192,
    };
    let mut r = report::build(report::Inputs {
        plan: &plan,
        engine: &engine,
        settings,
        skills: &active,
        verification: None,
        run: report::RunFacts::default(),
    });
    // What review::run adds from the trust model and the repository.
    r.skills = fixture_skills();
    r.vcs = Some(Vcs {
        repository_uri: Some("https://github.com/acme/shop".into()),
        revision: Some("0123456789abcdef0123456789abcdef01234567".into()),
        branch: Some("feature/users".into()),
        web_url: Some("https://github.com/acme/shop".into()),
    });
    r.trust = Some(TrustReport {
        config_from: ConfigFrom::Base,
        commit: Some("1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into()),
        reason: "CI is set".into(),
        config_file: Some("1a2b3c4:warden.toml".into()),
        changed_by_review: vec!["warden.toml".into()],
    });
    // What review::run adds from the cache and the fleet; a config key is repository text.
    r.warnings.push(Warning {
        source: WarningSource::Config,
        route: None,
        message: "warden.toml: unknown key `x|y\n::error::<b>z</b>` in [defaults] (ignored)".into(),
    });
    r.warnings.push(Warning {
        source: WarningSource::Fleet,
        route: None,
        message: "redis 127.0.0.1:6379: a call timed out after 250ms; the rest of this run uses local breakers, permits and cache".into(),
    });
    r
}

fn fixture_skills() -> Vec<SkillInfo> {
    vec![
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
    ]
}

/// A partial review: two findings (one with characters that need escaping), one unit
/// reviewed after a failover, one timed out, one skipped, a lockfile skipped.
pub fn fixture() -> Report {
    fixture_with(&Settings::default())
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
    let text = render::text::render(&fixture());
    assert!(text.contains("NOT REVIEWED: 2 of 4 units"), "{text}");
    assert!(!text.contains("No findings"), "{text}");
    insta::assert_snapshot!("text", text);
}

/// The text report laid out for an 80- and a 120-column terminal: every line within the
/// width, words whole (the fixture's words reappear in order), the compact route table at
/// 80 and the full one at 120 (and at 80 with -v).
#[test]
fn text_report_wraps_to_the_terminal_width() {
    use warden::render::Layout;
    console::set_colors_enabled(false);
    let r = fixture();
    let whole = render::text::render(&r);
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    for width in [80, 120] {
        let text = render::text::render_with(&r, Layout::at(width, false));
        for line in text.lines() {
            assert!(
                line.chars().count() <= width,
                "{width}: {} columns: {line:?}",
                line.chars().count()
            );
        }
        // The full table's rows are wider than 120 columns: the 120 layout has them; the
        // words of the report (route table aside) are the same words in the same order.
        let prose = |s: &str| words(s.split("Routes\n").next().unwrap());
        assert_eq!(prose(&text), prose(&whole), "{width}: words cut or lost");
        insta::assert_snapshot!(format!("text_{width}"), text);
    }
    let narrow = render::text::render_with(&r, Layout::at(80, false));
    assert!(
        narrow.contains("not ok") && !narrow.contains("unavailable"),
        "{narrow}"
    );
    let wide = render::text::render_with(&r, Layout::at(120, false));
    assert!(wide.contains("unavailable rate-ltd"), "{wide}");
    let verbose = render::text::render_with(&r, Layout::at(80, true));
    assert!(verbose.contains("unavailable rate-ltd"), "-v: {verbose}");
    // Not a terminal: nothing wrapped, the full table.
    assert!(whole.contains("unavailable rate-ltd"));
    assert!(whole.lines().any(|l| l.chars().count() > 120), "{whole}");
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
        serde_json::from_str(&render::sarif::render(&fixture())).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let inv = &sarif["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    // Two units not reviewed, then the run's two warnings.
    let notes = inv["toolExecutionNotifications"].as_array().unwrap();
    let levels: Vec<&str> = notes.iter().map(|n| n["level"].as_str().unwrap()).collect();
    assert_eq!(levels, ["error", "error", "warning", "warning"]);
    assert_eq!(notes[3]["properties"]["source"], "fleet");
    // Rule ids are stable per skill; fingerprints do not depend on line numbers.
    assert_eq!(
        sarif["runs"][0]["results"][0]["ruleId"],
        "warden/security-review"
    );
    let mut moved = fixture();
    moved.findings[0].start_line += 10;
    moved.findings[0].end_line += 10;
    let moved: serde_json::Value = serde_json::from_str(&render::sarif::render(&moved)).unwrap();
    assert_eq!(
        sarif["runs"][0]["results"][0]["partialFingerprints"],
        moved["runs"][0]["results"][0]["partialFingerprints"]
    );
    insta::assert_snapshot!(
        "sarif",
        render::sarif::render(&fixture()).replace(env!("CARGO_PKG_VERSION"), "VERSION")
    );
}

#[test]
fn github_annotations_and_step_summary() {
    let gh = render::github::render(&fixture());
    assert!(gh.contains("::error file=app/users.py,line=18,endLine=18,title=[high] SQL injection%2C via \"term\" (security-review)::User input reaches the query: 100%25 exploitable.%0AUse bound parameters."), "{gh}");
    assert!(gh.contains("::warning file=web/app.js,line=1,endLine=8,title=NOT reviewed (timed_out) by security-review::"), "{gh}");
    insta::assert_snapshot!("github", gh);
    insta::assert_snapshot!("step_summary", render::summary_md::render(&fixture()));
}

#[test]
fn exit_codes_follow_fail_on_and_completeness() {
    let with = |fail_on| {
        fixture_with(&Settings {
            fail_on,
            ..Settings::default()
        })
    };
    let r = with(FailOn::At(Severity::High));
    assert_eq!(r.exit_code(), 1);
    assert_eq!(
        with(FailOn::At(Severity::Critical)).exit_code(),
        3,
        "partial, no finding at critical"
    );
    assert_eq!(with(FailOn::Off).exit_code(), 3);
    let mut complete = with(FailOn::Off);
    complete.outcome = ReviewOutcome::Complete;
    assert_eq!(complete.exit_code(), 0);
    let mut complete = with(FailOn::At(Severity::Medium));
    complete.outcome = ReviewOutcome::Complete;
    assert_eq!(complete.exit_code(), 1);
}

#[test]
fn each_route_s_limit_and_back_pressure_are_in_json_and_text() {
    console::set_colors_enabled(false);
    let mut r = fixture();
    let plain = render::text::render(&r);
    assert!(!plain.contains("back-pressure"), "nothing to say: {plain}");
    let primary = r.routes.get_mut("primary").unwrap();
    primary.limit = Some(report::LimitFigures {
        min: 2,
        median: 4,
        max: 8,
    });
    primary.backpressure = report::BackpressureFigures {
        answers: 3,
        paused_ms: 1500,
    };
    let json = serde_json::to_value(&r).unwrap();
    assert_valid(&report_schema(), &json);
    assert_eq!(
        json["routes"]["primary"]["limit"],
        serde_json::json!({"min": 2, "median": 4, "max": 8})
    );
    assert_eq!(
        json["routes"]["primary"]["backpressure"],
        serde_json::json!({"answers": 3, "pausedMs": 1500})
    );
    let text = render::text::render(&r);
    let line = text
        .lines()
        .find(|l| l.contains("back-pressure"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("limit 2/4/8 (min/median/max) of")
            && line.contains("back-pressure 3 answers, paused 1.5s"),
        "{line}"
    );
    // A shard report with the figures reads back the same.
    let back: report::Report = serde_json::from_value(json).unwrap();
    assert_eq!(back.routes["primary"].limit, r.routes["primary"].limit);
}

/// Through the binary: a review against a provider that serves 2 at once (a `limited` sim
/// route, cap auto) reports the route's limit and its answers of back-pressure.
#[test]
fn a_review_reports_the_limit_and_back_pressure_it_met() {
    let repo = crate::support::repo_with_grown_files(24, "l", 30);
    repo.config(
        &Toml::new()
            .exec(&[("reviewBudget", "60s")])
            .raw("[[skills]]\nname = \"code-review\"\n")
            .route(
                "primary",
                "sim",
                &[
                    ("profile", "limited"),
                    ("capacity", "2"),
                    ("timeScale", "60"),
                    ("maxConcurrency", "auto"),
                ],
            )
            .build(),
    );
    let out = repo.warden(&["review", "--json", "-q"]).output().unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr_of(&out)));
    assert_valid(&report_schema(), &json);
    assert_eq!(
        json["summary"]["reviewed"], json["summary"]["units"],
        "{}",
        json["summary"]
    );
    let route = &json["routes"]["primary"];
    let limit = &route["limit"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("{route}"));
    assert!(
        n(&limit["min"]) >= 1
            && n(&limit["min"]) <= n(&limit["median"])
            && n(&limit["median"]) <= n(&limit["max"])
            && n(&limit["max"]) <= 16,
        "{route}"
    );
    // It starts above what the provider serves: at least one answer says "not now", and
    // the report counts exactly the attempts answered 429.
    let answers = n(&route["backpressure"]["answers"]);
    assert!(answers >= 1, "{route}");
    assert_eq!(answers, n(&route["rateLimited"]), "{route}");
}

/// The fixture with files cut by two limits: three by `maxFiles`, one by `maxFileBytes`.
fn fixture_with_cuts() -> Report {
    let mut r = fixture();
    let skipped = |path: &str, reason: &str, detail: &str| warden::scan::Skipped {
        path: path.into(),
        reason: reason.into(),
        detail: detail.into(),
        rule: String::new(),
        added: 2,
        removed: 0,
        status: Some(warden::diff::ChangeStatus::Modified),
        old_path: None,
        old_mode: None,
        new_mode: None,
    };
    for i in 0..3 {
        r.skipped_files.push(skipped(
            &format!("src/padding_{i}.py"),
            "limit:maxFiles",
            "4 more relevant files are already planned; maxFiles is 4",
        ));
    }
    r.skipped_files.push(skipped(
        "data/huge.sql",
        "too-large:bytes",
        "2000000 bytes > maxFileBytes 1048576",
    ));
    r.cuts = vec![
        report::Cut {
            reason: "limit:maxFiles".into(),
            limit: "maxFiles".into(),
            value: 4,
            files: 3,
        },
        report::Cut {
            reason: "too-large:bytes".into(),
            limit: "maxFileBytes".into(),
            value: 1_048_576,
            files: 1,
        },
    ];
    r
}

#[test]
fn cuts_are_counted_and_named_in_every_format_a_person_reads() {
    console::set_colors_enabled(false);
    let r = fixture_with_cuts();
    let json = serde_json::to_value(&r).unwrap();
    assert_valid(&report_schema(), &json);
    let sarif: serde_json::Value = serde_json::from_str(&render::sarif::render(&r)).unwrap();
    assert_valid(&sarif_schema(), &sarif);
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    let cuts: Vec<&serde_json::Value> = notes
        .iter()
        .filter(|n| n["descriptor"]["id"] == "warden/cut-by-limit")
        .collect();
    assert_eq!(cuts.len(), 2);
    assert_eq!(
        cuts[0]["message"]["text"],
        "3 changed files not reviewed: limit maxFiles = 4: src/padding_0.py, src/padding_1.py, src/padding_2.py"
    );
    let gh = render::github::render(&r);
    assert!(
        gh.contains("::notice title=warden::3 changed files not reviewed: limit maxFiles = 4\n"),
        "{gh}"
    );
    assert!(
        gh.contains(
            "::notice title=warden::1 changed file not reviewed: limit maxFileBytes = 1048576\n"
        ),
        "{gh}"
    );
    insta::assert_snapshot!("cuts_text", render::text::render(&r));
    insta::assert_snapshot!("cuts_markdown", render::markdown::render(&r));
    insta::assert_snapshot!("cuts_step_summary", render::summary_md::render(&r));
}
