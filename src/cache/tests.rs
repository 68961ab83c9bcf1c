//! The cache facade over a real SQLite file: one warning per run, then cold; damaged values
//! are misses, never findings.

use super::*;
use crate::findings::ModelFinding;
use crate::severity::{Confidence, Severity};
use std::path::Path;

fn warnings() -> (Warn, Arc<Mutex<Vec<String>>>) {
    let list = Arc::new(Mutex::new(Vec::new()));
    let l = list.clone();
    (
        Arc::new(move |m: &str| l.lock().unwrap().push(m.to_string())),
        list,
    )
}

fn open_in(dir: &Path, settings: &CacheSettings, warn: Warn) -> Option<Cache> {
    Cache::open(
        Request {
            settings,
            disabled: false,
            sources: location::Sources {
                flag: Some(dir.to_path_buf()),
                ..Default::default()
            },
        },
        warn,
    )
}

/// An answer with one finding titled `title` (shared with the shared level's tests).
pub(super) fn answer(title: &str) -> Answer {
    let f = ModelFinding {
        severity: Severity::High,
        confidence: Confidence::High,
        title: title.into(),
        description: "d".into(),
        line: 5,
        end_line: 5,
        suggestion: None,
        replacement: None,
        skill: None,
    };
    Answer::new(
        value::Producer {
            route: "primary",
            provider: "openai",
            model: "m",
            at: 1,
        },
        &[f],
        3,
        0,
    )
}

/// The `n`th test key.
pub(super) fn k(n: u32) -> Key {
    Key::from_hex(&format!("{n:064x}"))
}

#[test]
fn answers_round_trip_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (warn, said) = warnings();
    let c = open_in(dir.path(), &CacheSettings::default(), warn.clone()).unwrap();
    c.put(&[(k(1), answer("a"))], &[]);
    drop(c);
    let c = open_in(dir.path(), &CacheSettings::default(), warn).unwrap();
    assert_eq!(c.get(&[k(1), k(2)]), vec![Some(answer("a")), None]);
    assert!(said.lock().unwrap().is_empty());
}

#[test]
fn turned_off_by_flag_or_config_opens_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (warn, _) = warnings();
    let off = CacheSettings {
        enabled: false,
        ..CacheSettings::default()
    };
    assert!(open_in(dir.path(), &off, warn.clone()).is_none());
    let req = Request {
        settings: &CacheSettings::default(),
        disabled: true,
        sources: location::Sources {
            flag: Some(dir.path().to_path_buf()),
            ..Default::default()
        },
    };
    assert!(Cache::open(req, warn).is_none());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file made"
    );
}

#[test]
fn a_checksum_mismatch_is_a_miss_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (warn, said) = warnings();
    let c = open_in(dir.path(), &CacheSettings::default(), warn).unwrap();
    c.put(
        &[
            (k(1), answer("a")),
            (k(2), answer("b")),
            (k(3), answer("c")),
        ],
        &[],
    );
    let raw = rusqlite::Connection::open(dir.path().join(sqlite::FILE_NAME)).unwrap();
    // Flip the title of two stored values without fixing their checksums.
    for key in [k(1), k(2)] {
        raw.execute(
            "UPDATE entries SET value = CAST(replace(CAST(value AS TEXT), '\"title\":\"', '\"title\":\"x') AS BLOB) WHERE key = ?1",
            [key.as_str()],
        )
        .unwrap();
    }
    let got = c.get(&[k(1), k(2), k(3)]);
    assert_eq!(got, vec![None, None, Some(answer("c"))]);
    let said = said.lock().unwrap();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("2 stored answer(s) failed their checksum"),
        "{}",
        said[0]
    );
}

#[test]
fn a_lock_held_elsewhere_warns_once_and_the_run_goes_cold() {
    let dir = tempfile::tempdir().unwrap();
    let (warn, said) = warnings();
    let c = open_in(dir.path(), &CacheSettings::default(), warn).unwrap();
    c.put(&[(k(1), answer("a"))], &[]);
    let other = rusqlite::Connection::open(dir.path().join(sqlite::FILE_NAME)).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE;").unwrap();
    c.put(&[(k(2), answer("b"))], &[]);
    c.put(&[(k(3), answer("c"))], &[]);
    assert_eq!(c.get(&[k(1)]), vec![None], "after a fault the run is cold");
    let said = said.lock().unwrap();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("locked") && said[0].contains("as if cold"),
        "{}",
        said[0]
    );
    other.execute_batch("ROLLBACK;").unwrap();
}

#[test]
fn a_corrupt_file_warns_and_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(sqlite::FILE_NAME), vec![7u8; 9000]).unwrap();
    let (warn, said) = warnings();
    let c = open_in(dir.path(), &CacheSettings::default(), warn).unwrap();
    assert_eq!(c.get(&[k(1)]), vec![None]);
    c.put(&[(k(1), answer("a"))], &[]);
    assert_eq!(c.get(&[k(1)]), vec![Some(answer("a"))]);
    let said = said.lock().unwrap();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("corrupt") && said[0].contains("moved it aside"),
        "{}",
        said[0]
    );
}

#[test]
fn an_unusable_directory_warns_and_gives_no_cache() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let (warn, said) = warnings();
    assert!(open_in(&file, &CacheSettings::default(), warn).is_none());
    let said = said.lock().unwrap();
    assert_eq!(said.len(), 1);
    assert!(
        said[0].contains("cannot use the cache directory"),
        "{}",
        said[0]
    );
}
