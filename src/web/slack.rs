//! `/settings/slack` (a person links their Slack user) and `/admin/slack`
//! (an admin connects the deployment to a Slack app).

use askama::Template;
use askama_web::WebTemplate;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::error::WebError;
use crate::state::AppState;
use crate::web::pages::{PageError, read_form, to_login};
use crate::web::{CurrentUser, check_csrf};
use widgetd_domain::Error;
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::auth::Role;
use widgetd_domain::clock;
use widgetd_notify::slack::{Credentials, link_of_user, new_link_code, unlink};

type PageResult = Result<Response, PageError>;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/settings/slack", get(view_settings_slack_get))
        .route("/settings/slack/code", post(make_link_code_form))
        .route("/settings/slack/unlink", post(unlink_slack_form))
        .route("/admin/slack", get(view_admin_slack_get))
        .route("/admin/slack/connect", post(connect_slack_form))
        .route("/admin/slack/disconnect", post(disconnect_slack_form))
}

struct LinkRow {
    team_id: String,
    slack_user_id: String,
    linked_at: clock::Stamp,
}

#[derive(Template, WebTemplate)]
#[template(path = "settings_slack.html")]
struct SettingsPage {
    user: String,
    csrf: String,
    is_admin: bool,
    connected: bool,
    link: Option<LinkRow>,
    /// A code just made, shown this once, and when it expires.
    code: Option<(String, String)>,
}

async fn settings_page(
    state: &AppState,
    user: &CurrentUser,
    code: Option<(String, String)>,
) -> PageResult {
    let mut conn = state.db.read.acquire().await?;
    let connected = widgetd_notify::slack::status(&mut conn).await?.connected;
    let link = link_of_user(&mut conn, &user.id).await?.map(|l| LinkRow {
        team_id: l.team_id,
        slack_user_id: l.slack_user_id,
        linked_at: clock::Stamp::from_ms(l.linked_at),
    });
    let page = SettingsPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == Role::Admin,
        connected,
        link,
        code,
    };
    Ok(page.into_response())
}

/// `GET /settings/slack`.
async fn view_settings_slack_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
) -> PageResult {
    match user {
        Some(user) => settings_page(&state, &user, None).await,
        None => Ok(to_login("/settings/slack")),
    }
}

#[derive(Deserialize)]
struct TokenOnly {
    #[serde(default)]
    csrf_token: Option<String>,
}

/// `POST /settings/slack/code`: a one-time code to send from Slack, shown
/// on the answer page only (not redirected: a reload shows no code).
async fn make_link_code_form(
    State(state): State<AppState>,
    user: CurrentUser,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: TokenOnly = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    let code = new_link_code(&mut tx, &user.id).await?;
    tx.commit().await?;
    let shown = (
        code.code.expose_secret().to_owned(),
        clock::readable(code.expires_at),
    );
    settings_page(&state, &user, Some(shown)).await
}

/// `POST /settings/slack/unlink`: idempotent.
async fn unlink_slack_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: TokenOnly = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    if unlink(&mut tx, &user.id).await? {
        let entry = Entry {
            action: "slack.unlink",
            ..Default::default()
        };
        audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry).await?;
        tx.commit().await?;
    }
    Ok(Redirect::to("/settings/slack").into_response())
}

#[derive(Template, WebTemplate)]
#[template(path = "admin_slack.html")]
struct AdminPage {
    user: String,
    csrf: String,
    is_admin: bool,
    status: widgetd_notify::slack::Status,
    connected_at: Option<clock::Stamp>,
    public_url: String,
    error: Option<(String, String)>,
}

fn require_admin(user: &CurrentUser) -> Result<(), WebError> {
    match user.role {
        Role::Admin => Ok(()),
        Role::Member => Err(Error::Forbidden("this page is for admins".into()).into()),
    }
}

async fn admin_page(state: &AppState, user: &CurrentUser, error: Option<&Error>) -> PageResult {
    let status = widgetd_notify::slack::status(&mut *state.db.read.acquire().await?).await?;
    let error = error.map(|e| {
        let (_, body) = crate::error::body_of(e);
        let text = |k: &str| body["error"][k].as_str().unwrap_or_default().to_owned();
        (text("code"), text("message"))
    });
    let page = AdminPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: true,
        connected_at: status.connected_at.map(clock::Stamp::from_ms),
        status,
        public_url: state.settings.public_url.clone(),
        error,
    };
    Ok(page.into_response())
}

/// `GET /admin/slack`.
async fn view_admin_slack_get(State(state): State<AppState>, user: CurrentUser) -> PageResult {
    require_admin(&user)?;
    admin_page(&state, &user, None).await
}

#[derive(Deserialize)]
struct ConnectForm {
    #[serde(default)]
    csrf_token: Option<String>,
    bot_token: SecretString,
    signing_secret: SecretString,
}

/// `POST /admin/slack/connect`: stores the app's credentials (replacing
/// earlier ones); they are never shown again.
async fn connect_slack_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    require_admin(&user)?;
    let form: ConnectForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let credentials = match Credentials::parse(form.bot_token, form.signing_secret) {
        Ok(credentials) => credentials,
        Err(err) => {
            let response = admin_page(&state, &user, Some(&err)).await?;
            return Ok((crate::error::status_of(err.class()), response).into_response());
        }
    };
    let mut tx = state.db.begin_write().await?;
    widgetd_notify::slack::connect(&mut tx, &state.keyring, &credentials).await?;
    let actor = Actor::User(user.id.clone());
    let entry = Entry {
        action: "slack.connect",
        ..Default::default()
    };
    audit::append(&mut tx, &actor, &client, entry).await?;
    tx.commit().await?;
    Ok(Redirect::to("/admin/slack").into_response())
}

/// `POST /admin/slack/disconnect`: idempotent.
async fn disconnect_slack_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    require_admin(&user)?;
    let form: TokenOnly = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    if widgetd_notify::slack::disconnect(&mut tx).await? {
        let entry = Entry {
            action: "slack.disconnect",
            ..Default::default()
        };
        audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry).await?;
        tx.commit().await?;
    }
    Ok(Redirect::to("/admin/slack").into_response())
}
