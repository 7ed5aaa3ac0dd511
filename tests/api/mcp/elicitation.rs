//! MCP elicitation: a widget's own page (`GET /widgets/{id}`), where a
//! client's URL-mode elicitation sends the person, and the elicitation
//! modes an agent's client is offered.
//!
//! The tests that drive Chromium are in `tests/slow/mcp/elicitation.rs`.

use std::sync::Arc;

use reqwest::StatusCode;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
    ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};

use crate::helpers::chrome::wait_for;
use crate::helpers::mcp::{actors, form_app, opted_in, opted_in_as};
use crate::helpers::{TestApp, canary, scene, spawn_app, spawn_app_with, widget_status};

#[tokio::test]
async fn a_widget_page_refused_answer_stays_on_the_page_and_login_goes_nowhere_else() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    let id = app
        .pending_widget(&alice.agent, &alice.session, &["PAGE_KEY"])
        .await;
    let browser = app.login("alice").await;

    // An empty value is refused: the widget's page again, with the reason.
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[
                ("value.PAGE_KEY", ""),
                ("scope", "session"),
                ("return_to", "page"),
            ],
        )
        .await;
    assert!(r.status().is_client_error(), "{}", r.status());
    let body = r.text().await.unwrap();
    assert!(body.contains(&format!("id=\"w-{id}\"")), "{body}");
    assert!(!body.contains("id=\"transcript\""), "{body}");
    assert!(body.contains("role=\"alert\""), "{body}");

    // Dismissed from the page: back to the page, which says it is over.
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/dismiss"),
            &[("return_to", "page")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"].to_str().unwrap(),
        format!("/widgets/{id}")
    );
    let page = app.page(&browser, &format!("/widgets/{id}")).await;
    assert!(page.contains("You can return to your agent"), "{page}");

    // Login never sends anyone off this daemon, whatever `next` says.
    for next in [
        "https://evil.example/",
        "//evil.example/widgets/x",
        "/\\evil.example",
        "widgets/x",
    ] {
        let r = app
            .client
            .post(format!("{}/login", app.url))
            .form(&[
                ("username", "alice"),
                ("password", crate::helpers::PASSWORD),
                ("next", next),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(r.headers()["location"].to_str().unwrap(), "/", "{next}");
    }
}

/// A person at an MCP client: declares `modes`, tells the test what it was
/// asked, and answers what the test hands it.
#[derive(Clone)]
struct Person {
    capabilities: ClientCapabilities,
    asked: mpsc::UnboundedSender<ElicitRequestParams>,
    answers: Arc<Mutex<mpsc::UnboundedReceiver<ElicitResult>>>,
    /// The reasons of the requests the server withdrew.
    withdrawn: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(self.capabilities.clone(), Implementation::default())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.send(request).unwrap();
        let answer = self.answers.lock().await.recv().await;
        Ok(answer.unwrap_or_else(|| ElicitResult::new(ElicitationAction::Cancel)))
    }

    async fn on_cancelled(
        &self,
        params: rmcp::model::CancelledNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) {
        let reason = params.reason.unwrap_or_default();
        self.withdrawn.lock().await.push(reason);
    }
}

/// The client side of a test: what was asked, and where answers go.
pub(crate) struct Desk {
    client: RunningService<RoleClient, Person>,
    pub(crate) asked: mpsc::UnboundedReceiver<ElicitRequestParams>,
    pub(crate) answers: mpsc::UnboundedSender<ElicitResult>,
    withdrawn: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Declares {
    Nothing,
    Form,
    Url,
    Both,
}

/// Connects an MCP client declaring `declares`, speaking 2026-07-28
/// (`modern`) or 2025-11-25 (`initialize`).
pub(crate) async fn desk(app: &TestApp, agent: &str, declares: Declares, modern: bool) -> Desk {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = match declares {
        Declares::Nothing => None,
        Declares::Form => {
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()))
        }
        Declares::Url => {
            Some(ElicitationCapability::new().with_url(UrlElicitationCapability::new()))
        }
        Declares::Both => Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        ),
    };
    let (asked_tx, asked) = mpsc::unbounded_channel();
    let (answers, answers_rx) = mpsc::unbounded_channel();
    let withdrawn = Arc::default();
    let person = Person {
        capabilities,
        asked: asked_tx,
        answers: Arc::new(Mutex::new(answers_rx)),
        withdrawn: Arc::clone(&withdrawn),
    };
    let config = StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", app.url))
        .auth_header(agent);
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = if modern {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        person
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .unwrap()
    } else {
        person.serve(transport).await.unwrap()
    };
    Desk {
        client,
        asked,
        answers,
        withdrawn,
    }
}

