//! `/settings/password`: people change their own password.

use askama::Template;
use askama_web::WebTemplate;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::SecretString;
use serde::Deserialize;
use tower_sessions::Session;

use super::pages::{PageError, read_form, to_login};
use super::{CurrentUser, check_csrf};
use crate::error::WebError;
use crate::state::AppState;
use widgetd_domain::Error;
use widgetd_domain::audit::{self, Actor, ClientAddr, Entry};
use widgetd_domain::auth::{self, passwords};

type PageResult = Result<Response, PageError>;

#[derive(Template, WebTemplate)]
#[template(path = "settings_password.html")]
struct PasswordPage {
    user: String,
    csrf: String,
    is_admin: bool,
    error: Option<(String, String)>,
}

fn page(user: &CurrentUser, error: Option<&Error>) -> Response {
    let error = error.map(|e| {
        let (_, body) = crate::error::body_of(e);
        let text = |k: &str| body["error"][k].as_str().unwrap_or_default().to_owned();
        (text("code"), text("message"))
    });
    let status = error.as_ref().map_or(axum::http::StatusCode::OK, |_| {
        axum::http::StatusCode::UNPROCESSABLE_ENTITY
    });
    let page = PasswordPage {
        user: user.name.clone(),
        csrf: user.csrf.clone(),
        is_admin: user.role == auth::Role::Admin,
        error,
    };
    (status, page).into_response()
}

/// `GET /settings/password`.
pub async fn view_settings_password_get(user: Option<CurrentUser>) -> Response {
    match user {
        Some(user) => page(&user, None),
        None => to_login("/settings/password"),
    }
}

#[derive(Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    csrf_token: Option<String>,
    current_password: SecretString,
    new_password: SecretString,
    repeat_password: SecretString,
}

/// `POST /settings/password`: checks the current password, sets the new
/// one, ends every browser session of the person (this one too) and sends
/// them to log in again.
pub async fn change_password_form(
    State(state): State<AppState>,
    session: Session,
    user: CurrentUser,
    client: ClientAddr,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form: PasswordForm = read_form(&body)?;
    check_csrf(&state, &headers, &user, form.csrf_token.as_deref())?;
    if let Err(err) = change(&state, &user, &client, form).await {
        return match err {
            WebError::Domain(err @ Error::Invalid { .. }) => Ok(page(&user, Some(&err))),
            err => Err(err.into()),
        };
    }
    // The row is gone already; forgetting it here clears the cookie too.
    let _ = session.flush().await;
    Ok(Redirect::to("/login").into_response())
}

async fn change(
    state: &AppState,
    user: &CurrentUser,
    client: &ClientAddr,
    form: PasswordForm,
) -> Result<(), WebError> {
    use secrecy::ExposeSecret;
    if form.new_password.expose_secret() != form.repeat_password.expose_secret() {
        return Err(WebError::invalid(
            "passwords_differ",
            "the new password and its repetition differ; type them again",
        ));
    }
    let (_, hash) = auth::find_user_with_hash(&mut *state.db.read.acquire().await?, &user.name)
        .await?
        .ok_or(Error::NotFound("user"))?;
    let current = form.current_password;
    let ok = passwords::verify_async(current, hash).await?;
    if !ok {
        return Err(WebError::invalid(
            "wrong_password",
            "the current password is not right; nothing was changed",
        ));
    }
    let mut tx = state.db.begin_write().await?;
    auth::set_password(&mut tx, &user.name, form.new_password).await?;
    let entry = Entry {
        action: "user.passwd",
        detail: Some(format!("user={}; by the user", user.name)),
        ..Default::default()
    };
    audit::append(&mut tx, &Actor::User(user.id.clone()), client, entry).await?;
    tx.commit().await?;
    Ok(())
}
