//! `SKILL.md` front matter: YAML between two `---` lines at the top of the file.

/// The fields warden reads from a skill's front matter, and the body after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) name: Option<String>,
    pub(crate) description: String,
    pub(crate) allowed_tools: Vec<String>,
    pub(crate) body: String,
}

/// Why a skill file's front matter cannot be read; the message goes into
/// [`crate::Error::Skill`] after the file's name. Lines are the file's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrontMatterError {
    /// No opening `---` line.
    #[error(
        "no front matter: the file must start with a `---` line, then `name:` and `description:` lines, then `---`, then the prompt"
    )]
    Missing,
    /// No closing `---` line.
    #[error("front matter is not closed: add a `---` line after the `name:`/`description:` lines")]
    NotClosed,
    /// The YAML parser's reason, cut short.
    #[error("front matter is not valid YAML (line {line} of the file): {detail}")]
    Yaml { line: usize, detail: String },
    /// YAML that is not a map.
    #[error("front matter must be `key: value` lines")]
    NotKeyValue,
    /// A field that must be text and is not.
    #[error("front matter `{0}` must be text")]
    NotText(String),
    /// `allowed-tools` neither a list nor text.
    #[error("front matter `allowed-tools` must be a list or space-separated text")]
    AllowedTools,
    /// Nothing after the front matter.
    #[error("the skill has no prompt: write the instructions below the closing `---`")]
    NoPrompt,
    /// An alias, which loading would expand.
    #[error(
        "front matter uses a YAML alias (`*name`, line {line} of the file): warden does not expand aliases; write the value out"
    )]
    Alias { line: usize },
    /// Nesting past [`MAX_DEPTH`].
    #[error(
        "front matter nests deeper than {max} levels (line {line} of the file): write the fields as `key: value` lines",
        max = MAX_DEPTH
    )]
    TooDeep { line: usize },
    /// More than [`MAX_NODES`] nodes.
    #[error(
        "front matter has more than {max} YAML nodes (line {line} of the file): it needs `name:`, `description:` and perhaps `allowed-tools:`",
        max = MAX_NODES
    )]
    TooManyNodes { line: usize },
}

/// Splits and parses a skill file. Errors are lowercase fragments for [`crate::Error::Skill`].
pub fn parse(text: &str) -> Result<Parsed, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(FrontMatterError::NotClosed);
    }
    let body: String = lines.collect();
    check_events(&yaml)?;
    let docs = yaml_rust2::YamlLoader::load_from_str(&yaml).map_err(|e| yaml_error(&e, &yaml))?;
    let doc = docs.into_iter().next().unwrap_or(yaml_rust2::Yaml::Null);
    let map = match doc {
        yaml_rust2::Yaml::Hash(h) => h,
        yaml_rust2::Yaml::Null => Default::default(),
        _ => return Err(FrontMatterError::NotKeyValue),
    };
    let get = |k: &str| map.get(&yaml_rust2::Yaml::String(k.to_string()));
    let string = |k: &str| -> Result<Option<String>, FrontMatterError> {
        match get(k) {
            None | Some(yaml_rust2::Yaml::Null) => Ok(None),
            Some(yaml_rust2::Yaml::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(FrontMatterError::NotText(k.to_string())),
        }
    };
    let allowed_tools = match get("allowed-tools") {
        None | Some(yaml_rust2::Yaml::Null) => Vec::new(),
        Some(yaml_rust2::Yaml::String(s)) => s
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        Some(yaml_rust2::Yaml::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::trim))
            // `- ""` or a bare tag (`- !`) is an empty name, not a tool.
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        Some(_) => {
            return Err(FrontMatterError::AllowedTools);
        }
    };
    if body.trim().is_empty() {
        return Err(FrontMatterError::NoPrompt);
    }
    Ok(Parsed {
        name: string("name")?.filter(|n| !n.is_empty()),
        description: string("description")?.unwrap_or_default(),
        allowed_tools,
        body: body.trim().to_string(),
    })
}

/// Nodes front matter may hold: a few fields need a few dozen.
const MAX_NODES: usize = 10_000;
/// How deep lists and maps may nest.
const MAX_DEPTH: usize = 64;

