//! The configured API keys out of every field of a report. A provider can copy the
//! Authorization key into its answer (a title, a description, a suggestion, a reason), and
//! a reason or a warning can quote it: each of those would reach every format. The report
//! is redacted once, when it is complete, so every renderer, `-o` file, the step summary
//! and `warden merge` inherit it; the outputs redact their rendered text again (defence in
//! depth, see `crate::outputs`).

use super::Report;
use crate::config::Route;
use crate::provider::secret::{self, Redactor};
use serde_json::Value;

/// The keys of `routes` that are set (the values of the variables their `apiKeyEnv`
/// names; a route whose key is missing contributes none), as one matcher in which each
/// distinct key counts once: routes that share a key cost one key.
pub fn configured_keys(routes: &[Route]) -> Redactor {
    let keys: Vec<_> = routes
        .iter()
        .filter_map(|r| secret::load(r).ok().flatten())
        .collect();
    Redactor::new(&keys)
}

/// `text` with every 16-character piece of each key replaced by `[redacted]`.
pub fn redact_text(keys: &Redactor, text: &str) -> String {
    keys.redact(text)
}

/// Redacts every string of `report` (each field of every finding, unit, attempt, warning,
/// the target, …): the report is walked as JSON, so a field added later is covered too.
pub fn redact(report: &mut Report, keys: &Redactor) {
    if keys.is_empty() {
        return;
    }
    let Ok(mut doc) = serde_json::to_value(&*report) else {
        return;
    };
    if !redact_strings(&mut doc, keys) {
        return;
    }
    // `line_text` is not serialized (it feeds SARIF fingerprints): kept from before.
    let kept: Vec<String> = report
        .findings
        .iter()
        .chain(report.units.iter().flat_map(|u| &u.findings))
        .map(|f| redact_text(keys, &f.line_text))
        .collect();
    let Ok(mut back) = serde_json::from_value::<Report>(doc) else {
        return;
    };
    let slots = back
        .findings
        .iter_mut()
        .chain(back.units.iter_mut().flat_map(|u| &mut u.findings));
    for (f, text) in slots.zip(kept) {
        f.line_text = text;
    }
    *report = back;
}

/// Redacts every string value in `v`; whether anything changed.
fn redact_strings(v: &mut Value, keys: &Redactor) -> bool {
    match v {
        Value::String(s) => {
            let r = redact_text(keys, s);
            let changed = r != *s;
            *s = r;
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, i| redact_strings(i, keys) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, i| redact_strings(i, keys) | acc),
        _ => false,
    }
}
