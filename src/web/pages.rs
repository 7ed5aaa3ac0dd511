//! The pages: login, the session list, the transcript with its inline
//! widgets (`transcript_page.rs`), and the env var and approval settings
//! (`settings.rs`). Server-rendered, usable without JavaScript;
//! `static/app.js` only adds live updates. This file holds what they share
//! (error pages, paging, forms) and the static files.

mod settings;
mod transcript_page;

use askama::Template;
use askama_web::WebTemplate;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::{CurrentUser, check_csrf};
use crate::error::{WebError, WebResult};
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::clock;
use widgetd_domain::sessions;

pub use settings::{
    delete_env_form, revoke_approval_form, set_env_form, view_settings_approvals_get,
    view_settings_env_get,
};
pub use transcript_page::{
    answer_refused, reply_refused, view_transcript_get, view_widget_get, view_widget_image_get,
    view_widget_page_get, widget_page_refused,
};

/// An error shown as a page, with the same status and message as the API.
pub struct PageError(pub WebError);

impl From<WebError> for PageError {
    fn from(err: WebError) -> Self {
        Self(err)
    }
}

impl From<Error> for PageError {
    fn from(err: Error) -> Self {
        Self(err.into())
    }
}

impl From<sqlx::Error> for PageError {
    fn from(err: sqlx::Error) -> Self {
        Self(err.into())
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "error.html")]
struct ErrorPage {
    title: String,
    message: String,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, body) = self.0.to_body();
        let page = ErrorPage {
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            message: body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        };
        (status, page).into_response()
    }
}

type PageResult = Result<Response, PageError>;

/// A redirect to the login page that comes back to `next`.
pub fn to_login(next: &str) -> Response {
    let query = serde_urlencoded::to_string([("next", next)]).unwrap_or_default();
    Redirect::to(&format!("/login?{query}")).into_response()
}

#[derive(Template, WebTemplate)]
#[template(path = "login.html")]
pub struct LoginPage {
    pub error: Option<String>,
    pub next: String,
}

#[derive(Deserialize, Default)]
struct NextQuery {
    next: Option<String>,
}

/// `GET /login`.
pub async fn view_login_get(user: Option<CurrentUser>, RawQuery(query): RawQuery) -> Response {
    if user.is_some() {
        return Redirect::to("/").into_response();
    }
    let next: NextQuery =
        serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
    LoginPage {
        error: None,
        next: next.next.unwrap_or_else(|| "/".into()),
    }
    .into_response()
}

struct SessionRow {
    id: String,
    title: String,
    activity: clock::Stamp,
    pending: i64,
    archived: bool,
}

/// Sessions on one page of the list.
pub const SESSIONS_PAGE_ROWS: i64 = 50;
/// Env vars on one page of the settings.
pub const ENV_PAGE_ROWS: i64 = 50;

/// `?page=N` (from 1), as the list pages take it.
#[derive(Deserialize, Default)]
struct ListParams {
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    archived: Option<String>,
    #[serde(default)]
    page: Option<String>,
}

impl ListParams {
    fn parse(query: Option<&str>) -> Self {
        serde_urlencoded::from_str(query.unwrap_or_default()).unwrap_or_default()
    }

    /// The page number, from 1; anything else is the first page.
    fn page(&self) -> i64 {
        self.page
            .as_deref()
            .and_then(|p| p.trim().parse::<i64>().ok())
            .filter(|p| (1..=1_000_000).contains(p))
            .unwrap_or(1)
    }
}

/// Links to the pages before and after this one (`page` from 1).
struct Pager {
    previous: Option<String>,
    next: Option<String>,
    /// "Page 2 of 7".
    label: String,
}

impl Pager {
    /// `query` is the rest of the query string (already encoded, may be empty).
    fn new(path: &str, query: &str, page: i64, per_page: i64, total: i64) -> Self {
        let pages = ((total + per_page - 1) / per_page).max(1);
        let link = |n: i64| {
            let sep = if query.is_empty() { "" } else { "&" };
            format!("{path}?{query}{sep}page={n}")
        };
        Self {
            previous: (page > 1).then(|| link(page - 1)),
            next: (page < pages).then(|| link(page + 1)),
            label: format!("Page {page} of {pages}"),
        }
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "sessions.html")]
struct SessionsPage {
    user: String,
    csrf: String,
    is_admin: bool,
    sessions: Vec<SessionRow>,
    search: String,
    archived: bool,
    /// How many sessions match in all (on every page).
    total: i64,
    /// The search as a query string for the tabs (`q=…`, or empty).
    search_query: String,
    pager: Pager,
}

