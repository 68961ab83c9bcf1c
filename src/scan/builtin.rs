//! Files no model should spend time on, whatever the config says (a user's `!pattern`
//! in `ignorePaths` can still re-include one).

use globset::{GlobSet, GlobSetBuilder};
use std::path::Path;
use std::sync::OnceLock;

/// (category shown in the skip reason, patterns in gitignore style without `!`).
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
    ("minified", &["*.min.*"]),
    ("source-map", &["*.map"]),
    (
        "build-output",
        &["dist/", "build/", "out/", ".next/", "coverage/", "target/"],
    ),
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

struct Compiled {
    set: GlobSet,
    category: Vec<&'static str>,
}

fn compiled() -> &'static Compiled {
    static CELL: OnceLock<Compiled> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        let mut category = Vec::new();
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
                    category.push(*cat);
                }
            }
        }
        Compiled {
            set: builder.build().expect("built-in glob set builds"),
            category,
        }
    })
}

/// The built-in category that ignores `path`, if any.
pub fn category(path: &Path) -> Option<&'static str> {
    let c = compiled();
    c.set.matches(path).first().map(|i| c.category[*i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories() {
        let c = |p: &str| category(Path::new(p));
        assert_eq!(c("Cargo.lock"), Some("lockfile"));
        assert_eq!(c("web/package-lock.json"), Some("lockfile"));
        assert_eq!(c("static/app.min.js"), Some("minified"));
        assert_eq!(c("a/dist/x.js"), Some("build-output"));
        assert_eq!(c("node_modules/x/index.js"), Some("vendored"));
        assert_eq!(c("logo.PNG"), Some("image"));
        assert_eq!(c("src/main.rs"), None);
        assert_eq!(c("src/distance.rs"), None);
    }
}
