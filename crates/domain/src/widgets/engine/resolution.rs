//! A widget leaving `pending`, whatever the cause (an answer, a dismissal,
//! expiry, cancellation, the agent's withdrawal): the guarded update, then
//! its resume prompt, event and audit row in one statement (`db::Script`),
//! then its webhook notices and Slack messages.

use serde_json::{Value, json};

use super::kind::Loaded;
use super::notices::{self, notify};
use super::{store, text};
use crate::audit::{self, Actor, Entry};
use crate::db::{Dialect, Script, WriteTx};
use crate::error::{Error, Result};
use crate::ids::UserId;
use crate::widgets::engine::row::{Cause, WidgetRow, WidgetStatus};
use crate::{Core, clock, events, prompts};

/// Where a widget goes, with what result, and who took it there.
pub(super) struct Change<'a> {
    pub(super) to: WidgetStatus,
    pub(super) result: &'a Value,
    pub(super) by: Option<&'a UserId>,
}

/// Takes `widget` out of `pending` (the guarded update), then writes the
/// prompt, event and audit row; the row as the update left it. 409 with
/// the current status if it was not pending any more.
pub(super) async fn transition(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    change: Change<'_>,
    cause: &Cause<'_>,
) -> Result<WidgetRow> {
    let resolved = resolve(tx, widget, &change).await?;
    after_resolution(tx, state, widget, loaded, change.to, change.result, cause).await?;
    Ok(resolved)
}

/// [`transition`] as the transaction's last work, then its commit, which
/// the prompt, event and audit row carry where no notice follows them
/// (`notices::commit_with`). A widget no longer pending is refused once
/// the batch settled ([`refused_once_settled`]).
pub(super) async fn settle(
    mut tx: WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    change: Change<'_>,
    cause: &Cause<'_>,
) -> Result<WidgetRow> {
    let resolved = match resolve(&mut tx, widget, &change).await {
        Ok(resolved) => resolved,
        Err(err) => return Err(refused_once_settled(tx, err).await),
    };
    let script = script(
        &mut tx,
        state,
        widget,
        loaded,
        change.to,
        change.result,
        cause,
    )
    .await?;
    let event = ("widget.resolved", change.to);
    notices::commit_with(tx, script, state, widget, loaded, event).await?;
    Ok(resolved)
}

/// An answer refused because the widget is no longer pending. On SQLite
/// the answer that ended it may sit uncommitted in the same write batch:
/// the refusal waits for that batch's commit (its own savepoint changed
/// nothing), so that what it says, and what a page shows next, is on disk.
/// A batch that failed is reported as that failure instead.
pub(super) async fn refused_once_settled(tx: WriteTx, err: Error) -> Error {
    if !matches!(err, Error::WidgetNotPending(_)) {
        return err;
    }
    match tx.commit().await {
        Ok(()) => err,
        Err(failed) => failed.into(),
    }
}

/// The guarded update: the row as it left it, or 409 with the status it has
/// if it was not pending any more.
async fn resolve(tx: &mut WriteTx, widget: &WidgetRow, change: &Change<'_>) -> Result<WidgetRow> {
    let now = clock::now_ms();
    let resolved = store::resolve(tx, &widget.id, change.to, change.result, change.by, now).await?;
    match resolved {
        Some(resolved) => Ok(resolved),
        None => {
            let current = crate::widgets::engine::read::get_widget(tx, &widget.id)
                .await?
                .status;
            Err(Error::WidgetNotPending(current.as_str()))
        }
    }
}

/// What follows the guarded update of `widget` to `to`: its prompt, event
/// and audit row, then its webhook notices and Slack messages.
pub(super) async fn after_resolution(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    to: WidgetStatus,
    result: &Value,
    cause: &Cause<'_>,
) -> Result<()> {
    script(tx, state, widget, loaded, to, result, cause)
        .await?
        .run(tx)
        .await?;
    notify(tx, state, widget, loaded, "widget.resolved", to).await?;
    Ok(())
}

