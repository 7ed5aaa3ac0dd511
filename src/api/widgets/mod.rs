//! Widgets over HTTP: agents create and read them with their token; people
//! answer them with their cookie session (CSRF-checked).

pub mod respond;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use crate::api::ApiJson;
use crate::error::{WebError, WebResult};
use crate::state::AppState;
use crate::web::{CurrentUser, check_csrf, pages};
use widgetd_domain::Error;
use widgetd_domain::access::{self, Caller, Need};
use widgetd_domain::audit::{Actor, ClientAddr};
use widgetd_domain::auth::Principal;
use widgetd_domain::input::{parse_json, parse_value};
use widgetd_domain::widgets::engine::{life, text};
use widgetd_domain::widgets::{
    AnswerBody, Answerer, Approval, Ask, AskUser, Cause, Clarification, EnvVars, Request, WidgetId,
    WidgetStatus, WidgetView, after_waiting, archive_session, create_living, dismiss_widget,
    get_widget, submit, validate,
};

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/sessions/{id}/widgets/env-vars",
            post(create_widget::<EnvVars>),
        )
        .route(
            "/api/v1/sessions/{id}/widgets/ask-user",
            post(create_widget::<AskUser>),
        )
        .route(
            "/api/v1/sessions/{id}/widgets/ask",
            post(create_widget::<Ask>),
        )
        .route(
            "/api/v1/sessions/{id}/widgets/approval",
            post(create_widget::<Approval>),
        )
        .route(
            "/api/v1/sessions/{id}/widgets/clarification",
            // An `annotation` carries its image (2 MiB, about 2.8 MB as
            // base64): more than the 2 MB other bodies may have.
            post(create_widget::<Clarification>).layer(DefaultBodyLimit::max(4 * 1024 * 1024)),
        )
        .route(
            "/api/v1/sessions/{id}/widgets/fields",
            post(create_widget::<widgetd_domain::widgets::Fields>),
        )
        .route("/api/v1/sessions/{id}/archive", post(archive_session_api))
        .route("/api/v1/sessions/{id}/widgets", get(list_widgets))
        .route("/api/v1/widgets/{id}", get(read_widget))
        .route("/api/v1/widgets/{id}/cancel", post(cancel_widget))
        .route("/widgets/{id}/submit", post(submit_widget))
        .route("/widgets/{id}/dismiss", post(dismiss_widget_form))
}

fn actor_of(principal: &Principal) -> Actor {
    match principal {
        Principal::Agent { session_id } => Actor::Agent(session_id.clone()),
        Principal::User { user_id, .. } => Actor::User(user_id.clone()),
    }
}

/// `POST /api/v1/sessions/{id}/widgets/…`: the REST twin of request `R`'s
/// MCP tool, with the same body and the same answer (`201`).
async fn create_widget<R: Request>(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
    ApiJson(mut body): ApiJson<serde_json::Map<String, Value>>,
) -> WebResult<Response> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Act).await?;
    let life = life::split(&mut body, state.settings.widget_ttl_ms)?;
    R::normalise(&mut body);
    let (params, wait) = validate::<R>(parse_value(Value::Object(body))?)?;
    let actor = actor_of(&principal);
    let cause = Cause {
        actor: &actor,
        client: &client,
    };
    let created = create_living::<R>(&state, &session.id, params, &life, cause).await?;
    let waited = after_waiting(&state, created, wait).await?;
    Ok(respond::waited(waited, &state.core, StatusCode::CREATED))
}

/// `GET /api/v1/widgets/{id}`: the sanitized state, to the widget's agent
/// or its session's host.
async fn read_widget(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
) -> WebResult<Json<WidgetView>> {
    let id = WidgetId::parse(&id).ok_or(Error::NotFound("widget"))?;
    let widget = widgetd_domain::widgets::read_widget(&state, &id).await?;
    access::authorize(
        &state,
        (&principal).into(),
        widget.session_id.as_str(),
        Need::Watch,
    )
    .await
    .map_err(|err| match err {
        Error::NotFound(_) => Error::NotFound("widget"),
        other => other,
    })?;
    Ok(Json(widget.into()))
}

/// The query of `GET /api/v1/sessions/{id}/widgets`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default)]
    status: Option<WidgetStatus>,
}

