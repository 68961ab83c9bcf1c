//! The tool loop's keys (docs/design.md §14): `[execution] tools, maxTurns, maxToolCalls,
//! toolResultBytes, toolBytesPerUnit, toolDeny`, Warden's `[defaults] maxTurns` (and
//! `[defaults.agent] maxTurns`) read as `maxTurns`, and a skill's `tools` / `maxTurns`
//! (`[[skills]]`, Warden's `[[triggers]] maxTurns`). Every bound has a ceiling: a loop is
//! bounded whatever the file says.

use super::ctx::Ctx;
use super::raw::{RawDefaults, RawExecution, S};
use super::tool_settings::*;
use crate::error::Error;

const MAX_TURNS_CEILING: u32 = 100;
const MAX_CALLS_CEILING: u32 = 1_000;
const RESULT_BYTES_RANGE: (u64, u64) = (1024, 1 << 20);
const UNIT_BYTES_RANGE: (u64, u64) = (1024, 16 << 20);

/// `[execution] tools`, the bounds and `toolDeny` (validated as path patterns).
pub(super) fn resolve(
    e: &RawExecution,
    d: &RawDefaults,
    ctx: &Ctx,
) -> Result<(ToolsMode, ToolBounds, Vec<String>), Error> {
    let mode = match e.tools {
        None => ToolsMode::Skills,
        Some(true) => ToolsMode::All,
        Some(false) => ToolsMode::Off,
    };
    let df = ToolBounds::default();
    let turns = e
        .max_turns
        .as_ref()
        .map(|v| (v, "execution.maxTurns"))
        .or(d.max_turns.as_ref().map(|v| (v, "defaults.maxTurns")))
        .or(d
            .agent
            .as_ref()
            .and_then(|a| a.max_turns.as_ref())
            .map(|v| (v, "defaults.agent.maxTurns")));
    let bounds = ToolBounds {
        max_turns: match turns {
            Some((v, key)) => max_turns(v, key, ctx)?,
            None => df.max_turns,
        },
        max_turns_set: turns.is_some(),
        max_tool_calls: match &e.max_tool_calls {
            Some(v) if *v.get_ref() <= MAX_CALLS_CEILING => *v.get_ref(),
            Some(v) => {
                return Err(ctx.err(
                    v,
                    format!("execution.maxToolCalls: {} is not a bound: write a whole number from 0 to {MAX_CALLS_CEILING} (the default is {DEFAULT_MAX_TOOL_CALLS})", v.get_ref()),
                ));
            }
            None => df.max_tool_calls,
        },
        result_bytes: bytes(
            &e.tool_result_bytes,
            "execution.toolResultBytes",
            RESULT_BYTES_RANGE,
            df.result_bytes,
            ctx,
        )?,
        unit_bytes: bytes(
            &e.tool_bytes_per_unit,
            "execution.toolBytesPerUnit",
            UNIT_BYTES_RANGE,
            df.unit_bytes,
            ctx,
        )?,
    };
    let deny = match &e.tool_deny {
        None => Vec::new(),
        Some(v) => {
            let list = v.get_ref().clone();
            crate::path_rules::PathRules::new(&list).map_err(|(i, why)| {
                ctx.err(
                    v,
                    format!(
                        "execution.toolDeny: `{}` is not a path pattern: {why}",
                        list[i]
                    ),
                )
            })?;
            list
        }
    };
    Ok((mode, bounds, deny))
}

/// A turn cap: 1 (a single request, tools never offered) to [`MAX_TURNS_CEILING`].
pub(super) fn max_turns(v: &S<u32>, key: &str, ctx: &Ctx) -> Result<u32, Error> {
    match *v.get_ref() {
        n @ 1..=MAX_TURNS_CEILING => Ok(n),
        n => Err(ctx.err(
            v,
            format!("{key}: {n} is not a turn cap: write a whole number from 1 to {MAX_TURNS_CEILING} (the default is {DEFAULT_MAX_TURNS}; 1 is a single request)"),
        )),
    }
}

/// A size in bytes (`"32KiB"` or a number) within `range`.
fn bytes(
    v: &Option<S<toml::Value>>,
    key: &str,
    (lo, hi): (u64, u64),
    default: usize,
    ctx: &Ctx,
) -> Result<usize, Error> {
    let Some(v) = v else {
        return Ok(default);
    };
    let n = match v.get_ref() {
        toml::Value::Integer(n) => u64::try_from(*n).ok(),
        toml::Value::String(s) => super::cache::parse_size(s),
        _ => None,
    };
    match n {
        Some(n) if (lo..=hi).contains(&n) => Ok(n as usize),
        _ => Err(ctx.err(
            v,
            format!("{key}: write a size from {lo} bytes to {} KiB, such as \"32KiB\" (the default is {} KiB)", hi / 1024, default / 1024),
        )),
    }
}

