//! `grep {pattern, path_glob?}` and `list_files {glob}` over the reviewed head. The regex
//! engine is linear-time and its compiled size is capped, so no pattern can hang a call;
//! walks, files searched, bytes searched and results are all capped, and each cap that
//! cut a result is named in it.

use super::read::long_line;
use super::refusal::Refusal;
use super::{Halt, MAX_FILE_BYTES, Toolbox, cut, fenced, guard, is_binary, string_arg};
use crate::path_rules::{PathRules, Verdict};
use crate::text::escape;
use serde_json::{Map, Value};
use std::fmt::Write;
use std::path::Path;

/// The longest pattern or glob accepted.
pub(super) const MAX_PATTERN_CHARS: usize = 1000;
/// The compiled program and lazy DFA of a pattern may take at most this much memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Tree entries one call walks at most.
pub(super) const MAX_WALK: usize = 50_000;
/// Bytes one grep reads at most across files.
pub(super) const MAX_SCAN_BYTES: u64 = 32 * 1024 * 1024;
/// Matches one grep returns at most.
pub(super) const MAX_MATCHES: usize = 100;
/// Paths one list_files returns at most.
pub(super) const MAX_PATHS: usize = 500;
/// A matching line is shown up to this many characters.
const MATCH_CHARS: usize = 300;
/// Room kept in a result for its header and fence lines.
const FRAME_BYTES: usize = 512;

/// Said in a result the unit's clocks cut (the engine does not give it to the model).
const HALTED: &str = "stopped: the unit's time ran out";

pub(super) fn grep(
    tb: &Toolbox,
    args: &Map<String, Value>,
    halt: &Halt,
) -> Result<String, Refusal> {
    let pattern = string_arg(args, "pattern", true)?.unwrap_or_default();
    if pattern.is_empty() {
        return Err(Refusal::Arguments(
            "`pattern` is empty: give a regular expression".into(),
        ));
    }
    if pattern.chars().count() > MAX_PATTERN_CHARS {
        return Err(Refusal::Arguments(format!(
            "`pattern` is longer than {MAX_PATTERN_CHARS} characters"
        )));
    }
    let regex = regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .nest_limit(64)
        .build()
        .map_err(|e| {
            Refusal::Arguments(format!(
                "`pattern` is not a regular expression warden accepts ({}); Rust regex syntax, no look-around or back-references, compiled size at most {REGEX_SIZE_LIMIT} bytes",
                escape::inline(&cut(&e.to_string(), 300))
            ))
        })?;
    let filter = glob_arg(args, "path_glob", false)?;
    let budget = tb.call_bytes.saturating_sub(FRAME_BYTES);
    let mut body = String::new();
    let (mut matches, mut files_hit, mut files, mut scanned) = (0usize, 0usize, 0usize, 0u64);
    let mut cut_by: Option<String> = None;
    let walk_cut = tb.source.walk(MAX_WALK, &mut |path| {
        if halt.raised() {
            cut_by = Some(HALTED.into());
            return false;
        }
        if !wanted(tb, filter.as_ref(), path) {
            return true;
        }
        let Ok(read) = tb.source.read(path, MAX_FILE_BYTES) else {
            return true;
        };
        if guard::allowed(&read.resolved, &tb.deny).is_err() || is_binary(&read.bytes) {
            return true;
        }
        files += 1;
        scanned += read.bytes.len() as u64;
        let text = String::from_utf8_lossy(&read.bytes);
        let mut hit = false;
        for (i, line) in text.lines().enumerate() {
            if !regex.is_match(line) {
                continue;
            }
            let row = format!(
                "{}:{}: {}\n",
                escape::inline(path),
                i + 1,
                cut(&long_line(line), MATCH_CHARS)
            );
            if matches >= MAX_MATCHES || body.len() + row.len() > budget {
                cut_by = Some(format!(
                    "cut at {MAX_MATCHES} matches or {} bytes",
                    tb.call_bytes
                ));
                return false;
            }
            body.push_str(&row);
            matches += 1;
            hit = true;
        }
        files_hit += usize::from(hit);
        if scanned > MAX_SCAN_BYTES {
            cut_by = Some(format!("stopped after {MAX_SCAN_BYTES} bytes searched"));
            return false;
        }
        true
    });
    if walk_cut && cut_by.is_none() {
        cut_by = Some(format!("stopped after {MAX_WALK} tree entries"));
    }
    let mut header = format!(
        "grep `{}` in {}: {matches} matching line{} in {files_hit} file{} ({files} searched)",
        escape::inline(&cut(pattern, 200)),
        tb.source.describe(),
        plural(matches),
        plural(files_hit),
    );
    if let Some(why) = cut_by {
        let _ = write!(header, "; {why}: narrow the pattern or path_glob");
    }
    Ok(fenced(&header, &body))
}

