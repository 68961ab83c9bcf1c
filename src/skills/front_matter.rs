//! `SKILL.md` front matter: YAML between two `---` lines at the top of the file.

/// The fields warden reads from a skill's front matter, and the body after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub name: Option<String>,
    pub description: String,
    pub allowed_tools: Vec<String>,
    pub body: String,
}

/// Splits and parses a skill file. Errors are lowercase fragments for [`crate::Error::Skill`].
pub fn parse(text: &str) -> Result<Parsed, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("no front matter: the file must start with a `---` line, then `name:` and `description:` lines, then `---`, then the prompt".into());
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
        return Err(
            "front matter is not closed: add a `---` line after the `name:`/`description:` lines"
                .into(),
        );
    }
    let body: String = lines.collect();
    let docs = yaml_rust2::YamlLoader::load_from_str(&yaml).map_err(|e| {
        format!(
            "front matter is not valid YAML (line {} of the file): {}",
            e.marker().line() + 1,
            e.info()
        )
    })?;
    let doc = docs.into_iter().next().unwrap_or(yaml_rust2::Yaml::Null);
    let map = match doc {
        yaml_rust2::Yaml::Hash(h) => h,
        yaml_rust2::Yaml::Null => Default::default(),
        _ => return Err("front matter must be `key: value` lines".into()),
    };
    let get = |k: &str| map.get(&yaml_rust2::Yaml::String(k.to_string()));
    let string = |k: &str| -> Result<Option<String>, String> {
        match get(k) {
            None | Some(yaml_rust2::Yaml::Null) => Ok(None),
            Some(yaml_rust2::Yaml::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(format!("front matter `{k}` must be text")),
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
            return Err(
                "front matter `allowed-tools` must be a list or space-separated text".into(),
            );
        }
    };
    if body.trim().is_empty() {
        return Err(
            "the skill has no prompt: write the instructions below the closing `---`".into(),
        );
    }
    Ok(Parsed {
        name: string("name")?.filter(|n| !n.is_empty()),
        description: string("description")?.unwrap_or_default(),
        allowed_tools,
        body: body.trim().to_string(),
    })
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
                .contains("no front matter")
        );
        assert!(parse("---\nname: x\n").unwrap_err().contains("not closed"));
        assert!(
            parse("---\nname: [x\n---\nbody")
                .unwrap_err()
                .contains("not valid YAML")
        );
    }
}
