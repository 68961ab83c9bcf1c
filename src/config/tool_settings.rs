//! The tool loop's settings as data (docs/design.md §14): which skills run as a loop and
//! the bounds of one unit's loop, with their defaults. `tools.rs` reads them from the TOML;
//! [`super::Settings`] carries them, without importing the reader.

/// `maxTurns` when unset: turns per unit, the final (tools off) turn included.
pub const DEFAULT_MAX_TURNS: u32 = 8;
/// The built-in skills' turns when nothing configures them: a small loop.
pub const BUILT_IN_MAX_TURNS: u32 = 4;
/// `maxToolCalls` when unset: tool calls per unit.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 24;
/// `toolResultBytes` when unset: one call's result.
pub(crate) const DEFAULT_TOOL_RESULT_BYTES: usize = 32 * 1024;
/// `toolBytesPerUnit` when unset: every result of one unit together.
pub(crate) const DEFAULT_TOOL_BYTES_PER_UNIT: usize = 256 * 1024;

/// Which skills run as a tool loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolsMode {
    /// Skills whose front matter (or config) lists tools (`[execution] tools` unset).
    #[default]
    Skills,
    /// Every skill (`tools = true`): those that list none get `Read Grep Glob`.
    All,
    /// None (`tools = false`, or `--no-tools`): every unit is one request.
    Off,
}

/// The bounds of one unit's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolBounds {
    /// Turns (requests) per unit, the final one included; a skill may set its own.
    pub max_turns: u32,
    /// Whether `max_turns` was configured (else the built-in skills use
    /// [`BUILT_IN_MAX_TURNS`]).
    pub max_turns_set: bool,
    /// Tool calls per unit (a repeated call answered from memory counts too).
    pub max_tool_calls: u32,
    /// Bytes of one call's result.
    pub result_bytes: usize,
    /// Bytes of all of one unit's results.
    pub unit_bytes: usize,
}

impl Default for ToolBounds {
    fn default() -> Self {
        ToolBounds {
            max_turns: DEFAULT_MAX_TURNS,
            max_turns_set: false,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            result_bytes: DEFAULT_TOOL_RESULT_BYTES,
            unit_bytes: DEFAULT_TOOL_BYTES_PER_UNIT,
        }
    }
}
