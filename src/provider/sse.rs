//! A small incremental server-sent-events reader. Unlike most, it reports comment lines
//! (`: OPENROUTER PROCESSING`) as items, so the byte counter sees keep-alives while the
//! idle clock can ignore them.
//!
//! A provider is not trusted to send sane streams, so the reader is linear (each byte is
//! looked at once, whatever the chunking: the scan position is kept between feeds) and
//! bounded (one line and one event are capped; past a cap the reader fails and stays
//! failed). Lines may end with `\n`, `\r\n` or a lone `\r`. The items and the error are
//! the same however the input is split, which is what a fuzz target can check by
//! feeding arbitrary splits.

use std::fmt;

/// One item of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// An event: its `event:` name (if any) and its `data:` lines joined with `\n`.
    Event {
        /// The `event:` name, if the event had one.
        event: Option<String>,
        /// The `data:` lines, joined with `\n`.
        data: String,
    },
    /// A comment line (starts with `:`), without the colon.
    Comment(String),
}

/// The most one line and one event may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseCaps {
    /// Bytes of one line, without its line end.
    pub line: usize,
    /// Bytes of one event's data (its `data:` values joined with `\n`).
    pub event: usize,
}

impl Default for SseCaps {
    fn default() -> Self {
        SseCaps {
            line: 1024 * 1024,
            event: 1024 * 1024,
        }
    }
}

/// Why the reader stopped: a cap was passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line passed its cap without a line end.
    LineTooLong {
        /// The cap, bytes.
        cap: usize,
    },
    /// An event's data passed its cap.
    EventTooLarge {
        /// The cap, bytes.
        cap: usize,
    },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::LineTooLong { cap } => write!(
                f,
                "a stream line passed the {} line cap without a line end",
                size(*cap)
            ),
            SseError::EventTooLarge { cap } => write!(
                f,
                "a stream event's data passed the {} event cap",
                size(*cap)
            ),
        }
    }
}

impl std::error::Error for SseError {}

/// `1 MiB`, `8 MiB`, `512 KiB`, `100 bytes`: caps as people write them.
pub(crate) fn size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// A linear, capped reader: it keeps its scan position, so feeding a stream in any
/// split costs the same, and a line or event past its cap stops it with an error.
#[derive(Debug, Default)]
pub struct SseReader {
    caps: SseCaps,
    /// Bytes of the unfinished line (never a line end).
    line: Vec<u8>,
    /// The previous byte was a `\r`: a `\n` right after it belongs to the same line end.
    after_cr: bool,
    event: Option<String>,
    data: String,
    /// Whether the pending event has a `data:` line (an empty one counts).
    has_data: bool,
    failed: Option<SseError>,
}

impl SseReader {
    /// A reader with the default caps (1 MiB per line and per event).
    pub fn new() -> Self {
        Self::default()
    }

    /// A reader with these caps.
    pub fn with_caps(caps: SseCaps) -> Self {
        SseReader {
            caps,
            ..Self::default()
        }
    }

