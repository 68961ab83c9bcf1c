//! The one pass over an answer (docs/design.md §14): prose is skipped to the next `{`, and
//! each object that starts there is read once by a small tolerant JSON reader. A reader
//! that meets something that is not JSON stops where it is and the prose scan goes on
//! from that byte, so every byte of the answer is stepped over once, whatever the answer
//! holds (the earlier extractor started a fresh parse at every `{`, each reading to the
//! end: quadratic in nested or brace-heavy answers).
//!
//! Only a top-level object's own `findings` key counts; objects nested in it (a field of
//! a finding, an example in a description) are read as values and never become
//! candidates. The last top-level object with a `findings` list is the answer's own (a
//! format example quoted before it is passed over); an object the answer ends inside is
//! the last one by definition, and says so. Nesting deeper than [`MAX_NESTING`] ends the
//! pass: the answer is not read.
//!
//! Tolerated: trailing commas, raw control characters inside strings. Everything else
//! is JSON as RFC 8259 writes it.

use serde_json::{Map, Number, Value};

/// The deepest nesting of objects and lists an answer may have (the top-level object is
/// level 1). Findings need 4; past this the answer is a `bad_response`.
pub const MAX_NESTING: usize = 64;

/// Where the reader of one object stopped early.
pub(super) enum Stop {
    /// The answer ended inside it.
    Eof,
    /// Not JSON at this byte; `expected` says what would have been.
    Syntax { at: usize, expected: &'static str },
    /// Nested deeper than [`MAX_NESTING`] at this byte.
    TooDeep { at: usize },
}

/// What receives the entries of a `findings` list as the pass reads them.
pub(super) trait Entries {
    /// Whether the next entry should be built (false once the cap is reached: the entry
    /// is still read, to find where it ends, but nothing of it is kept).
    fn wants(&self) -> bool;
    /// A whole entry, built.
    fn entry(&mut self, v: Value);
    /// A whole entry read past the cap.
    fn skipped(&mut self);
    /// An entry the answer stopped inside (`why` says how).
    fn lost(&mut self, why: String);
}

/// How the answer's own object ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum End {
    /// It closed.
    Closed,
    /// The answer ended inside it.
    Unclosed,
    /// It stopped being JSON (the reason says where).
    Broken(String),
}

/// What the pass found.
pub(super) enum Found<E> {
    /// The answer's own object, with its `findings` list read into `E`.
    Object(E, End),
    /// The answer ends inside its last object, which had no `findings` list yet.
    UnclosedWithoutList,
    /// No top-level object with a `findings` list.
    Nothing,
    /// Nested deeper than [`MAX_NESTING`] at this byte.
    TooDeep(usize),
}

/// The reader's cursor over the answer. `work` counts the bytes stepped over: the
/// counting tests hold it to the answer's length.
pub(super) struct Pass<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    depth: usize,
    pub(super) work: usize,
}

impl<'a> Pass<'a> {
    pub(super) fn new(s: &'a str) -> Self {
        Pass {
            s,
            b: s.as_bytes(),
            i: 0,
            depth: 0,
            work: 0,
        }
    }

    /// Reads the whole answer once; `fresh` makes the receiver of each candidate's list.
    pub(super) fn run<E: Entries>(&mut self, mut fresh: impl FnMut() -> E) -> Found<E> {
        let mut best: Option<(E, End)> = None;
        while let Some(start) = self.next_brace() {
            self.i = start;
            self.depth = 0;
            let mut list = None;
            match self.top_object(&mut list, &mut fresh) {
                Ok(()) => {
                    if let Some(l) = list {
                        best = Some((l, End::Closed));
                    }
                }
                Err(Stop::Eof) => {
                    return match list {
                        Some(l) => Found::Object(l, End::Unclosed),
                        None => Found::UnclosedWithoutList,
                    };
                }
                Err(Stop::TooDeep { at }) => return Found::TooDeep(at),
                Err(Stop::Syntax { at, expected }) => {
                    if let Some(l) = list {
                        let why = format!("not JSON at byte {at}: expected {expected}");
                        best = Some((l, End::Broken(why)));
                    }
                    // The prose scan goes on from where the reader stopped (never before
                    // it: no byte is read twice).
                    debug_assert!(self.i > start);
                }
            }
        }
        match best {
            Some((l, end)) => Found::Object(l, end),
            None => Found::Nothing,
        }
    }

