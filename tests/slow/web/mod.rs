//! The web app in headless Chromium: pages, live updates, XSS, the reply
//! box, screenshots and the accessibility audit.

pub mod browser;
pub mod pages;
pub mod replies;