/// `GET /api/v1/sessions/{id}/widgets?status=pending`: the session's
/// widgets in one state (by default `pending`), newest first, to its agent
/// or its host; never a value.
async fn list_widgets(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
    query: axum::extract::RawQuery,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Watch).await?;
    let query: ListQuery =
        serde_urlencoded::from_str(query.0.as_deref().unwrap_or("")).map_err(|_| {
            Error::BadRequest {
                code: "invalid_query",
                message: "the query takes only `status`: pending, submitted, dismissed, expired, \
                      cancelled or already_present"
                    .into(),
            }
        })?;
    let status = query.status.unwrap_or(WidgetStatus::Pending);
    let mut conn = state.db.read.acquire().await?;
    let widgets = life::list(&mut conn, &session.id, status).await?;
    Ok(Json(life::listing(&session.id, status, widgets)))
}

/// The JSON body of an agent's withdrawal: an optional reason.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CancelJson {
    #[serde(default)]
    reason: Option<String>,
}

/// `POST /api/v1/widgets/{id}/cancel` (`{"reason"?}`, or no body): the
/// session's own agent withdraws a pending widget it made. Another
/// session's agent gets `404`; a person's token `403` (people dismiss).
async fn cancel_widget(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
    body: Bytes,
) -> WebResult<Json<WidgetView>> {
    let Principal::Agent { session_id } = &principal else {
        return Err(Error::Forbidden(
            "only the session's agent withdraws its requests; a person dismisses them".into(),
        )
        .into());
    };
    let id = WidgetId::parse(&id).ok_or(Error::NotFound("widget"))?;
    let raw = match body.iter().all(u8::is_ascii_whitespace) {
        true => None,
        false => parse_json::<CancelJson>(&body)?.reason,
    };
    let reason = match raw {
        Some(raw) => text::plain_text(&raw, &life::REASON)?,
        None => None,
    };
    let actor = actor_of(&principal);
    let cause = Cause {
        actor: &actor,
        client: &client,
    };
    let view = life::cancel_by_agent(&state, &id, session_id, reason, cause).await?;
    Ok(Json(view))
}

async fn archive_session_api(
    State(state): State<AppState>,
    principal: Principal,
    client: ClientAddr,
    Path(id): Path<String>,
) -> WebResult<Json<Value>> {
    let session = access::authorize(&state, (&principal).into(), &id, Need::Host).await?;
    let actor = actor_of(&principal);
    let cancelled = archive_session(
        &state,
        &session.id,
        Cause {
            actor: &actor,
            client: &client,
        },
    )
    .await?;
    Ok(Json(
        json!({ "session_id": session.id, "archived": true, "cancelled_widgets": cancelled }),
    ))
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

/// A form's fields (values wrapped as secrets), its CSRF token, and where
/// the browser goes back to.
type FormFields = (Vec<(String, SecretString)>, Option<String>, Back);

/// Where a person goes after answering with a form.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Back {
    /// The transcript, at the answered card.
    Transcript,
    /// The widget's own page (`GET /widgets/{id}`), sent as the hidden
    /// field `return_to=page`; it then says "You can return to your agent".
    Page,
}

/// Reads a urlencoded body. Its values may be secrets: they are wrapped at
/// once, and a malformed body is refused without quoting any of it.
fn form_fields(body: &[u8]) -> WebResult<FormFields> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|_| Error::BadRequest {
            code: "invalid_form",
            message: "the form could not be read; reload the page and try again".into(),
        })?;
    let mut csrf = None;
    let mut back = Back::Transcript;
    let mut fields = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        match key.as_str() {
            "csrf_token" => csrf = Some(value),
            "return_to" if value == "page" => back = Back::Page,
            "return_to" => {}
            _ => fields.push((key, SecretString::from(value))),
        }
    }
    Ok((fields, csrf, back))
}

/// Refusals a person can act on (shown in the page), as opposed to not
/// found, CSRF or internal errors.
fn refusal(err: &Error) -> bool {
    matches!(err, Error::Invalid { .. } | Error::WidgetNotPending(_))
}

