//! `SKILL.md` front matter: any text gives the skill's fields or a clear error message,
//! and what it gives is well formed (a trimmed, non-empty prompt taken from the file) and
//! bounded by the file: YAML aliases and deep nesting may not turn a small file into a
//! large skill (an alias bomb of ~500 bytes once expanded to gigabytes).

use crate::skills::front_matter;

/// How much bigger than its file a skill's fields may be: aliases may repeat a value a
/// few times, never without bound.
const GROWTH: usize = 4;
/// Plus this much, for small files.
const SLACK: usize = 64 * 1024;
/// An error message is a sentence, not an echo of the file.
const MESSAGE_MAX: usize = 1024;

/// Parses `data` as a `SKILL.md` and checks the result.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match front_matter::parse(&text) {
        Ok(p) => {
            let unmarked = text.strip_prefix('\u{feff}').unwrap_or(&text);
            assert!(unmarked.starts_with("---"), "accepted without front matter");
            assert!(!p.body.is_empty(), "accepted an empty prompt");
            assert_eq!(p.body, p.body.trim(), "prompt not trimmed");
            assert!(text.contains(&p.body), "prompt is not text of the file");
            if let Some(name) = &p.name {
                assert!(!name.is_empty() && name == name.trim(), "name {name:?}");
            }
            assert_eq!(
                p.description,
                p.description.trim(),
                "description not trimmed"
            );
            assert!(
                p.allowed_tools
                    .iter()
                    .all(|t| !t.is_empty() && t == t.trim()),
                "empty tool name in {:?}",
                p.allowed_tools
            );
            let fields = p.name.as_ref().map_or(0, String::len)
                + p.description.len()
                + p.allowed_tools.iter().map(String::len).sum::<usize>()
                + p.allowed_tools.len();
            assert!(
                fields <= GROWTH * text.len() + SLACK,
                "{fields} bytes of fields from a {}-byte file",
                text.len()
            );
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.trim().is_empty(), "empty error message");
            assert!(
                message.contains("front matter") || message.contains("prompt"),
                "an error that does not say what is wrong with the file: {message}"
            );
            assert!(
                message.len() <= MESSAGE_MAX,
                "a {}-byte error message",
                message.len()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    /// Nesting far deeper than any skill needs: an error or a value, never a stack
    /// overflow.
    #[test]
    fn deep_nesting_is_bounded() {
        for depth in [1_000, 100_000] {
            for (open, close) in [("[", "]"), ("{a: ", "}"), ("- ", "")] {
                let nest = if open == "- " {
                    (0..depth.min(2_000))
                        .map(|i| format!("{}- x\n", " ".repeat(i * 2)))
                        .collect::<String>()
                } else {
                    format!("{}1{}", open.repeat(depth), close.repeat(depth))
                };
                check(format!("---\nname: deep\ndescription: {nest}\n---\nbody\n").as_bytes());
            }
        }
    }
}