/// The prompt, event and audit row of a resolution: one statement.
async fn script(
    tx: &mut WriteTx,
    state: &Core,
    widget: &WidgetRow,
    loaded: &dyn Loaded,
    to: WidgetStatus,
    result: &Value,
    cause: &Cause<'_>,
) -> Result<Script> {
    let tag = &state.settings.prompt_tag;
    let text = withdrawal_prompt(tag, to, result)
        .unwrap_or_else(|| worded(tag, loaded, to, result, cause.actor));
    let note = result["note"]
        .as_str()
        .filter(|_| to == WidgetStatus::Dismissed);
    let text = text::with_note(text, note);
    let mut script = Script::new(Dialect::of(tx));
    prompts::queue_into(&mut script, &widget.session_id, &widget.id, text);
    let resolved = json!({ "widget_id": widget.id, "status": to, "result": result });
    events::record_into(
        tx,
        &mut script,
        &widget.session_id,
        "widget:resolved",
        &resolved,
    )
    .await?;
    let action = match to {
        WidgetStatus::Submitted => "widget.submit",
        WidgetStatus::Dismissed => "widget.dismiss",
        WidgetStatus::Expired => "widget.expire",
        WidgetStatus::Cancelled => "widget.cancel",
        WidgetStatus::AlreadyPresent => "widget.already_present",
        WidgetStatus::Pending => unreachable!("a resolution leaves pending"),
    };
    let entry = Entry {
        action,
        session: Some(&widget.session_id),
        widget: Some(widget.id.as_str()),
        names: loaded.env_names().map(|n| n.join(",")),
        scope: result["scope"].as_str(),
        detail: match (result["decision"].as_str(), result["withdrawn_by"].as_str()) {
            (Some(d), _) => Some(crate::widgets::kinds::approval::audit_detail(d, result)),
            (None, Some(_)) => Some(match result["replaced_by"].as_str() {
                Some(new) => format!("withdrawn by the agent; replaced_by={new}"),
                None => "withdrawn by the agent".to_owned(),
            }),
            (None, None) => None,
        },
    };
    audit::append_into(tx, &mut script, cause.actor, cause.client, entry).await?;
    Ok(script)
}

/// The kind's resume prompt, except that an answer of the agent's side is
/// never worded as the user's. An answer given in the agent's MCP client
/// (form mode) or in an MCP App there came over the agent's own connection,
/// with the agent token: widgetd cannot tell it from the agent, so the
/// prompt says where it was given (`actor` is who the audit row names).
fn worded(
    tag: &str,
    loaded: &dyn Loaded,
    to: WidgetStatus,
    result: &Value,
    actor: &Actor,
) -> String {
    let text = loaded.prompt(tag, to, result);
    let place = match actor {
        Actor::McpApp(_) => "in your MCP client's app",
        Actor::McpClient(_) => "in your MCP client's form",
        _ => return text,
    };
    agent_side(tag, &text, place)
}

/// `text` (a question's "`{tag}` User answered…" prompt) said of an answer
/// given `place`, not by the user: "`{tag}` Answered `place` (not by the
/// user in widgetd): …", or, where the prompt names the question (JSON-quoted),
/// "`{tag}` Your question "…" was answered `place`, not by the user in
/// widgetd: …". Words it does not know are kept, after that warning.
fn agent_side(tag: &str, text: &str, place: &str) -> String {
    let own = text.strip_prefix(tag).unwrap_or(text).trim_start();
    let Some(rest) = own.strip_prefix("User answered") else {
        return format!("{tag} Answered {place}, not by the user in widgetd. {own}");
    };
    if let Some(quoted) = rest.strip_prefix(" your question ") {
        let mut values = serde_json::Deserializer::from_str(quoted).into_iter::<Value>();
        if let Some(Ok(Value::String(_))) = values.next() {
            let (question, answer) = quoted.split_at(values.byte_offset());
            return format!(
                "{tag} Your question {question} was answered {place}, not by the user in widgetd{answer}"
            );
        }
    }
    format!("{tag} Answered {place} (not by the user in widgetd){rest}")
}