/// After a form post the browser goes back to the transcript, scrolled to
/// the card it answered rather than to the top, or to the widget's own page
/// when it was answered there.
fn answered(form: bool, back: Back, view: WidgetView) -> Response {
    match (form, back) {
        (true, Back::Page) => Redirect::to(&format!("/widgets/{}", view.widget_id)).into_response(),
        (true, Back::Transcript) => {
            let to = format!("/sessions/{}#w-{}", view.session_id, view.widget_id);
            Redirect::to(&to).into_response()
        }
        (false, _) => Json(view).into_response(),
    }
}

/// A refused form answer, shown where it was given.
async fn refused(
    state: &AppState,
    user: &CurrentUser,
    id: &WidgetId,
    back: Back,
    err: WebError,
) -> Response {
    match back {
        Back::Page => pages::widget_page_refused(state, user, id, err).await,
        Back::Transcript => pages::answer_refused(state, user, id, err).await,
    }
}

/// `POST /widgets/{id}/submit`: a form post (with `csrf_token`) or JSON
/// (with `X-CSRF-Token`), whose fields the widget's kind reads
/// (`docs/widgets.md` names them per kind).
async fn submit_widget(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    let id = WidgetId::parse(&id).ok_or(Error::NotFound("widget"))?;
    let form = is_form(&headers);
    let (fields, csrf, back) = if form {
        form_fields(&body)?
    } else {
        (Vec::new(), None, Back::Transcript)
    };
    check_csrf(&state, &headers, &user, csrf.as_deref())?;
    let row = get_widget(&mut *state.db.read.acquire().await?, &id).await?;
    // Who may answer is settled before anything about the widget is revealed.
    access::authorize(
        &state,
        Caller::Person(&user.id),
        row.session_id.as_str(),
        Need::Answer,
    )
    .await
    .map_err(|err| match err {
        Error::NotFound(_) => Error::NotFound("widget"),
        other => other,
    })?;
    let body = match form {
        true => AnswerBody::Form(fields),
        false => AnswerBody::Json(body),
    };
    let answer = submit(&state, &row, Answerer::Person(&user.id), body, &client);
    match answer.await {
        Ok(view) => Ok(answered(form, back, view)),
        // The person sees the form again with the reason beside it.
        Err(err) if form && refusal(&err) => {
            Ok(refused(&state, &user, &id, back, err.into()).await)
        }
        Err(err) => Err(err.into()),
    }
}

/// The JSON body of a dismissal: an optional note.
#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DismissJson {
    #[serde(default)]
    note: Option<String>,
}

/// The note of a dismissal: the form's `note` field, or the JSON body's
/// (an empty body has none).
fn dismissal_note(
    form: bool,
    fields: Vec<(String, SecretString)>,
    body: &[u8],
) -> widgetd_domain::Result<Option<String>> {
    let raw = match form {
        true => fields
            .into_iter()
            .find(|(k, _)| k == "note")
            .map(|(_, v)| v.expose_secret().to_owned()),
        false if body.iter().all(u8::is_ascii_whitespace) => None,
        false => parse_json::<DismissJson>(body)?.note,
    };
    match raw {
        Some(raw) => text::plain_text(&raw, &text::NOTE),
        None => Ok(None),
    }
}

/// `POST /widgets/{id}/dismiss`: a form (`csrf_token`, optional `note`) or
/// JSON (`{"note"?}`, with `X-CSRF-Token`).
async fn dismiss_widget_form(
    State(state): State<AppState>,
    user: CurrentUser,
    client: ClientAddr,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    let form = is_form(&headers);
    let (fields, csrf, back) = if form {
        form_fields(&body)?
    } else {
        (Vec::new(), None, Back::Transcript)
    };
    check_csrf(&state, &headers, &user, csrf.as_deref())?;
    let id = WidgetId::parse(&id).ok_or(Error::NotFound("widget"))?;
    let dismissed = async {
        let note = dismissal_note(form, fields, &body)?;
        dismiss_widget(&state, &id, &user.id, note, &client).await
    };
    match dismissed.await {
        Ok(view) => Ok(answered(form, back, view)),
        Err(err) if form && refusal(&err) => {
            Ok(refused(&state, &user, &id, back, err.into()).await)
        }
        Err(err) => Err(err.into()),
    }
}
