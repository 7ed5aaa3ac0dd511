//! The lifecycle every kind shares after a widget is created (that is
//! `create.rs`): answering and dismissing it, expiry and cancellation, each
//! in one transaction with its event, audit row, resume prompt and webhook
//! notices. What differs between kinds comes from their [`Kind`] through
//! [`Loaded`].

use serde_json::{Value, json};
use tracing::instrument;

use futures_util::future::BoxFuture;

use super::badge::{MCP_APP, MCP_CLIENT};
use super::kind::{
    AGENT_CLIENT_KINDS, AnswerBody, Answerer, Answering, ForKind, Kind, Loaded, Stored,
};
use super::resolution::{Change, refused_once_settled, settle, transition};
use super::store;
use crate::access::{self, Caller, Need};
use crate::audit::{self, Actor, ClientAddr, Entry};
use crate::db::{Dialect, WriteTx};
use crate::error::{Error, Result};
use crate::ids::WidgetId;
use crate::ids::{SessionId, UserId};
use crate::secrets;
use crate::sessions::{self, Session};
use crate::widgets::engine::row::{Cause, WidgetRow, WidgetStatus, WidgetView};
use crate::widgets::kinds::{self, Known};
use crate::{Core, clock, prompts};

/// The session if it is not archived; `409 session_archived` otherwise.
pub fn live(session: Session) -> Result<Session> {
    match session.archived_at {
        None => Ok(session),
        Some(_) => Err(Error::Conflict {
            code: "session_archived",
            message: "the session is archived; start a new session".into(),
        }),
    }
}

/// `by` answers `row`: a person (authorised to answer it), or the agent's
/// MCP client (form mode) of the widget's own session. Its kind reads the
/// answer. A kind this version does not know is refused with `422
/// unsupported_widget`.
pub async fn submit(
    state: &Core,
    row: &WidgetRow,
    by: Answerer<'_>,
    body: AnswerBody,
    client: &ClientAddr,
) -> Result<WidgetView> {
    match Known::of(&row.kind) {
        Some(known) => {
            known
                .with(Submit {
                    state,
                    seen: row,
                    by,
                    body,
                    client,
                })
                .await
        }
        None => Err(kinds::unsupported(&row.kind, false)),
    }
}

/// [`submit_as`] for the kind the registry found.
struct Submit<'a> {
    state: &'a Core,
    seen: &'a WidgetRow,
    by: Answerer<'a>,
    body: AnswerBody,
    client: &'a ClientAddr,
}

impl<'a> ForKind for Submit<'a> {
    type Output = BoxFuture<'a, Result<WidgetView>>;
    fn run<K: Kind>(self) -> Self::Output {
        Box::pin(submit_as::<K>(
            self.state,
            self.seen,
            self.by,
            self.body,
            self.client,
        ))
    }
}

/// [`submit`] for a widget of kind `K` (as `seen` before): the answer is
/// read, then checked and applied in the transaction that takes the widget
/// out of `pending`.
#[instrument(skip_all)]
pub(crate) async fn submit_as<K: Kind>(
    state: &Core,
    seen: &WidgetRow,
    by: Answerer<'_>,
    body: AnswerBody,
    client: &ClientAddr,
) -> Result<WidgetView> {
    if by.agent_side().is_some() && !K::NAMES.iter().all(|k| AGENT_CLIENT_KINDS.contains(k)) {
        return Err(not_for_agent_client());
    }
    let answer = K::read(body)?;
    // A widget never moves to another session: the lock its earlier read
    // names is the one to take, with the transaction's first statement.
    let lock = crate::db::Lock::Session(seen.session_id.as_str());
    let mut tx = state.db.begin_write_locking(lock).await?;
    // Who is recorded as answering: the person by name, the agent's side
    // as itself, never as a person.
    let found = match by {
        Answerer::Person(user) => answerable(&mut tx, Seen::Row(seen), user).await,
        Answerer::AgentClient(agent) => {
            answerable_by_agent_client(&mut tx, seen, agent, MCP_CLIENT).await
        }
        Answerer::AgentApp(agent) => {
            answerable_by_agent_client(&mut tx, seen, agent, MCP_APP).await
        }
    };
    let (widget, session, name) = match found {
        Ok(found) => found,
        Err(err) => return Err(refused_once_settled(tx, err).await),
    };
    let params: K::Params =
        serde_json::from_str(&widget.params).map_err(|e| unreadable(&widget, e))?;
    let user = match by {
        Answerer::Person(user) => user,
        Answerer::AgentClient(_) | Answerer::AgentApp(_) => &session.creator_id,
    };
    let mut cx = Answering {
        conn: &mut tx,
        state,
        session: &session,
        user,
        by: &name,
        from_agent: by.agent_side().is_some(),
        widget: &widget,
        stay_pending: false,
    };
    let result = K::apply(&mut cx, &params, answer).await?;
    if cx.stay_pending {
        return super::votes::record(tx, state, &widget, &result, by, client).await;
    }
    let answer = Answer {
        to: WidgetStatus::Submitted,
        result,
        by,
        client,
    };
    finish(tx, state, &widget, &Stored::<K>(params), answer).await
}