    /// The next `{` from the cursor, stepping over the prose before it.
    fn next_brace(&mut self) -> Option<usize> {
        let rest = &self.b[self.i..];
        match rest.iter().position(|&c| c == b'{') {
            Some(n) => {
                self.work += n;
                Some(self.i + n)
            }
            None => {
                self.work += rest.len();
                self.i = self.b.len();
                None
            }
        }
    }

    fn peek(&self) -> Result<u8, Stop> {
        self.b.get(self.i).copied().ok_or(Stop::Eof)
    }

    fn bump(&mut self) {
        self.i += 1;
        self.work += 1;
    }

    fn syntax(&self, expected: &'static str) -> Stop {
        Stop::Syntax {
            at: self.i,
            expected,
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.bump();
        }
    }

    /// Steps into an object or list (the cursor is on its opening byte).
    fn open(&mut self) -> Result<(), Stop> {
        if self.depth == MAX_NESTING {
            return Err(Stop::TooDeep { at: self.i });
        }
        self.depth += 1;
        self.bump();
        Ok(())
    }

    fn close(&mut self) {
        self.depth -= 1;
        self.bump();
    }

    /// After a member or an element: a comma (true: another may follow; a trailing
    /// comma before `close` is tolerated) or `close` (false).
    fn next_or_close(&mut self, close: u8, expected: &'static str) -> Result<bool, Stop> {
        self.ws();
        let c = self.peek()?;
        if c == b',' {
            self.bump();
            self.ws();
            if self.peek()? == close {
                self.close();
                return Ok(false);
            }
            return Ok(true);
        }
        if c == close {
            self.close();
            return Ok(false);
        }
        Err(self.syntax(expected))
    }

    /// A top-level object: its first `findings` list goes to a fresh receiver in `list`,
    /// every other value is read and let go.
    fn top_object<E: Entries>(
        &mut self,
        list: &mut Option<E>,
        fresh: &mut impl FnMut() -> E,
    ) -> Result<(), Stop> {
        self.open()?;
        self.ws();
        if self.peek()? == b'}' {
            self.close();
            return Ok(());
        }
        loop {
            if self.peek()? != b'"' {
                return Err(self.syntax("a key in quotes"));
            }
            let key = self.string(true)?.unwrap_or_default();
            self.colon()?;
            if key == "findings" && list.is_none() && self.peek()? == b'[' {
                self.findings(list.insert(fresh()))?;
            } else {
                self.value(false)?;
            }
            if !self.next_or_close(b'}', "`,` or `}`")? {
                return Ok(());
            }
        }
    }

    fn colon(&mut self) -> Result<(), Stop> {
        self.ws();
        if self.peek()? != b':' {
            return Err(self.syntax("`:`"));
        }
        self.bump();
        self.ws();
        Ok(())
    }

    /// The `findings` list, entry by entry into `out`.
    fn findings<E: Entries>(&mut self, out: &mut E) -> Result<(), Stop> {
        self.open()?;
        self.ws();
        if self.peek()? == b']' {
            self.close();
            return Ok(());
        }
        loop {
            let build = out.wants();
            match self.value(build) {
                Ok(Some(v)) => out.entry(v),
                Ok(None) => out.skipped(),
                Err(stop) => {
                    match &stop {
                        Stop::Eof => out.lost("cut off where the answer ends".into()),
                        Stop::Syntax { at, expected } => {
                            out.lost(format!("not JSON at byte {at}: expected {expected}"))
                        }
                        Stop::TooDeep { .. } => {}
                    }
                    return Err(stop);
                }
            }
            if !self.next_or_close(b']', "`,` or `]`")? {
                return Ok(());
            }
        }
    }

    /// Any value; built when `build` (else only read to its end).
    fn value(&mut self, build: bool) -> Result<Option<Value>, Stop> {
        match self.peek()? {
            b'{' => self.object(build),
            b'[' => self.list(build),
            b'"' => Ok(self.string(build)?.map(Value::String)),
            b't' => self.literal("true", Value::Bool(true), build),
            b'f' => self.literal("false", Value::Bool(false), build),
            b'n' => self.literal("null", Value::Null, build),
            b'-' | b'0'..=b'9' => self.number(build),
            _ => Err(self.syntax("a value")),
        }
    }

