//! A small incremental server-sent-events reader. Unlike most, it reports comment lines
//! (`: OPENROUTER PROCESSING`) as items, so the byte counter sees keep-alives while the
//! idle clock can ignore them.

/// One item of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// An event: its `event:` name (if any) and its `data:` lines joined with `\n`.
    Event { event: Option<String>, data: String },
    /// A comment line (starts with `:`), without the colon.
    Comment(String),
}

#[derive(Debug, Default)]
pub struct SseReader {
    buf: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
}

impl SseReader {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the items completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        self.buf.extend_from_slice(bytes);
        let mut items = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|b| *b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, &mut items);
        }
        self.buf.drain(..start);
        items
    }

    /// Whether bytes of an unfinished line or event are pending.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty() || !self.data.is_empty()
    }

    fn line(&mut self, line: &str, items: &mut Vec<SseItem>) {
        if line.is_empty() {
            if !self.data.is_empty() || self.event.is_some() {
                items.push(SseItem::Event {
                    event: self.event.take(),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            items.push(SseItem::Comment(comment.trim_start().to_string()));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => self.data.push(value.to_string()),
            "event" => self.event = Some(value.to_string()),
            _ => {} // id:, retry: and unknown fields do not matter here
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_comments_and_split_input() {
        let mut r = SseReader::new();
        let mut items = r.feed(b": OPENROUTER PROCESSING\n\nevent: ping\r\ndata: {\"a\"");
        items.extend(r.feed(b":1}\r\n\r\ndata: x\ndata: y\n\n"));
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
}
