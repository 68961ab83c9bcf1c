//! The property: for patches made by real `diff -ruN` on random small trees, warden reads
//! every file git reads with the same added/deleted counts and the same create/delete
//! status (`git apply --numstat --summary`), lists every binary file, and loses none.

use crate::support::patch::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

const NAMES: &[&str] = &[
    "a.rs",
    "b.txt",
    "sp ace.rs",
    "d/e.rs",
    "d/deeper/f g.txt",
    "q\"uote.rs",
    "tab\there.txt",
    "caf\u{e9}.rs",
];

const WORDS: &[&str] = &[
    "fn a() {",
    "}",
    "",
    "    let x = 1;",
    "    call();",
    "// note",
];

#[derive(Debug, Clone)]
enum Content {
    Missing,
    Text(Vec<u8>, bool),
    Binary(Vec<u8>),
}

impl Content {
    fn bytes(&self) -> Option<Vec<u8>> {
        match self {
            Content::Missing => None,
            Content::Text(words, eol) => {
                let mut s = words
                    .iter()
                    .map(|w| WORDS[*w as usize % WORDS.len()])
                    .collect::<Vec<_>>()
                    .join("\n");
                if *eol && !words.is_empty() {
                    s.push('\n');
                }
                Some(s.into_bytes())
            }
            Content::Binary(b) => {
                let mut v = b.clone();
                v.insert(0, 0);
                Some(v)
            }
        }
    }
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        2 => Just(Content::Missing),
        6 => (prop::collection::vec(any::<u8>(), 0..30), any::<bool>())
            .prop_map(|(w, eol)| Content::Text(w, eol)),
        1 => prop::collection::vec(any::<u8>(), 0..8).prop_map(Content::Binary),
    ]
}

/// The old side and an edit of it, so most files share lines with their new side.
fn pair() -> impl Strategy<Value = (Content, Content)> {
    (content(), content(), 0usize..4, any::<u8>()).prop_map(|(old, other, how, w)| {
        let new = match (&old, how) {
            (Content::Text(words, eol), 0 | 1) => {
                let mut words = words.clone();
                let at = w as usize % (words.len() + 1);
                if how == 0 {
                    words.insert(at, w);
                } else if at < words.len() {
                    words[at] = w.wrapping_add(1);
                }
                Content::Text(words, *eol)
            }
            _ => other,
        };
        (old, new)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn warden_reads_diff_run_output_as_git_apply_does(
        files in prop::collection::vec(pair(), NAMES.len())
    ) {
        let t = Trees::new();
        let mut changed = BTreeSet::new();
        let mut binary = BTreeSet::new();
        for (name, (old, new)) in NAMES.iter().zip(&files) {
            let (o, n) = (old.bytes(), new.bytes());
            if let Some(b) = &o { t.put("a", name, b); }
            if let Some(b) = &n { t.put("b", name, b); }
            // diff -N reads a missing file as empty.
            let (o, n) = (o.unwrap_or_default(), n.unwrap_or_default());
            if o != n {
                changed.insert(name.to_string());
                if o.contains(&0) || n.contains(&0) {
                    binary.insert(name.to_string());
                }
            }
        }
        let patch = t.diff_run();
        let set = ours(&patch);
        prop_assert_eq!(text_reads(&set), judged_text(&patch));
        let got: BTreeSet<String> = set.files.iter().map(|f| f.path.to_string()).collect();
        prop_assert_eq!(got.len(), set.files.len(), "a file listed twice");
        prop_assert_eq!(&got, &changed);
        let got_binary: BTreeSet<String> = set
            .files
            .iter()
            .filter(|f| f.binary)
            .map(|f| f.path.to_string())
            .collect();
        prop_assert_eq!(&got_binary, &binary);
    }
}
