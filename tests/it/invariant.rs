//! The accounting invariant on generated diffs: for any change to any set of files, and
//! any chunking settings, planned + skipped files account for every file and every
//! changed line, each changed line lands in exactly one chunk, and the counts match
//! `git diff --numstat`.

use crate::support::Repo;
use proptest::prelude::*;
use std::collections::BTreeMap;
use warden::chunk::ChunkLineKind;
use warden::diff::{LineKind, Target};

#[derive(Debug, Clone)]
enum Edit {
    Keep,
    Delete,
    Rewrite(Vec<u8>, Vec<(usize, usize, Vec<u8>)>),
}

fn line_text(seed: u8, i: usize) -> String {
    match seed % 5 {
        0 => String::new(),
        1 => "}".to_string(),
        2 => format!("fn f{i}() {{"),
        _ => format!("    let x{i} = {seed};"),
    }
}

fn content(seeds: &[u8]) -> String {
    seeds
        .iter()
        .enumerate()
        .map(|(i, s)| line_text(*s, i) + "\n")
        .collect()
}

fn file_strategy() -> impl Strategy<Value = (Vec<u8>, Edit)> {
    let base = prop::collection::vec(any::<u8>(), 0..80);
    let edit = prop_oneof![
        1 => Just(Edit::Keep),
        1 => Just(Edit::Delete),
        4 => (
            prop::collection::vec(any::<u8>(), 0..40),
            prop::collection::vec((0usize..80, 0usize..6, prop::collection::vec(any::<u8>(), 0..6)), 0..6)
        ).prop_map(|(extra, ops)| Edit::Rewrite(extra, ops)),
    ];
    (base, edit)
}

fn apply(base: &[u8], edit: &Edit) -> Option<Vec<u8>> {
    match edit {
        Edit::Keep => Some(base.to_vec()),
        Edit::Delete => None,
        Edit::Rewrite(extra, ops) => {
            let mut v = base.to_vec();
            for (at, del, ins) in ops {
                let at = (*at).min(v.len());
                let end = (at + del).min(v.len());
                v.splice(at..end, ins.iter().map(|b| b.wrapping_add(1)));
            }
            v.extend(extra);
            Some(v)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, .. ProptestConfig::default() })]

    #[test]
    fn planned_and_skipped_account_for_every_changed_line(
        files in prop::collection::vec(file_strategy(), 1..6),
        added_files in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..30), 0..3),
        max_chunk in 200usize..1500,
        gap in 0u32..40,
        context in 0u32..6,
        coalesce in any::<bool>(),
    ) {
        let r = Repo::new();
        r.write("README.md", "base\n");
        for (i, (base, _)) in files.iter().enumerate() {
            r.write(&format!("src/f{i}.rs"), content(base));
        }
        r.commit_all("base");
        for (i, (base, edit)) in files.iter().enumerate() {
            match apply(base, edit) {
                Some(new) => { r.write(&format!("src/f{i}.rs"), content(&new)); }
                None => { r.remove(&format!("src/f{i}.rs")); }
            }
        }
        for (i, seeds) in added_files.iter().enumerate() {
            r.write(&format!("src/new{i}.rs"), content(seeds));
        }

        let mut settings = warden::config::Settings::default();
        settings.chunking.max_chunk_size = max_chunk;
        settings.chunking.max_gap_lines = gap;
        settings.chunking.context_lines = context;
        settings.chunking.coalesce = coalesce;
        let catalog = warden::skills::discover(None).unwrap();
        let active = warden::skills::select(&catalog, &settings, &[]).unwrap();
        let repo = git2::Repository::open(r.path()).unwrap();
        let sel = warden::diff::git::select(&repo, &Target::Default, None).unwrap();
        let plan = warden::plan::build(&sel.diff, &sel.content, &settings, &active);

        // Every file exactly once.
        let mut listed: Vec<String> = plan.files.iter().map(|f| f.path.to_string())
            .chain(plan.skipped_files.iter().map(|s| s.path.to_string())).collect();
        listed.sort();
        let mut want: Vec<String> = sel.diff.files.iter().map(|f| f.path.to_string()).collect();
        want.sort();
        prop_assert_eq!(&listed, &want);

        // Every added and removed line of a planned file is in exactly one chunk.
        for pf in &plan.files {
            let fc = sel.diff.files.iter().find(|f| f.path == pf.path).unwrap();
            let mut diff_lines: BTreeMap<(char, u32), usize> = BTreeMap::new();
            for l in fc.hunks.iter().flat_map(|h| &h.lines) {
                match l.kind {
                    LineKind::Added => *diff_lines.entry(('+', l.new_no.unwrap())).or_default() += 1,
                    LineKind::Removed => *diff_lines.entry(('-', l.old_no.unwrap())).or_default() += 1,
                    LineKind::Context => {}
                }
            }
            let mut chunk_lines: BTreeMap<(char, u32), usize> = BTreeMap::new();
            for c in &pf.chunks {
                for l in &c.lines {
                    match l.kind {
                        ChunkLineKind::Added => *chunk_lines.entry(('+', l.new_no.unwrap())).or_default() += 1,
                        ChunkLineKind::Removed => *chunk_lines.entry(('-', l.old_no.unwrap())).or_default() += 1,
                        _ => {}
                    }
                }
                prop_assert!(c.start_line <= c.end_line);
            }
            prop_assert_eq!(&chunk_lines, &diff_lines, "chunks of {}", pf.path);
        }
        let t = &plan.totals;
        prop_assert_eq!(t.planned_changed_lines + t.skipped_changed_lines, t.changed_lines);

        // And the totals agree with git itself.
        r.git(&["add", "-A"]);
        let oracle: usize = r.numstat(&["--cached", "HEAD", "--no-renames"])
            .iter()
            .filter_map(|(_, c)| c.map(|(a, d)| a + d))
            .sum();
        let no_renames: usize = sel.diff.files.iter().map(|f| f.changed()).sum();
        // Renames can only lower the count (a moved file's lines stop counting twice).
        prop_assert!(no_renames <= oracle, "{} > {}", no_renames, oracle);
        let renamed = sel.diff.files.iter().any(|f| f.old_path.is_some());
        if !renamed {
            prop_assert_eq!(no_renames, oracle);
        }
    }
}
