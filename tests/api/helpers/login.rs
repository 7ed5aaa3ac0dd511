//! Logging in as a browser does, over plain HTTP: the session cookie and
//! the form token ([`Browser`]), and the requests a signed-in page sends.

use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

use super::app::TestApp;

/// The password `TestApp::user` gives everyone.
pub const PASSWORD: &str = "a long test password";

/// A signed-in browser: its session cookie and form token.
pub struct Browser {
    pub cookie: String,
    pub csrf: String,
}

/// The `name=value` part of the session cookie in a response, if any.
pub fn session_cookie(response: &Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("widgetd="))
        .map(|v| v.split(';').next().unwrap().to_owned())
}

/// Posts the login form with `name` and `password` to the daemon at `url`,
/// with `headers` besides (a cookie, `Origin`, `X-Forwarded-For`…).
pub async fn post_login(
    client: &Client,
    url: &str,
    name: &str,
    password: &str,
    headers: &[(&str, &str)],
) -> Response {
    let mut request = client
        .post(format!("{url}/login"))
        .form(&[("username", name), ("password", password)]);
    for (header, value) in headers {
        request = request.header(*header, *value);
    }
    request.send().await.unwrap()
}

/// The [`Browser`] a successful login `response` (`303`) signed in: its
/// session cookie, and the form token `/api/v1/me` gives that cookie.
async fn signed_in(client: &Client, url: &str, response: &Response) -> Browser {
    let cookie = session_cookie(response).expect("login sets the session cookie");
    let me: Value = client
        .get(format!("{url}/api/v1/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    Browser {
        cookie,
        csrf: me["csrf_token"].as_str().unwrap().to_owned(),
    }
}

impl TestApp {
    /// Logs `name` in with the test password.
    pub async fn login(&self, name: &str) -> Browser {
        self.login_with(name, PASSWORD, None)
            .await
            .expect("login succeeds")
    }

    /// Posts the login form (optionally with an existing cookie); the
    /// signed-in browser if it was accepted (`303`).
    pub async fn login_with(
        &self,
        name: &str,
        password: &str,
        cookie: Option<&str>,
    ) -> Option<Browser> {
        let headers: Vec<(&str, &str)> = cookie.map(|c| ("cookie", c)).into_iter().collect();
        let response = self.post_login(name, password, &headers).await;
        if response.status() != StatusCode::SEE_OTHER {
            return None;
        }
        Some(signed_in(&self.client, &self.url, &response).await)
    }

    /// The client address of every failed login in the audit log, oldest
    /// first: the address the login limits counted it under.
    pub async fn failed_login_addresses(&self) -> Vec<Option<String>> {
        let mut conn = self.state.db.read.acquire().await.unwrap();
        sqlx::query_scalar(
            "SELECT client_addr FROM audit_log WHERE action = 'login.failure' ORDER BY id",
        )
        .fetch_all(&mut *conn)
        .await
        .unwrap()
    }

    /// [`post_login`] to this daemon; the caller inspects the response.
    pub async fn post_login(
        &self,
        name: &str,
        password: &str,
        headers: &[(&str, &str)],
    ) -> Response {
        post_login(&self.client, &self.url, name, password, headers).await
    }

    /// A same-origin form post from `browser`, as a browser sends it.
    pub async fn post_form(
        &self,
        browser: &Browser,
        path: &str,
        fields: &[(&str, &str)],
    ) -> Response {
        let mut all: Vec<(&str, &str)> = vec![("csrf_token", &browser.csrf)];
        all.extend_from_slice(fields);
        self.client
            .post(format!("{}{path}", self.url))
            .header("cookie", &browser.cookie)
            .header("origin", &self.url)
            .header("sec-fetch-site", "same-origin")
            .form(&all)
            .send()
            .await
            .unwrap()
    }

    /// A JSON post from `browser`, its form token in `X-CSRF-Token`, as the
    /// page's script sends it.
    pub async fn post_json_as(&self, browser: &Browser, path: &str, body: &Value) -> Response {
        self.client
            .post(format!("{}{path}", self.url))
            .header("cookie", &browser.cookie)
            .header("x-csrf-token", &browser.csrf)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// The HTML of page `path` as `browser` sees it (asserting `200`).
    pub async fn page(&self, browser: &Browser, path: &str) -> String {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        r.text().await.unwrap()
    }
}

/// Logs `user` (password [`PASSWORD`]) in to the daemon at `url` through
/// the form, as a browser does; for daemons that are not a [`TestApp`].
pub async fn login_at(client: &Client, url: &str, user: &str) -> Browser {
    let r = post_login(client, url, user, PASSWORD, &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{user} logs in");
    signed_in(client, url, &r).await
}

pub async fn reply(
    app: &TestApp,
    browser: &Browser,
    session: &str,
    text: &str,
) -> reqwest::Response {
    app.post_form(
        browser,
        &format!("/sessions/{session}/reply"),
        &[("text", text)],
    )
    .await
}
