//! The pages: login, the session list, the transcript with its inline
//! widgets, and env var settings. Server-rendered, usable without
//! JavaScript; `static/app.js` only adds live updates.

use std::collections::BTreeSet;

use askama::Template;
use askama_web::WebTemplate;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::SecretString;
use serde::Deserialize;

use super::views::{self, Entry, WidgetCard};
use super::{CurrentUser, check_csrf};
use crate::access::{self, Access, Caller, Need};
use crate::audit::{Actor, ClientAddr};
use crate::error::{AppError, AppResult};
use crate::secrets::api::audit_env;
use crate::secrets::{self, EnvVarInfo, EnvVarName, SecretValue, Target};
use crate::sessions::{self, Session};
use crate::widgets::card::{FormError, Viewer};
use crate::widgets::{self, WidgetId, approval};
use crate::{AppState, clock, transcript};

/// An error shown as a page, with the same status and message as the API.
pub struct PageError(pub AppError);

impl From<AppError> for PageError {
    fn from(err: AppError) -> Self {
        Self(err)
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
) -> AppResult<SessionsPage> {
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
        is_admin: user.role == crate::auth::Role::Admin,
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
pub fn read_form<T: serde::de::DeserializeOwned>(body: &[u8]) -> AppResult<T> {
    serde_urlencoded::from_bytes(body).map_err(|_| AppError::BadRequest {
        code: "invalid_form",
        message: "the form could not be read; reload the page and try again".into(),
    })
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
    let entry = crate::audit::Entry {
        action: "session.create",
        session: Some(&new.session.id),
        ..Default::default()
    };
    crate::audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry).await?;
    tx.commit().await?;
    let id = new.session.id;
    state.shown_once.put(&user.id, &id, new.agent_token);
    Ok(Redirect::to(&format!("/sessions/{id}/settings?created=1#agent")).into_response())
}

#[derive(Template, WebTemplate)]
#[template(path = "transcript.html")]
struct TranscriptPage {
    user: String,
    csrf: String,
    is_admin: bool,
    session_id: String,
    title: String,
    archived: bool,
    entries: Vec<Entry>,
    /// The viewer may answer widgets and write replies.
    can_answer: bool,
    /// The viewer created the session and may change its settings.
    owner: bool,
    /// The id to continue from for earlier entries, when there are more.
    earlier: Option<i64>,
    /// Why the last reply was refused, shown beside the (empty) reply box.
    reply_error: Option<FormError>,
}

/// A refused form answer, shown where it was given.
enum Refused<'a> {
    /// To the widget with this id.
    Widget(&'a str, &'a FormError),
    /// In the reply box.
    Reply(FormError),
}

/// Entries on one page of a transcript: the most recent ones.
const TRANSCRIPT_PAGE_ENTRIES: i64 = 200;

/// The session if `user` may read it.
async fn readable(state: &AppState, user: &CurrentUser, id: &str) -> AppResult<Session> {
    access::authorize(state, Caller::Person(&user.id), id, Need::Watch).await
}

/// The vault a session's answers go to: its creator's.
async fn vault_of(state: &AppState, session: &Session) -> AppResult<views::Vault> {
    let mut conn = state.db.read.acquire().await?;
    let owner = crate::auth::find_user_by_id(&mut conn, &session.creator_id)
        .await?
        .map(|u| u.name)
        .unwrap_or_default();
    let vars = secrets::list_env_vars(&mut conn, &session.creator_id).await?;
    let saved_globals: BTreeSet<String> = vars
        .into_iter()
        .filter(|v| v.scope == "global")
        .map(|v| v.name)
        .collect();
    Ok(views::Vault {
        owner,
        saved_globals,
    })
}

