//! The report as JSON (schemaVersion 1, schemas/report-v1.schema.json): the model's
//! own serialization, pretty-printed, one document.

use crate::report::Report;

/// The JSON document, ending in a newline.
pub fn render(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("report serializes");
    s.push('\n');
    s
}
