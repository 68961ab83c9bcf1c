//! Files no model should spend time on, whatever the config says (a user's `!pattern`
//! in `ignorePaths` can still re-include one).

use globset::{GlobSet, GlobSetBuilder};
use std::path::Path;
use std::sync::OnceLock;

/// Artifacts, wherever they are: (category shown in the skip reason, patterns in gitignore
/// style without `!`). Only names no hand-written code file has: a change cannot name
/// `src/auth.min.py` or `src/build/auth.py` into an exemption (docs/design.md §14).
const RULES: &[(&str, &[&str])] = &[
    (
        "lockfile",
        &[
            "pnpm-lock.yaml",
            "package-lock.json",
            "npm-shrinkwrap.json",
            "yarn.lock",
            "Cargo.lock",
            "go.sum",
            "poetry.lock",
            "composer.lock",
            "Gemfile.lock",
            "Pipfile.lock",
            "bun.lockb",
            "bun.lock",
            "uv.lock",
            "pdm.lock",
            "mix.lock",
            "pubspec.lock",
            "Podfile.lock",
            "packages.lock.json",
            "flake.lock",
        ],
    ),
    (
        "minified",
        &["*.min.js", "*.min.mjs", "*.min.cjs", "*.min.css"],
    ),
    ("source-map", &["*.map"]),
    ("vendored", &["vendor/", "node_modules/", "third_party/"]),
    (
        "image",
        &[
            "*.png", "*.jpg", "*.jpeg", "*.gif", "*.bmp", "*.ico", "*.webp", "*.tiff", "*.avif",
            "*.heic", "*.psd",
        ],
    ),
    ("font", &["*.woff", "*.woff2", "*.ttf", "*.otf", "*.eot"]),
    (
        "archive",
        &[
            "*.zip", "*.tar", "*.gz", "*.tgz", "*.bz2", "*.xz", "*.7z", "*.rar", "*.jar", "*.war",
            "*.zst",
        ],
    ),
    (
        "media",
        &[
            "*.mp3", "*.mp4", "*.wav", "*.ogg", "*.flac", "*.mov", "*.avi", "*.mkv", "*.webm",
            "*.pdf",
        ],
    ),
    (
        "data",
        &[
            "*.sqlite",
            "*.sqlite3",
            "*.db",
            "*.parquet",
            "*.csv",
            "*.tsv",
            "*.pb",
            "*.bin",
        ],
    ),
];

/// Build roots: skipped at the repository's top only (`build/x.js`, not `src/build/x.js`);
/// below the top, only where the base's own `.gitignore` names the path.
pub(crate) const BUILD_ROOTS: &[&str] = &["dist", "build", "out", ".next", "coverage", "target"];

struct Compiled {
    set: GlobSet,
    /// For each glob: its category and the pattern it came from.
    rule: Vec<(&'static str, &'static str)>,
}

fn compiled() -> &'static Compiled {
    static CELL: OnceLock<Compiled> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        let mut rule = Vec::new();
        for (cat, patterns) in RULES {
            for p in *patterns {
                let base = format!("**/{}", p.trim_end_matches('/'));
                let globs = if p.ends_with('/') {
                    vec![format!("{base}/**")]
                } else {
                    vec![base]
                };
                for g in globs {
                    let glob = globset::GlobBuilder::new(&g)
                        .literal_separator(true)
                        .case_insensitive(true)
                        .build()
                        .expect("built-in patterns are valid globs");
                    builder.add(glob);
                    rule.push((*cat, *p));
                }
            }
        }
        Compiled {
            set: builder.build().expect("built-in glob set builds"),
            rule,
        }
    })
}

/// A built-in skip: its category and the rule that matched, as people read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// `lockfile`, `minified`, `build-output`, ...
    pub category: &'static str,
    /// `*.min.js`, `/build/` (a build root at the top), ...
    pub pattern: String,
}

/// The built-in rule that ignores `path` wherever it is (artifacts), or at the top
/// (build roots), if any.
pub fn rule(path: &Path) -> Option<Rule> {
    let c = compiled();
    if let Some(i) = c.set.matches(path).first() {
        let (category, pattern) = c.rule[*i];
        return Some(Rule {
            category,
            pattern: pattern.to_string(),
        });
    }
    let top = path.components().next()?.as_os_str().to_str()?;
    (BUILD_ROOTS.contains(&top) && path.components().count() > 1).then(|| Rule {
        category: "build-output",
        pattern: format!("/{top}/"),
    })
}

/// The build-root name among `path`'s folders below the top (`src/build/x.js`: `build`),
/// which only the base's `.gitignore` can make a skip.
pub fn build_root_below_top(path: &Path) -> Option<&'static str> {
    let mut folders: Vec<_> = path.components().collect();
    folders.pop();
    folders
        .iter()
        .skip(1)
        .filter_map(|c| c.as_os_str().to_str())
        .find_map(|name| BUILD_ROOTS.iter().copied().find(|b| *b == name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        let c = |p: &str| rule(Path::new(p)).map(|r| r.category);
        assert_eq!(c("Cargo.lock"), Some("lockfile"));
        assert_eq!(c("web/package-lock.json"), Some("lockfile"));
        assert_eq!(c("static/app.min.js"), Some("minified"));
        assert_eq!(c("dist/x.js"), Some("build-output"));
        assert_eq!(c("node_modules/x/index.js"), Some("vendored"));
        assert_eq!(c("logo.PNG"), Some("image"));
        assert_eq!(c("src/main.rs"), None);
        assert_eq!(c("src/distance.rs"), None);
        assert_eq!(c("dist"), None, "a file named like a root is no root");
    }

    #[test]
    fn names_a_change_chooses_are_not_exemptions() {
        let c = |p: &str| rule(Path::new(p)).map(|r| r.category);
        // Build-looking folders below the top, and `.min.` on a code file.
        for p in [
            "src/build/auth.py",
            "a/dist/x.js",
            "pkg/out/main.go",
            "crates/x/target/lib.rs",
            "src/auth.min.py",
            "src/auth.min.rs",
        ] {
            assert_eq!(c(p), None, "{p}");
        }
        assert_eq!(
            build_root_below_top(Path::new("src/build/auth.py")),
            Some("build")
        );
        assert_eq!(build_root_below_top(Path::new("build/auth.py")), None);
        assert_eq!(build_root_below_top(Path::new("src/build")), None);
        // Real artifacts and top build roots are still skipped, naming their rule.
        let r = rule(Path::new("web/app.min.css")).unwrap();
        assert_eq!((r.category, r.pattern.as_str()), ("minified", "*.min.css"));
        let r = rule(Path::new("target/debug/x.rs")).unwrap();
        assert_eq!(
            (r.category, r.pattern.as_str()),
            ("build-output", "/target/")
        );
    }
}