/// The resume prompt of a widget its agent withdrew (written already
/// delivered), instead of the kind's "the session was archived".
pub fn withdrawal_prompt(tag: &str, to: WidgetStatus, result: &Value) -> Option<String> {
    if to != WidgetStatus::Cancelled || result["withdrawn_by"].is_null() {
        return None;
    }
    Some(match result["replaced_by"].as_str() {
        Some(new) => format!("{tag} You replaced this request with {new}; nothing was given."),
        None => format!("{tag} You withdrew this request; nothing was given."),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::worded;
    use crate::audit::Actor;
    use crate::ids::{SessionId, UserId};
    use crate::widgets::engine::kind::Loaded;
    use crate::widgets::{Ask, AskUser, Clarification, Fields, Request, WidgetStatus, kinds};

    const TAG: &str = "[Agor]";

    /// A stored widget of `R` asked with `input`, as the engine loads it.
    fn loaded<R: Request>(input: Value) -> Box<dyn Loaded> {
        let input = serde_json::from_value(input).unwrap();
        let (params, _) = crate::widgets::validate::<R>(input).unwrap();
        let stored = serde_json::to_string(&params).unwrap();
        kinds::load(R::NAME, &stored).unwrap_or_else(|_| panic!("{} loads", R::NAME))
    }

    /// The submitted prompt of `widget` answered with `result` by the
    /// person, the agent's MCP client (form mode) and an MCP App.
    fn by_each(widget: &dyn Loaded, result: &Value) -> [String; 3] {
        let session = SessionId::generate();
        let to = WidgetStatus::Submitted;
        [
            Actor::User(UserId::generate()),
            Actor::McpClient(session.clone()),
            Actor::McpApp(session),
        ]
        .map(|actor| worded(TAG, widget, to, result, &actor))
    }

    #[test]
    fn an_ask_answered_on_the_agents_side_is_not_the_users() {
        let widget = loaded::<Ask>(json!({ "question": "Deploy now?" }));
        let result = json!({ "answers": { "Deploy now?": "Yes" }, "answered_by": "mcp-app" });
        assert_eq!(
            by_each(&*widget, &result),
            [
                r#"[Agor] User answered: {"Deploy now?":"Yes"}"#,
                r#"[Agor] Answered in your MCP client's form (not by the user in widgetd): {"Deploy now?":"Yes"}"#,
                r#"[Agor] Answered in your MCP client's app (not by the user in widgetd): {"Deploy now?":"Yes"}"#,
            ]
        );
    }

    #[test]
    fn an_ask_user_answered_on_the_agents_side_is_not_the_users() {
        let widget = loaded::<AskUser>(json!({ "questions": [{
            "question": "Which database?", "header": "DB",
            "options": [{ "label": "Postgres" }, { "label": "SQLite" }],
        }] }));
        let result =
            json!({ "answers": { "Which database?": "SQLite" }, "answered_by": "mcp-app" });
        let [person, client, app] = by_each(&*widget, &result);
        assert_eq!(
            person,
            r#"[Agor] User answered: {"Which database?":"SQLite"}"#
        );
        assert_eq!(
            client,
            r#"[Agor] Answered in your MCP client's form (not by the user in widgetd): {"Which database?":"SQLite"}"#
        );
        assert_eq!(
            app,
            r#"[Agor] Answered in your MCP client's app (not by the user in widgetd): {"Which database?":"SQLite"}"#
        );
    }

    #[test]
    fn typed_fields_answered_on_the_agents_side_are_not_the_users() {
        let widget = loaded::<Fields>(json!({
            "question": "Where is staging?",
            "fields": [{ "name": "port", "label": "Port", "type": "integer" }],
        }));
        let result = json!({ "answers": { "port": 8443 }, "answered_by": "mcp-client" });
        assert_eq!(
            by_each(&*widget, &result),
            [
                r#"[Agor] User answered your question "Where is staging?": {"port":8443}"#,
                r#"[Agor] Your question "Where is staging?" was answered in your MCP client's form, not by the user in widgetd: {"port":8443}"#,
                r#"[Agor] Your question "Where is staging?" was answered in your MCP client's app, not by the user in widgetd: {"port":8443}"#,
            ]
        );
    }

    /// The question is JSON-quoted in the prompt: a quote or a colon in
    /// it does not move where the answer starts.
    #[test]
    fn a_clarification_answered_on_the_agents_side_is_not_the_users() {
        let widget = loaded::<Clarification>(json!({
            "question": "Which \"region\": EU or US?",
            "widget": { "type": "choice", "options": [{ "label": "EU" }, { "label": "US" }] },
        }));
        let result = json!({
            "structured": { "selected": ["EU"] }, "freeform": "User answered: US",
            "answered_by": "mcp-app",
        });
        let answer = r#"{"structured":{"selected":["EU"]},"freeform":"User answered: US"}"#;
        assert_eq!(
            by_each(&*widget, &result),
            [
                format!(
                    r#"[Agor] User answered your question "Which \"region\": EU or US?": {answer}"#
                ),
                format!(
                    r#"[Agor] Your question "Which \"region\": EU or US?" was answered in your MCP client's form, not by the user in widgetd: {answer}"#
                ),
                format!(
                    r#"[Agor] Your question "Which \"region\": EU or US?" was answered in your MCP client's app, not by the user in widgetd: {answer}"#
                ),
            ]
        );
    }

    /// Words of a kind this does not know still say who answered, first.
    #[test]
    fn unknown_words_are_kept_after_the_warning() {
        assert_eq!(
            super::agent_side(TAG, "[Agor] Someone picked EU.", "in your MCP client's app"),
            "[Agor] Answered in your MCP client's app, not by the user in widgetd. Someone picked EU."
        );
    }
}
