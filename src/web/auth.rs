//! Logging in and out, the signed-in user, and CSRF protection for every
//! state-changing request made with the session cookie.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, OptionalFromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;

use crate::error::{WebError, WebResult};
use crate::state::AppState;
use crate::web::pages::LoginPage;
use widgetd_domain::Error;
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::auth::{self, Role, passwords};
use widgetd_domain::crypto::random_bytes;
use widgetd_domain::ids::UserId;
use widgetd_domain::{clock, limits};

const USER_KEY: &str = "user_id";
const CSRF_KEY: &str = "csrf";
const LOGIN_AT_KEY: &str = "login_at";
const TOUCHED_AT_KEY: &str = "touched_at";
/// An active session is rewritten (expiry and cookie moved forward) at most
/// this often, so the idle timeout is exact to within this much.
pub const TOUCH_EVERY_MS: i64 = 60 * 1000;
/// A login is good for this long, however active the user is.
pub const ABSOLUTE_TIMEOUT_MS: i64 = 24 * 3600 * 1000;
/// A session idle for this long ends (the cookie store's expiry).
pub const IDLE_TIMEOUT_SECS: i64 = 2 * 3600;

/// The signed-in user of a browser request.
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub id: UserId,
    pub name: String,
    pub role: Role,
    /// The per-session token every form carries.
    pub csrf: String,
}

fn login_required() -> Error {
    Error::Unauthenticated {
        code: "login_required",
        message: "log in first (POST /login)".into(),
    }
}

fn session_error(e: impl std::fmt::Display) -> Error {
    Error::Internal(anyhow::anyhow!("session store: {e}"))
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = WebError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> WebResult<Self> {
        let session = Session::from_request_parts(parts, state)
            .await
            .map_err(|(_, m)| session_error(m))?;
        let user_id: Option<String> = session.get(USER_KEY).await.map_err(session_error)?;
        let user_id = user_id
            .and_then(|id| UserId::parse(&id))
            .ok_or_else(login_required)?;
        let login_at: i64 = session
            .get(LOGIN_AT_KEY)
            .await
            .map_err(session_error)?
            .unwrap_or(0);
        if clock::now_ms() - login_at > ABSOLUTE_TIMEOUT_MS {
            session.flush().await.map_err(session_error)?;
            return Err(login_required().into());
        }
        let user = auth::current_user(state, &user_id).await?;
        let Some(user) = user.filter(|u| !u.disabled) else {
            session.flush().await.map_err(session_error)?;
            return Err(login_required().into());
        };
        let csrf: String = session
            .get(CSRF_KEY)
            .await
            .map_err(session_error)?
            .unwrap_or_default();
        touch(&session).await?;
        Ok(Self {
            id: user.id,
            name: user.name,
            role: user.role,
            csrf,
        })
    }
}

/// Marks the session changed once per `TOUCH_EVERY_MS`, which saves it with
/// a new expiry and sends the cookie again; other requests write nothing.
async fn touch(session: &Session) -> WebResult<()> {
    let now = clock::now_ms();
    let touched_at: i64 = session
        .get(TOUCHED_AT_KEY)
        .await
        .map_err(session_error)?
        .unwrap_or(0);
    if now - touched_at >= TOUCH_EVERY_MS {
        session
            .insert(TOUCHED_AT_KEY, now)
            .await
            .map_err(session_error)?;
    }
    Ok(())
}

impl OptionalFromRequestParts<AppState> for CurrentUser {
    type Rejection = WebError;

