//! The SQLite store against real database files in temp dirs, with the faults a cache
//! directory meets: garbage, damaged pages, locks held by another connection, paths that
//! cannot be written, tampered values, files of another format.

use super::*;

const DAY: u64 = 86_400_000;

fn limits() -> Limits {
    Limits {
        max_size: 1 << 20,
        max_age: Duration::from_secs(30 * 86_400),
        busy: Duration::from_millis(100),
    }
}

fn key(n: u32) -> Key {
    Key::from_hex(&format!("{n:064x}"))
}

fn blob(text: &str) -> Blob {
    Blob::seal(text.as_bytes().to_vec())
}

fn open(dir: &Path, l: Limits) -> SqliteStore {
    let (s, notice) = SqliteStore::open(dir, l).unwrap();
    assert!(notice.is_none(), "{notice:?}");
    s
}

#[test]
fn stores_and_reads_back_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(&dir.path().join("nested/cache"), limits());
    s.put_many(&[(key(1), blob("one"))], &[], 1000).unwrap();
    let got = s.get_many(&[key(1), key(2)], 2000).unwrap();
    assert_eq!(got, vec![Some(blob("one")), None]);
    assert!(got[0].as_ref().unwrap().intact());
    let raw = Connection::open(dir.path().join("nested/cache").join(FILE_NAME)).unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // A second store on the same file (another process's view) sees the entry.
    let other = open(&dir.path().join("nested/cache"), limits());
    assert_eq!(
        other.get_many(&[key(1)], 3000).unwrap()[0],
        Some(blob("one"))
    );
    let st = other.stats().unwrap();
    assert_eq!(st.entries, 1);
    assert!(st.bytes > 3 && st.file_bytes > 0, "{st:?}");
}

#[test]
fn entries_older_than_max_age_are_misses_and_get_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), limits());
    s.put_many(&[(key(1), blob("old"))], &[], 1).unwrap();
    assert!(s.get_many(&[key(1)], 29 * DAY).unwrap()[0].is_some());
    assert!(s.get_many(&[key(1)], 31 * DAY).unwrap()[0].is_none());
    // Using it does not make it young: age counts from when the model answered.
    s.put_many(&[], &[key(1)], 20 * DAY).unwrap();
    s.put_many(&[(key(2), blob("new"))], &[], 31 * DAY).unwrap();
    assert_eq!(s.stats().unwrap().entries, 1, "the old entry was deleted");
}

#[test]
fn past_max_size_the_least_recently_used_go_first() {
    let dir = tempfile::tempdir().unwrap();
    let value = "x".repeat(1000);
    // Each entry is ~1.1 kB: room for three.
    let s = open(
        dir.path(),
        Limits {
            max_size: 3500,
            ..limits()
        },
    );
    for (n, t) in [(1, 10), (2, 20), (3, 30)] {
        s.put_many(&[(key(n), blob(&value))], &[], t).unwrap();
    }
    // Entry 1 is used again, so entry 2 is now the least recently used.
    s.put_many(&[], &[key(1)], 40).unwrap();
    s.put_many(&[(key(4), blob(&value))], &[], 50).unwrap();
    let got = s.get_many(&[key(1), key(2), key(3), key(4)], 60).unwrap();
    let kept: Vec<bool> = got.iter().map(Option::is_some).collect();
    // Eviction keeps 90 % of maxSize: entries 4 and 1 (the most recently used) fit.
    assert_eq!(kept, vec![true, false, false, true]);
    assert!(s.stats().unwrap().bytes <= 3500);
}

#[test]
fn a_garbage_file_is_moved_aside_and_a_fresh_database_made() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, b"this is not a database, just bytes ".repeat(200)).unwrap();
    let (s, notice) = SqliteStore::open(dir.path(), limits()).unwrap();
    let Some(StoreError::Corrupt { moved_to, .. }) = notice else {
        panic!("expected a corrupt notice, got {notice:?}");
    };
    let aside = moved_to.expect("moved aside");
    assert!(
        std::fs::read(&aside).unwrap().starts_with(b"this is not"),
        "the damaged file is kept for a post-mortem"
    );
    s.put_many(&[(key(1), blob("v"))], &[], 1).unwrap();
    assert!(s.get_many(&[key(1)], 2).unwrap()[0].is_some());
}

