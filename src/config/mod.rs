//! Configuration: `warden.toml` discovery, parsing and validation. TOML types stop here;
//! the rest of warden sees only [`Settings`].

mod ca_cert;
mod cache;
mod ctx;
mod fleet;
mod guidance;
mod overrides;
mod place;
mod policy;
mod publish;
mod raw;
mod resolve;
mod route_settings;
mod route_wire;
mod routes;
mod settings;
mod skills;
mod tool_settings;
mod tools;
mod unknown_keys;
pub mod url;

pub use guidance::{GUIDANCE_CAP, GUIDANCE_FILES, Guidance, GuidanceDoc, Instruction};
pub use overrides::{Overrides, SIM_SCALE};
pub use place::ConfigPlace;
pub use policy::Thresholds;
pub use publish::{PublishSettings, Resolve};
pub use route_settings::*;
pub use settings::*;
pub use tool_settings::{
    BUILT_IN_MAX_TURNS, DEFAULT_MAX_TOOL_CALLS, DEFAULT_MAX_TURNS, ToolBounds, ToolsMode,
};
pub use unknown_keys::{UnknownKey, shown_warning};

use crate::error::{Error, Result};
use ctx::Ctx;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The config file warden discovers at the repository root.
pub const FILE_NAME: &str = "warden.toml";

/// The starter `warden init` writes: a sim route that works with no key, and real routes
/// to uncomment.
pub const STARTER: &str = include_str!("starter.toml");

/// Every key warden reads, with its default and a comment: `warden init --example`
/// writes it (release archives carry it too, as warden.toml.example).
pub const EXAMPLE: &str = include_str!("../../warden.toml.example");

/// Whether `lines` (a new file's whole text, line by line) are exactly what `warden init`
/// writes, unedited: warden's own text, with nothing of the change in it.
pub(crate) fn is_init_output(lines: &[&str]) -> bool {
    [STARTER, EXAMPLE]
        .iter()
        .any(|text| text.lines().eq(lines.iter().copied()))
}

/// The longest duration any setting or flag accepts. Budgets beyond a week mean a typo,
/// and far-future deadlines are where clock arithmetic overflows.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// A duration a setting or flag cannot take: a fragment for the caller to prefix with the
/// key or flag.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration humantime reads.
    #[error(
        "invalid duration `{text}` ({why}): write it as a string like \"15m\", \"90s\" or \"250ms\""
    )]
    Invalid {
        /// As written.
        text: String,
        /// humantime's reason.
        why: humantime::DurationError,
    },
    /// Zero.
    #[error("must be longer than zero")]
    Zero,
    /// Past [`MAX_DURATION`].
    #[error(
        "`{0}` is longer than the longest allowed duration (7 days): write a duration such as \"15m\""
    )]
    TooLong(String),
}

/// Parses a duration as people write it ("15m", "90s", "250ms"): longer than zero and at
/// most [`MAX_DURATION`]. The error is a fragment for the caller to prefix with the key or
/// flag.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, DurationError> {
    let d = humantime::parse_duration(text.trim()).map_err(|e| DurationError::Invalid {
        text: text.to_string(),
        why: e,
    })?;
    if d.is_zero() {
        return Err(DurationError::Zero);
    }
    if d > MAX_DURATION {
        return Err(DurationError::TooLong(text.to_string()));
    }
    Ok(d)
}