/// `422 not_answerable_here`: the agent's MCP client answers questions only.
fn not_for_agent_client() -> Error {
    Error::invalid(
        "not_answerable_here",
        "this request is answered only by the person, in widgetd's pages",
    )
}

/// A person declines to answer, optionally with a note for the agent (read
/// with [`text::NOTE`](super::text::NOTE)'s rules); a note holding one of the creator's
/// stored values is refused.
pub async fn dismiss_widget(
    state: &Core,
    id: &WidgetId,
    user: &UserId,
    note: Option<String>,
    client: &ClientAddr,
) -> Result<WidgetView> {
    let mut tx = state.db.begin_write().await?;
    let (widget, session, by) = match answerable(&mut tx, Seen::Id(id), user).await {
        Ok(found) => found,
        Err(err) => return Err(refused_once_settled(tx, err).await),
    };
    let loaded = kinds::load(&widget.kind, &widget.params).map_err(|e| match e {
        kinds::Unloadable::UnknownKind => kinds::unsupported(&widget.kind, true),
        kinds::Unloadable::Unreadable(e) => unreadable(&widget, e),
    })?;
    if let Some(note) = &note {
        let texts = [note.as_str()];
        secrets::refuse_stored_values(&mut tx, &state.keyring, &session.creator_id, &texts).await?;
    }
    let mut result = loaded.unanswered();
    result["dismissed_by"] = json!(by);
    if let Some(note) = note {
        result["note"] = json!(note);
    }
    let answer = Answer {
        to: WidgetStatus::Dismissed,
        result,
        by: Answerer::Person(user),
        client,
    };
    finish(tx, state, &widget, &*loaded, answer).await
}

fn unreadable(widget: &WidgetRow, err: serde_json::Error) -> Error {
    Error::Internal(anyhow::anyhow!(
        "widget {} has unreadable params: {err}",
        widget.id
    ))
}

