//! `warden.toml` texts for tests, built instead of written out: `version = 1`, then
//! sections and routes in the order given, each key on its own line. The bytes are those a
//! person would write (`key = "text"`, `key = 3`), so a test that names a line still can.

use std::fmt::Write as _;

/// A config under construction; `build` gives its text.
#[derive(Clone, Debug)]
pub struct Toml(String);

impl Default for Toml {
    fn default() -> Self {
        Toml::new()
    }
}

impl Toml {
    /// `version = 1` and nothing else.
    pub fn new() -> Toml {
        Toml("version = 1\n".into())
    }

    /// `[name]` and its keys (see [`value`] for how each is written).
    pub fn section(mut self, name: &str, keys: &[(&str, &str)]) -> Self {
        let _ = writeln!(self.0, "[{name}]");
        self.keys(keys)
    }

    /// The `[execution]` section.
    pub fn exec(self, keys: &[(&str, &str)]) -> Self {
        self.section("execution", keys)
    }

    /// One `[[routes]]` entry: its name and provider, then `keys`.
    pub fn route(mut self, name: &str, provider: &str, keys: &[(&str, &str)]) -> Self {
        let _ = write!(
            self.0,
            "[[routes]]\nname = \"{name}\"\nprovider = \"{provider}\"\n"
        );
        self.keys(keys)
    }

    /// The two routes on the fake provider (see [`super::fake_routes`]).
    pub fn fake_routes(self, base: &str, key_var: &str, cap: usize) -> Self {
        self.raw(&super::fake_routes(base, key_var, cap))
    }

    /// Text as written (a test's own lines, which may be empty).
    pub fn raw(mut self, text: &str) -> Self {
        self.0.push_str(text);
        self
    }

    /// More keys for the section opened last (after a test's own line, say).
    pub fn keys(mut self, keys: &[(&str, &str)]) -> Self {
        for (k, v) in keys {
            let _ = writeln!(self.0, "{k} = {}", value(v));
        }
        self
    }

    pub fn build(self) -> String {
        self.0
    }
}

/// A TOML value as written: numbers, booleans, arrays, tables and already quoted strings
/// as they are, any other text quoted (`"20s"`, `"auto"`).
pub fn value(v: &str) -> String {
    let number =
        v.starts_with(|c: char| c.is_ascii_digit() || c == '-') && v.parse::<f64>().is_ok();
    let literal = number || v == "true" || v == "false" || v.starts_with(['[', '{', '"']);
    if literal {
        v.to_string()
    } else {
        format!("\"{v}\"")
    }
}

#[test]
fn a_built_config_is_the_text_a_person_writes() {
    let text = Toml::new()
        .section("defaults", &[("maxTurns", "4"), ("failOn", "high")])
        .exec(&[("reviewBudget", "20s"), ("tools", "false"), ("n", "-1.5")])
        .route(
            "primary",
            "sim",
            &[("maxConcurrency", "auto"), ("capacity", "2")],
        )
        .raw("# end\n")
        .build();
    assert_eq!(
        text,
        "version = 1\n[defaults]\nmaxTurns = 4\nfailOn = \"high\"\n[execution]\nreviewBudget = \"20s\"\ntools = false\nn = -1.5\n[[routes]]\nname = \"primary\"\nprovider = \"sim\"\nmaxConcurrency = \"auto\"\ncapacity = 2\n# end\n"
    );
    assert_eq!(value("inf"), "\"inf\"");
    assert_eq!(value("[\"a\"]"), "[\"a\"]");
}
