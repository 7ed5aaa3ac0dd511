//! The widget engine: durable, non-blocking requests for input.
//!
//! A widget is born `pending` (or terminal `already_present`) and leaves
//! `pending` exactly once, in one transaction that also writes everything
//! the transition implies: stored values (submit), the resume prompt, the
//! event and the audit row. The guarded `UPDATE … WHERE status = 'pending'`
//! is the only way out, so concurrent answers cannot both win and a crash
//! leaves either the old state or the whole new one.
//!
//! Two halves: [`engine`], the machinery every kind shares (the traits a
//! kind implements, creation, the lifecycle, the resume prompt's delivery,
//! waiting, the rows and their cache), and [`kinds`], one module per kind
//! (`env_vars`, `ask`, `approval`, `clarification`, `fields`) that
//! declares only what differs. The cards are the server's (`src/cards/`).

pub mod engine;
pub mod kinds;

pub use crate::ids::WidgetId;
pub use engine::badge::{MCP_APP, MCP_CLIENT};
pub use engine::cache::RowCache;
pub use engine::create::{MAX_PENDING_PER_SESSION, create, create_living, validate};
pub use engine::delivery::{Answered, Waited};
pub use engine::kind::{AnswerBody, Answerer, Kind, MAX_WAIT_SECS, Request, check_wait};
pub use engine::lifecycle::{
    archive_session, dismiss_widget, expire_due, expire_unwaited, live, submit,
};
pub use engine::read::{
    get_widget, get_widget_locked, read_widget, session_widgets, widgets_of_messages,
};
pub use engine::row::{Cause, Created, WidgetRow, WidgetStatus, WidgetView};
pub use engine::wait::{NEXT_TURN, after_waiting, wait_for_answer};
pub use kinds::{Approval, Ask, AskUser, Clarification, EnvVars, Fields, Questions};