    /// Not signed in is `None`.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> WebResult<Option<Self>> {
        match <Self as FromRequestParts<AppState>>::from_request_parts(parts, state).await {
            Ok(user) => Ok(Some(user)),
            Err(WebError::Domain(Error::Unauthenticated { .. })) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn forbidden(code: &'static str, message: &str) -> WebError {
    WebError::Csrf {
        code,
        message: message.to_owned(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Refuses a request a browser made for another site: `Sec-Fetch-Site`
/// must be same-origin (or absent) and `Origin` ours (or absent). Guards
/// the login form too, which has no session token yet.
pub fn check_same_origin(state: &AppState, headers: &HeaderMap) -> WebResult<()> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    origin_verdict(
        state.settings.public_origin(),
        header("sec-fetch-site"),
        header("origin"),
    )
}

/// [`check_same_origin`] on the two headers' values.
fn origin_verdict(public: &str, site: Option<&str>, origin: Option<&str>) -> WebResult<()> {
    if let Some(site) = site
        && !matches!(site, "same-origin" | "none")
    {
        return Err(forbidden(
            "csrf_cross_site",
            "cross-site requests cannot change anything here",
        ));
    }
    // With `Referrer-Policy: no-referrer` a browser sends `Origin: null` on
    // its own same-origin form posts; that is accepted only together with
    // `Sec-Fetch-Site: same-origin`, which a page cannot forge.
    let same_site_null = site == Some("same-origin") && origin == Some("null");
    if let Some(origin) = origin
        && origin != public
        && !same_site_null
    {
        // The usual cause is a person who opened widgetd under another
        // name for the same host (127.0.0.1 for localhost): say which one
        // works. Only our own public origin is named, never the header.
        return Err(forbidden(
            "csrf_origin",
            &format!(
                "the request's Origin is not this site; open widgetd at {public} \
                 (its --public-url) and try again"
            ),
        ));
    }
    Ok(())
}

/// Refuses a cookie-authenticated state change that a browser made for
/// another site: the checks of [`check_same_origin`], and the session's form
/// token must match.
pub fn check_csrf(
    state: &AppState,
    headers: &HeaderMap,
    user: &CurrentUser,
    token: Option<&str>,
) -> WebResult<()> {
    check_same_origin(state, headers)?;
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let token = token.or_else(|| header("x-csrf-token")).unwrap_or_default();
    if user.csrf.is_empty() || !constant_time_eq(token.as_bytes(), user.csrf.as_bytes()) {
        return Err(forbidden(
            "csrf_token",
            "the form is stale or was not sent from this site: reload the page",
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
struct LoginForm {
    username: String,
    password: SecretString,
    #[serde(default)]
    next: Option<String>,
}

/// Only local paths: never an open redirect.
fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p
                    .chars()
                    .any(|c| c == '\\' || c.is_control() || c.is_whitespace()) =>
        {
            p
        }
        _ => "/",
    }
}

/// `POST /login` (urlencoded `username`, `password`, `next`).
pub async fn login(
    State(state): State<AppState>,
    session: Session,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    let form: LoginForm = serde_urlencoded::from_bytes(&body).map_err(|_| Error::BadRequest {
        code: "invalid_form",
        message: "send `username` and `password` as a form".into(),
    })?;
    let next = safe_next(form.next.as_deref()).to_owned();
    check_same_origin(&state, &headers)?;
    // No account has a longer name or password: refused before the limiter
    // (whose keys must stay small) and before argon2 (whose cost grows with
    // the password), as a plain wrong login.
    if form.username.len() > auth::MAX_NAME_LEN
        || form.password.expose_secret().len() > passwords::MAX_PASSWORD_LEN
    {
        let page = LoginPage {
            error: Some("The user name or password is wrong.".into()),
            next,
        };
        return Ok((StatusCode::UNAUTHORIZED, page).into_response());
    }
    let keys = [
        (
            limits::address_key(client.0.as_deref()),
            limits::PER_ADDRESS,
        ),
        (limits::name_key(&form.username), limits::PER_NAME),
    ];
    let mut tx = state.db.begin_write().await?;
    let taken = limits::take(&mut tx, &keys).await?;
    tx.commit().await?;
    if let Err(wait) = taken {
        let page = LoginPage {
            error: Some("Too many attempts. Wait a minute, then try again.".into()),
            next,
        };
        let retry = wait.as_secs().to_string();
        return Ok((
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, retry)],
            page,
        )
            .into_response());
    }
    let found =
        auth::find_user_with_hash(&mut *state.db.read.acquire().await?, &form.username).await?;
    let password = form.password;
    let (user, ok) = match found {
        Some((user, hash)) => (Some(user), passwords::verify_async(password, hash).await?),
        None => {
            // Same cost whether or not the user exists.
            passwords::verify_async(password, passwords::DUMMY_HASH.clone()).await?;
            (None, false)
        }
    };
    let mut tx = state.db.begin_write().await?;
    let Some(user) = user.filter(|u| ok && !u.disabled) else {
        let entry = Entry {
            action: "login.failure",
            ..Default::default()
        };
        audit::append(&mut tx, &Actor::System, &client, entry).await?;
        tx.commit().await?;
        let page = LoginPage {
            error: Some("The user name or password is wrong.".into()),
            next,
        };
        return Ok((StatusCode::UNAUTHORIZED, page).into_response());
    };
    audit::append(
        &mut tx,
        &Actor::User(user.id.clone()),
        &client,
        Entry {
            action: "login.success",
            ..Default::default()
        },
    )
    .await?;
    tx.commit().await?;
    // A fresh id at login: a session id planted before login is worthless.
    session.cycle_id().await.map_err(session_error)?;
    let csrf = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        random_bytes::<32>().as_ref(),
    );
    session
        .insert(USER_KEY, user.id.as_str())
        .await
        .map_err(session_error)?;
    session
        .insert(CSRF_KEY, csrf)
        .await
        .map_err(session_error)?;
    for key in [LOGIN_AT_KEY, TOUCHED_AT_KEY] {
        session
            .insert(key, clock::now_ms())
            .await
            .map_err(session_error)?;
    }
    Ok(Redirect::to(&next).into_response())
}

#[derive(Deserialize)]
struct LogoutForm {
    #[serde(default)]
    csrf_token: Option<String>,
}

/// `POST /logout`: deletes the session server-side.
pub async fn logout(
    State(state): State<AppState>,
    session: Session,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> WebResult<Response> {
    let form: LogoutForm =
        serde_urlencoded::from_bytes(&body).unwrap_or(LogoutForm { csrf_token: None });
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    session.flush().await.map_err(session_error)?;
    let mut tx = state.db.begin_write().await?;
    let entry = Entry {
        action: "logout",
        ..Default::default()
    };
    audit::append(&mut tx, &Actor::User(user.id.clone()), &client, entry).await?;
    tx.commit().await?;
    Ok(Redirect::to("/login").into_response())
}

/// `GET /api/v1/me`: who is signed in, and the form token for scripts that
/// post JSON with the cookie (`X-CSRF-Token`).
pub async fn me(user: CurrentUser) -> Response {
    let body = json!({ "user_id": user.id, "name": user.name, "role": user.role, "csrf_token": user.csrf });
    (
        StatusCode::OK,
        [(header::CACHE_CONTROL, "no-store")],
        Json(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::origin_verdict;

    const PUBLIC: &str = "https://widgetd.example.com";

    /// Origins an attacker would try: the public one changed a little, or
    /// anything.
    fn origin() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(prop_oneof![
            Just(PUBLIC.to_owned()),
            Just("null".to_owned()),
            Just(PUBLIC.to_uppercase()),
            Just(format!("{PUBLIC}/")),
            Just(format!("{PUBLIC}:443")),
            Just(PUBLIC.replace("https", "http")),
            "[a-z0-9.-]{1,10}".prop_map(|s| format!("{PUBLIC}.{s}")),
            "[a-z0-9.-]{1,10}".prop_map(|s| format!("https://{s}.widgetd.example.com")),
            any::<String>(),
        ])
    }

    fn site() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(prop_oneof![
            Just("same-origin".to_owned()),
            Just("none".to_owned()),
            Just("same-site".to_owned()),
            Just("cross-site".to_owned()),
            Just("Same-Origin".to_owned()),
            any::<String>(),
        ])
    }

    proptest! {
        /// A change passes only from exactly the public origin (or the
        /// browser's own `null` with `Sec-Fetch-Site: same-origin`), and
        /// never with a cross-site fetch marker.
        #[test]
        fn only_the_public_origin_may_change_anything(site in site(), origin in origin()) {
            let (site, origin) = (site.as_deref(), origin.as_deref());
            let site_ok = site.is_none_or(|s| s == "same-origin" || s == "none");
            let origin_ok = origin.is_none_or(|o| o == PUBLIC || (o == "null" && site == Some("same-origin")));
            prop_assert_eq!(origin_verdict(PUBLIC, site, origin).is_ok(), site_ok && origin_ok);
        }
    }

    /// A refused Origin says where widgetd works, and never repeats the
    /// header it was sent.
    #[test]
    fn a_wrong_origin_is_told_the_public_one() {
        let err = origin_verdict(PUBLIC, None, Some("http://127.0.0.1:8080")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("open widgetd at https://widgetd.example.com"),
            "{text}"
        );
        assert!(!text.contains("127.0.0.1"), "{text}");
    }
}
