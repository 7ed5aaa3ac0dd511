//! Creating a widget, the same for every kind: the agent's input
//! validated, the widget row with its transcript message, event, audit row
//! and webhook notices in one transaction (with the prompt at once for a
//! widget born terminal), within the session's pending cap; and the
//! agent's choices for its life (`super::life`).

use serde_json::Value;
use sqlx::AnyConnection;
use tracing::instrument;

use super::kind::{Kind, Loaded, ParamsOf, Request, Stored};
use super::life::Life;
use super::lifecycle::live;
use super::notices::commit_with;
use super::resolution::{after_resolution, refused_once_settled};
use super::store;
use super::store::guess::{self, Guard};
use crate::audit::{self, Actor, Entry};
use crate::db::{Script, WriteTx};
use crate::error::{Error, Result};
use crate::ids::SessionId;
use crate::ids::WidgetId;
use crate::widgets::engine::kind::check_wait;
use crate::widgets::engine::row::{Cause, Created, WidgetRow, WidgetStatus};
use crate::{Core, clock, events};

pub use super::store::MAX_PENDING_PER_SESSION;

/// Validates an agent's input for request `R`: its parameters and its
/// `wait_seconds`. Nothing is written.
pub fn validate<R: Request>(input: R::Input) -> Result<(ParamsOf<R>, u64)> {
    let wait = R::wait_seconds(&input);
    let params = R::parse(input)?;
    Ok((params, check_wait(wait)?))
}

/// Creates a widget of `R`'s kind in `session_id`, in one transaction, and
/// returns at once. It is born `already_present` (with its prompt queued)
/// when the kind finds nothing to ask.
#[instrument(skip_all, fields(kind = R::NAME))]
pub async fn create<R: Request>(
    state: &Core,
    session_id: &SessionId,
    params: ParamsOf<R>,
    cause: Cause<'_>,
) -> Result<Created> {
    create_living::<R>(state, session_id, params, &Life::default(), cause).await
}

/// [`create`] with the agent's choices for the widget's life: how long it
/// waits, and the pending widget of the session it replaces, withdrawn in
/// the same transaction (`409 widget_not_pending`, and nothing created,
/// when a person answered that one first).
pub async fn create_living<R: Request>(
    state: &Core,
    session_id: &SessionId,
    params: ParamsOf<R>,
    life: &Life,
    cause: Cause<'_>,
) -> Result<Created> {
    let ahead_sql = <R::Kind as Kind>::born_ahead(state.db.backend().dialect());
    let loaded = Stored::<R::Kind>(params);
    let names = loaded.env_names().filter(|names| !names.is_empty());
    // Only a plain creation guesses: a replacement reads and writes the
    // widget it replaces first.
    let guess = (life.replaces.is_none() && guess::allowed::<R::Kind>(&state.db, names.is_some()))
        .then(|| Guard {
            ahead_sql,
            names: names.unwrap_or_default(),
        });
    let guessed = guess.is_some();
    // Grouped creations are the agent's: the host's are marked as its own.
    let by_agent = matches!(cause.actor, Actor::Agent(_));
    if guessed && by_agent && super::store::grouped::allowed(state) {
        if let Some(created) = write_grouped::<R>(state, session_id, &loaded, life, &cause).await? {
            return Ok(created);
        }
        guess::refused_once();
        return write::<R>(state, session_id, &loaded, life, &cause, ahead_sql, None).await;
    }
    match write::<R>(state, session_id, &loaded, life, &cause, ahead_sql, guess).await {
        Err(err) if guessed && (guess::refused(&err) || guess::superseded(&err)) => {
            write::<R>(state, session_id, &loaded, life, &cause, ahead_sql, None).await
        }
        done => done,
    }
}

/// The creation's transaction, from taking the writer to its commit: with
/// `guess`, on the common case, checked by the guard in its statement of
/// writes (`optimistic`); else after reading the session in it.
async fn write<R: Request>(
    state: &Core,
    session_id: &SessionId,
    loaded: &Stored<R::Kind>,
    life: &Life,
    cause: &Cause<'_>,
    ahead_sql: Option<&'static str>,
    guess: Option<Guard<'static>>,
) -> Result<Created> {
    // The session's lock first: the pending cap counts, and the widget's
    // line and event take their places, with no other writer of the session
    // in between (PostgreSQL; SQLite's writer is alone anyway).
    let first = crate::db::Lock::Session(session_id.as_str());
    // A guess reads nothing: its writes are built from the writer's memory
    // and left to the writer's task (`db::Db::begin_write_deferred`).
    let mut tx = match guess {
        Some(_) => state.db.begin_write_deferred(first).await?,
        None => state.db.begin_write_locking(first).await?,
    };
    let params = &loaded.0;
    // Pending and counted with the session, or guessed so.
    let (born, pending) = match guess {
        Some(_) => (None, None),
        None => {
            let (session, pending, ahead) =
                store::session_and_pending(&mut tx, session_id, ahead_sql)
                    .await?
                    .ok_or(Error::NotFound("session"))?;
            let session = live(session)?;
            let born = <R::Kind as Kind>::born(&mut tx, &session, params, ahead.as_deref());
            (born.await?, Some(pending))
        }
    };
    let stored = serde_json::to_string(params).expect("params serialize");
    let born = born.as_ref().map(|r| (WidgetStatus::AlreadyPresent, r));
    let widget = new_row(state, session_id, R::NAME, stored, born, life);
    // A replaced widget leaves the count.
    let mut pending = pending.map(Cap::Counted).unwrap_or(Cap::Guarded);
    if let Some(old) = &life.replaces {
        let replaced = super::life::replace(&mut tx, state, session_id, old, &widget.id, cause);
        if let Err(err) = replaced.await {
            return Err(refused_once_settled(tx, err).await);
        }
        pending = Cap::CountNow;
    }
    insert_widget(tx, state, &widget, loaded, pending, cause, guess).await?;
    state.hub.publish(session_id);
    Ok(Created {
        widget_id: widget.id,
        status: widget.status,
    })
}