/// A duration as people write it: `652ms`, `1.5s`, `8s`, `2m29s`, `15m`, `1h30m`, `30d`.
/// The one format of every human output (reports, progress, `cache stats`), the same
/// spelling a config's durations are written in.
pub fn format_duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        return format!("{}ms", d.as_millis());
    }
    if d < Duration::from_secs(10) && d.subsec_millis() >= 100 {
        return format!("{}.{}s", d.as_secs(), d.subsec_millis() / 100);
    }
    let s = d.as_secs();
    let (days, h, m, s) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    let mut out = String::new();
    for (n, unit) in [(days, "d"), (h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    out
}

/// Loads the settings: `explicit` (`-c FILE`) if given, else `warden.toml` at
/// `discovery_root`, else the built-in defaults.
pub fn load(explicit: Option<&Path>, discovery_root: Option<&Path>) -> Result<Settings> {
    let path: PathBuf = match (explicit, discovery_root) {
        (Some(p), _) => {
            if p.is_dir() {
                return Err(Error::ConfigFile {
                    path: p.to_path_buf(),
                    message: format!(
                        "is a directory, not a config file: pass the file itself, e.g. -c {}",
                        p.join(FILE_NAME).display()
                    ),
                });
            }
            if !p.is_file() {
                return Err(Error::ConfigFile {
                    path: p.to_path_buf(),
                    message: "config file not found: check the path given to -c/--config".into(),
                });
            }
            p.to_path_buf()
        }
        (None, Some(root)) => {
            let p = root.join(FILE_NAME);
            if !p.is_file() {
                // Present but not a file: a link to nothing would otherwise drop the
                // team's config without a word.
                if std::fs::symlink_metadata(&p).is_ok() {
                    return Err(Error::ConfigFile {
                        path: p,
                        message: "is not a file (a directory, or a link to nothing): make it the config file, or pass one with -c FILE".into(),
                    });
                }
                return Ok(Settings::default());
            }
            p
        }
        (None, None) => return Ok(Settings::default()),
    };
    let bytes = read_capped(&path)?;
    let src = String::from_utf8(bytes).map_err(|e| Error::ConfigFile {
        path: path.clone(),
        message: format!(
            "not UTF-8 text (invalid byte at offset {}): save the file as UTF-8",
            e.utf8_error().valid_up_to()
        ),
    })?;
    parse_str(&src, &path)
}

/// The largest `warden.toml` warden reads (docs/design.md §13): a config is a page of
/// settings; past this it is an attack or a mistake, refused before it is read.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The message for a config of `size` bytes, over [`MAX_CONFIG_BYTES`].
pub(crate) fn config_too_big(size: u64) -> String {
    format!(
        "is {size} bytes, over the {} MiB cap for a config file: a config is a page of settings; shorten it",
        MAX_CONFIG_BYTES / (1024 * 1024)
    )
}

/// Reads the config file after checking its size from its metadata (and stops at the cap
/// should it grow while read).
fn read_capped(path: &Path) -> Result<Vec<u8>> {
    crate::capped_read::read(path, MAX_CONFIG_BYTES).map_err(|e| match e {
        crate::capped_read::Refused::Over(size) => Error::ConfigFile {
            path: path.to_path_buf(),
            message: config_too_big(size),
        },
        crate::capped_read::Refused::Io(e) => Error::io(path, e),
    })
}

/// Where the files a config names (a route's `caCert`) are read from when their path is
/// relative: beside the config, on disk or in the commit the config was read from.
pub(crate) enum Beside<'a> {
    /// The filesystem, relative to this directory.
    Dir(PathBuf),
    /// A commit: `read` gives a repository path's bytes (None when absent), `dir` is the
    /// config's directory in it, `shown` names a path for messages.
    Commit {
        /// The config's directory in the commit.
        dir: String,
        /// A repository path's bytes in the commit (None when absent).
        read: &'a dyn Fn(&str) -> Result<Option<Vec<u8>>>,
        /// How a repository path is named in messages.
        shown: &'a dyn Fn(&str) -> PathBuf,
    },
}

/// Parses and validates config text; `path` is used in messages, and relative paths in
/// it are read beside it on disk.
pub(crate) fn parse_str(src: &str, path: &Path) -> Result<Settings> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse_str_beside(src, path, &Beside::Dir(dir))
}

/// As [`parse_str`], with the files the config names read from `beside`.
pub(crate) fn parse_str_beside(src: &str, path: &Path, beside: &Beside) -> Result<Settings> {
    let ctx = Ctx { path, src, beside };
    let to_err = |e: toml::de::Error| {
        let offset = e.span().map(|s| s.start).unwrap_or(0);
        ctx.err_at(offset, e.message().trim().to_string())
    };
    let de = toml::Deserializer::parse(src).map_err(to_err)?;
    let mut ignored = Vec::new();
    let raw: raw::RawConfig =
        serde_ignored::deserialize(de, |key| ignored.push(key.to_string())).map_err(to_err)?;
    let strict = raw.strict_config.unwrap_or(false);
    let mut settings = resolve::resolve(raw, &ctx)?;
    settings.strict_config = strict;
    let mut warnings = ignored_key_warnings(ignored, src, &mut settings.unknown_keys);
    warnings.append(&mut settings.warnings);
    warnings.dedup();
    settings.warnings = warnings;
    Ok(settings)
}

