//! Places in the config file: the line and column of a byte offset, and a place kept for
//! an error found after loading. A leaf of the folder, so the context (`ctx.rs`), the
//! settings and the unknown-key finder all use it without importing each other.

use std::path::PathBuf;

/// A place in the config file, kept for errors found after loading (an unknown skill is
/// known only once the skill directories are read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigPlace {
    /// The config file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}
