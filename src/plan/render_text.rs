//! `warden plan` for people: files in priority order with score and reasons, chunks,
//! skipped files with reasons, totals.

use super::Plan;
use crate::text::escape;
use console::style;
use std::fmt::Write;

/// The plan as people read it (`warden plan`).
pub fn render_text(plan: &Plan) -> String {
    let mut out = String::new();
    let t = &plan.totals;
    let _ = writeln!(
        out,
        "{} {}",
        style("Plan for").bold(),
        escape::inline(&plan.target)
    );
    let _ = writeln!(out, "skills: {}", plan.skills.join(", "));
    for g in &plan.guidance {
        let _ = writeln!(out, "guidance: {}", escape::inline(&guidance_line(g)));
    }
    let _ = writeln!(out);
    if plan.files.is_empty() {
        let _ = writeln!(out, "No files to review.");
    } else {
        let _ = writeln!(
            out,
            "{}",
            style("Files to review (most relevant first)").bold()
        );
    }
    for (i, f) in plan.files.iter().enumerate() {
        let units = plan.units.iter().filter(|u| u.file == i).count();
        let _ = writeln!(
            out,
            "{:>4}. {}  {} {}  score {}  {} chunk{}, {} unit{}",
            i + 1,
            style(escape::inline(&f.path.to_string())).cyan(),
            style(format!("+{}", f.added)).green(),
            style(format!("-{}", f.removed)).red(),
            f.score,
            f.chunks.len(),
            plural(f.chunks.len()),
            units,
            plural(units),
        );
        let _ = writeln!(out, "        why: {}", f.reasons.join(", "));
        for c in &f.chunks {
            chunk_line(&mut out, c);
        }
    }
    if !plan.skipped_files.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{}",
            style("Skipped files (not sent to any model)").bold()
        );
        for s in &plan.skipped_files {
            let _ = writeln!(
                out,
                "      {}  {}  {}",
                style(escape::inline(&s.path.to_string())).dim(),
                style(&s.reason).yellow(),
                escape::inline(&s.detail)
            );
            if !s.rule.is_empty() && s.rule != s.reason {
                let _ = writeln!(out, "        rule: {}", escape::inline(&s.rule));
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{} {} files in the diff: {} planned, {} skipped; {} chunks, {} units; {} of {} changed lines planned; ~{} prompt characters",
        style("Totals:").bold(),
        t.files_in_diff,
        t.files_planned,
        t.files_skipped,
        t.chunks,
        t.units,
        t.planned_changed_lines,
        t.changed_lines,
        t.prompt_chars
    );
    out
}

/// One chunk: its lines, counts, size and how it came to be.
fn chunk_line(out: &mut String, c: &crate::chunk::Chunk) {
    let mut notes = Vec::new();
    if c.hunks > 1 {
        notes.push(format!("{} hunks coalesced", c.hunks));
    }
    if c.split {
        notes.push("split from a large hunk".to_string());
    }
    if c.deletion_only() {
        notes.push("deletions only, optional".to_string());
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!("  ({})", notes.join(", "))
    };
    let _ = writeln!(
        out,
        "        lines {}-{}  +{} -{}  {} bytes{notes}",
        c.start_line,
        c.end_line,
        c.added,
        c.removed,
        c.rendered_bytes()
    );
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `REVIEW.md (1.2 KiB, from base 1a2b3c4; every file: 3 files)`, with the cut or a
/// missing file said.
fn guidance_line(g: &super::GuidanceUse) -> String {
    let kib = |b: usize| format!("{:.1} KiB", b as f64 / 1024.0);
    if g.missing {
        return format!(
            "{} (not in {}: nothing sent; commit it there first)",
            g.source, g.from
        );
    }
    let scope = if g.paths.is_empty() {
        "every file".to_string()
    } else {
        g.paths.join(", ")
    };
    let cut = if g.cut_bytes > 0 {
        format!(
            "; cut at the {} KiB cap: {} not sent",
            crate::config::GUIDANCE_CAP / 1024,
            kib(g.cut_bytes)
        )
    } else {
        String::new()
    };
    format!(
        "{} ({}, from {}{cut}) for {scope}: {} planned file{}",
        g.source,
        kib(g.bytes),
        g.from,
        g.files,
        if g.files == 1 { "" } else { "s" }
    )
}