/// A widget an answer is for: as read before the transaction, or its id.
enum Seen<'a> {
    Row(&'a WidgetRow),
    Id(&'a WidgetId),
}

/// The widget, its session and the name of `person` (who answers it), read
/// in one statement under the session's lock inside `tx` (PostgreSQL; on
/// SQLite the writer is the lock). An earlier read names the lock (a
/// widget never moves to another session); without one, the widget is read
/// first to find it.
async fn locked(
    tx: &mut WriteTx,
    seen: Seen<'_>,
    person: Option<&UserId>,
) -> Result<store::ForAnswer> {
    let id = match seen {
        Seen::Row(row) => {
            tx.lock(crate::db::Lock::Session(row.session_id.as_str()))
                .await?;
            &row.id
        }
        Seen::Id(id) => {
            if Dialect::of(tx).sql().shared_by_daemons() {
                let first = crate::widgets::engine::read::get_widget(tx, id).await?;
                tx.lock(crate::db::Lock::Session(first.session_id.as_str()))
                    .await?;
            }
            id
        }
    };
    store::for_answer(tx, id, person)
        .await?
        .ok_or(Error::NotFound("widget"))
}

/// A pending widget of a session `user` may answer, with its session and
/// `user`'s name, inside the caller's transaction.
async fn answerable(
    tx: &mut WriteTx,
    seen: Seen<'_>,
    user: &UserId,
) -> Result<(WidgetRow, Session, String)> {
    let store::ForAnswer {
        widget,
        session,
        person_name,
    } = locked(tx, seen, Some(user)).await?;
    access::check(tx, Caller::Person(user), &session, Need::Answer)
        .await
        .map_err(|err| match err {
            Error::NotFound(_) => Error::NotFound("widget"),
            other => other,
        })?;
    if widget.status != WidgetStatus::Pending {
        return Err(Error::WidgetNotPending(widget.status.as_str()));
    }
    // Past its TTL but not swept yet: as good as expired.
    if widget.expires_at <= clock::now_ms() {
        return Err(Error::WidgetNotPending(WidgetStatus::Expired.as_str()));
    }
    let name =
        person_name.ok_or_else(|| Error::Internal(anyhow::anyhow!("user {user} is not stored")))?;
    Ok((widget, session, name))
}

/// A pending widget of `agent`'s own session, with its session and the
/// name the answer is recorded under (`recorded_as`), inside the caller's
/// transaction: what its MCP client may answer. Another session's widget
/// is not found.
async fn answerable_by_agent_client(
    tx: &mut WriteTx,
    seen: &WidgetRow,
    agent: &SessionId,
    recorded_as: &str,
) -> Result<(WidgetRow, Session, String)> {
    let store::ForAnswer {
        widget, session, ..
    } = locked(tx, Seen::Row(seen), None).await?;
    if &widget.session_id != agent {
        return Err(Error::NotFound("widget"));
    }
    if !AGENT_CLIENT_KINDS.contains(&widget.kind.as_str()) {
        return Err(not_for_agent_client());
    }
    let session = live(session)?;
    if widget.status != WidgetStatus::Pending {
        return Err(Error::WidgetNotPending(widget.status.as_str()));
    }
    if widget.expires_at <= clock::now_ms() {
        return Err(Error::WidgetNotPending(WidgetStatus::Expired.as_str()));
    }
    Ok((widget, session, recorded_as.to_owned()))
}

/// An answer to a widget, as recorded.
struct Answer<'a> {
    to: WidgetStatus,
    result: Value,
    by: Answerer<'a>,
    client: &'a ClientAddr,
}

/// Ends an answer's transaction: the guarded transition with its prompt,
/// event and audit row, then the commit and the wake-up.
async fn finish(
    tx: crate::db::WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    answer: Answer<'_>,
) -> Result<WidgetView> {
    // The agent's MCP client is recorded as itself, never as a person.
    let (actor, resolved_by) = match answer.by {
        Answerer::Person(user) => (Actor::User(user.clone()), Some(user)),
        Answerer::AgentClient(agent) => (Actor::McpClient(agent.clone()), None),
        Answerer::AgentApp(agent) => (Actor::McpApp(agent.clone()), None),
    };
    let cause = Cause {
        actor: &actor,
        client: answer.client,
    };
    let change = Change {
        to: answer.to,
        result: &answer.result,
        by: resolved_by,
    };
    let resolved = settle(tx, state, widget, loaded, change, &cause).await?;
    state.hub.publish(&widget.session_id);
    Ok(resolved.into())
}

/// Ends `widget` without an answer (`expired`, `cancelled`), whatever its
/// kind; one this version cannot read still ends, with a generic prompt.
async fn lapse(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    to: WidgetStatus,
    cause: &Cause<'_>,
) -> Result<()> {
    let loaded = kinds::load_or_lapsed(&widget.kind, &widget.params);
    let result = loaded.unanswered();
    let change = Change {
        to,
        result: &result,
        by: None,
    };
    transition(tx, state, widget, &*loaded, change, cause).await?;
    Ok(())
}

