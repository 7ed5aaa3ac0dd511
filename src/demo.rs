//! `serve --demo`: a built-in demo agent, so a newcomer sees widgetd work
//! before writing an agent of their own.
//!
//! On a data dir with no users (or only the demo user), it creates the user
//! `demo` and a session titled as a demo, then plays an agent inside the
//! daemon: it asks for an env var, asks a question, asks for a clarification
//! (a choice) and asks for an approval, one after the other, and answers each outcome with a transcript line. It
//! uses the same engine as real agents (so the person sees the real forms),
//! acknowledges its own resume prompts, and never reads a value: it learns
//! only names and scope, like any agent.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::ids::{SessionId, UserId};
use widgetd_domain::transcript::{Role, add_message};
use widgetd_domain::widgets::kinds::approval::RequestApprovalInput;
use widgetd_domain::widgets::kinds::ask::AskUserInput;
use widgetd_domain::widgets::kinds::clarification::ClarificationInput;
use widgetd_domain::widgets::kinds::env_vars::RequestEnvVarsInput;
use widgetd_domain::widgets::{
    self, Approval, AskUser, Cause, Clarification, Created, EnvVars, Request, WidgetStatus,
};
use widgetd_domain::{Core, auth, prompts, sessions};

/// The demo user's name.
pub const DEMO_USER: &str = "demo";
/// The demo session's title; the transcript shows it.
pub const DEMO_TITLE: &str = "Demo: a tour of widgetd (built-in demo agent)";
/// How long the demo agent waits for each answer.
const PATIENCE: Duration = Duration::from_secs(24 * 3600);

/// Whether this data dir may run the demo: no users yet, or only `demo`.
pub async fn check_data_dir(db: &widgetd_domain::db::Db) -> anyhow::Result<()> {
    let users = widgetd_domain::auth::list_users(&mut *db.read.acquire().await?).await?;
    if users.iter().any(|u| u.name != DEMO_USER) {
        anyhow::bail!(
            "--demo runs only on an empty data dir (or one made by an earlier --demo); this one \
             has real users. Start the demo with its own: widgetd --data-dir /tmp/widgetd-demo serve --demo"
        );
    }
    Ok(())
}

/// The demo user (created with `password` if new; whether it was is the
/// last item) and a fresh demo session.
pub async fn prepare(
    state: &Core,
    password: secrecy::SecretString,
) -> anyhow::Result<(UserId, SessionId, bool)> {
    let mut tx = state.db.begin_write().await?;
    let (user, created) = match auth::find_user_by_name(&mut tx, DEMO_USER).await? {
        Some(user) => (user.id, false),
        None => {
            let user = auth::create_user(&mut tx, DEMO_USER, auth::Role::Admin, password)
                .await
                .context("cannot create the demo user")?;
            (user.id, true)
        }
    };
    let session = sessions::create_session(&mut tx, &user, DEMO_TITLE.to_owned())
        .await
        .context("cannot create the demo session")?;
    tx.commit().await?;
    Ok((user, session.session.id, created))
}

/// The demo agent's script, run until it ends or the daemon stops.
pub async fn run(state: Arc<Core>, session: SessionId) {
    if let Err(err) = script(&state, &session).await {
        tracing::warn!(error = %err, "the demo agent stopped");
    }
}

async fn say(state: &Core, session: &SessionId, text: &str) -> anyhow::Result<()> {
    add_message(state, session, Role::Agent, text).await?;
    Ok(())
}

/// Waits for the widget's outcome, acknowledges its prompt (the demo agent
/// is its own host), and returns its status and result.
async fn outcome(
    state: &Core,
    session: &SessionId,
    created: Created,
) -> anyhow::Result<(WidgetStatus, Value)> {
    let view = match created.status {
        WidgetStatus::Pending => {
            widgets::wait_for_answer(state, &created.widget_id, PATIENCE.as_secs()).await?
        }
        _ => {
            let mut conn = state.db.read.acquire().await?;
            widgets::get_widget(&mut conn, &created.widget_id)
                .await?
                .into()
        }
    };
    let mut tx = state.db.begin_write().await?;
    prompts::ack_widget(&mut tx, session, &view.widget_id).await?;
    tx.commit().await?;
    Ok((view.status, view.result.unwrap_or(Value::Null)))
}

