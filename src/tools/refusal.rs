//! Why a tool call gets no result. Said to the model as the call's error answer (after
//! the tool's name), in words it can act on; the kind says which part of the call to fix.

/// A refused call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The arguments do not fit the tool: not a JSON object, a key missing or of the
    /// wrong type, an empty or oversized pattern or glob.
    #[error("{0}")]
    Arguments(String),
    /// A path outside the reviewed tree, git's own data or a secret-looking file.
    #[error("{0}")]
    Path(String),
    /// The file named cannot be shown: absent, a folder, binary, too big, read past its end.
    #[error("{0}")]
    File(String),
}