pub(super) fn list_files(
    tb: &Toolbox,
    args: &Map<String, Value>,
    halt: &Halt,
) -> Result<String, Refusal> {
    let filter = glob_arg(args, "glob", true)?;
    let budget = tb.call_bytes.saturating_sub(FRAME_BYTES);
    let mut body = String::new();
    let mut listed = 0usize;
    let mut cut_by: Option<String> = None;
    let walk_cut = tb.source.walk(MAX_WALK, &mut |path| {
        if halt.raised() {
            cut_by = Some(HALTED.into());
            return false;
        }
        if !wanted(tb, filter.as_ref(), path) {
            return true;
        }
        let row = format!("{}\n", escape::inline(path));
        if listed >= MAX_PATHS || body.len() + row.len() > budget {
            cut_by = Some(format!(
                "cut at {MAX_PATHS} paths or {} bytes",
                tb.call_bytes
            ));
            return false;
        }
        body.push_str(&row);
        listed += 1;
        true
    });
    if walk_cut && cut_by.is_none() {
        cut_by = Some(format!("stopped after {MAX_WALK} tree entries"));
    }
    let glob = string_arg(args, "glob", true)?.unwrap_or_default();
    let mut header = format!(
        "files matching `{}` in {}: {listed}",
        escape::inline(&cut(glob, 200)),
        tb.source.describe()
    );
    if let Some(why) = cut_by {
        let _ = write!(header, " ({why}: narrow the glob)");
    }
    Ok(fenced(&header, &body))
}

/// A path the call may see: not denied, not git's, and matched by the filter if any.
fn wanted(tb: &Toolbox, filter: Option<&PathRules>, path: &str) -> bool {
    guard::allowed(path, &tb.deny).is_ok()
        && filter.is_none_or(|f| matches!(f.verdict(Path::new(path)), Verdict::Matched(_)))
}

/// A glob argument as gitignore-style rules (a glob without `/` matches at any depth).
fn glob_arg(
    args: &Map<String, Value>,
    key: &str,
    required: bool,
) -> Result<Option<PathRules>, Refusal> {
    let Some(glob) = string_arg(args, key, required)? else {
        return Ok(None);
    };
    let glob = glob.trim();
    if glob.is_empty() {
        return if required {
            Err(Refusal::Arguments(format!(
                "`{key}` is empty: give a glob such as `src/**/*.rs`"
            )))
        } else {
            Ok(None)
        };
    }
    if glob.chars().count() > MAX_PATTERN_CHARS || glob.starts_with('!') {
        return Err(Refusal::Arguments(format!(
            "`{key}` must be one glob of at most {MAX_PATTERN_CHARS} characters, not negated"
        )));
    }
    if glob.split('/').any(|p| p == "..") || glob.starts_with('/') && glob.len() == 1 {
        return Err(Refusal::Arguments(format!(
            "`{key}`: `..` is refused; globs match inside the repository"
        )));
    }
    PathRules::new(&[glob]).map(Some).map_err(|(_, e)| {
        Refusal::Arguments(format!(
            "`{key}` is not a glob warden accepts ({})",
            escape::inline(&cut(&e, 200))
        ))
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