#[test]
fn a_damaged_page_found_while_reading_moves_the_file_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    {
        let s = open(dir.path(), limits());
        let entries: Vec<(Key, Blob)> = (0..200)
            .map(|n| (key(n), blob(&format!("{n}").repeat(300))))
            .collect();
        s.put_many(&entries, &[], 1).unwrap();
        let conn = s.conn.lock().unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 16 * 4096, "several pages: {}", bytes.len());
    // Keep page 1 (the header and schema), wreck the b-tree pages after it.
    for b in &mut bytes[4096..] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let s = open(dir.path(), limits());
    let keys: Vec<Key> = (0..200).map(key).collect();
    match s.get_many(&keys, 2) {
        Err(StoreError::Corrupt { moved_to, .. }) => {
            assert!(moved_to.is_some_and(|p| p.exists()));
            assert!(!path.exists(), "the damaged file left its place");
        }
        other => panic!("expected corrupt, got {other:?}"),
    }
}

#[test]
fn a_writer_lock_held_elsewhere_fails_writes_within_the_wait_and_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), limits());
    s.put_many(&[(key(1), blob("v"))], &[], 1).unwrap();
    let other = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE;").unwrap();
    let started = std::time::Instant::now();
    let err = s.put_many(&[(key(2), blob("w"))], &[], 2).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(
        err.to_string().contains("locked by another process"),
        "{err}"
    );
    // Bounded by the busy wait (100 ms here), not by the other holder.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        s.get_many(&[key(1)], 3).unwrap()[0].is_some(),
        "WAL readers are not blocked"
    );
    other.execute_batch("ROLLBACK;").unwrap();
    s.put_many(&[(key(2), blob("w"))], &[], 4).unwrap();
}

#[test]
fn an_exclusive_holder_makes_reads_fail_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path(), limits()));
    let other = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    other
        .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; INSERT INTO entries VALUES ('k', x'00', 'c', 1, 1, 1); COMMIT;")
        .unwrap();
    match SqliteStore::open(dir.path(), limits()) {
        Err(StoreError::Locked { .. }) => {}
        Ok((s, _)) => {
            let r = s.get_many(&[key(1)], 1);
            assert!(matches!(r, Err(StoreError::Locked { .. })), "{r:?}");
        }
        Err(e) => panic!("expected locked, got {e}"),
    }
}

#[test]
fn paths_that_cannot_hold_a_database_are_unwritable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let e = SqliteStore::open(&file.join("cache"), limits())
        .err()
        .unwrap();
    assert!(matches!(e, StoreError::Unwritable { .. }), "{e:?}");
    assert!(e.to_string().contains("--cache-dir"), "{e}");
    std::fs::create_dir_all(dir.path().join("d").join(FILE_NAME)).unwrap();
    let e = SqliteStore::open(&dir.path().join("d"), limits())
        .err()
        .unwrap();
    assert!(matches!(e, StoreError::Unwritable { .. }), "{e:?}");
}

#[test]
fn tampered_and_mistyped_values_come_back_broken_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), limits());
    s.put_many(&[(key(1), blob("good")), (key(2), blob("good"))], &[], 1)
        .unwrap();
    let raw = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    raw.execute(
        "UPDATE entries SET value = x'676f6f65' WHERE key = ?1",
        [key(1).as_str()],
    )
    .unwrap();
    raw.execute(
        "UPDATE entries SET value = 'text' WHERE key = ?1",
        [key(2).as_str()],
    )
    .unwrap();
    let got = s.get_many(&[key(1), key(2)], 2).unwrap();
    assert!(
        !got[0].as_ref().unwrap().intact(),
        "a checksum mismatch shows"
    );
    assert_eq!(got[1], None);
}

#[test]
fn a_database_of_another_format_is_refused_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path(), limits()));
    let raw = Connection::open(dir.path().join(FILE_NAME)).unwrap();
    raw.execute_batch("PRAGMA user_version = 7;").unwrap();
    drop(raw);
    let e = SqliteStore::open(dir.path(), limits()).err().unwrap();
    assert!(
        matches!(e, StoreError::Incompatible { found: 7, .. }),
        "{e:?}"
    );
}

#[test]
fn clear_empties_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), limits());
    s.put_many(&[(key(1), blob("a")), (key(2), blob("b"))], &[], 1)
        .unwrap();
    assert_eq!(s.clear().unwrap(), 2);
    assert_eq!(s.stats().unwrap().entries, 0);
}
