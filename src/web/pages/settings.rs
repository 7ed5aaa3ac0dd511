//! The settings pages: env vars (`/settings/env`, setting and deleting
//! values) and approval rules (`/settings/approvals`, revoking).

use askama::Template;
use askama_web::WebTemplate;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect};
use secrecy::SecretString;
use serde::Deserialize;

use super::{ENV_PAGE_ROWS, ListParams, PageResult, Pager, read_form, to_login};
use crate::error::WebResult;
use crate::state::AppState;
use crate::web::{CurrentUser, check_csrf};
use widgetd_domain::Error;
use widgetd_domain::access::{self, Caller, Need};
use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::clock;
use widgetd_domain::secrets::audit_env;
use widgetd_domain::secrets::{self, EnvVarInfo, EnvVarName, SecretValue, Target};
use widgetd_domain::widgets::kinds::approval;

#[derive(Template, WebTemplate)]
#[template(path = "settings_env.html")]
struct SettingsPage {
    user: String,
    csrf: String,
    is_admin: bool,
    vars: Vec<(EnvVarInfo, clock::Stamp)>,
    error: Option<String>,
    pager: Pager,
}

/// `GET /settings/env?page=N`: names, scopes and provenance, 50 a page;
/// never a value.
pub async fn view_settings_env_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let Some(user) = user else {
        return Ok(to_login("/settings/env"));
    };
    let page = ListParams::parse(query.as_deref()).page();
    Ok(settings_page(&state, &user, None, page)
        .await?
        .into_response())
}

async fn settings_page(
    state: &AppState,
    user: &CurrentUser,
    error: Option<String>,
    page: i64,
) -> WebResult<SettingsPage> {
    let mut conn = state.db.read.acquire().await?;
    let (vars, total) = secrets::list_env_vars_page(
        &mut conn,
        &user.id,
        (page - 1) * ENV_PAGE_ROWS,
        ENV_PAGE_ROWS,
    )
    .await?;
    let vars = vars
        .into_iter()
        .map(|v| {
            let changed = clock::Stamp::parse(&v.updated_at);
            (v, changed)
        })
        .collect();
    Ok(SettingsPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
        vars,
        error,
        pager: Pager::new("/settings/env", "", page, ENV_PAGE_ROWS, total),
    })
}

#[derive(Deserialize)]
struct EnvForm {
    #[serde(default)]
    csrf_token: Option<String>,
    name: String,
    #[serde(default)]
    value: Option<SecretString>,
    #[serde(default)]
    session_id: Option<String>,
}

async fn env_target(
    state: &AppState,
    user: &CurrentUser,
    session: Option<&str>,
) -> WebResult<Target> {
    match session.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(Target::Global),
        Some(id) => {
            let session =
                access::authorize(state, Caller::Person(&user.id), id, Need::WriteEnv).await?;
            Ok(Target::Session(session.id))
        }
    }
}

/// `POST /settings/env`: add or replace a value (global, or for one session).
pub async fn set_env_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: EnvForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let saved = async {
        let name = EnvVarName::parse(form.name.trim())?;
        let value =
            SecretValue::parse(&name, form.value.unwrap_or_else(|| SecretString::from("")))?;
        let target = env_target(&state, &user, form.session_id.as_deref()).await?;
        let mut tx = state.db.begin_write().await?;
        secrets::set_value(
            &mut tx,
            &state.keyring,
            &user.id,
            &target,
            &name,
            &value,
            &user.id,
        )
        .await?;
        audit_env(&mut tx, "env.set", &user.id, &client, &target, &name).await?;
        tx.commit().await?;
        WebResult::Ok(())
    };
    match saved.await {
        Ok(()) => Ok(Redirect::to("/settings/env").into_response()),
        Err(err) if err.to_body().0.is_client_error() => {
            let status = err.to_body().0;
            Ok((
                status,
                settings_page(&state, &user, Some(err.to_string()), 1).await?,
            )
                .into_response())
        }
        Err(err) => Err(err.into()),
    }
}

/// `POST /settings/env/delete`.
pub async fn delete_env_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: EnvForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let name = EnvVarName::parse(form.name.trim())?;
    let target = env_target(&state, &user, form.session_id.as_deref()).await?;
    let mut tx = state.db.begin_write().await?;
    secrets::delete_value(&mut tx, &user.id, &target, &name).await?;
    audit_env(&mut tx, "env.delete", &user.id, &client, &target, &name).await?;
    tx.commit().await?;
    Ok(Redirect::to("/settings/env").into_response())
}

struct RuleRow {
    id: String,
    tool: String,
    match_kind: String,
    input: String,
    /// For a pattern rule, the other fields it holds to (JSON).
    with: Option<String>,
    created_at: clock::Stamp,
    created_by: String,
    /// A rule for one session only: its id and title.
    session: Option<(String, String)>,
}

#[derive(Template, WebTemplate)]
#[template(path = "settings_approvals.html")]
struct ApprovalsPage {
    user: String,
    csrf: String,
    is_admin: bool,
    rules: Vec<RuleRow>,
}

/// `GET /settings/approvals`: the "Always" approvals, revocable.
pub async fn view_settings_approvals_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
) -> PageResult {
    let Some(user) = user else {
        return Ok(to_login("/settings/approvals"));
    };
    let rules = approval::list_rules(&mut *state.db.read.acquire().await?, &user.id).await?;
    let rules = rules
        .into_iter()
        .map(|r| {
            let (input, with) = r.shown();
            RuleRow {
                id: r.id,
                tool: r.tool,
                match_kind: r.match_kind,
                input,
                with,
                created_at: clock::Stamp::from_ms(r.created_at),
                created_by: r.created_by,
                session: r
                    .session_id
                    .map(|id| (id, r.session_title.unwrap_or_default())),
            }
        })
        .collect();
    let page = ApprovalsPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
        rules,
    };
    Ok(page.into_response())
}

#[derive(Deserialize)]
struct RevokeForm {
    #[serde(default)]
    csrf_token: Option<String>,
    id: String,
}

/// `POST /settings/approvals/revoke`: the next identical request asks again.
pub async fn revoke_approval_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: RevokeForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    // Revoking is idempotent: a rule already gone (or never the caller's)
    // leaves nothing to do and nothing to record.
    match approval::revoke_rule(&mut tx, &user.id, &form.id).await {
        Ok(tool) => {
            let entry = widgetd_domain::audit::Entry {
                action: "approval.revoke",
                detail: Some(format!("rule={}; tool={tool}", form.id)),
                ..Default::default()
            };
            widgetd_domain::audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry)
                .await?;
            tx.commit().await?;
        }
        Err(Error::NotFound(_)) => {}
        Err(err) => return Err(err.into()),
    }
    Ok(Redirect::to("/settings/approvals").into_response())
}
