//! The local store: one SQLite database (compiled in) per cache directory, in WAL mode so
//! concurrent reviews on one machine read while one writes. Entries older than maxAge are
//! not served and are deleted; past maxSize the least recently used go first.

use super::key::Key;
use super::store::{Blob, Millis, Store, StoreError};
use rusqlite::types::Value;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The database's file name inside the cache directory.
pub const FILE_NAME: &str = "cache.sqlite";

/// `PRAGMA user_version` of the schema below.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY NOT NULL,
    value BLOB NOT NULL,
    checksum TEXT NOT NULL,
    size INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    last_used INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_last_used ON entries(last_used);
CREATE INDEX IF NOT EXISTS entries_created_at ON entries(created_at);
";

/// How large and old the store may grow, and how long it waits for another process's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of stored answers before the least recently used go.
    pub max_size: u64,
    /// Answers older than this are misses and are removed.
    pub max_age: Duration,
    /// Bounded wait for a lock held by another process; then the operation gives up.
    pub busy: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        let c = crate::config::CacheSettings::default();
        Limits {
            max_size: c.max_size,
            max_age: c.max_age,
            busy: Duration::from_secs(2),
        }
    }
}

/// What `warden cache stats` shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// The database file.
    pub path: PathBuf,
    /// Stored answers.
    pub entries: u64,
    /// Bytes of stored answers (what maxSize limits).
    pub bytes: u64,
    /// Bytes on disk: the database and its write-ahead log.
    pub file_bytes: u64,
    /// The oldest answer's time, Unix milliseconds.
    pub oldest_ms: Option<u64>,
    /// The newest answer's time, Unix milliseconds.
    pub newest_ms: Option<u64>,
    /// The configured size limit, bytes.
    pub max_size: u64,
    /// The configured age limit, seconds.
    pub max_age_secs: u64,
}

impl Stats {
    /// The stats of a cache that does not exist yet at `path`.
    pub fn empty(path: PathBuf, limits: Limits) -> Stats {
        Stats {
            path,
            entries: 0,
            bytes: 0,
            file_bytes: 0,
            oldest_ms: None,
            newest_ms: None,
            max_size: limits.max_size,
            max_age_secs: limits.max_age.as_secs(),
        }
    }
}

/// The local cache level: one SQLite database (WAL) in the cache directory.
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    limits: Limits,
}

impl SqliteStore {
    /// Opens `dir/cache.sqlite`, creating the directory and the database. A corrupt file is
    /// moved aside and a fresh database made in its place; the notice (second value) says
    /// so, for the one warning.
    pub fn open(
        dir: &Path,
        limits: Limits,
    ) -> Result<(SqliteStore, Option<StoreError>), StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Unwritable {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        })?;
        let path = dir.join(FILE_NAME);
        match Self::open_file(&path, limits) {
            Err(StoreError::Corrupt { detail, .. }) => {
                let moved_to = quarantine(&path);
                let notice = StoreError::Corrupt {
                    path: path.clone(),
                    detail,
                    moved_to,
                };
                Ok((Self::open_file(&path, limits)?, Some(notice)))
            }
            other => other.map(|s| (s, None)),
        }
    }

    fn open_file(path: &Path, limits: Limits) -> Result<SqliteStore, StoreError> {
        if path.is_dir() {
            return Err(StoreError::Unwritable {
                path: path.to_path_buf(),
                detail: "a directory is in the way of the database file".into(),
            });
        }
        let err = |e| classify(path, e);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(err)?;
        conn.busy_timeout(limits.busy).map_err(err)?;
        // auto_vacuum only takes on a database without tables; later it is a no-op.
        conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL;")
            .map_err(err)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Other {
                path: path.to_path_buf(),
                detail: format!("the database stays in {mode} journal mode, not WAL"),
            });
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(err)?;
        let mut store = SqliteStore {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
            limits,
        };
        store.init_schema()?;
        Ok(store)
    }

    fn init_schema(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e| classify(&path, e);
        let conn = self.conn.get_mut().expect("cache connection lock");
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        match version {
            SCHEMA_VERSION => Ok(()),
            0 => {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(err)?;
                tx.execute_batch(SCHEMA).map_err(err)?;
                tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION};"))
                    .map_err(err)?;
                tx.commit().map_err(err)
            }
            found => Err(StoreError::Incompatible { path, found }),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Turns a database error into a store error; a corrupt database is moved aside.
    fn fail(&self, e: rusqlite::Error) -> StoreError {
        match classify(&self.path, e) {
            StoreError::Corrupt { path, detail, .. } => StoreError::Corrupt {
                moved_to: quarantine(&path),
                path,
                detail,
            },
            other => other,
        }
    }

    fn cutoff(&self, now: Millis) -> i64 {
        ms_i64(now.saturating_sub(self.limits.max_age.as_millis() as u64))
    }

    /// What `warden cache stats` shows.
    pub fn stats(&self) -> Result<Stats, StoreError> {
        let conn = self.conn.lock().expect("cache connection lock");
        let (entries, bytes, oldest, newest): (i64, i64, Option<i64>, Option<i64>) = conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(size), 0), MIN(created_at), MAX(created_at) FROM entries",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .map_err(|e| self.fail(e))?;
        let file = |suffix: &str| {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
        };
        Ok(Stats {
            path: self.path.clone(),
            entries: entries as u64,
            bytes: bytes as u64,
            file_bytes: file("") + file("-wal"),
            oldest_ms: oldest.map(|v| v as u64),
            newest_ms: newest.map(|v| v as u64),
            max_size: self.limits.max_size,
            max_age_secs: self.limits.max_age.as_secs(),
        })
    }

    /// Deletes every entry; returns how many there were.
    pub fn clear(&self) -> Result<u64, StoreError> {
        let conn = self.conn.lock().expect("cache connection lock");
        let n = conn
            .execute("DELETE FROM entries", [])
            .map_err(|e| self.fail(e))?;
        // Give the space back to the file system (best effort: another reader may hold it).
        let _ = conn.execute_batch("PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE);");
        Ok(n as u64)
    }

    fn evict(&self, tx: &rusqlite::Transaction, now: Millis) -> rusqlite::Result<usize> {
        let mut gone = tx.execute(
            "DELETE FROM entries WHERE created_at < ?1",
            params![self.cutoff(now)],
        )?;
        let total: i64 = tx.query_row("SELECT COALESCE(SUM(size), 0) FROM entries", [], |r| {
            r.get(0)
        })?;
        if total as u64 > self.limits.max_size {
            // Keep the most recently used up to 90 % of maxSize, so the next few stores do
            // not each evict again.
            let target = self.limits.max_size - self.limits.max_size / 10;
            gone += tx.execute(
                "DELETE FROM entries WHERE key IN (
                    SELECT key FROM (
                        SELECT key, SUM(size) OVER (
                            ORDER BY last_used DESC, created_at DESC, key DESC
                        ) AS kept FROM entries
                    ) WHERE kept > ?1
                )",
                params![ms_i64(target)],
            )?;
        }
        Ok(gone)
    }
}

impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn get_many(&self, keys: &[Key], now: Millis) -> Result<Vec<Option<Blob>>, StoreError> {
        let conn = self.conn.lock().expect("cache connection lock");
        let mut stmt = conn
            .prepare_cached(
                "SELECT value, checksum FROM entries WHERE key = ?1 AND created_at >= ?2",
            )
            .map_err(|e| self.fail(e))?;
        let cutoff = self.cutoff(now);
        keys.iter()
            .map(|k| {
                stmt.query_row(params![k.as_str(), cutoff], |r| {
                    Ok((r.get::<_, Value>(0)?, r.get::<_, Value>(1)?))
                })
                .optional()
                .map(|row| match row {
                    // A value of the wrong type is damage, not data: a miss.
                    Some((Value::Blob(value), Value::Text(checksum))) => {
                        Some(Blob { value, checksum })
                    }
                    _ => None,
                })
                .map_err(|e| self.fail(e))
            })
            .collect()
    }

    fn put_many(
        &self,
        entries: &[(Key, Blob)],
        used: &[Key],
        now: Millis,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn.lock().expect("cache connection lock");
        let run = |conn: &mut Connection| -> rusqlite::Result<usize> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut put = tx.prepare_cached(
                    "INSERT INTO entries (key, value, checksum, size, created_at, last_used)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT(key) DO UPDATE SET value = excluded.value,
                        checksum = excluded.checksum, size = excluded.size,
                        created_at = excluded.created_at, last_used = excluded.last_used",
                )?;
                for (k, b) in entries {
                    let size = (k.as_str().len() + b.value.len() + b.checksum.len()) as i64;
                    put.execute(params![k.as_str(), b.value, b.checksum, size, ms_i64(now)])?;
                }
                let mut touch =
                    tx.prepare_cached("UPDATE entries SET last_used = ?2 WHERE key = ?1")?;
                for k in used {
                    touch.execute(params![k.as_str(), ms_i64(now)])?;
                }
            }
            let gone = self.evict(&tx, now)?;
            tx.commit()?;
            Ok(gone)
        };
        let gone = run(&mut conn).map_err(|e| self.fail(e))?;
        if gone > 0 {
            let _ = conn.execute_batch("PRAGMA incremental_vacuum;");
        }
        Ok(())
    }
}

fn ms_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Sorts a database error into what the review should tell the user.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    let detail = e.to_string();
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
            path,
            detail,
            moved_to: None,
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Locked { path, detail }
        }
        Some(
            ErrorCode::CannotOpen
            | ErrorCode::ReadOnly
            | ErrorCode::PermissionDenied
            | ErrorCode::DiskFull
            | ErrorCode::SystemIoFailure,
        ) => StoreError::Unwritable { path, detail },
        _ => StoreError::Other { path, detail },
    }
}

/// Moves a corrupt database (and its log files) aside, so the next open starts fresh and
/// the damaged file stays for a post-mortem. Returns where it went.
fn quarantine(path: &Path) -> Option<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let with = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let aside = with(&format!(".corrupt-{stamp}"));
    std::fs::rename(path, &aside).ok()?;
    for log in ["-wal", "-shm"] {
        let mut target = aside.clone().into_os_string();
        target.push(log);
        let _ = std::fs::rename(with(log), target);
    }
    Some(aside)
}

#[cfg(test)]
#[path = "sqlite_tests.rs"]
mod tests;
