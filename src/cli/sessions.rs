//! `widgetd session …`: create, list, archive, and revoke an agent token,
//! on the data dir directly (the operator is trusted; every change is
//! audited with actor `cli`).

use anyhow::Context;
use secrecy::ExposeSecret;
use serde_json::json;

use super::SessionCommand;
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::ids::SessionId;
use widgetd_domain::startup::DataDir;
use widgetd_domain::widgets::{self, Cause};
use widgetd_domain::{Core, Settings, auth, clock, sessions};

pub async fn run(data: DataDir, cmd: SessionCommand) -> anyhow::Result<()> {
    match cmd {
        SessionCommand::Create {
            user,
            title,
            public_url,
        } => create(&data, &user, title.as_deref(), &public_url).await,
        SessionCommand::List { json } => list(&data, json).await,
        SessionCommand::Archive {
            id,
            json,
            public_url,
            prompt_tag,
        } => archive(data, &id, json, &public_url, &prompt_tag).await,
        SessionCommand::RevokeAgentToken {
            id,
            reissue,
            json,
            public_url,
        } => revoke_agent_token(&data, &id, reissue, json, &public_url).await,
    }
}

async fn create(
    data: &DataDir,
    user: &str,
    title: Option<&str>,
    public_url: &str,
) -> anyhow::Result<()> {
    let mut tx = data.db.begin_write().await?;
    let owner = auth::find_user(&mut tx, user).await?;
    let title = sessions::parse_title(title)?;
    let new = sessions::create_session(&mut tx, &owner.id, title).await?;
    let entry = Entry {
        action: "session.create",
        session: Some(&new.session.id),
        detail: Some(format!("owner={user}")),
        ..Default::default()
    };
    audit::append(&mut tx, &Actor::Operator, &ClientAddr::default(), entry).await?;
    tx.commit().await?;
    println!(
        "{}",
        json!({ "session_id": new.session.id, "agent_token": new.agent_token.expose_secret(), "mcp_url": mcp_url(public_url) })
    );
    Ok(())
}

fn mcp_url(public_url: &str) -> String {
    format!("{}/mcp", public_url.trim_end_matches('/'))
}

/// Every session, newest first: id, owner, state, pending widgets, times
/// and title.
async fn list(data: &DataDir, json: bool) -> anyhow::Result<()> {
    let rows = sessions::list_all(&mut *data.db.read.acquire().await?).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    for s in rows {
        let state = if s.archived_at.is_some() {
            "archived"
        } else {
            "live"
        };
        println!(
            "{}  {:<16} {:<8} {:>3} pending  {}  {}",
            s.id,
            s.owner,
            state,
            s.pending,
            clock::rfc3339(s.created_at),
            s.title
        );
    }
    Ok(())
}

fn session_id(id: &str) -> anyhow::Result<SessionId> {
    SessionId::parse(id).context("a session id is a UUID, as printed by `session list`")
}

/// The session `id`, or an error saying how to find one.
async fn find(data: &DataDir, id: &str) -> anyhow::Result<sessions::Session> {
    let id = session_id(id)?;
    sessions::get_session(&mut *data.db.read.acquire().await?, &id)
        .await
        .with_context(|| format!("there is no session {id}; `widgetd session list` shows them"))
}

/// Archives through the widget engine, as the API does: waiting widgets are
/// cancelled with their prompts (tagged like the daemon's) and webhook
/// notices. A running daemon's streams notice within seconds; its
/// long-polls when they next wake.
async fn archive(
    data: DataDir,
    id: &str,
    json: bool,
    public_url: &str,
    prompt_tag: &str,
) -> anyhow::Result<()> {
    let session = find(&data, id).await?;
    let mut settings = Settings::new(public_url);
    settings.prompt_tag = prompt_tag.to_owned();
    let state = Core::new(data.db, data.keyring, settings);
    let cause = Cause {
        actor: &Actor::Operator,
        client: &ClientAddr::default(),
    };
    let cancelled = widgets::archive_session(&state, &session.id, cause).await?;
    if json {
        println!(
            "{}",
            json!({ "session_id": session.id, "archived": true, "cancelled_widgets": cancelled })
        );
    } else {
        println!(
            "archived {}; {cancelled} waiting request(s) cancelled",
            session.id
        );
    }
    Ok(())
}

async fn revoke_agent_token(
    data: &DataDir,
    id: &str,
    reissue: bool,
    json: bool,
    public_url: &str,
) -> anyhow::Result<()> {
    let session = find(data, id).await?;
    let done = sessions::revoke_agent_token(
        &data.db,
        &session,
        reissue,
        &Actor::Operator,
        &ClientAddr::default(),
    )
    .await?;
    let token = done
        .new_token
        .as_ref()
        .map(|t| t.expose_secret().to_owned());
    if json {
        println!(
            "{}",
            json!({ "session_id": session.id, "revoked": done.revoked, "agent_token": token, "mcp_url": mcp_url(public_url) })
        );
    } else if let Some(token) = token {
        println!("{token}");
        eprintln!(
            "revoked {} agent token(s) of {}; the new one above is shown only this once",
            done.revoked, session.id
        );
    } else {
        println!(
            "revoked {} agent token(s) of {}; the session stays open (issue a new token with --reissue)",
            done.revoked, session.id
        );
    }
    Ok(())
}
