//! MCP in a browser: elicitation's widget page, and MCP Apps in a real
//! host page (`@modelcontextprotocol/ext-apps`), both in Chromium.

pub mod apps_host;
pub mod elicitation;