    /// Feeds bytes and appends the items they complete to `out`. Past a cap it returns
    /// the error (after the items completed before it) and every later call returns it
    /// again.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') else {
                self.extend_line(rest)?;
                break;
            };
            self.extend_line(&rest[..end])?;
            let cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            let r = self.finish_line(&line, out);
            self.line = line;
            self.line.clear();
            r?;
        }
        Ok(())
    }

    /// Whether bytes of an unfinished line or event are pending (the fuzz invariants
    /// compare it across splits of the same input).
    pub(crate) fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data || self.event.is_some()
    }

    fn fail(&mut self, e: SseError) -> Result<(), SseError> {
        self.failed = Some(e);
        Err(e)
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.caps.line {
            return self.fail(SseError::LineTooLong {
                cap: self.caps.line,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn finish_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        if line.is_empty() {
            if self.has_data || self.event.is_some() {
                self.has_data = false;
                out.push(SseItem::Event {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data),
                });
            }
            return Ok(());
        }
        let line = String::from_utf8_lossy(line);
        if let Some(comment) = line.strip_prefix(':') {
            out.push(SseItem::Comment(comment.trim_start().to_string()));
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*line, ""),
        };
        match field {
            "data" => {
                let joined = self.data.len() + usize::from(self.has_data) + value.len();
                if joined > self.caps.event {
                    return self.fail(SseError::EventTooLarge {
                        cap: self.caps.event,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {} // id:, retry: and unknown fields do not matter here
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(r: &mut SseReader, bytes: &[u8]) -> (Vec<SseItem>, Result<(), SseError>) {
        let mut out = Vec::new();
        let res = r.feed(bytes, &mut out);
        (out, res)
    }

    #[test]
    fn events_comments_and_split_input() {
        let mut r = SseReader::new();
        let (mut items, _) = all(
            &mut r,
            b": OPENROUTER PROCESSING\n\nevent: ping\r\ndata: {\"a\"",
        );
        items.extend(all(&mut r, b":1}\r\n\r\ndata: x\ndata: y\n\n").0);
        assert_eq!(
            items,
            vec![
                SseItem::Comment("OPENROUTER PROCESSING".into()),
                SseItem::Event {
                    event: Some("ping".into()),
                    data: "{\"a\":1}".into()
                },
                SseItem::Event {
                    event: None,
                    data: "x\ny".into()
                },
            ]
        );
        assert!(!r.has_partial());
    }

    #[test]
    fn cr_only_and_crlf_line_ends_split_anywhere() {
        let want = vec![
            SseItem::Event {
                event: Some("a".into()),
                data: "1".into(),
            },
            SseItem::Event {
                event: None,
                data: "2".into(),
            },
        ];
        for text in [
            &b"event: a\rdata: 1\r\rdata: 2\r\r"[..],
            b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n",
        ] {
            assert_eq!(all(&mut SseReader::new(), text).0, want);
            for cut in 0..=text.len() {
                let mut r = SseReader::new();
                let mut items = all(&mut r, &text[..cut]).0;
                items.extend(all(&mut r, &text[cut..]).0);
                assert_eq!(items, want, "cut at {cut}");
            }
        }
        // A lone `\r` at the end of one feed and `\n` at the start of the next are one
        // line end, not an empty line that would end the event early.
        let mut r = SseReader::new();
        let mut items = all(&mut r, b"data: x\r").0;
        items.extend(all(&mut r, b"\ndata: y\n\n").0);
        assert_eq!(
            items,
            vec![SseItem::Event {
                event: None,
                data: "x\ny".into()
            }]
        );
    }

    #[test]
    fn a_line_past_the_cap_fails_and_stays_failed() {
        let caps = SseCaps { line: 8, event: 64 };
        let mut r = SseReader::with_caps(caps);
        let (items, res) = all(&mut r, b": ok\n12345678");
        assert_eq!(items, vec![SseItem::Comment("ok".into())]);
        assert_eq!(res, Ok(()), "exactly the cap is allowed");
        let (items, res) = all(&mut r, b"9");
        assert!(items.is_empty());
        let err = res.unwrap_err();
        assert_eq!(err, SseError::LineTooLong { cap: 8 });
        assert_eq!(
            err.to_string(),
            "a stream line passed the 8 bytes line cap without a line end"
        );
        assert_eq!(all(&mut r, b"\n\n").1, Err(err));
        assert!(
            SseError::LineTooLong { cap: 1 << 20 }
                .to_string()
                .contains("1 MiB line cap")
        );
    }

    #[test]
    fn an_event_past_the_cap_fails() {
        let caps = SseCaps {
            line: 16,
            event: 10,
        };
        let mut r = SseReader::with_caps(caps);
        let (items, res) = all(&mut r, b"data: 12345\ndata: 6789\n\n");
        assert_eq!(
            items,
            vec![SseItem::Event {
                event: None,
                data: "12345\n6789".into()
            }],
            "ten bytes joined is the cap"
        );
        assert_eq!(res, Ok(()));
        let (items, res) = all(&mut r, b"data: 12345\ndata: 67890\n\n");
        assert!(items.is_empty());
        assert_eq!(res, Err(SseError::EventTooLarge { cap: 10 }));
    }

    #[test]
    fn a_flood_without_line_ends_is_cut_at_the_cap_in_one_pass() {
        let mut r = SseReader::new();
        let chunk = vec![b'x'; 64 * 1024];
        let mut fed = 0;
        let err = loop {
            match all(&mut r, &chunk).1 {
                Ok(()) => fed += chunk.len(),
                Err(e) => break e,
            }
        };
        assert_eq!(fed, 1024 * 1024, "every byte up to the cap is accepted");
        assert_eq!(err, SseError::LineTooLong { cap: 1024 * 1024 });
    }

    /// Pieces that make streams with every kind of line and line end.
    fn piece() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            Just(b"\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"event: ping".to_vec()),
            Just(b": keep-alive".to_vec()),
            Just(b"id: 7".to_vec()),
            "[a-z {}\":]{0,12}".prop_map(String::into_bytes),
            proptest::collection::vec(any::<u8>(), 0..6),
        ]
    }

    proptest! {
        /// The same items and the same error, however the bytes are split.
        #[test]
        fn items_do_not_depend_on_the_split(
            pieces in proptest::collection::vec(piece(), 0..60),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
            line_cap in 4usize..40,
            event_cap in 4usize..60,
        ) {
            let bytes: Vec<u8> = pieces.concat();
            let caps = SseCaps { line: line_cap, event: event_cap };
            let mut whole = SseReader::with_caps(caps);
            let (want, want_res) = all(&mut whole, &bytes);

            let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut split = SseReader::with_caps(caps);
            let mut got = Vec::new();
            let mut got_res = Ok(());
            let mut from = 0;
            for to in cuts.into_iter().chain([bytes.len()]) {
                got_res = split.feed(&bytes[from..to], &mut got);
                from = to;
                if got_res.is_err() {
                    break;
                }
            }
            prop_assert_eq!(got, want);
            prop_assert_eq!(got_res, want_res);
            if want_res.is_ok() {
                prop_assert_eq!(split.has_partial(), whole.has_partial());
            }
        }
    }
}
