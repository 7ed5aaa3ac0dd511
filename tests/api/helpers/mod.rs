//! What the tests share, by job: the in-process app and its HTTP calls
//! (`app`), the real binary and daemons as child processes (`process`),
//! logging in as a browser does (`login`), asking, reading and answering
//! widgets (`widgets`: the one `ask`, `widget`, `created`), an MCP client
//! (`mcp`), which database the tests run on (`backend`), and a real
//! headless Chromium (`chrome`).

pub mod app;
pub mod backend;
pub mod chrome;
pub mod login;
pub mod mcp;
pub mod process;
pub mod widgets;

pub use app::*;
pub use backend::{TestDir, test_dir};
pub use login::*;
pub use process::*;
pub use widgets::*;