async fn sessions_page(
    state: &AppState,
    user: &CurrentUser,
    params: &ListParams,
) -> WebResult<SessionsPage> {
    let search = params.q.clone().unwrap_or_default().trim().to_owned();
    let archived = params
        .archived
        .as_deref()
        .is_some_and(|a| !a.is_empty() && a != "0");
    let page = params.page();
    let query = sessions::ListQuery {
        archived,
        search: &search,
        offset: (page - 1) * SESSIONS_PAGE_ROWS,
        limit: SESSIONS_PAGE_ROWS,
    };
    let mut conn = state.db.read.acquire().await?;
    let (rows, total) = sessions::list_page(&mut conn, &user.id, &query).await?;
    let sessions = rows
        .into_iter()
        .map(|r| SessionRow {
            id: r.session.id.to_string(),
            title: r.session.title,
            activity: clock::Stamp::from_ms(r.activity),
            pending: r.pending,
            archived: r.session.archived_at.is_some(),
        })
        .collect();
    let search_query = if search.is_empty() {
        String::new()
    } else {
        serde_urlencoded::to_string([("q", &search)]).unwrap_or_default()
    };
    let mut rest = search_query.clone();
    if archived {
        rest = if rest.is_empty() {
            "archived=1".into()
        } else {
            format!("archived=1&{rest}")
        };
    }
    Ok(SessionsPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
        sessions,
        archived,
        total,
        pager: Pager::new("/", &rest, page, SESSIONS_PAGE_ROWS, total),
        search_query,
        search,
    })
}

/// `GET /?q=…&archived=1&page=N`: the sessions the user may read, most
/// recent activity first, archived ones on their own list, 50 a page.
pub async fn view_sessions_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let Some(user) = user else {
        return Ok(to_login("/"));
    };
    let params = ListParams::parse(query.as_deref());
    Ok(sessions_page(&state, &user, &params).await?.into_response())
}

#[derive(Deserialize)]
struct NewSessionForm {
    #[serde(default)]
    csrf_token: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

/// A urlencoded form body, refused without quoting it.
pub fn read_form<T: serde::de::DeserializeOwned>(body: &[u8]) -> WebResult<T> {
    Ok(
        serde_urlencoded::from_bytes(body).map_err(|_| Error::BadRequest {
            code: "invalid_form",
            message: "the form could not be read; reload the page and try again".into(),
        })?,
    )
}

/// `POST /sessions`: creates a session, then redirects to its settings
/// panel, which shows the agent token once (POST/redirect/GET: a reload
/// creates nothing).
pub async fn create_session_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: NewSessionForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    let title = sessions::parse_title(form.title.as_deref())?;
    let mut tx = state.db.begin_write().await?;
    let new = sessions::create_session(&mut tx, &user.id, title).await?;
    let entry = widgetd_domain::audit::Entry {
        action: "session.create",
        session: Some(&new.session.id),
        ..Default::default()
    };
    widgetd_domain::audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry).await?;
    tx.commit().await?;
    let id = new.session.id;
    state.shown_once.put(&user.id, &id, new.agent_token);
    Ok(Redirect::to(&format!("/sessions/{id}/settings?created=1#agent")).into_response())
}

/// `static/app.js` followed by the script of each clarification type that
/// has one (`static/clarification/TYPE.js`): one file for the page, so one
/// `<script>` and one request; the MCP App document (`crate::mcp`) inlines
/// the same text.
pub(crate) const APP_JS: &str = concat!(
    include_str!("../../static/app.js"),
    include_str!("../../static/fields.js"),
    include_str!("../../static/clarification/table.js"),
    include_str!("../../static/clarification/mapping.js"),
    include_str!("../../static/clarification/ranking.js"),
    include_str!("../../static/clarification/curation.js"),
    include_str!("../../static/clarification/tree.js"),
    include_str!("../../static/clarification/annotation.js"),
);

/// `GET /static/…`: the stylesheet and script, compiled into the binary.
pub async fn static_file(Path(name): Path<String>) -> Response {
    let (body, mime) = match name.as_str() {
        "app.css" => (
            include_str!("../../static/app.css"),
            "text/css; charset=utf-8",
        ),
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        _ => return PageError(Error::NotFound("file").into()).into_response(),
    };
    ([(header::CONTENT_TYPE, mime)], body).into_response()
}
