//! The transcript page with its inline widgets, one widget's card (a
//! fragment for live updates, or a page of its own), an annotation's image,
//! and the pages a refused answer or reply comes back to.

use std::collections::BTreeSet;

use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{PageError, PageResult, to_login};
use crate::cards::{FormError, Viewer};
use crate::error::{WebError, WebResult};
use crate::state::AppState;
use crate::web::CurrentUser;
use crate::web::views::{self, Entry, WidgetCard};
use widgetd_domain::Error;
use widgetd_domain::access::{self, Access, Caller, Need};
use widgetd_domain::secrets;
use widgetd_domain::sessions::Session;
use widgetd_domain::transcript;
use widgetd_domain::widgets::{self, WidgetId};

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
async fn readable(state: &AppState, user: &CurrentUser, id: &str) -> WebResult<Session> {
    Ok(access::authorize(state, Caller::Person(&user.id), id, Need::Watch).await?)
}

/// The vault a session's answers go to: its creator's.
async fn vault_of(state: &AppState, session: &Session) -> WebResult<views::Vault> {
    let mut conn = state.db.read.acquire().await?;
    let owner = widgetd_domain::auth::find_user_by_id(&mut conn, &session.creator_id)
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
) -> WebResult<TranscriptPage> {
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
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
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
fn form_error(err: &WebError) -> (StatusCode, FormError) {
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
    err: WebError,
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
    err: WebError,
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
    let widget_id = WidgetId::parse(&widget_id).ok_or(Error::NotFound("widget"))?;
    let row = widgets::get_widget(&mut *state.db.read.acquire().await?, &widget_id).await?;
    if row.session_id != session.id {
        return Err(Error::NotFound("widget").into());
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
    let id = WidgetId::parse(&id).ok_or(Error::NotFound("widget"))?;
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
    err: WebError,
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
) -> WebResult<WidgetPage> {
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
        Error::NotFound(_) => Error::NotFound("widget"),
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
        is_admin: user.role == widgetd_domain::auth::Role::Admin,
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
    let id = WidgetId::parse(&id).ok_or(Error::NotFound("widget"))?;
    let row = widgets::get_widget(&mut *state.db.read.acquire().await?, &id).await?;
    readable(&state, &user, row.session_id.as_str()).await?;
    let (content_type, bytes) =
        widgets::kinds::clarification::annotation_image(&row.kind, &row.params)
            .ok_or(Error::NotFound("image"))?;
    Ok(([(header::CONTENT_TYPE, content_type)], bytes).into_response())
}
