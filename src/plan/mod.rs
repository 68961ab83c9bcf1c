//! The dispatch plan: which files, which chunks, which units (skill × chunk), in which
//! order, and which files are skipped and why. `warden plan` prints it; `warden review`
//! runs it. The invariant every test leans on: planned + skipped files account for every
//! file and every changed line of the diff.

mod render_text;
pub mod split;

pub use render_text::render_text;

use crate::chunk::{self, Chunk};
use crate::config::{ChunkMode, Settings};
use crate::diff::content::ContentSource;
use crate::diff::{ChangeStatus, DiffSet, RepoPath};
use crate::prompt::{self, FileFacts};
use crate::scan::{self, Skipped};
use crate::skills::ActiveSkill;
use serde::Serialize;
use std::sync::Arc;

/// `plan --json`'s `schemaVersion`: raised when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// What a review sends: files in relevance order, their chunks, the units (skill × chunk) in dispatch order, and every skipped file with its reason.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// What was compared, for people ("uncommitted changes vs HEAD").
    pub target: String,
    /// The skills that run.
    pub skills: Vec<String>,
    /// Kept files, most relevant first.
    pub files: Vec<PlannedFile>,
    /// Files not reviewed, with reasons.
    pub skipped_files: Vec<Skipped>,
    /// In dispatch order.
    pub units: Vec<Unit>,
    /// Counts that account for every file and changed line of the diff.
    pub totals: Totals,
    /// The repository's guidance (REVIEW.md, AGENTS.md, `[[instructions]]`) and where it
    /// was read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guidance: Vec<GuidanceUse>,
}

/// One piece of repository guidance as the plan names it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuidanceUse {
    /// `REVIEW.md`, `AGENTS.md`, `[[instructions]] N` or the instruction's file.
    pub source: String,
    /// Where it was read (`base 1a2b3c4`, `the working tree`).
    pub from: String,
    /// Its globs (empty: every file).
    pub paths: Vec<String>,
    /// Bytes sent.
    pub bytes: usize,
    /// Bytes left out by the cap (16 KiB over all pieces).
    pub cut_bytes: usize,
    /// A configured `file` the side read has not got.
    pub missing: bool,
    /// Planned files it reaches.
    pub files: usize,
}

/// A file that is reviewed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFile {
    /// The file.
    pub path: RepoPath,
    /// Its old path (renames, copies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_path: Option<RepoPath>,
    /// How it changed.
    pub status: ChangeStatus,
    /// Its relevance score (higher first).
    pub score: i32,
    /// Why it scored so.
    pub reasons: Vec<String>,
    /// Added lines.
    pub added: usize,
    /// Removed lines.
    pub removed: usize,
    /// `per-hunk` or `whole-file`.
    pub mode: &'static str,
    /// The skills that review it.
    pub skills: Vec<String>,
    /// Its chunks, in file order.
    pub chunks: Vec<Chunk>,
    /// The repository guidance that reaches it (REVIEW.md, AGENTS.md, instructions).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guidance: Vec<String>,
    /// That guidance's text, as its prompts carry it.
    #[serde(skip)]
    pub guidance_text: String,
}

/// One request's worth of work: a chunk and the skill (or consolidated skills) reviewing it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unit {
    /// Position in dispatch order.
    pub index: usize,
    /// The skill, or the consolidated skills joined with `+`.
    pub skill: String,
    /// Every skill this unit's one request serves (one, unless consolidated).
    pub skills: Vec<String>,
    /// The file.
    pub path: RepoPath,
    /// Index into `files` and into that file's `chunks`.
    pub file: usize,
    /// Index into that file's chunks.
    pub chunk: usize,
    /// First new-file line of the chunk.
    pub start_line: u32,
    /// Last new-file line of the chunk.
    pub end_line: u32,
    /// The file's score: units of more relevant files go first.
    pub priority: i32,
    /// Optional work is shed first when the review budget runs low (deletion-only chunks).
    pub optional: bool,
    /// Characters of the prompt.
    pub prompt_chars: usize,
    /// The prompt sent for this unit, built once (here) and shared with the review.
    #[serde(skip)]
    pub prompt: Arc<prompt::Prompt>,
}

/// The plan's accounting: planned plus skipped covers the whole diff.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Files in the diff.
    pub files_in_diff: usize,
    /// Files reviewed.
    pub files_planned: usize,
    /// Files skipped.
    pub files_skipped: usize,
    /// Chunks of the reviewed files.
    pub chunks: usize,
    /// Units (requests) planned.
    pub units: usize,
    /// Changed lines in the diff.
    pub changed_lines: usize,
    /// Changed lines of reviewed files.
    pub planned_changed_lines: usize,
    /// Changed lines of skipped files.
    pub skipped_changed_lines: usize,
    /// Characters of every unit's prompt.
    pub prompt_chars: usize,
}

/// Other changed files named in a file's prompts, for orientation (at most `cap`).
fn context_files(files: &[PlannedFile], fi: usize, cap: usize) -> Vec<String> {
    files
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != fi)
        .take(cap)
        .map(|(_, f)| f.path.to_string())
        .collect()
}