/// A skill's `tools` (`[[skills]] tools`, Warden's `[skills.tools]`): a list of names, a
/// space-separated text, or a table with `allowed`.
pub(super) fn skill_tools(v: &S<toml::Value>, ctx: &Ctx) -> Result<Vec<String>, Error> {
    let bad = || {
        ctx.err(
            v,
            "skills.tools: write the allowed tools as a list such as [\"Read\", \"Grep\", \"Glob\"]",
        )
    };
    let list = match v.get_ref() {
        toml::Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        toml::Value::Array(a) => names(a).ok_or_else(bad)?,
        toml::Value::Table(t) => match t.get("allowed") {
            Some(toml::Value::Array(a)) => names(a).ok_or_else(bad)?,
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    Ok(list)
}

fn names(a: &[toml::Value]) -> Option<Vec<String>> {
    a.iter()
        .map(|x| x.as_str().map(|s| s.trim().to_string()))
        .filter(|s| s.as_deref() != Some(""))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::{ToolBounds, ToolsMode, parse_str};
    use std::path::Path;

    fn parse(src: &str) -> crate::Result<crate::config::Settings> {
        parse_str(src, Path::new("warden.toml"))
    }

    fn err(src: &str) -> String {
        parse(src).unwrap_err().to_string()
    }

    #[test]
    fn defaults_hold_without_keys_and_every_key_is_read() {
        let d = parse("version = 1\n").unwrap();
        assert_eq!(d.execution.tools, ToolsMode::Skills);
        assert_eq!(d.execution.tool_bounds, ToolBounds::default());
        assert_eq!(d.execution.tool_bounds.max_turns, 8);
        assert_eq!(d.execution.tool_bounds.max_tool_calls, 24);
        let s = parse(
            "version = 1\n[execution]\ntools = true\nmaxTurns = 5\nmaxToolCalls = 0\ntoolResultBytes = \"8KiB\"\ntoolBytesPerUnit = 65536\ntoolDeny = [\"private/**\"]\n",
        )
        .unwrap();
        assert_eq!(s.execution.tools, ToolsMode::All);
        let b = s.execution.tool_bounds;
        assert_eq!(
            (b.max_turns, b.max_turns_set, b.max_tool_calls),
            (5, true, 0)
        );
        assert_eq!((b.result_bytes, b.unit_bytes), (8192, 65536));
        assert_eq!(s.tool_deny, ["private/**"]);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let off = parse("version = 1\n[execution]\ntools = false\n").unwrap();
        assert_eq!(off.execution.tools, ToolsMode::Off);
    }

    #[test]
    fn wardens_max_turns_keys_are_honoured_not_warned() {
        let s = parse("version = 1\n[defaults]\nmaxTurns = 3\n").unwrap();
        assert_eq!(s.execution.tool_bounds.max_turns, 3);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let s = parse("version = 1\n[defaults.agent]\nmaxTurns = 6\n").unwrap();
        assert_eq!(s.execution.tool_bounds.max_turns, 6);
        // [execution] wins over Warden's place for it.
        let s =
            parse("version = 1\n[defaults]\nmaxTurns = 3\n[execution]\nmaxTurns = 7\n").unwrap();
        assert_eq!(s.execution.tool_bounds.max_turns, 7);
        let s = parse(
            "version = 1\n[[triggers]]\nskill = \"code-review\"\nmaxTurns = 2\n[[skills]]\nname = \"security-review\"\ntools = [\"Read\", \"Grep\"]\nmaxTurns = 9\n",
        )
        .unwrap();
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.triggers[0].config.max_turns, Some(2));
        assert_eq!(s.skills[0].max_turns, Some(9));
        assert_eq!(
            s.skills[0].tools.as_deref(),
            Some(&["Read".into(), "Grep".into()][..])
        );
        let s = parse("version = 1\n[[skills]]\nname = \"x\"\nprompt = \"Check.\"\n[skills.tools]\nallowed = [\"Read\"]\n").unwrap();
        assert_eq!(s.inline_skills[0].allowed_tools, ["Read"]);
    }

    #[test]
    fn bad_values_name_the_key_and_line() {
        let e = err("version = 1\n[execution]\nmaxTurns = 0\n");
        assert!(
            e.contains("warden.toml:3") && e.contains("execution.maxTurns"),
            "{e}"
        );
        let e = err("version = 1\n[defaults]\nmaxTurns = 1000\n");
        assert!(
            e.contains("warden.toml:3") && e.contains("defaults.maxTurns"),
            "{e}"
        );
        let e = err("version = 1\n[execution]\nmaxToolCalls = 5000\n");
        assert!(e.contains("execution.maxToolCalls"), "{e}");
        let e = err("version = 1\n[execution]\ntoolResultBytes = \"lots\"\n");
        assert!(e.contains("execution.toolResultBytes"), "{e}");
        let e = err("version = 1\n[execution]\ntoolBytesPerUnit = \"1GiB\"\n");
        assert!(e.contains("execution.toolBytesPerUnit"), "{e}");
        let e = err("version = 1\n[execution]\ntoolDeny = [\"a[\"]\n");
        assert!(
            e.contains("warden.toml:3") && e.contains("execution.toolDeny"),
            "{e}"
        );
        let e = err("version = 1\n[[skills]]\nname = \"x\"\ntools = 3\n");
        assert!(e.contains("skills.tools"), "{e}");
        let e = err("version = 1\n[[triggers]]\nskill = \"x\"\nmaxTurns = 0\n");
        assert!(e.contains("triggers.maxTurns"), "{e}");
    }
}
