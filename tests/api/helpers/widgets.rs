//! Asking widgets as the agent ([`ask`], and the id of what it created),
//! reading them back ([`widget`]), answering them as a signed-in person,
//! and the prompts their answers leave for the agent host.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::app::{Scene, TestApp, assert_error};
use super::login::Browser;
use super::mcp::{McpClient, call, error_code};

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

/// Reads widget `busy` with `agent` back to back until aborted, as other
/// agents do under load: the daemon's epoch and stamp reads are then shared
/// and never more than a few milliseconds old.
pub fn keep_reading(app: &TestApp, agent: &str, busy: &str) -> JoinHandle<()> {
    let (client, url, agent) = (
        app.client.clone(),
        format!("{}/api/v1/widgets/{busy}", app.url),
        agent.to_owned(),
    );
    tokio::spawn(async move {
        loop {
            let r = client.get(&url).bearer_auth(&agent).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::OK);
        }
    })
}

/// Answers the `n`th widget, `id`, asking for `name`, through `browser`'s
/// form on `app`: submits the even ones, dismisses the odd ones. Returns
/// what was done and the status the widget must now show.
pub async fn answer_in_turn(
    app: &TestApp,
    browser: &Browser,
    id: &str,
    name: &str,
    n: usize,
) -> (&'static str, &'static str) {
    let field = format!("value.{name}");
    let (path, fields, expected) = if n.is_multiple_of(2) {
        (
            "submit",
            vec![(field.as_str(), "v"), ("scope", "session")],
            "submitted",
        )
    } else {
        ("dismiss", vec![], "dismissed")
    };
    let r = app
        .post_form(browser, &format!("/widgets/{id}/{path}"), &fields)
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path} of {id}");
    (path, expected)
}

/// That a refused answer changed nothing: still pending, no prompt, no
/// `widget.submit` audit row.
pub async fn unchanged(app: &TestApp, scene: &Scene, id: &str) {
    assert_eq!(widget(app, &scene.agent, id).await["status"], "pending");
    assert!(app.prompts(&scene.host, &scene.session, 0).await.is_empty());
    let sql = format!(
        "SELECT count(*) FROM audit_log WHERE widget_id = '{id}' AND action = 'widget.submit'"
    );
    assert_eq!(app.count(&sql).await, 0);
}

/// That `body` is refused with `code` over REST (`422`, its body without
/// `hidden`) and over MCP alike, creating nothing; returns the REST message.
pub async fn refused_on_both(
    app: &TestApp,
    (scene, client): (&Scene, &McpClient),
    body: &Value,
    code: &str,
    hidden: Option<&str>,
) -> String {
    let r = ask(app, &scene.agent, &scene.session, "clarification", body).await;
    let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, hidden).await;
    assert_eq!(
        error_code(&call(client, "request_clarification", body.clone()).await),
        code
    );
    message
}

/// That a `body` of the wrong shape is `400 invalid_body` over REST, its
/// message ending with the path `at` (and its body without `hidden`), and
/// `invalid_body` over MCP.
pub async fn malformed_on_both(
    app: &TestApp,
    (scene, client): (&Scene, &McpClient),
    body: &Value,
    at: &str,
    hidden: Option<&str>,
) {
    let r = ask(app, &scene.agent, &scene.session, "clarification", body).await;
    let message = assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", hidden).await;
    assert!(message.ends_with(at), "{message}");
    assert_eq!(
        error_code(&call(client, "request_clarification", body.clone()).await),
        "invalid_body"
    );
}

pub async fn dismissed(app: &TestApp, browser: &Browser, id: &str) {
    let r = app
        .post_form(
            browser,
            &format!("/widgets/{id}/dismiss"),
            &[("note", "later")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{id} is dismissed");
}

pub async fn last_prompt(app: &TestApp, host: &str, session: &str) -> String {
    let prompts = app.prompts(host, session, 0).await;
    prompts.last().expect("a prompt is queued")["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The `<section>` of widget `id` in a transcript page.
pub fn card<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!(r#"id="w-{id}""#))
        .unwrap_or_else(|| panic!("no card for {id} in {page}"));
    let end = page[start..].find("</section>").unwrap() + start;
    &page[start..end]
}