impl Plan {
    /// A unit's prompt for `skills`, with at most `max_context_files` other files named
    /// (the verification pass asks with none; the review uses `Unit::prompt`).
    pub fn prompt(
        &self,
        unit: &Unit,
        skills: &[&crate::skills::Skill],
        max_context_files: usize,
    ) -> prompt::Prompt {
        let file = &self.files[unit.file];
        let others = context_files(&self.files, unit.file, max_context_files);
        let facts = FileFacts {
            path: &file.path,
            old_path: file.old_path.as_ref(),
            status: file.status,
            other_files: &others,
            guidance: &file.guidance_text,
        };
        prompt::build(skills, &facts, &file.chunks[unit.chunk])
    }
}

/// Builds the plan for `diff`.
pub fn build(
    diff: &DiffSet,
    content: &dyn ContentSource,
    settings: &Settings,
    skills: &[ActiveSkill],
) -> Plan {
    let scanned = scan::scan(&diff.files, content, settings, skills);
    let files: Vec<PlannedFile> = scanned
        .kept
        .iter()
        .map(|kept| planned_file(kept, settings, skills))
        .collect();
    let chunk_skills: Vec<&[usize]> = scanned.kept.iter().map(|k| k.skills.as_slice()).collect();
    let mut units = Vec::new();
    for (fi, file) in files.iter().enumerate() {
        let others = context_files(&files, fi, settings.chunking.max_context_files);
        units.extend(file_units(fi, file, &others, chunk_skills[fi], skills));
    }
    // Required work first, then by relevance; stable, so file and chunk order hold within.
    units.sort_by(|a, b| {
        a.optional
            .cmp(&b.optional)
            .then(b.priority.cmp(&a.priority))
    });
    for (i, u) in units.iter_mut().enumerate() {
        u.index = i;
    }
    let planned_changed_lines = files.iter().map(|f| f.added + f.removed).sum();
    let skipped_changed_lines = scanned.skipped.iter().map(|s| s.added + s.removed).sum();
    let totals = Totals {
        files_in_diff: diff.files.len(),
        files_planned: files.len(),
        files_skipped: scanned.skipped.len(),
        chunks: files.iter().map(|f| f.chunks.len()).sum(),
        units: units.len(),
        changed_lines: diff.changed_lines(),
        planned_changed_lines,
        skipped_changed_lines,
        prompt_chars: units.iter().map(|u| u.prompt_chars).sum(),
    };
    let guidance = settings
        .guidance
        .docs
        .iter()
        .map(|d| GuidanceUse {
            source: d.source.clone(),
            from: settings.guidance.from.clone(),
            paths: d.paths.clone(),
            bytes: d.text.len(),
            cut_bytes: d.cut,
            missing: d.missing,
            files: files
                .iter()
                .filter(|f| f.guidance.contains(&d.source))
                .count(),
        })
        .collect();
    Plan {
        guidance,
        target: diff.description.clone(),
        skills: skills.iter().map(|s| s.skill.name.clone()).collect(),
        files,
        skipped_files: scanned.skipped,
        units,
        totals,
    }
}

fn planned_file(kept: &scan::Kept<'_>, settings: &Settings, skills: &[ActiveSkill]) -> PlannedFile {
    let (guidance, guidance_text) = settings.guidance.for_path(&kept.file.path.to_string());
    PlannedFile {
        guidance,
        guidance_text,
        path: kept.file.path.clone(),
        old_path: kept.file.old_path.clone(),
        status: kept.file.status,
        score: kept.score.value,
        reasons: kept.score.reasons.clone(),
        added: kept.file.added(),
        removed: kept.file.removed(),
        mode: match kept.mode {
            ChunkMode::WholeFile => "whole-file",
            _ => "per-hunk",
        },
        skills: kept
            .skills
            .iter()
            .map(|i| skills[*i].skill.name.clone())
            .collect(),
        chunks: chunk::chunk_file(
            kept.file,
            kept.content.as_deref(),
            kept.mode,
            &settings.chunking,
        ),
    }
}

/// The units of one file: one per chunk and skill, except that consolidated skills share
/// one unit (one request) per chunk. Each carries its prompt, built once here.
fn file_units(
    fi: usize,
    file: &PlannedFile,
    others: &[String],
    file_skills: &[usize],
    skills: &[ActiveSkill],
) -> Vec<Unit> {
    let facts = FileFacts {
        path: &file.path,
        old_path: file.old_path.as_ref(),
        status: file.status,
        other_files: others,
        guidance: &file.guidance_text,
    };
    let (together, alone): (Vec<usize>, Vec<usize>) = file_skills
        .iter()
        .partition(|si| skills[**si].config.consolidate);
    let mut groups: Vec<Vec<&crate::skills::Skill>> =
        alone.iter().map(|si| vec![&skills[*si].skill]).collect();
    if !together.is_empty() {
        groups.insert(0, together.iter().map(|si| &skills[*si].skill).collect());
    }
    let mut units = Vec::new();
    for (ci, chunk) in file.chunks.iter().enumerate() {
        for group in &groups {
            let names: Vec<String> = group.iter().map(|s| s.name.clone()).collect();
            let prompt = prompt::build(group, &facts, chunk);
            units.push(Unit {
                index: 0,
                skill: names.join("+"),
                skills: names,
                path: file.path.clone(),
                file: fi,
                chunk: ci,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                priority: file.score,
                optional: chunk.deletion_only(),
                prompt_chars: prompt.chars(),
                prompt: Arc::new(prompt),
            });
        }
    }
    units
}
