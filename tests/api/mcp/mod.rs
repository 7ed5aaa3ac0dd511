//! The MCP server (`src/mcp`): its tools, elicitation, and MCP Apps.

pub mod apps;
pub mod elicitation;
pub mod endpoint;
