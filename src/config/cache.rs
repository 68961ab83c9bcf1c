//! `[cache]`: whether the result cache is on, where it lives, and how large and old it may
//! grow. Sizes are written like "256MiB" (or a plain number of bytes), ages like "30d".

use super::ctx::Ctx;
use super::raw::RawCache;
use super::settings::CacheSettings;
use crate::error::Error;

pub(super) fn resolve(raw: &RawCache, ctx: &Ctx) -> Result<CacheSettings, Error> {
    let d = CacheSettings::default();
    let dir = match &raw.dir {
        Some(v) if v.get_ref().trim().is_empty() => {
            return Err(ctx.err(
                v,
                "cache.dir: must not be empty: name a directory, or set `enabled = false`",
            ));
        }
        // Relative to the config file, so the setting means the same from any directory.
        Some(v) => Some(
            ctx.path
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(v.get_ref().trim()),
        ),
        None => None,
    };
    let max_size = match &raw.max_size {
        Some(v) => {
            let parsed = match v.get_ref() {
                toml::Value::Integer(n) => u64::try_from(*n).ok(),
                toml::Value::String(s) => parse_size(s),
                _ => None,
            };
            match parsed {
                Some(n) if n > 0 => n,
                _ => {
                    return Err(ctx.err(
                        v,
                        "cache.maxSize: expected a size such as \"256MiB\", \"1GiB\" or \"500MB\" (or a number of bytes), more than zero",
                    ));
                }
            }
        }
        None => d.max_size,
    };
    Ok(CacheSettings {
        enabled: raw.enabled.unwrap_or(true),
        dir,
        max_size,
        max_age: match &raw.max_age {
            Some(v) => {
                parse_age(v.get_ref()).map_err(|e| ctx.err(v, format!("cache.maxAge: {e}")))?
            }
            None => d.max_age,
        },
    })
}

/// A `cache.maxAge` that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum AgeError {
    #[error("invalid duration `{text}` ({why}): write it as a string like \"30d\" or \"12h\"")]
    Invalid {
        text: String,
        why: humantime::DurationError,
    },
    #[error("`{0}` must be longer than zero and at most ten years")]
    OutOfRange(String),
}

/// How long answers are kept: days are usual here, so the budgets' 7-day cap does not
/// apply; ten years is plenty and keeps the arithmetic far from overflow.
fn parse_age(text: &str) -> Result<std::time::Duration, AgeError> {
    const MAX: std::time::Duration = std::time::Duration::from_secs(10 * 366 * 86_400);
    let d = humantime::parse_duration(text.trim()).map_err(|e| AgeError::Invalid {
        text: text.to_string(),
        why: e,
    })?;
    if d.is_zero() || d > MAX {
        return Err(AgeError::OutOfRange(text.to_string()));
    }
    Ok(d)
}

/// "256MiB", "1.5 GB", "4096", "64k" → bytes. Binary (KiB, MiB, GiB) and decimal (KB, MB,
/// GB) units; a bare `k`/`m`/`g` is binary, as in most tools' cache settings.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    let bytes = num * mult as f64;
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_str;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn sizes_in_common_units() {
        assert_eq!(parse_size("256MiB"), Some(256 << 20));
        assert_eq!(parse_size("1.5 GiB"), Some(3 << 29));
        assert_eq!(parse_size("500MB"), Some(500_000_000));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64k"), Some(65536));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("12 parsecs"), None);
    }

    #[test]
    fn cache_table_resolves_against_the_config_file() {
        let s = parse_str(
            "version = 1\n[cache]\nenabled = false\ndir = \"cachedir\"\nmaxSize = \"1MiB\"\nmaxAge = \"90d\"\n",
            Path::new("/repo/warden.toml"),
        )
        .unwrap();
        assert!(!s.cache.enabled);
        assert_eq!(s.cache.dir.as_deref(), Some(Path::new("/repo/cachedir")));
        assert_eq!(s.cache.max_size, 1 << 20);
        assert_eq!(s.cache.max_age, Duration::from_secs(90 * 86400));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let d = parse_str("version = 1\n", Path::new("warden.toml")).unwrap();
        assert!(d.cache.enabled);
        assert_eq!(d.cache.max_size, 256 << 20);
    }

    #[test]
    fn bad_values_name_the_key_and_line() {
        let e = parse_str(
            "version = 1\n[cache]\nmaxSize = \"huge\"\n",
            Path::new("warden.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("warden.toml:3:"), "{e}");
        assert!(e.contains("cache.maxSize"), "{e}");
        let e = parse_str(
            "version = 1\n[cache]\nmaxAge = \"forever\"\n",
            Path::new("warden.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cache.maxAge"), "{e}");
        let e = parse_str(
            "version = 1\n[cache]\nmaxAge = \"100years\"\n",
            Path::new("warden.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("at most ten years"), "{e}");
        let e = parse_str(
            "version = 1\n[cache]\ndir = \" \"\n",
            Path::new("warden.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cache.dir"), "{e}");
    }
}
