//! `/admin`: users and the audit log, for admins only. Admins manage
//! accounts; they never see a value, and they see other people's
//! transcripts only when those are shared with them.

use askama::Template;
use askama_web::WebTemplate;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::ExposeSecret;
use serde::Deserialize;

use super::pages::{PageError, read_form};
use super::{CurrentUser, check_csrf};
use crate::error::{WebError, WebResult};
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::audit::{self, Actor, AuditRow, ClientAddr, Entry};
use widgetd_domain::auth::{self, Role, User, passwords};
use widgetd_domain::clock;

type PageResult = Result<Response, PageError>;

fn require_admin(user: &CurrentUser) -> WebResult<()> {
    match user.role {
        Role::Admin => Ok(()),
        Role::Member => Err(Error::Forbidden("this page is for admins".into()).into()),
    }
}

struct UserRow {
    name: String,
    role: &'static str,
    disabled: bool,
    created_at: clock::Stamp,
}

#[derive(Template, WebTemplate)]
#[template(path = "admin_users.html")]
struct UsersPage {
    user: String,
    csrf: String,
    is_admin: bool,
    users: Vec<UserRow>,
    /// A password just set, shown this once.
    new_password: Option<(String, String)>,
    error: Option<String>,
}

async fn users_page(state: &AppState, admin: &CurrentUser) -> WebResult<UsersPage> {
    let users = auth::list_users(&mut *state.db.read.acquire().await?).await?;
    let users = users
        .into_iter()
        .map(|u: User| UserRow {
            role: if u.role == Role::Admin {
                "admin"
            } else {
                "member"
            },
            name: u.name,
            disabled: u.disabled,
            created_at: clock::Stamp::from_ms(u.created_at),
        })
        .collect();
    Ok(UsersPage {
        user: admin.name.clone(),
        csrf: admin.csrf.clone(),
        is_admin: admin.role == widgetd_domain::auth::Role::Admin,
        users,
        new_password: None,
        error: None,
    })
}

/// `GET /admin/users`.
pub async fn view_users_get(State(state): State<AppState>, user: CurrentUser) -> PageResult {
    require_admin(&user)?;
    Ok(users_page(&state, &user).await?.into_response())
}

#[derive(Deserialize)]
struct UserForm {
    #[serde(default)]
    csrf_token: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    role: Option<String>,
}

fn parse_role(role: Option<&str>) -> WebResult<Role> {
    match role.unwrap_or_default() {
        "admin" => Ok(Role::Admin),
        "member" => Ok(Role::Member),
        _ => Err(WebError::invalid(
            "invalid_role",
            "a role is `admin` or `member`",
        )),
    }
}

/// `POST /admin/users/{action}` with `action` one of `add`, `disable`,
/// `enable`, `password`, `role`. A new or reset password is shown once.
pub async fn change_user_form(
    State(state): State<AppState>,
    admin: CurrentUser,
    client: ClientAddr,
    Path(action): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    require_admin(&admin)?;
    let form: UserForm = read_form(&body)?;
    check_csrf(&state, &headers, &admin, form.csrf_token.as_deref())?;
    let name = form.name.unwrap_or_default();
    let changed = async {
        let mut tx = state.db.begin_write().await?;
        let mut shown = None;
        let detail = match action.as_str() {
            "add" => {
                let password = passwords::generate();
                shown = Some(password.expose_secret().to_owned());
                let role = parse_role(form.role.as_deref().or(Some("member")))?;
                auth::create_user(&mut tx, &name, role, password).await?;
                format!(
                    "user={name}; role={}",
                    if role == Role::Admin {
                        "admin"
                    } else {
                        "member"
                    }
                )
            }
            "password" => {
                let password = passwords::generate();
                shown = Some(password.expose_secret().to_owned());
                auth::set_password(&mut tx, &name, password).await?;
                format!("user={name}")
            }
            "disable" | "enable" => {
                auth::set_disabled(&mut tx, &name, action == "disable").await?;
                format!("user={name}")
            }
            "role" => {
                let role = parse_role(form.role.as_deref())?;
                auth::set_role(&mut tx, &name, role).await?;
                format!(
                    "user={name}; role={}",
                    if role == Role::Admin {
                        "admin"
                    } else {
                        "member"
                    }
                )
            }
            _ => return Err(Error::NotFound("action").into()),
        };
        let audit_action = match action.as_str() {
            "add" => "user.add",
            "password" => "user.passwd",
            "disable" => "user.disable",
            "enable" => "user.enable",
            _ => "user.role",
        };
        let entry = Entry {
            action: audit_action,
            detail: Some(detail),
            ..Default::default()
        };
        audit::append(&mut tx, &Actor::User(admin.id.clone()), &client, entry).await?;
        tx.commit().await?;
        WebResult::Ok(shown)
    };
    let mut page = users_page(&state, &admin).await?;
    match changed.await {
        Ok(None) => Ok(Redirect::to("/admin/users").into_response()),
        Ok(Some(password)) => {
            page = users_page(&state, &admin).await?;
            page.new_password = Some((name, password));
            Ok(page.into_response())
        }
        Err(err) if err.to_body().0.is_client_error() => {
            let status = err.to_body().0;
            page.error = Some(err.to_string());
            Ok((status, page).into_response())
        }
        Err(err) => Err(err.into()),
    }
}

