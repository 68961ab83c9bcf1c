//! The hidden markers that give warden's comments an identity across pushes. Each inline
//! comment starts with `<!-- warden:finding:v1 id=… skill=… anchor=… -->`: the finding's id,
//! its skill and the text of its first line, each reduced to characters a marker can hold
//! (the skill and the line as hashes), so nothing a model or a repository wrote can appear
//! in a marker or forge one. Markers are read from a comment's first line only: a marker
//! quoted further down (in a suggestion block) is text.

use crate::text::fnv1a;

/// How every finding marker starts.
pub(crate) const FINDING: &str = "<!-- warden:finding:v1 ";
/// The marker of the sticky summary (the Markdown report's own).
pub use crate::render::markdown::MARKER as STICKY;
/// Where the sticky summary lists the findings posted in review bodies.
pub(crate) const BODY_LIST: &str = "<!-- warden:body-findings";

/// A finding's identity as a marker holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    /// The finding id (`[A-Za-z0-9._-]`, at most 64), or `h` + its hash.
    pub id: String,
    /// The skill's hash.
    pub skill: String,
    /// The hash of the first line's text (trimmed), `-` when unknown.
    pub anchor: String,
}

impl Marker {
    /// The marker of a finding of `skill` whose first line reads `line_text`.
    pub fn new(id: &str, skill: &str, line_text: Option<&str>) -> Marker {
        let safe = !id.is_empty()
            && id.len() <= 64
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        Marker {
            id: if safe {
                id.to_string()
            } else {
                format!("h{:016x}", fnv1a(&[id]))
            },
            skill: format!("{:016x}", fnv1a(&[skill])),
            anchor: line_text.map(anchor).unwrap_or_else(|| "-".to_string()),
        }
    }

    /// The marker as a hidden HTML comment.
    pub fn render(&self) -> String {
        format!(
            "{FINDING}id={} skill={} anchor={} -->",
            self.id, self.skill, self.anchor
        )
    }

    /// The marker on the first line of `body`, if it holds one of warden's.
    pub fn parse(body: &str) -> Option<Marker> {
        let first = body.lines().next()?.trim();
        Self::parse_fields(first.strip_prefix(FINDING)?.strip_suffix("-->")?)
    }

    /// `id=… skill=… anchor=…` (the inside of a marker, or one row of the body list).
    pub(crate) fn parse_fields(s: &str) -> Option<Marker> {
        let mut id = None;
        let mut skill = None;
        let mut anchor = None;
        for field in s.split_whitespace() {
            let (k, v) = field.split_once('=')?;
            if v.is_empty()
                || v.len() > 65
                || !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                return None;
            }
            match k {
                "id" => id = Some(v.to_string()),
                "skill" => skill = Some(v.to_string()),
                "anchor" => anchor = Some(v.to_string()),
                _ => {}
            }
        }
        Some(Marker {
            id: id?,
            skill: skill?,
            anchor: anchor?,
        })
    }

    /// The row of this marker in the sticky summary's body list.
    pub fn row(&self, path: &str) -> String {
        format!(
            "id={} skill={} anchor={} path={:016x}",
            self.id,
            self.skill,
            self.anchor,
            fnv1a(&[path])
        )
    }

    /// Whether a thread or listed finding with this marker on `path` is `other` on
    /// `other_path`: the same id, or the same path, skill and anchored text.
    pub fn same(&self, path: &str, other: &Marker, other_path: &str) -> bool {
        self.id == other.id
            || (path == other_path
                && self.skill == other.skill
                && self.anchor != "-"
                && self.anchor == other.anchor)
    }
}

/// The hash of a line's text, its indentation and trailing space ignored.
pub fn anchor(text: &str) -> String {
    format!("{:016x}", fnv1a(&[text.trim()]))
}

/// The rows of the body list in a sticky summary: (marker, path hash).
pub(crate) fn body_list(body: &str) -> Vec<(Marker, String)> {
    let Some(start) = body.find(BODY_LIST) else {
        return Vec::new();
    };
    let rest = &body[start + BODY_LIST.len()..];
    let inner = rest.split("-->").next().unwrap_or("");
    inner
        .lines()
        .filter_map(|l| {
            let m = Marker::parse_fields(l)?;
            let path = l.split_whitespace().find_map(|f| f.strip_prefix("path="))?;
            Some((m, path.to_string()))
        })
        .collect()
}

/// The hash a body-list row stores for `path`.
pub(crate) fn path_hash(path: &str) -> String {
    format!("{:016x}", fnv1a(&[path]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marker_round_trips_and_holds_nothing_a_model_wrote() {
        let m = Marker::new("W1a2b", "security", Some("  let x = y; "));
        let body = format!("{}\n**title**", m.render());
        assert_eq!(Marker::parse(&body), Some(m.clone()));
        assert_eq!(m.anchor, anchor("let x = y;"));
        let hostile = Marker::new("x --> <img src=x> @admin", "s", None);
        assert!(hostile.id.starts_with('h') && hostile.id.len() == 17);
        assert!(!hostile.render().contains('@'));
        assert_eq!(hostile.anchor, "-");
    }

    #[test]
    fn only_the_first_line_carries_a_marker() {
        let m = Marker::new("W1", "s", Some("a"));
        assert_eq!(Marker::parse(&format!("text\n{}", m.render())), None);
        assert_eq!(Marker::parse("<!-- warden:finding:v1 id=x\" -->"), None);
    }

    #[test]
    fn same_is_the_id_or_path_skill_and_anchor() {
        let a = Marker::new("W1", "s", Some("foo()"));
        let reworded = Marker::new("W2", "s", Some("  foo()"));
        assert!(a.same("p", &reworded, "p"));
        assert!(!a.same("p", &reworded, "q"));
        assert!(!a.same("p", &Marker::new("W2", "t", Some("foo()")), "p"));
        let unknown = Marker::new("W3", "s", None);
        assert!(!unknown.same("p", &Marker::new("W4", "s", None), "p"));
        let list = format!("{BODY_LIST}\n{}\n-->", a.row("src/a.rs"));
        assert_eq!(body_list(&list), vec![(a, path_hash("src/a.rs"))]);
    }
}
