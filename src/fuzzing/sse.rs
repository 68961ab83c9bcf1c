//! The SSE reader on any stream, fed whole, a byte at a time and in splits derived from
//! the input: the same items and the same error whatever the split, well-formed items,
//! and a line cap that trips exactly when some line is longer than the cap.

use crate::provider::sse::{SseCaps, SseError, SseItem, SseReader};

/// What one reading of a stream gave.
#[derive(Debug, PartialEq)]
struct Read {
    items: Vec<SseItem>,
    result: Result<(), SseError>,
    partial: bool,
}

/// Feeds `data` cut at `cuts` (sorted offsets) and stops at the first error, as the
/// provider client does.
fn read(caps: SseCaps, data: &[u8], cuts: &[usize]) -> Read {
    let mut r = SseReader::with_caps(caps);
    let mut items = Vec::new();
    let mut result = Ok(());
    let mut from = 0;
    for &to in cuts.iter().chain([&data.len()]) {
        result = r.feed(&data[from..to], &mut items);
        from = to;
        if result.is_err() {
            break;
        }
    }
    Read {
        items,
        result,
        partial: r.has_partial(),
    }
}

/// Reads `data` with the default caps and with small caps derived from it, each whole,
/// byte by byte and in two pseudo-random splits, and checks the readings agree.
pub fn check(data: &[u8]) {
    let h = super::hash(data);
    let small = SseCaps {
        line: 1 + (h % 160) as usize,
        event: 1 + ((h >> 8) % 320) as usize,
    };
    let bytewise: Vec<usize> = (1..data.len()).collect();
    for caps in [SseCaps::default(), small] {
        let whole = read(caps, data, &[]);
        well_formed(&whole, caps, data);
        for cuts in [bytewise.clone(), cuts(data.len(), h), cuts(data.len(), !h)] {
            let got = read(caps, data, &cuts);
            assert_eq!(got.items, whole.items, "items depend on the split {cuts:?}");
            assert_eq!(
                got.result, whole.result,
                "error depends on the split {cuts:?}"
            );
            if whole.result.is_ok() {
                assert_eq!(
                    got.partial, whole.partial,
                    "pending state depends on the split"
                );
            }
        }
    }
}

/// Up to 16 sorted cut points in `0..=len` from a simple generator seeded with `seed`.
fn cuts(len: usize, seed: u64) -> Vec<usize> {
    let mut x = seed | 1;
    let n = (seed % 17) as usize;
    let mut out: Vec<usize> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (len as u64 + 1)) as usize
        })
        .collect();
    out.sort_unstable();
    out
}

/// Items carry no line ends (but the `\n` joining data lines), events stay inside the
/// event cap, and the line cap trips exactly when a line is longer than it.
fn well_formed(r: &Read, caps: SseCaps, data: &[u8]) {
    for item in &r.items {
        match item {
            SseItem::Comment(c) => assert!(!c.contains(['\r', '\n']), "comment {c:?}"),
            SseItem::Event { event, data } => {
                let name = event.as_deref().unwrap_or("");
                assert!(!name.contains(['\r', '\n']), "event name {name:?}");
                assert!(!data.contains('\r'), "event data {data:?}");
                assert!(
                    data.len() <= caps.event,
                    "{} bytes past the event cap",
                    data.len()
                );
            }
        }
    }
    let longest = data
        .split(|b| *b == b'\n' || *b == b'\r')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0);
    match r.result {
        Ok(()) => assert!(
            longest <= caps.line,
            "a {longest}-byte line passed the line cap"
        ),
        Err(SseError::LineTooLong { cap }) => {
            assert_eq!(cap, caps.line);
            assert!(longest > caps.line, "line cap tripped without a long line");
        }
        Err(SseError::EventTooLarge { cap }) => assert_eq!(cap, caps.event),
    }
}