pub(crate) async fn call(desk: &Desk, tool: &'static str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("tool arguments are a JSON object");
    };
    let result = desk
        .client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.expect("structured content")
}

pub(crate) fn accept(content: Value) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

/// The actors of the audit rows of `action` for `widget`, as user names.
pub(crate) async fn audited(app: &TestApp, action: &str, widget: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT u.name FROM audit_log a JOIN users u ON a.actor = 'user:' || u.id
         WHERE a.action = $1 AND a.widget_id = $2 ORDER BY a.id",
    )
    .bind(action)
    .bind(widget)
    .fetch_all(&app.state.db.read)
    .await
    .unwrap()
}

const CONFIRM: fn() -> Value = || json!({ "question": "Deploy now?" });

#[tokio::test]
async fn each_capability_and_version_gets_its_elicitation() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    for modern in [false, true] {
        for declares in [
            Declares::Nothing,
            Declares::Form,
            Declares::Url,
            Declares::Both,
        ] {
            let what = format!("{declares:?}, 2026-07-28: {modern}");
            let mut desk = desk(&app, &alice.agent, declares, modern).await;
            // 2025-11-25 over an MCP session, 2026-07-28 by retries: the
            // same elicitations either way.
            let form = matches!(declares, Declares::Form | Declares::Both);
            let url = matches!(declares, Declares::Url | Declares::Both);

            // A secret: URL mode (never a form), the widget's own page.
            desk.answers
                .send(ElicitResult::new(ElicitationAction::Accept))
                .unwrap();
            let body = call(
                &desk,
                "request_env_vars",
                json!({ "names": ["K"], "reason": "to test" }),
            )
            .await;
            let id = body["widget_id"].as_str().unwrap().to_owned();
            assert_eq!(body["status"], "pending", "{what}: {body}");
            match desk.asked.try_recv() {
                Ok(ElicitRequestParams::UrlElicitationParams {
                    url: page, message, ..
                }) => {
                    assert!(url, "{what}: URL mode without the capability");
                    assert_eq!(page, format!("{}/widgets/{id}", app.url), "{what}");
                    assert!(
                        !page.contains(&alice.agent) && !page.contains('?'),
                        "{what}"
                    );
                    assert!(message.contains('K'), "{what}: {message}");
                }
                Ok(other) => panic!("{what}: env vars asked as {other:?}"),
                Err(_) => {
                    assert!(!url, "{what}: no URL elicitation");
                    // Nothing was asked: the answer handed over is not used.
                    let _ = desk
                        .answers
                        .send(ElicitResult::new(ElicitationAction::Cancel));
                }
            }
            assert_eq!(
                widget_status(&app, &alice.agent, &id).await,
                "pending",
                "{what}"
            );

            // A question: form mode, answered in the client.
            let mut desk = self::desk(&app, &alice.agent, declares, modern).await;
            desk.answers
                .send(accept(json!({ "answer.0": "Yes" })))
                .unwrap();
            let body = call(&desk, "ask", CONFIRM()).await;
            let id = body["widget_id"].as_str().unwrap().to_owned();
            match desk.asked.try_recv() {
                Ok(ElicitRequestParams::FormElicitationParams {
                    message,
                    requested_schema,
                    ..
                }) => {
                    assert!(form, "{what}: form mode without the capability");
                    assert_eq!(message, "Deploy now?");
                    let schema = serde_json::to_value(&requested_schema).unwrap();
                    assert_eq!(
                        schema["properties"]["answer.0"]["enum"],
                        json!(["Yes", "No"]),
                        "{what}: {schema}"
                    );
                    assert_eq!(body["status"], "submitted", "{what}: {body}");
                    assert_eq!(body["answers"], json!({ "Deploy now?": "Yes" }), "{what}");
                    assert_eq!(
                        body["result"]["answered_by"], "mcp-client",
                        "{what}: the agent's MCP client, never the person"
                    );
                    assert!(audited(&app, "widget.submit", &id).await.is_empty());
                    assert_eq!(
                        actors(&app, "widget.submit", &id).await,
                        vec![format!("mcp-client:{}", alice.session)],
                        "{what}: one audit row, by the agent's MCP client"
                    );
                    let prompt: String =
                        sqlx::query_scalar("SELECT text FROM prompts WHERE widget_id = $1")
                            .bind(&id)
                            .fetch_one(&app.state.db.read)
                            .await
                            .unwrap();
                    assert_eq!(
                        prompt,
                        r#"[Agor] Answered in your MCP client's form (not by the user in widgetd): {"Deploy now?":"Yes"}"#,
                        "{what}: never worded as the user's"
                    );
                }
                Ok(other) => panic!("{what}: a question asked as {other:?}"),
                Err(_) => {
                    assert!(!form, "{what}: no form elicitation");
                    assert_eq!(body["status"], "pending", "{what}: {body}");
                    assert_eq!(widget_status(&app, &alice.agent, &id).await, "pending");
                }
            }
        }
    }
}

