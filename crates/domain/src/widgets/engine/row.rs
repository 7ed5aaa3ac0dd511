//! What a widget is, as stored and as shown: its row, its status, what a
//! creation returns and what anyone who may read the session sees.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::audit::{Actor, ClientAddr};
use crate::ids::{SessionId, UserId, WidgetId};

/// A widget row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WidgetRow {
    pub id: WidgetId,
    pub session_id: SessionId,
    pub kind: String,
    pub params: String,
    pub status: WidgetStatus,
    pub result: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<UserId>,
}

/// Where a widget is in its life. Every state but `pending` is terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WidgetStatus {
    Pending,
    Submitted,
    Dismissed,
    Expired,
    Cancelled,
    AlreadyPresent,
}

crate::db::text_enum!(WidgetStatus {
    Pending => "pending",
    Submitted => "submitted",
    Dismissed => "dismissed",
    Expired => "expired",
    Cancelled => "cancelled",
    AlreadyPresent => "already_present",
});

impl WidgetStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Submitted => "submitted",
            Self::Dismissed => "dismissed",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::AlreadyPresent => "already_present",
        }
    }
}

/// What a creating call returns: at once, never waiting for a person.
#[derive(Debug, Serialize)]
pub struct Created {
    pub widget_id: WidgetId,
    pub status: WidgetStatus,
}

/// A widget as anyone who may read the session sees it: parameters and
/// sanitized result, never a value.
#[derive(Debug, Serialize)]
pub struct WidgetView {
    pub widget_id: WidgetId,
    pub session_id: SessionId,
    pub kind: String,
    pub status: WidgetStatus,
    pub params: Value,
    pub result: Option<Value>,
    pub created_at: String,
    pub expires_at: String,
    pub resolved_at: Option<String>,
}

/// Who caused a transition, for the audit log.
pub struct Cause<'a> {
    pub actor: &'a Actor,
    pub client: &'a ClientAddr,
}
