//! The new side of a changed file (working tree, index or commit, as the target
//! implies): read for context lines, size caps and generated-file markers.

use super::FileChange;

/// Where the chunker and scan policy read a file's new content from.
pub trait ContentSource {
    /// The new-side bytes of `file`, or None when there is no new side to read
    /// (deleted file, patch input, submodule).
    fn new_side(&self, file: &FileChange) -> Option<Vec<u8>>;

    /// The new side's size in bytes, known without reading it (file metadata, the object
    /// database's header), so that a file over a size cap costs its size check only
    /// (DESIGN.md §13). None when unknown: the caller reads and measures.
    fn new_side_size(&self, _file: &FileChange) -> Option<u64> {
        None
    }
}

/// Patch input: only the diff text itself is known.
pub struct NoContent;

impl ContentSource for NoContent {
    fn new_side(&self, _file: &FileChange) -> Option<Vec<u8>> {
        None
    }
}