/// Ends a pending widget whose waiting caller stopped waiting (a Claude
/// Code hook that answered "no decision", or whose request was dropped):
/// `expired`, with `why` in its result for the card's badge, and its prompt
/// marked delivered in the same transaction, because the caller already
/// told the agent the outcome: no later turn may start from it. A widget
/// that was answered first is left as it is and returned, so that the
/// caller hands on that answer instead.
pub async fn expire_unwaited(
    state: &Core,
    id: &WidgetId,
    why: &str,
    cause: Cause<'_>,
) -> Result<Option<WidgetView>> {
    let mut tx = state.db.begin_write().await?;
    let widget = crate::widgets::engine::read::get_widget_locked(&mut tx, id).await?;
    if widget.status == WidgetStatus::Pending {
        let loaded = kinds::load_or_lapsed(&widget.kind, &widget.params);
        let mut result = loaded.unanswered();
        result["ended_because"] = json!(why);
        let change = Change {
            to: WidgetStatus::Expired,
            result: &result,
            by: None,
        };
        match transition(&mut tx, state, &widget, &*loaded, change, &cause).await {
            Ok(_) => {
                prompts::ack_widget(&mut tx, &widget.session_id, &widget.id).await?;
                tx.commit().await?;
                state.hub.publish(&widget.session_id);
                return Ok(None);
            }
            Err(Error::WidgetNotPending(_)) => {}
            Err(err) => return Err(err),
        }
    }
    // Answered first: settle the batch that holds that answer, then read it.
    tx.commit().await?;
    let answered =
        crate::widgets::engine::read::get_widget(&mut *state.db.read.acquire().await?, id).await?;
    Ok(Some(answered.into()))
}

/// Expires every pending widget whose TTL has passed. Returns how many.
pub async fn expire_due(state: &Core) -> Result<usize> {
    let mut expired = 0;
    loop {
        let mut tx = state.db.begin_write().await?;
        let now = clock::now_ms();
        let mut due = store::due(&mut tx, now, 100).await?;
        if due.is_empty() {
            return Ok(expired);
        }
        if crate::db::Dialect::of(&tx).sql().shared_by_daemons() {
            // Their sessions' locks, in sorted order, then the list again
            // under them: a widget answered meanwhile is no longer due.
            let locked: std::collections::BTreeSet<SessionId> =
                due.iter().map(|w| w.session_id.clone()).collect();
            let sessions = locked.iter().map(|s| crate::db::Lock::Session(s.as_str()));
            tx.lock_all(sessions).await?;
            due = store::due(&mut tx, now, 100).await?;
            due.retain(|w| locked.contains(&w.session_id));
        }
        let cause = Cause {
            actor: &Actor::System,
            client: &ClientAddr::default(),
        };
        let mut sessions = Vec::new();
        for widget in &due {
            lapse(&mut tx, state, widget, WidgetStatus::Expired, &cause).await?;
            sessions.push(widget.session_id.clone());
        }
        tx.commit().await?;
        expired += due.len();
        sessions.dedup();
        sessions.iter().for_each(|s| state.hub.publish(s));
    }
}

/// Archives a session: its agent token stops working and its pending
/// widgets are cancelled, each with its prompt. Idempotent.
pub async fn archive_session(
    state: &Core,
    session_id: &SessionId,
    cause: Cause<'_>,
) -> Result<usize> {
    let first = crate::db::Lock::Session(session_id.as_str());
    let mut tx = state.db.begin_write_locking(first).await?;
    sessions::mark_archived(&mut tx, session_id, clock::now_ms()).await?;
    let pending = store::pending_of_session(&mut tx, session_id).await?;
    for widget in &pending {
        lapse(&mut tx, state, widget, WidgetStatus::Cancelled, &cause).await?;
    }
    let entry = Entry {
        action: "session.archive",
        session: Some(session_id),
        ..Default::default()
    };
    audit::append(&mut tx, cause.actor, cause.client, entry).await?;
    tx.commit().await?;
    state.hub.publish(session_id);
    Ok(pending.len())
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
