//! What the tests share, by job: the in-process app and its HTTP calls
//! (`app`), the real binary and daemons as child processes (`process`),
//! logging in as a browser does (`login`), asking and reading widgets
//! (`widgets`), which database the tests run on (`backend`), and a real
//! headless Chromium (`chrome`).

pub mod app;
pub mod backend;
pub mod chrome;
pub mod login;
pub mod process;
pub mod widgets;

pub use app::*;
pub use backend::{TestDir, test_dir};
pub use login::*;
pub use process::*;