/// A plain creation written with others of their own sessions
/// (`super::grouped`, PostgreSQL); `None` when its group left it out and
/// it is to be made alone.
async fn write_grouped<R: Request>(
    state: &Core,
    session_id: &SessionId,
    loaded: &Stored<R::Kind>,
    life: &Life,
    cause: &Cause<'_>,
) -> Result<Option<Created>> {
    guess::guessed();
    let stored = serde_json::to_string(&loaded.0).expect("params serialize");
    let widget = new_row(state, session_id, R::NAME, stored, None, life);
    let ahead_sql = <R::Kind as Kind>::born_ahead(state.db.backend().dialect());
    if !super::store::grouped::write(state, &widget, loaded, ahead_sql, cause).await? {
        return Ok(None);
    }
    state.hub.publish(session_id);
    Ok(Some(Created {
        widget_id: widget.id,
        status: widget.status,
    }))
}

/// A new widget row in `session`: pending, or born terminal with `result`;
/// it expires after the server's time to live, or the agent's
/// `expires_in_seconds`.
fn new_row(
    state: &Core,
    session: &SessionId,
    kind: &str,
    params: String,
    born: Option<(WidgetStatus, &Value)>,
    life: &Life,
) -> WidgetRow {
    let now = clock::now_ms();
    let ttl = life.expires_in_ms.unwrap_or(state.settings.widget_ttl_ms);
    WidgetRow {
        id: WidgetId::generate(),
        session_id: session.clone(),
        kind: kind.to_owned(),
        params,
        status: born.map_or(WidgetStatus::Pending, |(status, _)| status),
        result: born.map(|(_, result)| result.to_string()),
        created_at: now,
        expires_at: now.saturating_add(ttl),
        resolved_at: born.map(|_| now),
        resolved_by: None,
    }
}

/// How a creation knows its session's pending count for the cap.
enum Cap {
    /// Read with the session.
    Counted(i64),
    /// Not yet: counted now (a replacement took one out).
    CountNow,
    /// Checked by the guard of a guessed creation (`optimistic`).
    Guarded,
}

/// `409 too_many_pending` when the session already has the most widgets
/// waiting that a person can be asked to face.
async fn check_pending_cap(
    tx: &mut AnyConnection,
    session: &SessionId,
    pending: Cap,
) -> Result<()> {
    let pending = match pending {
        Cap::Counted(pending) => pending,
        Cap::CountNow => store::pending_count(tx, session).await?,
        Cap::Guarded => return Ok(()),
    };
    if pending >= MAX_PENDING_PER_SESSION {
        return Err(Error::Conflict {
            code: "too_many_pending",
            message: format!(
                "this session already has {pending} requests waiting (the most is \
                 {MAX_PENDING_PER_SESSION}); end your turn and wait for answers"
            ),
        });
    }
    Ok(())
}

/// Writes a new widget with its transcript message, `widget:created` event
/// and audit row (and on SQLite the agent's rate bucket), sent as one
/// statement (`db::Script`), and commits; a widget born terminal also gets
/// its prompt at once. A pending widget with no webhook or Slack to tell
/// is committed with that statement (`notices::commit_with`).
async fn insert_widget(
    mut tx: WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    pending: Cap,
    cause: &Cause<'_>,
    guess: Option<Guard<'_>>,
) -> Result<()> {
    let mut script = Script::new(tx.dialect());
    if let Some(guard) = guess {
        guard.put_into(&mut script, &widget.session_id);
    }
    if let Actor::Agent(session) = cause.actor {
        crate::limits::take_agent_into(&mut tx, &mut script, session).await?;
    }
    if widget.status == WidgetStatus::Pending && !matches!(pending, Cap::Guarded) {
        check_pending_cap(&mut tx, &widget.session_id, pending).await?;
    }
    let (created, names) = store::created_event(widget, loaded.env_names());
    let by_host = !matches!(cause.actor, Actor::Agent(_));
    store::insert_into(&mut script, widget, by_host);
    events::record_into(
        &mut tx,
        &mut script,
        &widget.session_id,
        "widget:created",
        &created,
    )
    .await?;
    let entry = Entry {
        action: "widget.create",
        session: Some(&widget.session_id),
        widget: Some(widget.id.as_str()),
        names: names.map(|n| n.join(",")),
        detail: Some(store::created_detail(widget)),
        ..Default::default()
    };
    audit::append_into(&mut tx, &mut script, cause.actor, cause.client, entry).await?;
    if widget.status == WidgetStatus::Pending {
        let event = ("widget.created", WidgetStatus::Pending);
        return commit_with(tx, script, state, widget, loaded, event).await;
    }
    script.run(&mut tx).await?;
    let result: Value = widget.result.as_deref().map_or(Value::Null, |r| {
        serde_json::from_str(r).unwrap_or(Value::Null)
    });
    after_resolution(
        &mut tx,
        state,
        widget,
        loaded,
        widget.status,
        &result,
        cause,
    )
    .await?;
    Ok(tx.commit().await?)
}