/// Reads the YAML's events before it is loaded: an alias (`*name`) is refused, since
/// loading copies the anchored node at every alias and a ~500-byte alias bomb grows to
/// gigabytes; the node count and the nesting depth are bounded too. After this check,
/// loading costs what the text does (docs/design.md §13, "Bounds").
fn check_events(yaml: &str) -> Result<(), FrontMatterError> {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(yaml);
    let (mut nodes, mut depth) = (0usize, 0usize);
    loop {
        let (event, mark) = parser.next_token().map_err(|e| yaml_error(&e, yaml))?;
        let line = mark.line() + 1;
        match event {
            Event::StreamEnd => return Ok(()),
            Event::Alias(_) => {
                return Err(FrontMatterError::Alias { line });
            }
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                nodes += 1;
                if depth > MAX_DEPTH {
                    return Err(FrontMatterError::TooDeep { line });
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::Scalar(..) => nodes += 1,
            _ => {}
        }
        if nodes > MAX_NODES {
            return Err(FrontMatterError::TooManyNodes { line });
        }
    }
}

/// The longest part of the YAML parser's own words an error keeps (characters).
const YAML_DETAIL_MAX: usize = 120;

/// A YAML error for people: the line, and the parser's reason cut short. Some reasons
/// repeat a whole node of the file (a duplicate key prints the key's value in debug
/// form), so without the cut a crafted SKILL.md makes an error as long as itself.
///
/// The line is the file's (the YAML starts on line 2). An error found at the end of the
/// YAML (an unclosed `[`, quote or `{`) is the last non-blank line's: the parser notices
/// it only where the front matter ends, a line after the one to fix.
fn yaml_error(e: &yaml_rust2::ScanError, yaml: &str) -> FrontMatterError {
    let info = e.info();
    let detail = match info.char_indices().nth(YAML_DETAIL_MAX) {
        Some((cut, _)) => format!("{}…", &info[..cut]),
        None => info.to_string(),
    };
    let at_end = e.marker().index() >= yaml.chars().count();
    let last = yaml
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, _)| i)
        .last();
    let line = match last {
        Some(last) if at_end => last + 2,
        _ => e.marker().line() + 1,
    };
    FrontMatterError::Yaml { line, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_and_body() {
        let p = parse(
            "---\nname: x\ndescription: >\n  two\n  lines\nallowed-tools: Read Grep\n---\nDo it.\n",
        )
        .unwrap();
        assert_eq!(p.name.as_deref(), Some("x"));
        assert_eq!(p.description, "two lines");
        assert_eq!(p.allowed_tools, ["Read", "Grep"]);
        assert_eq!(p.body, "Do it.");
    }

    /// Found by the `skill` fuzz target: a list item that is empty (`- ""`, or a bare
    /// tag, `- !`) came out as a tool with an empty name.
    #[test]
    fn empty_tool_list_items_are_not_tools() {
        for text in [
            "---\nallowed-tools:\r- !\n---\n-",
            "---\nallowed-tools:\n  - \"\"\n  - \" Read \"\n---\nbody\n",
        ] {
            let p = parse(text).unwrap();
            assert!(p.allowed_tools.iter().all(|t| !t.is_empty()), "{text:?}");
        }
        let p = parse("---\nallowed-tools: [\"\", \" Read \"]\n---\nbody\n").unwrap();
        assert_eq!(p.allowed_tools, ["Read"]);
    }

    #[test]
    fn rejects_missing_or_unclosed_front_matter() {
        assert!(
            parse("just a prompt\n")
                .unwrap_err()
                .to_string()
                .contains("no front matter")
        );
        assert!(
            parse("---\nname: x\n")
                .unwrap_err()
                .to_string()
                .contains("not closed")
        );
        assert!(
            parse("---\nname: [x\n---\nbody")
                .unwrap_err()
                .to_string()
                .contains("not valid YAML")
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_before_it_grows() {
        let mut yaml = String::from("---\na: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (i, prev) in ('b'..='j').zip('a'..='i') {
            yaml.push_str(&format!("{i}: &{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        yaml.push_str("name: boom\n---\nbody\n");
        assert!(yaml.len() < 1000);
        let e = parse(&yaml).unwrap_err().to_string();
        assert!(e.contains("alias") && e.contains("line 3"), "{e}");
        // Anchors alone are fine.
        assert!(parse("---\nname: &n x\n---\nbody\n").is_ok());
    }

    #[test]
    fn node_count_and_depth_are_bounded() {
        let deep = format!(
            "---\nx: {}{}\n---\nbody\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(
            parse(&deep)
                .unwrap_err()
                .to_string()
                .contains("deeper than 64")
        );
        let wide = format!("---\nx: [{}]\n---\nbody\n", vec!["1"; 20_000].join(","));
        assert!(
            parse(&wide)
                .unwrap_err()
                .to_string()
                .contains("more than 10000")
        );
    }

    #[test]
    fn a_yaml_error_never_repeats_a_long_node_of_the_file() {
        let key = format!("[{}]", vec!["tools"; 400].join(", "));
        let text = format!("---\n? {key}\n: 1\n? {key}\n: 2\n---\nbody");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("not valid YAML"), "{err}");
        assert!(
            err.chars().count() < 300,
            "{} chars: {err}",
            err.chars().count()
        );
    }

    #[test]
    fn an_unclosed_bracket_is_reported_on_its_own_line() {
        // Line 4 opens a list it never closes; the parser finds out at the closing `---`.
        let e = parse("---\nname: x\ndescription: d\nallowed-tools: [Read\n---\nbody\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(line 4 of the file)"), "{e}");
        let e = parse("---\nname: x\ndescription: \"d\n\n---\nbody\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(line 3 of the file)"), "{e}");
        // An error inside the YAML keeps the parser's line.
        let e = parse("---\nname: x: y\ndescription: d\n---\nbody\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("(line 2 of the file)"), "{e}");
    }
}