async fn transcript_page(
    state: &AppState,
    user: &CurrentUser,
    session: Session,
    refused: Option<Refused<'_>>,
    before: Option<i64>,
) -> AppResult<TranscriptPage> {
    let mut conn = state.db.read.acquire().await?;
    let access = access::person_access(&mut conn, &session, &user.id).await?;
    // One more than a page: whether there are earlier entries.
    let mut messages =
        transcript::list_messages_page(&mut conn, &session.id, before, TRANSCRIPT_PAGE_ENTRIES + 1)
            .await?;
    let more = messages.len() > TRANSCRIPT_PAGE_ENTRIES as usize;
    if more {
        messages.remove(0);
    }
    let earlier = more.then(|| messages[0].id);
    let widgets = match (messages.first(), messages.last()) {
        (Some(first), Some(last)) => {
            widgets::widgets_of_messages(&mut conn, &session.id, first.id, last.id).await?
        }
        _ => Vec::new(),
    };
    drop(conn);
    let vault = vault_of(state, &session).await?;
    let viewer = Viewer {
        csrf: &user.csrf,
        can_answer: access >= Access::Prompt,
        vault: &vault,
        standalone: false,
    };
    let (widget_error, reply_error) = match refused {
        Some(Refused::Widget(id, e)) => (Some((id, e)), None),
        Some(Refused::Reply(e)) => (None, Some(e)),
        None => (None, None),
    };
    let entries = views::entries(messages, widgets, &viewer, widget_error)?;
    Ok(TranscriptPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == crate::auth::Role::Admin,
        session_id: session.id.to_string(),
        title: session.title,
        archived: session.archived_at.is_some(),
        entries,
        can_answer: access >= Access::Prompt,
        owner: access == Access::Owner,
        earlier,
        reply_error,
    })
}

/// `GET /sessions/{id}`: the transcript.
pub async fn view_transcript_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let Some(user) = user else {
        return Ok(to_login(&format!("/sessions/{id}")));
    };
    let session = readable(&state, &user, &id).await?;
    #[derive(Deserialize, Default)]
    struct Page {
        #[serde(default)]
        before: Option<i64>,
    }
    let page: Page =
        serde_urlencoded::from_str(query.as_deref().unwrap_or_default()).unwrap_or_default();
    Ok(transcript_page(&state, &user, session, None, page.before)
        .await?
        .into_response())
}

