//! Each widget kind answered in headless Chromium, with JavaScript on and
//! off.

pub mod approval;
pub mod approval_edit;
pub mod ask;
pub mod clarification;
pub mod dismiss;
pub mod fields;
pub mod life;
