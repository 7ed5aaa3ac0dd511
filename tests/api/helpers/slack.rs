//! A loopback fake of Slack's Web API that records `chat.postMessage` and
//! `chat.update`, requests signed as Slack signs them (`v0`, HMAC-SHA256
//! over `v0:{timestamp}:{body}`), and linking a person's Slack account from
//! widgetd's settings.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use widgetd_domain::auth::Role;
use widgetd_notify::slack::verify::sign;

use super::app::{TestApp, spawn_app_with};
use super::login::Browser;

pub const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

pub const TEAM: &str = "T0WIDGETD";

/// One call the fake Slack got.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub auth: String,
    pub body: Value,
}

/// Slack's Web API on 127.0.0.1:0: answers `ok` with a channel and a fresh
/// `ts` to each post, `ok` to each update (or the error set with
/// [`FakeSlack::refuse_next`]), and keeps every call.
#[derive(Clone, Default)]
pub struct FakeSlack {
    calls: Arc<Mutex<Vec<Call>>>,
    refusals: Arc<Mutex<VecDeque<String>>>,
}

impl FakeSlack {
    pub async fn start() -> (FakeSlack, String) {
        let fake = FakeSlack::default();
        let state = fake.clone();
        let app = axum::Router::new().route(
            "/api/{method}",
            axum::routing::post(
                move |axum::extract::Path(method): axum::extract::Path<String>,
                      headers: HeaderMap,
                      body: String| {
                    let state = state.clone();
                    async move {
                        let auth = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        let body: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                        let refusal = state.refusals.lock().unwrap().pop_front();
                        let mut calls = state.calls.lock().unwrap();
                        let ts = format!("1700000000.{:06}", calls.len());
                        let answer = match refusal {
                            Some(error) => json!({ "ok": false, "error": error }),
                            None => json!({ "ok": true, "channel": format!("D{}", body["channel"].as_str().unwrap_or("X")), "ts": ts }),
                        };
                        calls.push(Call { method, auth, body });
                        axum::Json(answer)
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (fake, base)
    }

    /// The next call is answered `{"ok": false, "error": error}`.
    pub fn refuse_next(&self, error: &str) {
        self.refusals.lock().unwrap().push_back(error.to_owned());
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Waits (at most 30 s) for a call of `method` matching `what`.
    pub async fn wait_for(&self, method: &str, what: impl Fn(&Call) -> bool) -> Call {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(call) = self
                .calls()
                .into_iter()
                .find(|c| c.method == method && what(c))
            {
                return call;
            }
            assert!(
                Instant::now() < deadline,
                "no {method} call as expected within 30 s; got {:#?}",
                self.calls()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A daemon whose Slack is the fake, connected by an admin on the admin
/// page, with its Slack sender running.
pub async fn slack_app() -> (TestApp, FakeSlack) {
    let (fake, base) = FakeSlack::start().await;
    let app = spawn_app_with(|s| s.slack.api_base = base).await;
    tokio::spawn(widgetd_notify::slack::delivery::run(
        app.state.core.clone(),
        app.state.config.slack.clone(),
    ));
    app.user("root", Role::Admin).await;
    let admin = app.login("root").await;
    let r = app
        .post_form(
            &admin,
            "/admin/slack/connect",
            &[
                ("bot_token", "xoxb-test-bot-token"),
                ("signing_secret", SIGNING_SECRET),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let page = app.page(&admin, "/admin/slack").await;
    assert!(page.contains("id=\"slack-connected\""), "{page}");
    assert!(!page.contains("xoxb-test-bot-token") && !page.contains(SIGNING_SECRET));
    (app, fake)
}

pub fn now() -> i64 {
    widgetd_domain::clock::now_ms() / 1000
}

/// Posts `body` to `path` signed with `secret` at `timestamp`, as Slack does.
pub async fn signed(
    app: &TestApp,
    path: &str,
    body: String,
    secret: &str,
    timestamp: i64,
) -> Response {
    let ts = timestamp.to_string();
    app.client
        .post(format!("{}{path}", app.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", &ts)
        .header(
            "x-slack-signature",
            sign(secret.as_bytes(), &ts, body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap()
}

pub fn form(fields: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(fields).unwrap()
}

/// `/widgetd link CODE` from `slack_user`, signed.
pub async fn send_link(app: &TestApp, slack_user: &str, code: &str) -> Value {
    let text = format!("link {code}");
    let body = form(&[
        ("team_id", TEAM),
        ("user_id", slack_user),
        ("command", "/widgetd"),
        ("text", &text),
    ]);
    let r = signed(app, "/slack/commands", body, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// A code made on `browser`'s Slack settings page.
pub async fn link_code(app: &TestApp, browser: &Browser) -> String {
    let r = app.post_form(browser, "/settings/slack/code", &[]).await;
    assert_eq!(r.status(), StatusCode::OK);
    let page = r.text().await.unwrap();
    let code = page
        .split("/widgetd link ")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("no code on the page: {page}"));
    code.trim().to_owned()
}

/// Links the widgetd user `name` to `slack_user`, from widgetd's settings.
pub async fn link(app: &TestApp, name: &str, slack_user: &str) {
    let browser = app.login(name).await;
    let code = link_code(app, &browser).await;
    let answer = send_link(app, slack_user, &code).await;
    assert!(
        answer["text"].as_str().unwrap().starts_with("Linked"),
        "{answer}"
    );
    let page = app.page(&browser, "/settings/slack").await;
    assert!(page.contains(slack_user), "{page}");
}
