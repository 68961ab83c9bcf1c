//! Typed errors of the library. Every variant is a user-facing message: a lowercase
//! fragment that names the thing that is wrong and what to do about it.

use std::path::PathBuf;

/// Everything that can stop warden before or instead of a review.
///
/// All variants map to exit code 2 (usage, config or git error), see [`Error::exit_code`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag or argument combination that cannot work.
    #[error("{0}")]
    Usage(String),

    /// A config file that does not parse or does not validate.
    #[error("{path}:{line}:{column}: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the value at fault.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// What is wrong and what to write instead.
        message: String,
    },

    /// A config problem that has no single position (a missing file, a missing key).
    #[error("{path}: {message}")]
    ConfigFile {
        /// The config file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },

    /// A git operation failed: not a repository, unreadable object.
    #[error("{0}")]
    Git(String),

    /// A target that names no branch, tag or commit. Typed, so that the command layer can
    /// tell a misspelt command (`warden revew`) from a misspelt ref.
    #[error("{message}")]
    UnknownRef {
        /// The ref as written.
        spec: String,
        /// A ref of the repository within two edits of it, if any.
        near: Option<String>,
        /// What is wrong and what to check.
        message: String,
    },

    /// A `--diff` input that is not a unified diff.
    #[error("{source_name}:{line}: {message}")]
    Patch {
        /// The file name given to `--diff`, or `stdin`.
        source_name: String,
        /// 1-based line at fault.
        line: usize,
        /// What is wrong there.
        message: String,
    },

    /// A skill file that cannot be loaded.
    #[error("{path}: {message}")]
    Skill {
        /// The skill file, as shown to people.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// A shard report `warden merge` cannot use (not JSON, another schema, another plan).
    #[error("{path}: {message}")]
    Merge {
        /// The report file.
        path: PathBuf,
        /// Why it cannot be merged.
        message: String,
    },

    /// `warden publish` cannot go on: a report it refuses (forged, another repository or
    /// head, too large), a context it cannot find, a token it does not have.
    #[error("publish: {0}")]
    Publish(String),

    /// A route's API key variable is not set.
    #[error(
        "route `{route}`: the environment variable {var} is not set: export it with your API key (warden reads keys only from the variable a route names in apiKeyEnv), or try the built-in simulator with a route `provider = \"sim\"`"
    )]
    MissingKey {
        /// The route's name.
        route: String,
        /// The variable it names in `apiKeyEnv`.
        var: String,
    },

    /// The result cache cannot be used (only `warden cache` fails on this; a review warns
    /// and goes on without it). The cache's own error, boxed so that this bottom type
    /// knows nothing of the layers above it (`cache` converts into it).
    #[error(transparent)]
    Cache(Box<dyn std::error::Error + Send + Sync>),

    /// A route whose client cannot be set up (its TLS trust roots, for one).
    #[error("route `{route}`: {message}")]
    Route {
        /// The route's name.
        route: String,
        /// What is wrong with it.
        message: String,
    },

    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file (or `<stdout>`, `<stdin>`).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The process exit code for this error (docs/design.md section 5: 2 for usage, config, git).
    pub fn exit_code(&self) -> i32 {
        2
    }

    /// An I/O error on `path` (a file, or a pseudo path such as `<stdout>`).
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn git(context: &str, err: git2::Error) -> Self {
        Error::Git(format!("{context}: {}", err.message()))
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