    fn object(&mut self, build: bool) -> Result<Option<Value>, Stop> {
        self.open()?;
        let mut map = Map::new();
        self.ws();
        if self.peek()? == b'}' {
            self.close();
            return Ok(build.then_some(Value::Object(map)));
        }
        loop {
            if self.peek()? != b'"' {
                return Err(self.syntax("a key in quotes"));
            }
            let key = self.string(build)?;
            self.colon()?;
            let v = self.value(build)?;
            if let (Some(k), Some(v)) = (key, v) {
                map.insert(k, v);
            }
            if !self.next_or_close(b'}', "`,` or `}`")? {
                return Ok(build.then_some(Value::Object(map)));
            }
        }
    }

    fn list(&mut self, build: bool) -> Result<Option<Value>, Stop> {
        self.open()?;
        let mut items = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.close();
            return Ok(build.then_some(Value::Array(items)));
        }
        loop {
            if let Some(v) = self.value(build)? {
                items.push(v);
            }
            if !self.next_or_close(b']', "`,` or `]`")? {
                return Ok(build.then_some(Value::Array(items)));
            }
        }
    }

    fn literal(&mut self, word: &str, v: Value, build: bool) -> Result<Option<Value>, Stop> {
        for &w in word.as_bytes() {
            if self.peek()? != w {
                return Err(self.syntax("a value"));
            }
            self.bump();
        }
        Ok(build.then_some(v))
    }

    /// A number as JSON writes it (a leading zero or a `+` tolerated as far as Rust's
    /// parsers take them); one past f64's range is `null`.
    fn number(&mut self, build: bool) -> Result<Option<Value>, Stop> {
        let start = self.i;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.b.get(self.i) {
            self.bump();
        }
        if self.i == self.b.len() {
            // The answer may have been cut inside the number.
            return Err(Stop::Eof);
        }
        let text = &self.s[start..self.i];
        let n = if let Ok(u) = text.parse::<u64>() {
            Number::from(u)
        } else if let Ok(i) = text.parse::<i64>() {
            Number::from(i)
        } else {
            match text.parse::<f64>() {
                Ok(f) => match Number::from_f64(f) {
                    Some(n) => n,
                    None => return Ok(build.then_some(Value::Null)),
                },
                Err(_) => return Err(self.syntax("a number")),
            }
        };
        Ok(build.then_some(Value::Number(n)))
    }

    /// A string (the cursor on its opening quote), decoded when `build`.
    fn string(&mut self, build: bool) -> Result<Option<String>, Stop> {
        self.bump();
        let mut out = String::new();
        loop {
            let rest = &self.b[self.i..];
            let Some(n) = rest.iter().position(|&c| c == b'"' || c == b'\\') else {
                self.work += rest.len();
                self.i = self.b.len();
                return Err(Stop::Eof);
            };
            if build {
                out.push_str(&self.s[self.i..self.i + n]);
            }
            self.i += n;
            self.work += n;
            if self.b[self.i] == b'"' {
                self.bump();
                return Ok(build.then_some(out));
            }
            self.bump();
            let c = self.escape()?;
            if build {
                out.push(c);
            }
        }
    }

    /// One escape after its backslash.
    fn escape(&mut self) -> Result<char, Stop> {
        let c = match self.peek()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                self.bump();
                let hi = self.hex4()?;
                if !(0xD800..0xDC00).contains(&hi) {
                    return Ok(char::from_u32(hi).unwrap_or('\u{FFFD}'));
                }
                // A high surrogate: a low one should follow as `\uXXXX`.
                if self.b.get(self.i) == Some(&b'\\') && self.b.get(self.i + 1) == Some(&b'u') {
                    self.bump();
                    self.bump();
                    let lo = self.hex4()?;
                    if (0xDC00..0xE000).contains(&lo) {
                        let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        return Ok(char::from_u32(c).unwrap_or('\u{FFFD}'));
                    }
                }
                return Ok('\u{FFFD}');
            }
            _ => return Err(self.syntax("an escape (\\\", \\\\, \\n, \\uXXXX, ...)")),
        };
        self.bump();
        Ok(c)
    }

    fn hex4(&mut self) -> Result<u32, Stop> {
        let mut v = 0;
        for _ in 0..4 {
            let d = match self.peek()? {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.syntax("four hex digits after \\u")),
            };
            v = v * 16 + u32::from(d);
            self.bump();
        }
        Ok(v)
    }
}