/// Warnings of one kind shown before the rest are counted in one line (docs/design.md §13):
/// 200,000 unknown keys are ten lines and a count, not 200,000 lines.
pub(crate) const MAX_WARNINGS_PER_KIND: usize = 10;

/// One warning per ignored key name (each name once), at most [`MAX_WARNINGS_PER_KIND`]
/// of each kind (unknown keys, Warden-only keys), then a line with how many more. Unknown
/// keys are placed (file:line) and matched to the key probably meant, into `unknown`.
fn ignored_key_warnings(
    ignored: Vec<String>,
    src: &str,
    found: &mut Vec<UnknownKey>,
) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let (mut unknown, mut warden_only) = (Vec::new(), Vec::new());
    for raw_path in ignored {
        let key = key_name(&raw_path);
        if !seen.insert(key.clone()) {
            continue;
        }
        match resolve::ignored_key_warning(&key) {
            Some(line) => warden_only.push(line),
            // Placing a key parses the file again: only the shown ones are placed.
            None if unknown.len() < MAX_WARNINGS_PER_KIND => {
                let k = unknown_keys::locate(src, &raw_path, &key);
                unknown.push(k.warning());
                found.push(k);
            }
            None => unknown.push(String::new()),
        }
    }
    let mut out = capped(unknown, "unknown keys");
    out.extend(capped(warden_only, "Warden settings warden does not use"));
    out
}

/// `lines` cut to [`MAX_WARNINGS_PER_KIND`], with "… and N more KIND" when cut.
fn capped(mut lines: Vec<String>, kind: &str) -> Vec<String> {
    if lines.len() > MAX_WARNINGS_PER_KIND {
        let more = lines.len() - MAX_WARNINGS_PER_KIND;
        lines.truncate(MAX_WARNINGS_PER_KIND);
        lines.push(format!("… and {more} more {kind} (ignored; not listed)"));
    }
    lines
}

