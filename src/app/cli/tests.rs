//! Typed flag values at the clap boundary, in process: a value parses into the library's
//! type or is refused naming the flag, and `--help` lists the values.

use super::{Cli, Command, ReviewArgs};
use clap::{CommandFactory, Parser};
use std::time::Duration;
use warden::report::Format as ReviewFormat;
use warden::severity::{Confidence, FailOn, Severity};

fn review(args: &[&str]) -> Result<ReviewArgs, clap::Error> {
    let cli = Cli::try_parse_from(["warden", "review"].iter().chain(args))?;
    match cli.command {
        Some(Command::Review(r)) => Ok(r),
        other => panic!("not a review: {other:?}"),
    }
}

#[test]
fn thresholds_parse_into_their_types_in_any_case() {
    let r = review(&[
        "--fail-on",
        "HIGH",
        "--report-on",
        "low",
        "--min-confidence",
        "High",
    ])
    .unwrap();
    assert_eq!(r.fail_on, Some(FailOn::At(Severity::High)));
    assert_eq!(r.report_on, Some(Severity::Low));
    assert_eq!(r.min_confidence, Some(Confidence::High));
    assert_eq!(
        review(&["--fail-on", "off"]).unwrap().fail_on,
        Some(FailOn::Off)
    );
    assert_eq!(
        review(&["--fail-on", "none"]).unwrap().fail_on,
        Some(FailOn::Off)
    );
    let o = review(&["--fail-on", "critical", "--budget", "90s"])
        .unwrap()
        .overrides();
    assert_eq!(o.fail_on, Some(FailOn::At(Severity::Critical)));
    assert_eq!(o.budget, Some(Duration::from_secs(90)));
}

#[test]
fn bad_values_are_refused_naming_the_flag() {
    for (args, flag) in [
        (vec!["--fail-on", "urgent"], "--fail-on"),
        (vec!["--report-on", "off"], "--report-on"),
        (vec!["--min-confidence", "certain"], "--min-confidence"),
        (vec!["--format", "xml"], "--format"),
        (vec!["--budget", "soon"], "--budget"),
        (vec!["--budget", "0s"], "--budget"),
        (vec!["--budget", "8d"], "--budget"),
        (vec!["--budget", "18446744073709551615s"], "--budget"),
    ] {
        let err = review(&args).unwrap_err();
        use clap::error::ErrorKind::{InvalidValue, ValueValidation};
        assert!(
            matches!(err.kind(), InvalidValue | ValueValidation),
            "{args:?}: {err}"
        );
        assert_eq!(err.exit_code(), 2, "{args:?}");
        let msg = err.to_string();
        assert!(msg.contains(flag), "{args:?}: {msg}");
    }
}

#[test]
fn format_and_json_shorthand() {
    assert_eq!(
        review(&["--format", "sarif"]).unwrap().format().unwrap(),
        ReviewFormat::Sarif
    );
    let format = |args: &[&str]| review(args).unwrap().format().unwrap();
    assert_eq!(format(&["--json"]), ReviewFormat::Json);
    assert_eq!(format(&[]), ReviewFormat::Text);
    // A bare -o PATH: its extension, unless a format flag says otherwise.
    assert_eq!(format(&["-o", "w.sarif"]), ReviewFormat::Sarif);
    assert_eq!(format(&["-o", "out/c.MD"]), ReviewFormat::Markdown);
    assert_eq!(format(&["-o", "w.jsonl"]), ReviewFormat::Rdjsonl);
    assert_eq!(format(&["-o", "report"]), ReviewFormat::Text);
    assert_eq!(format(&["--json", "-o", "w.sarif"]), ReviewFormat::Json);
    assert_eq!(
        format(&["-o", "w.xml", "--format", "text"]),
        ReviewFormat::Text
    );
    let err = review(&["-o", "w.xml"]).unwrap().format().unwrap_err();
    assert!(err.to_string().contains("-o/--output w.xml"), "{err}");
    assert_eq!(err.exit_code(), 2);
}

#[test]
fn help_lists_the_values() {
    let mut cmd = Cli::command();
    let help = cmd
        .find_subcommand_mut("review")
        .unwrap()
        .render_long_help()
        .to_string();
    assert!(
        help.contains("[possible values: critical, high, medium, low, info, off]"),
        "{help}"
    );
    assert!(
        help.contains("[possible values: high, medium, low]"),
        "{help}"
    );
    assert!(help.contains("--budget <DUR>"), "{help}");
}

#[test]
fn a_command_after_options_is_found_but_option_values_are_not_commands() {
    use super::command_after_options;
    let find = |line: &str| {
        let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
        command_after_options(&args)
    };
    assert_eq!(find("warden -C repo plan").as_deref(), Some("plan"));
    assert_eq!(find("warden --json plan --staged").as_deref(), Some("plan"));
    assert_eq!(find("warden -q -v skills").as_deref(), Some("skills"));
    assert_eq!(find("warden --sim cache stats").as_deref(), Some("cache"));
    assert_eq!(
        find("warden --config=w.toml merge a.json").as_deref(),
        Some("merge")
    );
    // Values of options, targets, and the command first are not that mistake.
    for line in [
        "warden -c plan",
        "warden --skill review",
        "warden -o plan --sim",
        "warden -C repo main..feat",
        "warden plan -C repo",
        "warden review plan",
        "warden -q -- plan",
        "warden",
    ] {
        assert_eq!(find(line), None, "{line}");
    }
}
