//! Asking widgets as the agent ([`ask`], and the id of what it created),
//! reading them back ([`widget`]), answering them as a signed-in person,
//! and the prompts their answers leave for the agent host.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use super::app::TestApp;
use super::login::Browser;

/// `POST /api/v1/sessions/{session}/widgets/{kind}` as `agent`: asks a
/// widget of `kind` (`env-vars`, `ask`, `ask-user`, `fields`, `approval`,
/// `clarification`) over REST; the caller inspects the response.
pub async fn ask(app: &TestApp, agent: &str, session: &str, kind: &str, body: &Value) -> Response {
    app.post_json(
        &format!("/api/v1/sessions/{session}/widgets/{kind}"),
        agent,
        body,
    )
    .await
}

/// The id of the widget a creation made: `201`, whatever its status (an
/// approval a standing rule decides at once is not pending).
pub async fn created_id(r: Response) -> String {
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["widget_id"].as_str().unwrap().to_owned()
}

/// The id of a widget just created and waiting: `201`, `status: pending`.
pub async fn created(r: Response) -> String {
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"], "pending", "{body}");
    body["widget_id"].as_str().unwrap().to_owned()
}

/// [`created`], and the body says nothing else: `201 {widget_id, status:
/// pending}`.
pub async fn created_alone(r: Response) -> String {
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"], "pending", "{body}");
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
    body["widget_id"].as_str().unwrap().to_owned()
}

/// `GET /api/v1/widgets/{id}` as `token` (asserting `200`).
pub async fn widget(app: &TestApp, token: &str, id: &str) -> Value {
    let r = app.get(&format!("/api/v1/widgets/{id}"), token).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// The `status` of [`widget`].
pub async fn widget_status(app: &TestApp, token: &str, id: &str) -> String {
    widget(app, token, id).await["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// An answer to widget `id` posted as JSON from `browser` (its form token
/// in `X-CSRF-Token`), as the page's script sends it.
pub async fn submit_json(app: &TestApp, browser: &Browser, id: &str, body: &Value) -> Response {
    app.post_json_as(browser, &format!("/widgets/{id}/submit"), body)
        .await
}

/// An answer to widget `id` posted as a form from `browser`, as a page
/// without JavaScript sends it.
pub async fn submit_form(
    app: &TestApp,
    browser: &Browser,
    id: &str,
    fields: &[(&str, &str)],
) -> Response {
    app.post_form(browser, &format!("/widgets/{id}/submit"), fields)
        .await
}

/// The one undelivered prompt of widget `id`, however many the session has.
pub async fn prompt_of(app: &TestApp, host: &str, session: &str, id: &str) -> String {
    let prompts = app.prompts(host, session, 0).await;
    let mine: Vec<&Value> = prompts.iter().filter(|p| p["widget_id"] == id).collect();
    assert_eq!(mine.len(), 1, "{prompts:?}");
    mine[0]["text"].as_str().unwrap().to_owned()
}

/// The undelivered prompt texts of `session`.
pub async fn prompt_texts(app: &TestApp, host: &str, session: &str) -> Vec<String> {
    app.prompts(host, session, 0)
        .await
        .iter()
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect()
}

impl TestApp {
    /// `POST /api/v1/sessions/{session}/widgets/env-vars` as the agent.
    pub async fn request_env_vars(&self, agent: &str, session: &str, body: &Value) -> Response {
        ask(self, agent, session, "env-vars", body).await
    }

    /// A widget request whose answer the caller inspects.
    pub async fn pending_widget_response(&self, agent: &str, session: &str) -> Response {
        self.request_env_vars(
            agent,
            session,
            &json!({ "names": ["ANY_KEY"], "reason": "to call the API" }),
        )
        .await
    }

    /// Creates a pending widget for `names`; returns its id.
    pub async fn pending_widget(&self, agent: &str, session: &str, names: &[&str]) -> String {
        let response = self
            .request_env_vars(
                agent,
                session,
                &json!({ "names": names, "reason": "to call the API" }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], "pending");
        body["widget_id"].as_str().unwrap().to_owned()
    }

    /// Undelivered prompts of a session, waiting up to `wait` seconds.
    pub async fn prompts(&self, host: &str, session: &str, wait: u64) -> Vec<Value> {
        let response = self
            .get(
                &format!("/api/v1/sessions/{session}/prompts?wait={wait}"),
                host,
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<Value>().await.unwrap()["prompts"]
            .as_array()
            .unwrap()
            .clone()
    }
}

/// Asks a widget of `kind` as `agent` ([`ask`]); the id of the widget made
/// ([`created_id`]: `201`, whatever its status).
pub async fn new_widget(
    app: &TestApp,
    agent: &str,
    session: &str,
    kind: &str,
    body: &Value,
) -> String {
    created_id(ask(app, agent, session, kind, body).await).await
}