#[derive(Deserialize, Default)]
struct AuditFilter {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    action: Option<String>,
    /// Only rows older than this id (the next page).
    #[serde(default)]
    before: Option<i64>,
    /// Verify the whole chain (not on every load: it reads every row).
    #[serde(default)]
    verify: Option<String>,
}

/// Rows on one page of the audit log.
const AUDIT_PAGE_ROWS: usize = 200;

#[derive(Template, WebTemplate)]
#[template(path = "admin_audit.html")]
struct AuditPage {
    user: String,
    csrf: String,
    is_admin: bool,
    rows: Vec<(AuditRow, clock::Stamp)>,
    since: String,
    session: String,
    action: String,
    chain: Option<String>,
    /// The id to continue from for older rows, when there are more.
    older: Option<i64>,
    /// The filter as a query string, for the paging and verify links.
    query: String,
}

/// `GET /admin/audit?since=…&session=…&action=…&before=…&verify=1`: the
/// log, newest first, 200 rows a page, actors by name; the whole chain is
/// verified on request only.
pub async fn view_audit_get(
    State(state): State<AppState>,
    user: CurrentUser,
    RawQuery(query): RawQuery,
) -> PageResult {
    require_admin(&user)?;
    let filter: AuditFilter =
        serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
    let nonempty = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let (since, session, action) = (
        nonempty(&filter.since),
        nonempty(&filter.session),
        nonempty(&filter.action),
    );
    let since_ms = match &since {
        None => None,
        Some(text) => Some(
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .map(|t| i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0))
                .map_err(|_| {
                    WebError::invalid(
                        "invalid_since",
                        "`since` is an RFC 3339 time, e.g. 2026-11-22T00:00:00Z",
                    )
                })?,
        ),
    };
    let mut conn = state.db.read.acquire().await?;
    let chain = match filter.verify.is_some() {
        false => None,
        true => Some(
            match audit::verify(&mut conn).await.map_err(Error::Internal)? {
                Ok(v) => format!("The chain verifies: {} rows, head {}.", v.rows, v.head),
                Err(broken) => format!("TAMPERING DETECTED: {broken}."),
            },
        ),
    };
    // One more than a page: whether there are older rows.
    let mut rows = audit::list_page(
        &mut conn,
        since_ms,
        session.as_deref(),
        action.as_deref(),
        filter.before,
        AUDIT_PAGE_ROWS as i64 + 1,
    )
    .await?;
    let older = (rows.len() > AUDIT_PAGE_ROWS).then(|| rows[AUDIT_PAGE_ROWS - 1].id);
    rows.truncate(AUDIT_PAGE_ROWS);
    let names: std::collections::HashMap<String, String> = auth::list_users(&mut conn)
        .await?
        .into_iter()
        .map(|u| (format!("user:{}", u.id), u.name))
        .collect();
    let rows = rows
        .into_iter()
        .map(|mut r| {
            if let Some(name) = names.get(&r.actor) {
                r.actor = format!("{name} ({})", r.actor);
            }
            (r, String::new())
        })
        .map(|(r, _)| {
            let t = clock::Stamp::from_ms(r.at);
            (r, t)
        })
        .collect();
    let query = serde_urlencoded::to_string([
        ("since", since.clone().unwrap_or_default()),
        ("session", session.clone().unwrap_or_default()),
        ("action", action.clone().unwrap_or_default()),
    ])
    .unwrap_or_default();
    let page = AuditPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
        rows,
        since: since.unwrap_or_default(),
        session: session.unwrap_or_default(),
        action: action.unwrap_or_default(),
        chain,
        older,
        query,
    };
    Ok((StatusCode::OK, page).into_response())
}