/// Calls `tool` with a form-declaring client (2026-07-28 if `modern`,
/// else 2025-11-25) that answers with `answer`; returns the form's schema
/// and the tool's result.
async fn answered_in_the_client(
    app: &TestApp,
    (agent, modern): (&str, bool),
    tool: &'static str,
    args: Value,
    answer: ElicitResult,
) -> (Value, Value) {
    let mut desk = desk(app, agent, Declares::Form, modern).await;
    desk.answers.send(answer).unwrap();
    let body = call(&desk, tool, args).await;
    let Ok(ElicitRequestParams::FormElicitationParams {
        requested_schema, ..
    }) = desk.asked.try_recv()
    else {
        panic!("{tool}: no form elicitation");
    };
    (serde_json::to_value(&requested_schema).unwrap(), body)
}

#[tokio::test]
async fn every_question_kind_maps_to_a_form_and_its_answer_is_checked_as_in_the_transcript() {
    for modern in [false, true] {
        every_question_kind_in(modern).await;
    }
}

async fn every_question_kind_in(modern: bool) {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let agent = (alice.agent.as_str(), modern);

    let ask_user = json!({ "questions": [
        { "question": "Which database?", "header": "DB",
          "options": [{ "label": "SQLite" }, { "label": "Postgres", "value": "pg" }] },
        { "question": "Regions?", "header": "Regions", "multi_select": true,
          "options": [{ "label": "EU" }, { "label": "US" }, { "label": "APAC" }] },
    ] });
    let (schema, body) = answered_in_the_client(
        &app,
        agent,
        "ask_user",
        ask_user.clone(),
        accept(json!({ "answer.0": "Postgres", "answer.1": ["EU", "APAC"], "other.1": "", "extra": "x" })),
    )
    .await;
    assert_eq!(
        schema["properties"]["answer.1"]["type"], "array",
        "{schema}"
    );
    assert_eq!(
        schema["properties"]["other.0"]["type"], "string",
        "{schema}"
    );
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(
        body["answers"],
        json!({ "Which database?": "pg", "Regions?": ["EU", "APAC"] })
    );

    // A label that is not an option is refused as in the transcript: the
    // question stays open there, and the call says so without the label.
    let (_, body) = answered_in_the_client(
        &app,
        agent,
        "ask_user",
        ask_user,
        accept(json!({ "answer.0": "Oracle-canary", "answer.1": ["EU"] })),
    )
    .await;
    assert_eq!(body["status"], "pending", "{body}");
    assert_eq!(body["elicitation"]["refused"], "unknown_option", "{body}");
    assert!(!body.to_string().contains("Oracle-canary"), "{body}");

    // An approval is never a form, whatever the client and the session
    // allow: nothing on the agent's side decides what the agent may run.
    for decision in ["deny", "once", "always"] {
        let approval = json!({ "tool": "Bash", "input": { "command": "make deploy" } });
        let mut desk = desk(&app, agent.0, Declares::Form, modern).await;
        desk.answers
            .send(accept(json!({ "decision": decision })))
            .unwrap();
        let body = call(&desk, "request_approval", approval).await;
        assert_eq!(body["status"], "pending", "{decision}: {body}");
        assert!(desk.asked.try_recv().is_err(), "{decision}: no form");
    }
    let rules: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM approval_rules")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap();
    assert_eq!(rules, 0);

    let choice = json!({ "question": "Which regions?", "widget": {
        "type": "choice", "multi_select": true,
        "options": [{ "label": "EU" }, { "label": "US" }] } });
    let (schema, body) = answered_in_the_client(
        &app,
        agent,
        "request_clarification",
        choice,
        accept(json!({ "selected": ["US"], "freeform": "US only, for now" })),
    )
    .await;
    assert_eq!(
        schema["properties"]["selected"]["items"]["enum"],
        json!(["EU", "US"])
    );
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(
        body["result"]["structured"],
        json!({ "selected": ["US"] }),
        "{body}"
    );
    assert_eq!(body["result"]["freeform"], "US only, for now", "{body}");

    // A curation: the items to keep, as titled options (ids, labels shown).
    let curation = json!({ "question": "Which files go?", "widget": {
        "type": "curation",
        "items": [{ "id": "a", "label": "a.rs" }, { "id": "b", "label": "b.rs" },
                  { "id": "c", "label": "c.rs" }] } });
    let (schema, body) = answered_in_the_client(
        &app,
        agent,
        "request_clarification",
        curation.clone(),
        accept(json!({ "keep": ["c", "a"] })),
    )
    .await;
    let keep = &schema["properties"]["keep"];
    assert_eq!(
        keep["items"]["anyOf"][1],
        json!({ "const": "b", "title": "b.rs" }),
        "{schema}"
    );
    assert_eq!(keep["default"], json!(["a", "b", "c"]), "all kept to start");
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(
        body["result"]["structured"],
        json!({ "kept": ["a", "c"], "removed": ["b"] }),
        "{body}"
    );
    // An id that is not an item is refused as in the transcript.
    let (_, body) = answered_in_the_client(
        &app,
        agent,
        "request_clarification",
        curation,
        accept(json!({ "keep": ["a", "zz-canary"] })),
    )
    .await;
    assert_eq!(body["status"], "pending", "{body}");
    assert_eq!(body["elicitation"]["refused"], "unknown_item", "{body}");
    assert!(!body.to_string().contains("zz-canary"), "{body}");

    // A mapping: one titled select of the right items per left item.
    let mapping = json!({ "question": "Which column is which?", "widget": {
        "type": "mapping",
        "left": [{ "id": "fn", "label": "First name" }, { "id": "ln", "label": "Last name" }],
        "right": [{ "id": "given", "label": "given_name" }, { "id": "family", "label": "family_name" }] } });
    let (schema, body) = answered_in_the_client(
        &app,
        agent,
        "request_clarification",
        mapping.clone(),
        accept(json!({ "map.0": "given", "map.1": "family", "freeform": "as usual" })),
    )
    .await;
    assert_eq!(
        schema["properties"]["map.1"]["title"], "Last name",
        "{schema}"
    );
    assert_eq!(
        schema["properties"]["map.0"]["oneOf"][1],
        json!({ "const": "family", "title": "family_name" }),
        "{schema}"
    );
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(
        body["result"]["structured"],
        json!({ "mappings": [{ "left": "fn", "right": "given" }, { "left": "ln", "right": "family" }] }),
        "{body}"
    );
    // Both to one right item, which this mapping does not allow: refused.
    let (_, body) = answered_in_the_client(
        &app,
        agent,
        "request_clarification",
        mapping,
        accept(json!({ "map.0": "given", "map.1": "given" })),
    )
    .await;
    assert_eq!(body["status"], "pending", "{body}");
    assert_eq!(body["elicitation"]["refused"], "many_to_one", "{body}");

    // Types with no shape in the restricted schema, and curations too long
    // for a form, stay in the transcript.
    let items: Vec<Value> = (0..51)
        .map(|i| json!({ "id": format!("i{i}"), "label": format!("item {i}") }))
        .collect();
    for widget in [
        json!({ "type": "curation", "items": items }),
        json!({ "type": "ranking", "items": [{ "id": "a", "label": "A" }, { "id": "b", "label": "B" }] }),
    ] {
        let mut desk = desk(&app, agent.0, Declares::Form, modern).await;
        let body = call(
            &desk,
            "request_clarification",
            json!({ "question": "Which?", "widget": widget }),
        )
        .await;
        assert_eq!(body["status"], "pending", "{body}");
        assert!(desk.asked.try_recv().is_err(), "{widget}: no form");
    }
}