/// The status and the shown form of a refused form answer.
fn form_error(err: &AppError) -> (StatusCode, FormError) {
    let (status, body) = err.to_body();
    let shown = FormError {
        code: body["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        message: body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    };
    (status, shown)
}

/// A refused form answer: the transcript again, the message beside the
/// widget's inputs, every value field empty.
pub async fn answer_refused(
    state: &AppState,
    user: &CurrentUser,
    widget: &WidgetId,
    err: AppError,
) -> Response {
    let (status, shown) = form_error(&err);
    let page = async {
        let row = widgets::get_widget(&mut *state.db.read.acquire().await?, widget).await?;
        let session = readable(state, user, row.session_id.as_str()).await?;
        let refused = Refused::Widget(widget.as_str(), &shown);
        transcript_page(state, user, session, Some(refused), None).await
    };
    match page.await {
        Ok(page) => (status, page).into_response(),
        Err(_) => PageError(err).into_response(),
    }
}

/// A refused reply: the transcript again with the reason beside the reply
/// box, which is empty (the text may hold a secret; it is never echoed).
pub async fn reply_refused(
    state: &AppState,
    user: &CurrentUser,
    session: &str,
    err: AppError,
) -> Response {
    let (status, shown) = form_error(&err);
    let page = async {
        let session = readable(state, user, session).await?;
        transcript_page(state, user, session, Some(Refused::Reply(shown)), None).await
    };
    match page.await {
        Ok(page) => (status, page).into_response(),
        Err(_) => PageError(err).into_response(),
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "widget_fragment.html")]
struct WidgetFragment {
    w: WidgetCard,
}

/// `GET /sessions/{id}/widgets/{widget_id}`: one widget's card, for live updates.
pub async fn view_widget_get(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((id, widget_id)): Path<(String, String)>,
) -> PageResult {
    let session = readable(&state, &user, &id).await?;
    let widget_id = WidgetId::parse(&widget_id).ok_or(AppError::NotFound("widget"))?;
    let row = widgets::get_widget(&mut *state.db.read.acquire().await?, &widget_id).await?;
    if row.session_id != session.id {
        return Err(AppError::NotFound("widget").into());
    }
    let vault = vault_of(&state, &session).await?;
    let access =
        access::person_access(&mut *state.db.read.acquire().await?, &session, &user.id).await?;
    let viewer = Viewer {
        csrf: &user.csrf,
        can_answer: access >= Access::Prompt,
        vault: &vault,
        standalone: false,
    };
    let fragment = WidgetFragment {
        w: views::widget_card(&row, &viewer, None)?,
    };
    Ok(fragment.into_response())
}

#[derive(Template, WebTemplate)]
#[template(path = "widget_page.html")]
struct WidgetPage {
    user: String,
    csrf: String,
    is_admin: bool,
    session_id: String,
    title: String,
    w: WidgetCard,
    /// The widget ended: the person can go back to where the agent runs.
    done: bool,
}

/// `GET /widgets/{id}`: one widget alone on a page, the same form as in the
/// transcript, for a person sent here from where the agent runs (MCP
/// URL-mode elicitation). Only someone who may answer it in the transcript
/// sees it: a view-only user is refused (403), anyone else finds nothing
/// (404). A visitor who is not logged in logs in and comes straight back.
pub async fn view_widget_page_get(
    State(state): State<AppState>,
    user: Option<CurrentUser>,
    Path(id): Path<String>,
) -> PageResult {
    let id = WidgetId::parse(&id).ok_or(AppError::NotFound("widget"))?;
    let Some(user) = user else {
        return Ok(to_login(&format!("/widgets/{}", id.as_str())));
    };
    Ok(widget_page(&state, &user, &id, None).await?.into_response())
}

/// A refused answer given on a widget's own page: the page again, the
/// reason beside the inputs, every value field empty.
pub async fn widget_page_refused(
    state: &AppState,
    user: &CurrentUser,
    widget: &WidgetId,
    err: AppError,
) -> Response {
    let (status, shown) = form_error(&err);
    match widget_page(state, user, widget, Some(&shown)).await {
        Ok(page) => (status, page).into_response(),
        Err(_) => PageError(err).into_response(),
    }
}

async fn widget_page(
    state: &AppState,
    user: &CurrentUser,
    id: &WidgetId,
    error: Option<&FormError>,
) -> AppResult<WidgetPage> {
    let row = widgets::get_widget(&mut *state.db.read.acquire().await?, id).await?;
    // The same rule as the transcript's form: prompt access or more.
    let session = access::authorize(
        state,
        Caller::Person(&user.id),
        row.session_id.as_str(),
        Need::Answer,
    )
    .await
    .map_err(|err| match err {
        AppError::NotFound(_) => AppError::NotFound("widget"),
        other => other,
    })?;
    let vault = vault_of(state, &session).await?;
    let viewer = Viewer {
        csrf: &user.csrf,
        can_answer: true,
        vault: &vault,
        standalone: true,
    };
    Ok(WidgetPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == crate::auth::Role::Admin,
        session_id: session.id.to_string(),
        title: session.title,
        done: row.status != widgets::WidgetStatus::Pending,
        w: views::widget_card(&row, &viewer, error)?,
    })
}

/// `GET /widgets/{id}/image`: the image of an `annotation` clarification,
/// with the type its magic bytes showed, for people who may see the
/// widget's session (the page's `<img>`; never inlined into the page).
pub async fn view_widget_image_get(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> PageResult {
    let id = WidgetId::parse(&id).ok_or(AppError::NotFound("widget"))?;
    let row = widgets::get_widget(&mut *state.db.read.acquire().await?, &id).await?;
    readable(&state, &user, row.session_id.as_str()).await?;
    let (content_type, bytes) = widgets::clarification::annotation_image(&row.kind, &row.params)
        .ok_or(AppError::NotFound("image"))?;
    Ok(([(header::CONTENT_TYPE, content_type)], bytes).into_response())
}

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
) -> AppResult<SettingsPage> {
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
        is_admin: user.role == crate::auth::Role::Admin,
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
) -> AppResult<Target> {
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
        AppResult::Ok(())
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
        _ => return PageError(AppError::NotFound("file")).into_response(),
    };
    ([(header::CONTENT_TYPE, mime)], body).into_response()
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
        is_admin: user.role == crate::auth::Role::Admin,
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
            let entry = crate::audit::Entry {
                action: "approval.revoke",
                detail: Some(format!("rule={}; tool={tool}", form.id)),
                ..Default::default()
            };
            crate::audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry).await?;
            tx.commit().await?;
        }
        Err(AppError::NotFound(_)) => {}
        Err(err) => return Err(err.into()),
    }
    Ok(Redirect::to("/settings/approvals").into_response())
}
