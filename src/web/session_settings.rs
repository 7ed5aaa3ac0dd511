//! A session's settings panel (`/sessions/{id}/settings`, the creator
//! only): the agent token (shown once after creation or a new issue;
//! revoke, or revoke and issue a new one), sharing, and archiving.

use askama::Template;
use askama_web::WebTemplate;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::pages::{PageError, read_form, to_login};
use super::{CurrentUser, check_csrf};
use crate::error::WebResult;
use crate::state::AppState;
use widgetd_domain::access::{self, Caller, Need};
use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::clock;
use widgetd_domain::sessions::{self, Session, Sharing};
use widgetd_domain::widgets::{Cause, archive_session};

type PageResult = Result<Response, PageError>;

#[derive(Template, WebTemplate)]
#[template(path = "session_settings.html")]
struct SettingsPage {
    user: String,
    csrf: String,
    is_admin: bool,
    session_id: String,
    title: String,
    created_at: clock::Stamp,
    archived: bool,
    /// Agent tokens that work now (0 or 1).
    live_tokens: i64,
    /// A token to show this once, after creation or a new issue.
    new_token: Option<String>,
    /// The session was just created (the token is its first).
    created: bool,
    mcp_url: String,
    /// The daemon's public URL, for the `--url` of the commands shown.
    public_url: String,
    others_can: &'static str,
    grants: Vec<(String, &'static str)>,
}

/// The session if `user` created it (404 for strangers, 403 for people it
/// is shared with).
async fn owned(state: &AppState, user: &CurrentUser, id: &str) -> WebResult<Session> {
    Ok(access::authorize(state, Caller::Person(&user.id), id, Need::Share).await?)
}

/// `GET /sessions/{id}/settings`.
pub async fn view_session_settings_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let Some(user) = user else {
        return Ok(to_login(&format!("/sessions/{id}/settings")));
    };
    let session = owned(&state, &user, &id).await?;
    let mut conn = state.db.read.acquire().await?;
    let (others_can, grants) = sessions::sharing(&mut conn, &session).await?;
    let live_tokens = sessions::count_agent_tokens(&mut conn, &session.id).await?;
    drop(conn);
    let new_token = state.shown_once.take(&user.id, &session.id);
    let page = SettingsPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
        session_id: session.id.to_string(),
        title: session.title,
        created_at: clock::Stamp::from_ms(session.created_at),
        archived: session.archived_at.is_some(),
        live_tokens,
        new_token: new_token.map(|t| t.expose_secret().to_owned()),
        created: query.as_deref() == Some("created=1"),
        mcp_url: format!("{}/mcp", state.settings.public_url),
        public_url: state.settings.public_url.clone(),
        others_can: others_can.as_str(),
        grants: grants
            .into_iter()
            .map(|(name, a)| (name, a.as_str()))
            .collect(),
    };
    Ok(page.into_response())
}

#[derive(Deserialize)]
struct CsrfField {
    #[serde(default)]
    csrf_token: Option<String>,
}

/// A form posted to the panel: its form token checked, its fields read,
/// and the session if the person created it.
async fn owned_form<T: DeserializeOwned>(
    state: &AppState,
    user: &CurrentUser,
    id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> WebResult<(T, Session)> {
    let csrf: CsrfField = read_form(body)?;
    check_csrf(state, headers, user, csrf.csrf_token.as_deref())?;
    let form = read_form(body)?;
    Ok((form, owned(state, user, id).await?))
}

/// Back to the settings panel, at `part`.
fn back(session: &Session, part: &str) -> Response {
    Redirect::to(&format!("/sessions/{}/settings#{part}", session.id)).into_response()
}

#[derive(Deserialize)]
struct SharingForm {
    others_can: Sharing,
    #[serde(default)]
    grant_user: Option<String>,
    #[serde(default)]
    grant_access: Option<Sharing>,
}

/// `POST /sessions/{id}/sharing`: the creator changes who else may see or
/// answer the session.
pub async fn share_session_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (form, session): (SharingForm, _) = owned_form(&state, &user, &id, &headers, &body).await?;
    let grants: Vec<(String, Sharing)> = form
        .grant_user
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .map(|name| (name, form.grant_access.unwrap_or(Sharing::View)))
        .into_iter()
        .collect();
    let actor = Actor::User(user.id.clone());
    let others_can = Some(form.others_can);
    sessions::update_sharing(&state, &session, others_can, &grants, &actor, &client).await?;
    Ok(back(&session, "sharing"))
}

/// What the agent token form asks for.
#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum TokenAction {
    /// Revoke, and issue a new token shown once.
    Reissue,
    /// Revoke only: the agent is locked out until a new token is issued.
    Revoke,
}

#[derive(Deserialize)]
struct TokenForm {
    action: TokenAction,
}

/// `POST /sessions/{id}/agent-token` (`action` = `reissue` or `revoke`):
/// the session is not archived; a new token is shown once on the panel.
pub async fn revoke_agent_token_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (form, session): (TokenForm, _) = owned_form(&state, &user, &id, &headers, &body).await?;
    let actor = Actor::User(user.id.clone());
    let reissue = form.action == TokenAction::Reissue;
    let done = sessions::revoke_agent_token(&state.db, &session, reissue, &actor, &client).await?;
    // Open streams of the old token check again now and end.
    state.hub.publish(&session.id);
    if let Some(token) = done.new_token {
        state.shown_once.put(&user.id, &session.id, token);
    }
    Ok(back(&session, "agent"))
}

/// `POST /sessions/{id}/archive`: closes the session (its agent token stops
/// working, waiting widgets are cancelled); back to its transcript.
pub async fn archive_session_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (CsrfField { .. }, session) = owned_form(&state, &user, &id, &headers, &body).await?;
    let actor = Actor::User(user.id.clone());
    let cause = Cause {
        actor: &actor,
        client: &client,
    };
    archive_session(&state, &session.id, cause).await?;
    Ok(Redirect::to(&format!("/sessions/{}", session.id)).into_response())
}
