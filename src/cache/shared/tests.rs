//! The shared level over an in-memory store that can fail, stall or hold garbage: sealed
//! values round-trip, anything else is a miss, and a failed call turns the level off.

use super::*;
use crate::cache::tests::{answer, k};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Default)]
struct Memory {
    map: Mutex<HashMap<String, Vec<u8>>>,
    ttls: Mutex<Vec<Duration>>,
    calls: AtomicUsize,
    fail: std::sync::atomic::AtomicBool,
}

impl SharedStore for Arc<Memory> {
    fn location(&self) -> String {
        "memory".into()
    }

    fn get_many<'a>(
        &'a self,
        keys: &'a [Key],
    ) -> BoxFuture<'a, Result<Vec<Option<Vec<u8>>>, SharedError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.fail.load(Ordering::SeqCst) {
                return Err(SharedError::Down("down".into()));
            }
            let map = self.map.lock().unwrap();
            Ok(keys.iter().map(|k| map.get(k.as_str()).cloned()).collect())
        })
    }

    fn put_many<'a>(
        &'a self,
        entries: &'a [(Key, Vec<u8>)],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.fail.load(Ordering::SeqCst) {
                return Err(SharedError::Down("down".into()));
            }
            self.ttls.lock().unwrap().push(ttl);
            let mut map = self.map.lock().unwrap();
            for (k, v) in entries {
                map.insert(k.as_str().to_string(), v.clone());
            }
            Ok(())
        })
    }
}

fn level() -> (Shared, Arc<Memory>, Arc<Mutex<Vec<String>>>) {
    let mem = Arc::new(Memory::default());
    let said = Arc::new(Mutex::new(Vec::new()));
    let s = said.clone();
    let warn: Warn = Arc::new(move |m: &str| s.lock().unwrap().push(m.to_string()));
    let shared = Shared::new(Box::new(mem.clone()), Duration::from_secs(60), warn);
    (shared, mem, said)
}

#[tokio::test]
async fn answers_round_trip_with_the_cache_max_age_as_ttl() {
    let (shared, mem, said) = level();
    shared.put(&[(k(1), answer("a"))]).await;
    assert_eq!(
        shared.get(&[k(1), k(2)]).await,
        vec![Some(answer("a")), None]
    );
    assert_eq!(*mem.ttls.lock().unwrap(), [Duration::from_secs(60)]);
    assert!(said.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_damaged_or_foreign_value_is_a_miss_with_one_warning() {
    let (shared, mem, said) = level();
    let good = seal(&answer("a"));
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    let mut no_newline = good.clone();
    no_newline[64] = b' ';
    {
        let mut map = mem.map.lock().unwrap();
        map.insert(k(1).to_string(), flipped);
        map.insert(k(2).to_string(), b"garbage".to_vec());
        map.insert(k(3).to_string(), no_newline);
        map.insert(k(4).to_string(), good);
    }
    let got = shared.get(&[k(1), k(2), k(3), k(4)]).await;
    assert_eq!(got, vec![None, None, None, Some(answer("a"))]);
    let said = said.lock().unwrap();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("3 stored answer(s) failed their checksum"),
        "{said:?}"
    );
}

#[tokio::test]
async fn a_failed_call_turns_the_level_off_for_the_run() {
    let (shared, mem, said) = level();
    mem.fail.store(true, Ordering::SeqCst);
    assert_eq!(shared.get(&[k(1), k(2)]).await, vec![None, None]);
    mem.fail.store(false, Ordering::SeqCst);
    shared.put(&[(k(1), answer("a"))]).await;
    assert_eq!(shared.get(&[k(1)]).await, vec![None]);
    assert_eq!(
        mem.calls.load(Ordering::SeqCst),
        1,
        "no call after the fault"
    );
    assert!(
        said.lock().unwrap().is_empty(),
        "call failures are the fleet handle's to report"
    );
}

#[tokio::test]
async fn large_answers_stay_local_and_many_keys_go_in_batches() {
    let (shared, mem, _) = level();
    let mut big = answer("a");
    big.model = "x".repeat(MAX_VALUE_BYTES);
    shared.put(&[(k(1), big), (k(2), answer("b"))]).await;
    assert_eq!(mem.map.lock().unwrap().len(), 1, "only the small answer");
    let keys: Vec<Key> = (0..(BATCH as u32 * 2 + 1)).map(k).collect();
    let before = mem.calls.load(Ordering::SeqCst);
    let got = shared.get(&keys).await;
    assert_eq!(got.len(), keys.len());
    assert_eq!(got[2], Some(answer("b")));
    assert_eq!(mem.calls.load(Ordering::SeqCst) - before, 3);
    // A value over the limit read back (written by something else) is a miss.
    let mut huge = seal(&answer("c"));
    huge.resize(MAX_VALUE_BYTES + 1, b' ');
    mem.map.lock().unwrap().insert(k(9).to_string(), huge);
    assert_eq!(shared.get(&[k(9)]).await, vec![None]);
}
