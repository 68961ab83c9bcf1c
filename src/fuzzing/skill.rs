//! `SKILL.md` front matter: any text gives the skill's fields or an error message, and
//! what it gives is well formed (a trimmed, non-empty prompt taken from the text).

use crate::skills::front_matter;

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
        }
        Err(message) => assert!(!message.trim().is_empty(), "empty error message"),
    }
}
