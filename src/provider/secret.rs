//! API keys: read only from the environment variable a route names, never printed.

use crate::config::{ProviderKind, Route};
use crate::error::Error;
use std::collections::HashSet;
use std::fmt;

/// An API key. Its Debug and Display say `[redacted]`; only the HTTP layer sees the text.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key read by the caller (warden itself reads keys only through [`load`]).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// Replaces every piece of the key in `text` with `[redacted]`: the whole key, and any
    /// run of at least [`PIECE`] characters of it (a provider may echo a key cut short,
    /// and long keys, like 164-character `sk-proj-` ones, are cut by anything that
    /// shortens text). Redact before shortening: a cut can hide a key from an exact match
    /// but not from this.
    pub(crate) fn redact(&self, text: &str) -> String {
        Redactor::new(std::slice::from_ref(self)).redact(text)
    }
}

/// Every piece of a set of keys, found in one pass over a string: the distinct keys' pieces
/// are the patterns of one Aho–Corasick automaton, so a report is redacted in time linear
/// in its size whatever the number of routes (5,000 routes sharing one key are one key).
#[derive(Clone)]
pub struct Redactor {
    /// None when no key is long enough to redact.
    matcher: Option<aho_corasick::AhoCorasick>,
}

impl Redactor {
    /// A matcher of every [`PIECE`]-character run of each distinct key (the whole key when
    /// shorter; keys under 4 characters are not redacted: they would match ordinary text).
    pub fn new(keys: &[ApiKey]) -> Redactor {
        let distinct: HashSet<&[u8]> = keys.iter().map(|k| k.0.as_bytes()).collect();
        let mut pieces: HashSet<&[u8]> = HashSet::new();
        for key in distinct.into_iter().filter(|k| k.len() >= 4) {
            pieces.extend(key.windows(key.len().min(PIECE)));
        }
        let matcher = (!pieces.is_empty())
            .then(|| aho_corasick::AhoCorasick::new(pieces))
            .and_then(Result::ok);
        Redactor { matcher }
    }

    /// Whether any key is redacted at all.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every run covered by a piece of a key replaced by `[redacted]` (pieces
    /// that overlap or touch make one run).
    pub fn redact(&self, text: &str) -> String {
        let Some(m) = &self.matcher else {
            return text.to_string();
        };
        let mut covered: Vec<(usize, usize)> = m
            .find_overlapping_iter(text)
            .map(|h| (h.start(), h.end()))
            .collect();
        if covered.is_empty() {
            return text.to_string();
        }
        covered.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        let mut runs = covered.into_iter().peekable();
        while let Some((start, mut end)) = runs.next() {
            while let Some(&(s, e)) = runs.peek()
                && s <= end
            {
                end = end.max(e);
                runs.next();
            }
            let start = floor_char(text, start.max(at));
            let end = ceil_char(text, end);
            out.push_str(&text[at..start]);
            out.push_str("[redacted]");
            at = end;
        }
        out.push_str(&text[at..]);
        out
    }
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Redactor([redacted])")
    }
}

/// The shortest run of a key's characters that counts as the key.
pub(crate) const PIECE: usize = 16;

/// Reasons are cut to this many characters, after redaction.
pub(crate) const REASON_CHARS: usize = 300;

/// Provider text for a record: the key redacted first, then control characters (newlines
/// included) turned into spaces, then cut to `max` characters.
pub(crate) fn clean(key: Option<&ApiKey>, text: &str, max: usize) -> String {
    let redacted = match key {
        Some(k) => k.redact(text),
        None => text.to_string(),
    };
    let mut out: String = redacted
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect();
    if redacted.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The default endpoint of each HTTP provider.
pub(crate) fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => "https://api.openai.com/v1",
        ProviderKind::OpenRouter => "https://openrouter.ai/api/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        // LiteLLM's proxy listens on port 4000 by default.
        ProviderKind::LiteLlm => "http://127.0.0.1:4000/v1",
        ProviderKind::Sim => "sim://",
        ProviderKind::LlamaCpp => "http://127.0.0.1:8080/v1",
        ProviderKind::Ollama => "http://127.0.0.1:11434/v1",
        ProviderKind::Vllm => "http://127.0.0.1:8000/v1",
    }
}

/// Reads the route's key from its environment variable.
pub fn load(route: &Route) -> Result<Option<ApiKey>, Error> {
    if route.provider == ProviderKind::Sim {
        return Ok(None);
    }
    let base = route
        .base_url
        .as_deref()
        .unwrap_or(default_base_url(route.provider));
    let var = route.api_key_env.as_deref().unwrap_or("");
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Some(ApiKey(v.trim().to_string()))),
        // Local gateways and test servers often need no key.
        _ if crate::config::url::is_loopback_str(base) => Ok(None),
        _ => Err(Error::MissingKey {
            route: route.name.clone(),
            var: var.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_key() {
        let k = ApiKey("sk-canary-123".into());
        assert!(!format!("{k:?} {k}").contains("canary"));
        assert_eq!(k.redact("bad key sk-canary-123"), "bad key [redacted]");
    }

    /// A 164-character key like OpenAI's project keys.
    fn long_key() -> String {
        let mut k = String::from("sk-proj-");
        let mut x: u32 = 7;
        while k.len() < 164 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            k.push(char::from(
                b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
                    [(x >> 16) as usize % 64],
            ));
        }
        k
    }

    fn no_piece_of(key: &str, text: &str) -> bool {
        (0..=key.len() - PIECE).all(|i| !text.contains(&key[i..i + PIECE]))
    }

    #[test]
    fn every_16_character_piece_of_a_long_key_is_redacted() {
        let key = long_key();
        assert_eq!(key.len(), 164);
        let k = ApiKey::new(key.clone());
        let cases = [
            format!("Incorrect API key provided: {key}."),
            // Cut short by the provider, or starting in the middle.
            format!("key {}… is wrong", &key[..40]),
            format!("…{} is wrong", &key[100..]),
            // Pieces of 16 and more, anywhere, twice, next to each other.
            format!("a{}b{}c", &key[3..19], &key[50..90]),
            format!("{}{}", &key[10..30], &key[10..30]),
            // Inside multibyte text.
            format!("ключ «{key}» неверен"),
        ];
        for text in cases {
            let out = k.redact(&text);
            assert!(no_piece_of(&key, &out), "{out}");
            assert!(out.contains("[redacted]"), "{out}");
        }
        // Text that shares only short runs with the key is left alone.
        let short = format!("{} and {}", &key[..15], &key[20..35]);
        assert_eq!(k.redact(&short), short);
    }

    #[test]
    fn clean_redacts_before_it_cuts_and_flattens_control_characters() {
        let key = long_key();
        let k = ApiKey::new(key.clone());
        // The key straddles the cut: cut first, an exact match would miss it.
        let text = format!("{}{key}", "x".repeat(250));
        let out = clean(Some(&k), &text, REASON_CHARS);
        assert!(no_piece_of(&key, &out), "{out}");
        assert!(!out.contains(&key[..10]), "{out}");
        assert_eq!(out, format!("{}[redacted]", "x".repeat(250)));
        let out = clean(None, "line one\n::error::forged\r\tend", 100);
        assert_eq!(out, "line one ::error::forged  end");
        let out = clean(None, &"é".repeat(400), 300);
        assert_eq!(out.chars().count(), 301);
        assert!(out.ends_with('…'));
    }
}
