//! Which tools the server offers (`--tools`): the `memory_*` tools, the compatibility
//! profile's `memory`, or both.

/// Which tools the server offers (`--tools`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolSet {
    /// The `memory_*` tools.
    #[default]
    Default,
    /// Only `memory`, Anthropic's memory tool (`memory_20250818`) with its exact strings.
    Anthropic,
    /// Both.
    All,
}

impl ToolSet {
    pub(super) fn memory_tools(self) -> bool {
        self != ToolSet::Anthropic
    }

    pub(super) fn anthropic(self) -> bool {
        self != ToolSet::Default
    }
}
