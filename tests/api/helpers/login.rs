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

impl TestApp {
    /// Logs `name` in with the test password.
    pub async fn login(&self, name: &str) -> Browser {
        self.login_with(name, PASSWORD, None)
            .await
            .expect("login succeeds")
    }

    /// Posts the login form (optionally with an existing cookie).
    pub async fn login_with(
        &self,
        name: &str,
        password: &str,
        cookie: Option<&str>,
    ) -> Option<Browser> {
        let mut request = self
            .client
            .post(format!("{}/login", self.url))
            .form(&[("username", name), ("password", password)]);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        if response.status() != StatusCode::SEE_OTHER {
            return None;
        }
        let cookie = session_cookie(&response).expect("login sets the session cookie");
        let me: Value = self
            .client
            .get(format!("{}/api/v1/me", self.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Some(Browser {
            cookie,
            csrf: me["csrf_token"].as_str().unwrap().to_owned(),
        })
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
    let r = client
        .post(format!("{url}/login"))
        .form(&[("username", user), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{user} logs in");
    let cookie = session_cookie(&r).unwrap();
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
