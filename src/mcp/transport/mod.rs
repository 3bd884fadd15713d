//! How MCP messages reach the server: `http` (Streamable HTTP, `memdir serve --http`).
//! The stdio transport is `mcp::stdio` and `mcp::framing`.

pub mod http;