#[tokio::test]
async fn a_declined_or_cancelled_form_leaves_the_question_to_the_transcript() {
    for modern in [false, true] {
        declined_or_cancelled_in(modern).await;
    }
}

async fn declined_or_cancelled_in(modern: bool) {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let browser = app.login("alice").await;
    for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
        let (_, body) = answered_in_the_client(
            &app,
            (&alice.agent, modern),
            "ask",
            CONFIRM(),
            ElicitResult::new(action.clone()),
        )
        .await;
        assert_eq!(body["status"], "pending", "{action:?}: {body}");
        let id = body["widget_id"].as_str().unwrap();
        assert!(audited(&app, "widget.submit", id).await.is_empty());
        let r = app
            .post_form(
                &browser,
                &format!("/widgets/{id}/submit"),
                &[("answer.0", "No")],
            )
            .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{action:?}");
        assert_eq!(widget_status(&app, &alice.agent, id).await, "submitted");
    }
    // With `wait_seconds`, a declined form waits for the transcript's answer.
    let mut desk = desk(&app, &alice.agent, Declares::Form, modern).await;
    desk.answers
        .send(ElicitResult::new(ElicitationAction::Decline))
        .unwrap();
    let waiting = tokio::spawn(async move {
        let body = call(
            &desk,
            "ask",
            json!({ "question": "Ship?", "wait_seconds": 30 }),
        )
        .await;
        (body, desk.asked.try_recv().is_ok())
    });
    let id = loop {
        let pending: Option<String> = sqlx::query_scalar(
            "SELECT id FROM widgets WHERE status = 'pending' ORDER BY created_at DESC LIMIT 1",
        )
        .fetch_optional(&app.state.db.read)
        .await
        .unwrap();
        if let Some(id) = pending {
            break id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // The call is still waiting after the decline: answer in the transcript.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("answer.0", "Yes")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (body, asked) = waiting.await.unwrap();
    assert!(asked);
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(body["answers"], json!({ "Ship?": "Yes" }));
}

/// The id of the newest widget of the app.
async fn newest_widget(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT id FROM widgets ORDER BY created_at DESC, id DESC LIMIT 1")
        .fetch_one(&app.state.db.read)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_transcript_answer_and_a_client_answer_race_and_one_wins() {
    for modern in [false, true] {
        race_in(modern).await;
    }
}

async fn race_in(modern: bool) {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let browser = app.login("alice").await;

    // The transcript first: the client's answer arrives too late (2025-11-25:
    // the form is withdrawn), and its call gets the transcript's answer.
    let mut desk = desk(&app, &alice.agent, Declares::Form, modern).await;
    let answers = desk.answers.clone();
    let withdrawn = Arc::clone(&desk.withdrawn);
    let mut asked = std::mem::replace(&mut desk.asked, mpsc::unbounded_channel().1);
    let call_task = tokio::spawn(async move { call(&desk, "ask", CONFIRM()).await });
    asked.recv().await.expect("the form was shown");
    let id = newest_widget(&app).await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("answer.0", "No")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let late = accept(json!({ "answer.0": "Yes" }));
    let body = if modern {
        // The client retries only once the person answered it.
        answers.send(late).unwrap();
        call_task.await.unwrap()
    } else {
        // The call ends at once, and the form still shown is withdrawn.
        let body = call_task.await.unwrap();
        assert_eq!(*withdrawn.lock().await, ["answered in widgetd"]);
        answers.send(late).unwrap();
        body
    };
    assert_eq!(body["status"], "submitted", "{body}");
    assert_eq!(
        body["answers"],
        json!({ "Deploy now?": "No" }),
        "the first answer"
    );
    assert_eq!(
        audited(&app, "widget.submit", &id).await,
        vec!["alice".to_owned()]
    );

    // The client first: the transcript's answer is refused.
    let (_, body) = answered_in_the_client(
        &app,
        (&alice.agent, modern),
        "ask",
        CONFIRM(),
        accept(json!({ "answer.0": "Yes" })),
    )
    .await;
    let id = body["widget_id"].as_str().unwrap().to_owned();
    assert_eq!(body["answers"], json!({ "Deploy now?": "Yes" }));
    let r = app
        .post_json_as(
            &browser,
            &format!("/widgets/{id}/submit"),
            &json!({ "answer.0": "No" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(
        actors(&app, "widget.submit", &id).await,
        vec![format!("mcp-client:{}", alice.session)]
    );

    // Both at once, many times: exactly one answer each time.
    for round in 0..8 {
        let mut desk = self::desk(&app, &alice.agent, Declares::Form, modern).await;
        let answers = desk.answers.clone();
        let mut asked = std::mem::replace(&mut desk.asked, mpsc::unbounded_channel().1);
        let call_task = tokio::spawn(async move { call(&desk, "ask", CONFIRM()).await });
        asked.recv().await.expect("the form was shown");
        let id = newest_widget(&app).await;
        answers.send(accept(json!({ "answer.0": "Yes" }))).unwrap();
        let r = app
            .post_json_as(
                &browser,
                &format!("/widgets/{id}/submit"),
                &json!({ "answer.0": "No" }),
            )
            .await;
        let body = call_task.await.unwrap();
        assert_eq!(body["status"], "submitted", "round {round}: {body}");
        let winner = match r.status() {
            StatusCode::OK => "No",
            StatusCode::CONFLICT => "Yes",
            other => panic!("round {round}: {other}"),
        };
        assert_eq!(
            body["answers"],
            json!({ "Deploy now?": winner }),
            "round {round}"
        );
        assert_eq!(
            actors(&app, "widget.submit", &id).await.len(),
            1,
            "round {round}"
        );
        let prompts: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM prompts WHERE widget_id = $1")
            .bind(&id)
            .fetch_one(&app.state.db.read)
            .await
            .unwrap();
        assert_eq!(prompts, 1, "round {round}: one prompt");
    }
}

/// A key typed in the page while the URL elicitation is still open: the
/// call learns it was submitted and is told to end its turn, and the
/// prompt that starts the next turn (the first whose environment holds
/// the key) stays queued for the host.
#[tokio::test]
async fn a_key_given_while_its_call_is_open_still_starts_the_next_turn() {
    for modern in [false, true] {
        let app = spawn_app().await;
        let alice = scene(&app, "alice").await;
        let browser = app.login("alice").await;
        let mut desk = desk(&app, &alice.agent, Declares::Url, modern).await;
        let answers = desk.answers.clone();
        let mut asked = std::mem::replace(&mut desk.asked, mpsc::unbounded_channel().1);
        let call_task = tokio::spawn(async move {
            call(
                &desk,
                "request_env_vars",
                json!({ "names": ["K"], "reason": "to test" }),
            )
            .await
        });
        let Some(ElicitRequestParams::UrlElicitationParams { url, .. }) = asked.recv().await else {
            panic!("modern: {modern}: no URL elicitation");
        };
        let id = url.rsplit('/').next().unwrap().to_owned();
        let r = app
            .post_form(
                &browser,
                &format!("/widgets/{id}/submit"),
                &[("value.K", &canary("next-turn")), ("scope", "session")],
            )
            .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        answers
            .send(ElicitResult::new(ElicitationAction::Accept))
            .unwrap();
        let body = call_task.await.unwrap();
        assert_eq!(body["status"], "submitted", "modern: {modern}: {body}");
        // An acknowledgement would follow the response's last byte.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let prompts = app.prompts(&alice.host, &alice.session, 0).await;
        assert_eq!(prompts.len(), 1, "modern: {modern}: {prompts:?}");
        assert_eq!(
            prompts[0]["text"],
            "[Agor] User submitted K (scope: session). You can now retry the operation that needed it."
        );
        assert_eq!(
            body["message"],
            widgetd_domain::widgets::NEXT_TURN,
            "modern: {modern}"
        );
    }
}

#[tokio::test]
async fn the_operator_and_the_session_choose_the_modes() {
    // The daemon allows URL mode only: questions stay in the transcript.
    let app =
        spawn_app_with(|s| s.domain.elicitation = widgetd_domain::sessions::Elicitation::Url).await;
    let (alice, modes) = opted_in_as(&app, "alice", "both").await;
    assert_eq!(modes, "url");
    let mut desk = desk(&app, &alice.agent, Declares::Both, true).await;
    let body = call(&desk, "ask", CONFIRM()).await;
    assert_eq!(body["status"], "pending");
    assert!(desk.asked.try_recv().is_err(), "no form");
    desk.answers
        .send(ElicitResult::new(ElicitationAction::Accept))
        .unwrap();
    call(
        &desk,
        "request_env_vars",
        json!({ "names": ["K"], "reason": "r" }),
    )
    .await;
    assert!(matches!(
        desk.asked.try_recv(),
        Ok(ElicitRequestParams::UrlElicitationParams { .. })
    ));

    // A session created with `"elicitation": "off"` gets none, whatever
    // the daemon and the client allow; one with `form` gets forms only.
    let app = form_app().await;
    let alice = scene(&app, "alice").await;
    for (modes, form, url) in [
        ("off", false, false),
        ("form", true, false),
        ("url", false, true),
    ] {
        let r = app
            .post_json(
                "/api/v1/sessions",
                &alice.host,
                &json!({ "elicitation": modes }),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
        let created: Value = r.json().await.unwrap();
        assert_eq!(created["elicitation"], modes);
        let agent = created["agent_token"].as_str().unwrap();
        let mut desk = self::desk(&app, agent, Declares::Both, true).await;
        desk.answers
            .send(accept(json!({ "answer.0": "Yes" })))
            .unwrap();
        let body = call(&desk, "ask", CONFIRM()).await;
        assert_eq!(desk.asked.try_recv().is_ok(), form, "{modes}: {body}");
        let mut desk = self::desk(&app, agent, Declares::Both, true).await;
        desk.answers
            .send(ElicitResult::new(ElicitationAction::Accept))
            .unwrap();
        call(
            &desk,
            "request_env_vars",
            json!({ "names": ["K"], "reason": "r" }),
        )
        .await;
        assert_eq!(desk.asked.try_recv().is_ok(), url, "{modes}");
    }
    let r = app
        .post_json(
            "/api/v1/sessions",
            &alice.host,
            &json!({ "elicitation": "sometimes" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // Without an opt-in a session gets URL mode only, as `widgetd host` and
    // `widgetd connect` create them.
    let r = app
        .post_json("/api/v1/sessions", &alice.host, &json!({}))
        .await;
    let created: Value = r.json().await.unwrap();
    assert_eq!(created["elicitation"], "url");

    // The daemon's default is URL mode: a session's opt-in alone opens no
    // form.
    let app = spawn_app().await;
    let alice = opted_in_as(&app, "alice", "both").await;
    assert_eq!(alice.1, "url");
    let mut desk = self::desk(&app, &alice.0.agent, Declares::Both, true).await;
    let body = call(&desk, "ask", CONFIRM()).await;
    assert_eq!(body["status"], "pending");
    assert!(desk.asked.try_recv().is_err(), "no form by default");
}

/// A raw `initialize` declaring `capabilities`; the `Mcp-Session-Id` it got.
async fn raw_initialize(app: &TestApp, agent: &str, capabilities: Value) -> Option<String> {
    let r = app
        .client
        .post(format!("{}/mcp", app.url))
        .bearer_auth(agent)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": { "name": "raw", "version": "0" } } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let id = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    assert!(r.text().await.unwrap().contains("\"protocolVersion\""));
    id
}

/// A POST naming MCP session `id`; its HTTP status.
async fn in_mcp_session(app: &TestApp, agent: &str, id: &str) -> StatusCode {
    app.client
        .post(format!("{}/mcp", app.url))
        .bearer_auth(agent)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", id)
        .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn an_mcp_session_is_made_only_for_elicitation_and_serves_only_its_agent() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    let (_, other_agent) = app.session(&alice.host).await;

    // No elicitation declared: nothing to ask the client, so no session.
    assert_eq!(raw_initialize(&app, &alice.agent, json!({})).await, None);
    let first = raw_initialize(&app, &alice.agent, json!({ "elicitation": {} }))
        .await
        .expect("a session for a client that declares elicitation");
    assert_eq!(
        in_mcp_session(&app, &alice.agent, &first).await,
        StatusCode::ACCEPTED
    );
    // Another session's agent cannot use it: as if it did not exist.
    assert_eq!(
        in_mcp_session(&app, &other_agent, &first).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        in_mcp_session(&app, &alice.agent, "not-a-session").await,
        StatusCode::NOT_FOUND
    );

    // An agent keeps at most 8: the ninth closes the oldest.
    let mut ids = vec![first.clone()];
    for _ in 0..8 {
        ids.push(
            raw_initialize(&app, &alice.agent, json!({ "elicitation": {} }))
                .await
                .unwrap(),
        );
    }
    assert_eq!(
        in_mcp_session(&app, &alice.agent, &first).await,
        StatusCode::NOT_FOUND
    );
    for id in &ids[1..] {
        assert_eq!(
            in_mcp_session(&app, &alice.agent, id).await,
            StatusCode::ACCEPTED
        );
    }
    // The other agent's sessions are its own count.
    assert!(
        raw_initialize(&app, &other_agent, json!({ "elicitation": {} }))
            .await
            .is_some()
    );
    assert_eq!(
        in_mcp_session(&app, &alice.agent, &ids[1]).await,
        StatusCode::ACCEPTED
    );
    // Another agent cannot end it; its own client can.
    let end = |agent: &str| {
        app.client
            .delete(format!("{}/mcp", app.url))
            .bearer_auth(agent)
            .header("mcp-session-id", &ids[1])
            .send()
    };
    assert_eq!(
        end(&other_agent).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert!(end(&alice.agent).await.unwrap().status().is_success());
    assert_eq!(
        in_mcp_session(&app, &alice.agent, &ids[1]).await,
        StatusCode::NOT_FOUND
    );

    // An operator who turned elicitation off gets no sessions either.
    let app =
        spawn_app_with(|s| s.domain.elicitation = widgetd_domain::sessions::Elicitation::Off).await;
    let alice = scene(&app, "alice").await;
    assert_eq!(
        raw_initialize(&app, &alice.agent, json!({ "elicitation": {} })).await,
        None
    );
}

/// 100 `initialize`s at once from one agent session leave at most 8 of its
/// MCP sessions usable (the count and the insert are one step). The
/// requests are served on several threads at once, for several rounds,
/// since the race it guards against was lost only now and then.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_initializes_never_exceed_the_cap() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    for round in 0..10 {
        let (_, agent) = app.session(&alice.host).await;
        let opened = futures_util::future::join_all(
            (0..100).map(|_| raw_initialize(&app, &agent, json!({ "elicitation": {} }))),
        )
        .await;
        let mut usable = 0;
        for id in opened.into_iter().map(Option::unwrap) {
            if in_mcp_session(&app, &agent, &id).await == StatusCode::ACCEPTED {
                usable += 1;
            }
        }
        assert_eq!(usable, 8, "round {round}");
    }
}

/// A 2025-11-25 client that gives up on a call while its form is shown:
/// the form is withdrawn, the question stays open in the transcript.
#[tokio::test]
async fn a_cancelled_call_withdraws_its_form_and_leaves_the_question_open() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let mut desk = desk(&app, &alice.agent, Declares::Form, false).await;
    let request = desk
        .client
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                CallToolRequestParams::new("ask")
                    .with_arguments(CONFIRM().as_object().unwrap().clone()),
            )),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    desk.asked.recv().await.expect("the form was shown");
    let id = newest_widget(&app).await;
    request
        .cancel(Some("the agent moved on".into()))
        .await
        .unwrap();
    wait_for("the form to be withdrawn", || async {
        desk.withdrawn.lock().await.len() == 1
    })
    .await;
    // The person's late answer in the client is not taken.
    desk.answers
        .send(accept(json!({ "answer.0": "Yes" })))
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(widget_status(&app, &alice.agent, &id).await, "pending");
    assert!(audited(&app, "widget.submit", &id).await.is_empty());
}
