//! The web app (`src/web`): pages, login, the transcript and its reply box.

pub mod browser;
pub mod forwarded;
pub mod pages;
pub mod replies;
