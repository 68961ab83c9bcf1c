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
    /// (docs/design.md §13). None when unknown: the caller reads and measures.
    fn new_side_size(&self, _file: &FileChange) -> Option<u64> {
        None
    }

    /// The base version of `file` (its old side, before the change), head first: what a
    /// generated-file marker must also be found in, so that a change cannot exempt a file
    /// by writing one (docs/design.md §14). None when the file has no base version (added) or it
    /// is not known (patch input), or is larger than [`MAX_BASE_BYTES`].
    fn old_side(&self, _file: &FileChange) -> Option<Vec<u8>> {
        None
    }

    /// A file of the base tree by its repository path (the base's top `.gitignore`, which
    /// may name build folders below the top). None when there is none or it is not known.
    fn base_file(&self, _path: &str) -> Option<Vec<u8>> {
        None
    }
}

/// The largest base version read for its markers (they are looked for in the head).
pub const MAX_BASE_BYTES: u64 = 8 * 1024 * 1024;

/// Patch input: only the diff text itself is known.
pub struct NoContent;

impl ContentSource for NoContent {
    fn new_side(&self, _file: &FileChange) -> Option<Vec<u8>> {
        None
    }
}