/// An answer as a person would say it: strings as they are, lists and the
/// values of a map joined with commas.
fn words(answer: &Value) -> String {
    match answer {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(words).collect::<Vec<_>>().join(", "),
        Value::Object(map) => map.values().map(words).collect::<Vec<_>>().join(", "),
        Value::Null => "nothing".to_owned(),
        other => other.to_string(),
    }
}

async fn script(state: &Core, session: &SessionId) -> anyhow::Result<()> {
    let actor = Actor::Agent(session.clone());
    let client = ClientAddr(None);
    let cause = || Cause {
        actor: &actor,
        client: &client,
    };
    say(state, session, "Hello! I am widgetd's built-in demo agent, not a real one. I will ask you for four things, one at a time, the way real agents do. First: I need an API key.").await?;

    let input: RequestEnvVarsInput = serde_json::from_value(json!({
        "names": ["DEMO_WEATHER_API_KEY"],
        "reason": "To look up the weather for you (a pretend API: type anything).",
        "instructions": "This is a demo: type any text, for example `not-a-real-key`. The value goes to widgetd's encrypted store; **I never see it**.",
        "default_scope": "session",
    }))?;
    let created =
        widgets::create::<EnvVars>(state, session, EnvVars::parse(input)?, cause()).await?;
    let text = match outcome(state, session, created).await? {
        (WidgetStatus::Submitted | WidgetStatus::AlreadyPresent, result) => format!(
            "Thanks! DEMO_WEATHER_API_KEY is saved ({} scope). A real agent would get it in its environment on its next turn; I was only told its name.",
            result["scope"].as_str().unwrap_or("session")
        ),
        _ => "No key, no problem: a real agent would now ask how to go on without it.".to_owned(),
    };
    say(state, session, &text).await?;

    let question: AskUserInput = serde_json::from_value(json!({ "questions": [{
        "question": "Which city should the forecast be for?",
        "header": "City",
        "options": [
            { "label": "Lisbon", "description": "Sunny, usually" },
            { "label": "Oslo", "description": "Bring a coat" },
        ],
    }]}))?;
    let params = AskUser::parse(question)?;
    let created = widgets::create::<AskUser>(state, session, params, cause()).await?;
    let text = match outcome(state, session, created).await? {
        (WidgetStatus::Submitted, result) => format!(
            "You answered {}. Answers to questions are not secrets, so they do come back to the agent.",
            words(&result["answers"]).trim_end_matches('.')
        ),
        _ => "You skipped the question; a real agent would decide without it.".to_owned(),
    };
    say(state, session, &text).await?;

    let clarification: ClarificationInput = serde_json::from_value(json!({
        "question": "What should the forecast include? Tick what fits, or say it in your own words.",
        "widget": {
            "type": "choice",
            "multi_select": true,
            "options": [
                { "label": "Temperature" },
                { "label": "Rain", "description": "Chance and amount" },
                { "label": "Wind" },
            ],
        },
    }))?;
    let params = Clarification::parse(clarification)?;
    let created = widgets::create::<Clarification>(state, session, params, cause()).await?;
    let text = match outcome(state, session, created).await? {
        (WidgetStatus::Submitted, result) => {
            let picked = words(&result["structured"]["selected"]);
            let wrote = match result["freeform"].as_str().map(str::trim) {
                Some(text) if !text.is_empty() => format!(" and wrote \u{201c}{text}\u{201d}"),
                _ => String::new(),
            };
            format!(
                "You picked {picked}{wrote}. A clarification answer comes back both structured and in your words."
            )
        }
        _ => "You skipped it; a real agent would pick a sensible default and say so.".to_owned(),
    };
    say(state, session, &text).await?;

    let approval: RequestApprovalInput = serde_json::from_value(json!({
        "tool": "Bash",
        "input": { "command": "curl -s https://weather.example/forecast" },
        "reason": "Fetch the forecast (the demo runs nothing).",
    }))?;
    let params = Approval::parse(approval)?;
    let created = widgets::create::<Approval>(state, session, params, cause()).await?;
    let text = match outcome(state, session, created).await? {
        (WidgetStatus::Submitted | WidgetStatus::AlreadyPresent, r) if r["decision"] != "deny" => {
            "Approved. A real agent would run the command now; this demo runs nothing."
        }
        _ => "Not approved, so nothing runs.",
    };
    say(state, session, text).await?;
    say(state, session, "That is the tour. To connect a real agent, run `widgetd connect --help`: it writes the set-up for Claude Code, Codex and Gemini CLI.").await
}
