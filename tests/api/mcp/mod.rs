//! The MCP server (`src/mcp`): its tools, elicitation, and MCP Apps.

pub mod apps;
pub mod apps_host;
pub mod elicitation;
pub mod endpoint;
