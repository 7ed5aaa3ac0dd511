//! Each `request_clarification` type answered in Chromium: by real clicks,
//! typing and drags, again with JavaScript off, and the XSS corpus inert.
//! The type's other tests are in `tests/api/widgets/clarification/`.

mod annotation;
mod choice;
mod curation;
mod mapping;
pub(crate) mod ranking;
mod table;
mod tree;