/// serde_ignored's path without its `?` (option) and array-index segments:
/// `skills.0.triggers.?.0.actions` → `skills.triggers.actions`.
fn key_name(path: &str) -> String {
    path.split('.')
        .filter(|seg| *seg != "?" && !seg.chars().all(|c| c.is_ascii_digit()))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<Settings> {
        parse_str(src, Path::new("warden.toml"))
    }

    #[test]
    fn durations_print_as_people_write_them() {
        let ms = Duration::from_millis;
        assert_eq!(format_duration(Duration::ZERO), "0ms");
        assert_eq!(format_duration(Duration::from_nanos(652_188_603)), "652ms");
        assert_eq!(format_duration(ms(1500)), "1.5s");
        assert_eq!(format_duration(ms(8000)), "8s");
        assert_eq!(format_duration(ms(149_400)), "2m29s");
        assert_eq!(format_duration(ms(900_000)), "15m");
        assert_eq!(format_duration(ms(5_400_000)), "1h30m");
        assert_eq!(format_duration(Duration::from_secs(30 * 86_400)), "30d");
        assert_eq!(format_duration(Duration::from_secs(86_400 + 7200)), "1d2h");
    }

    #[test]
    fn durations_above_a_week_are_refused() {
        assert!(parse_duration("7d").is_ok());
        let err = parse_duration("18446744073709551615s")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("7 days") || err.contains("invalid duration"),
            "{err}"
        );
        assert!(
            parse_duration("8d")
                .unwrap_err()
                .to_string()
                .contains("7 days")
        );
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn design_example_loads() {
        let s = parse(
            r#"
version = 1
[execution]
reviewBudget = "15m"
hunkBudget = "5m"
requestTimeout = "2m"
maxAttempts = 2
[execution.breaker]
window = "2m"
minCalls = 5
failureRate = 0.5
openFor = "30s"
halfOpenProbes = 1
[[routes]]
name = "primary"
provider = "openrouter"
model = "moonshotai/kimi-k2.6"
apiKeyEnv = "OPENROUTER_API_KEY"
maxConcurrency = 4
stream = true
[[routes]]
name = "fallback"
provider = "anthropic"
model = "claude-sonnet-4-5"
maxConcurrency = 2
"#,
        )
        .unwrap();
        assert_eq!(s.routes.len(), 2);
        assert_eq!(
            s.routes[1].api_key_env.as_deref(),
            Some("ANTHROPIC_API_KEY")
        );
        assert_eq!(s.execution.hunk_budget, Duration::from_secs(300));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn errors_name_line_and_column() {
        let err = parse("version = 1\n[execution]\nhunkBudget = \"5 parsecs\"\n").unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with("warden.toml:3:14: execution.hunkBudget: invalid duration"),
            "{msg}"
        );
        let err = parse("version = 1\n[defaults]\nfailOn = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("warden.toml:3:10:"), "{err}");
        assert!(err.contains("expected a string"), "{err}");
    }

    #[test]
    fn routing_cost_and_gateway_keys_load_and_bad_values_name_their_place() {
        let s = parse(
            "version = 1\n[execution]\nrouting = \"spillover\"\ncostBudget = 2.5\n[[routes]]\nname = \"gw\"\nprovider = \"litellm\"\nmodel = \"m\"\nspill = false\ninputPrice = 3.0\noutputPrice = 15\n",
        )
        .unwrap();
        assert_eq!(s.execution.routing, Routing::Spillover);
        assert_eq!(s.execution.cost_budget, Some(2.5));
        let r = &s.routes[0];
        assert_eq!(r.provider, ProviderKind::LiteLlm);
        assert_eq!(r.api_key_env.as_deref(), Some("LITELLM_API_KEY"));
        assert!(!r.spill);
        assert_eq!(
            r.prices,
            Some(Prices {
                input: 3.0,
                output: 15.0,
                ..Prices::default()
            })
        );
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let err = parse("version = 1\n[execution]\nrouting = \"fastest\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("warden.toml:3:11: execution.routing: unknown policy `fastest`"),
            "{err}"
        );
        let err = parse("version = 1\n[execution]\ncostBudget = -1.0\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("warden.toml:3:14: execution.costBudget:"),
            "{err}"
        );
        let err = parse("version = 1\n[[routes]]\nname = \"a\"\nprovider = \"openai\"\nmodel = \"m\"\noutputPrice = nan\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("route `a` outputPrice"), "{err}");
        // A cost budget over a route with no prices can count only what its provider reports.
        let s = parse("version = 1\n[execution]\ncostBudget = 1.0\n[[routes]]\nname = \"a\"\nprovider = \"anthropic\"\nmodel = \"m\"\n").unwrap();
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("route `a` has no inputPrice")),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn max_bounces_defaults_to_eight_and_a_bad_bound_names_its_place() {
        assert_eq!(parse("version = 1\n").unwrap().execution.max_bounces, 8);
        let s = parse("version = 1\n[execution]\nmaxBounces = 20\n").unwrap();
        assert_eq!(s.execution.max_bounces, 20);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        for bad in ["0", "1001"] {
            let err = parse(&format!("version = 1\n[execution]\nmaxBounces = {bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("warden.toml:3:14: execution.maxBounces:")
                    && err.contains("from 1 to 1000"),
                "{err}"
            );
        }
    }

    #[test]
    fn unknown_keys_are_capped_with_a_count() {
        let mut src = String::from("version = 1\n");
        for i in 0..5000 {
            src.push_str(&format!("junk{i} = 1\n"));
        }
        src.push_str("[defaults]\nruntime = 3\n");
        let s = parse(&src).unwrap();
        assert_eq!(
            s.warnings.len(),
            MAX_WARNINGS_PER_KIND + 2,
            "{:?}",
            s.warnings
        );
        assert!(
            s.warnings
                .contains(&"… and 4990 more unknown keys (ignored; not listed)".to_string())
        );
        assert!(s.warnings.iter().any(|w| w.contains("`defaults.runtime`")));
    }

    #[test]
    fn unknown_keys_warn_once_by_name() {
        let s = parse("version = 1\nfoo = 1\n[defaults]\nruntime = 3\n[logs]\nretention = 3\n")
            .unwrap();
        assert_eq!(s.warnings.len(), 3, "{:?}", s.warnings);
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("`foo`") && w.contains("unknown"))
        );
        assert!(
            s.warnings
                .iter()
                .any(|w| w.contains("`defaults.runtime`") && w.contains("Warden setting"))
        );
    }
}
