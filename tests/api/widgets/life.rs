//! A widget's life after it is asked: `expires_in_seconds` on every kind,
//! the agent withdrawing (`cancel_widget`, `POST /api/v1/widgets/{id}/cancel`)
//! and replacing (`replaces`) its own pending widgets, and listing them
//! (`list_pending_widgets`, `GET /api/v1/sessions/{id}/widgets`), over REST,
//! the rmcp client, and the page with JavaScript on and off.
//!
//! The tests that drive Chromium are in `tests/slow/widgets/life.rs`.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::chrome::wait_for;
use crate::helpers::mcp::{call, connect, error_code, structured};
use crate::helpers::samples::radio;
use crate::helpers::{TestApp, ask, assert_error, canary, created, scene, spawn_app, widget};

async fn cancel(app: &TestApp, token: &str, id: &str, body: &Value) -> Response {
    app.post_json(&format!("/api/v1/widgets/{id}/cancel"), token, body)
        .await
}

async fn listing(app: &TestApp, token: &str, session: &str, query: &str) -> Value {
    let r = app
        .get(&format!("/api/v1/sessions/{session}/widgets{query}"), token)
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

fn ids(list: &Value) -> Vec<String> {
    list["widgets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["widget_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_agent_withdraws_its_pending_widget_over_rest_and_nobody_else_can() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let other = scene(&app, "bob").await;
    let id = created(ask(&app, &s.agent, &s.session, "ask", &radio("Which region?")).await).await;

    // Another session's agent does not find it; a person's token is no agent.
    let r = cancel(&app, &other.agent, &id, &json!({})).await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let r = cancel(&app, &s.host, &id, &json!({})).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let long = "x".repeat(501);
    let r = cancel(&app, &s.agent, &id, &json!({ "reason": long })).await;
    assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "reason_too_long", None).await;
    let field = canary("field");
    let r = cancel(&app, &s.agent, &id, &json!({ field.clone(): 1 })).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", Some(&field)).await;
    assert_eq!(widget(&app, &s.agent, &id).await["status"], "pending");

    let reason = "asked the wrong team <b>sorry</b>";
    let r = cancel(&app, &s.agent, &id, &json!({ "reason": reason })).await;
    assert_eq!(r.status(), StatusCode::OK);
    let view: Value = r.json().await.unwrap();
    assert_eq!(view["status"], "cancelled");
    assert_eq!(
        view["result"],
        json!({ "withdrawn_by": "agent", "reason": reason })
    );
    // Its prompt is written delivered: no turn starts from the agent's own act.
    assert!(app.prompts(&s.host, &s.session, 0).await.is_empty());
    let audit = "SELECT count(*) FROM audit_log WHERE action = 'widget.cancel'";
    assert_eq!(app.count(audit).await, 1);

    // Ended once: a second withdrawal and a person's answer are refused.
    let r = cancel(&app, &s.agent, &id, &json!({})).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "widget_not_pending");
    assert_eq!(body["error"]["status"], "cancelled");
    let browser = app.login("alice").await;
    let r = app
        .post_json_as(
            &browser,
            &format!("/widgets/{id}/submit"),
            &json!({ "answer.0": "EU" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);

    // The person sees that the agent withdrew it, and why (no JavaScript).
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(page.contains("Question withdrawn by the agent"), "{page}");
    assert!(page.contains("withdrew this request"), "{page}");
    // The agent's words are text, never markup.
    assert!(
        page.contains("asked the wrong team &#60;b&#62;sorry&#60;/b&#62;"),
        "{page}"
    );
    assert!(!page.contains("<b>sorry</b>"), "{page}");
}

#[tokio::test]
async fn an_answered_widget_cannot_be_withdrawn_or_replaced() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let id = created(ask(&app, &s.agent, &s.session, "ask", &radio("Which region?")).await).await;
    let browser = app.login("alice").await;
    let r = app
        .post_json_as(
            &browser,
            &format!("/widgets/{id}/submit"),
            &json!({ "answer.0": "EU" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);

    let r = cancel(&app, &s.agent, &id, &json!({})).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["status"], "submitted");
    let before = app.count("SELECT count(*) FROM widgets").await;
    let mut amended = radio("Which region, really?");
    amended["replaces"] = json!({ "widget_id": id, "reason": "typo" });
    let r = ask(&app, &s.agent, &s.session, "ask", &amended).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, before);
    let view = widget(&app, &s.agent, &id).await;
    assert_eq!(view["status"], "submitted");
    assert_eq!(view["result"]["answers"]["Which region?"], "EU");
}

#[tokio::test]
async fn a_replacement_withdraws_the_old_widget_in_the_same_step_and_links_to_it() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let other = scene(&app, "bob").await;
    let old = created(ask(&app, &s.agent, &s.session, "ask", &radio("Which region?")).await).await;

    // Only a widget of the same session, and nothing is created otherwise.
    let foreign =
        created(ask(&app, &other.agent, &other.session, "ask", &radio("Bob's?")).await).await;
    let before = app.count("SELECT count(*) FROM widgets").await;
    let mut wrong = radio("Which region for the EU data?");
    wrong["replaces"] = json!({ "widget_id": foreign });
    let r = ask(&app, &s.agent, &s.session, "ask", &wrong).await;
    assert_error(r, StatusCode::NOT_FOUND, "not_found", None).await;
    let field = canary("field");
    wrong["replaces"] = json!({ "widget_id": old, field.clone(): true });
    let r = ask(&app, &s.agent, &s.session, "ask", &wrong).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", Some(&field)).await;
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, before);
    assert_eq!(
        widget(&app, &other.agent, &foreign).await["status"],
        "pending"
    );

    let mut amended = radio("Which region for the EU data?");
    amended["replaces"] = json!({ "widget_id": old, "reason": "I forgot the EU data" });
    let new = created(ask(&app, &s.agent, &s.session, "ask", &amended).await).await;
    let view = widget(&app, &s.agent, &old).await;
    assert_eq!(view["status"], "cancelled");
    assert_eq!(
        view["result"],
        json!({ "withdrawn_by": "agent", "reason": "I forgot the EU data", "replaced_by": new })
    );
    assert_eq!(widget(&app, &s.agent, &new).await["status"], "pending");
    let pending = listing(&app, &s.agent, &s.session, "").await;
    assert_eq!(ids(&pending), vec![new.clone()]);

    // The old card links to the new one, without JavaScript.
    let browser = app.login("alice").await;
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(page.contains("Question replaced by the agent"), "{page}");
    assert!(page.contains("I forgot the EU data"), "{page}");
    assert!(page.contains(&format!("href=\"/widgets/{new}\"")), "{page}");
}

#[tokio::test]
async fn the_agent_lists_its_pending_widgets_and_never_a_value() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let other = scene(&app, "bob").await;
    let secret = canary("value");
    let answered = app.pending_widget(&s.agent, &s.session, &["API_KEY"]).await;
    let browser = app.login("alice").await;
    let r = app
        .post_json_as(
            &browser,
            &format!("/widgets/{answered}/submit"),
            &json!({ "values": { "API_KEY": secret } }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    let env = app
        .pending_widget(&s.agent, &s.session, &["OTHER_KEY"])
        .await;
    let q = created(ask(&app, &s.agent, &s.session, "ask", &radio("Which region?")).await).await;
    created(ask(&app, &other.agent, &other.session, "ask", &radio("Bob's?")).await).await;

    let pending = listing(&app, &s.agent, &s.session, "?status=pending").await;
    assert_eq!(ids(&pending), vec![q.clone(), env.clone()], "newest first");
    assert_eq!(pending["status"], "pending");
    assert_eq!(
        pending["widgets"][1]["params"]["names"],
        json!(["OTHER_KEY"])
    );
    let submitted = listing(&app, &s.host, &s.session, "?status=submitted").await;
    assert_eq!(ids(&submitted), vec![answered]);
    for list in [&pending, &submitted] {
        assert!(!list.to_string().contains(&secret), "{list}");
    }
    let r = app
        .get(
            &format!("/api/v1/sessions/{}/widgets", s.session),
            &other.agent,
        )
        .await;
    assert!(matches!(
        r.status(),
        StatusCode::NOT_FOUND | StatusCode::FORBIDDEN
    ));
    let r = app
        .get(
            &format!("/api/v1/sessions/{}/widgets?state=x", s.session),
            &s.agent,
        )
        .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_query", None).await;
}

/// One valid creating body per kind, with its REST path.
fn every_kind() -> Vec<(&'static str, Value)> {
    vec![
        (
            "env-vars",
            json!({ "names": ["SOME_KEY"], "reason": "to call the API" }),
        ),
        (
            "ask-user",
            json!({ "questions": [{ "question": "Which?", "header": "Pick",
                "options": [{ "label": "a" }, { "label": "b" }] }] }),
        ),
        ("ask", json!({ "question": "Deploy now?" })),
        (
            "approval",
            json!({ "tool": "Bash", "input": { "command": "make" } }),
        ),
        (
            "clarification",
            json!({ "question": "Which region?", "widget": { "type": "choice",
                "options": [{ "label": "EU" }, { "label": "US" }] } }),
        ),
    ]
}

#[tokio::test]
async fn every_kind_takes_expires_in_seconds_within_the_servers_maximum() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let max = app.state.settings.widget_ttl_ms / 1000;
    let mut ids = Vec::new();
    for (path, body) in every_kind() {
        let url = format!("/api/v1/sessions/{}/widgets/{path}", s.session);
        let before = app.count("SELECT count(*) FROM widgets").await;
        for (secs, code) in [
            (json!(max + 1), "expiry_too_long"),
            (json!(0), "invalid_expiry"),
        ] {
            let mut refused = body.clone();
            refused["expires_in_seconds"] = secs;
            let r = app.post_json(&url, &s.agent, &refused).await;
            let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, None).await;
            if code == "expiry_too_long" {
                assert!(message.contains(&max.to_string()), "{message}");
            }
        }
        assert_eq!(
            app.count("SELECT count(*) FROM widgets").await,
            before,
            "{path}"
        );
        let mut short = body.clone();
        short["expires_in_seconds"] = json!(60);
        let id = created(app.post_json(&url, &s.agent, &short).await).await;
        let life = format!("SELECT expires_at - created_at FROM widgets WHERE id = '{id}'");
        assert_eq!(app.count(&life).await, 60_000, "{path}");
        ids.push(id);
    }
    // A widget whose own time is up expires like any other: the sweep ends
    // it, the page shows the expired badge and the agent gets the prompt.
    let mut soon = radio("Quick one?");
    soon["expires_in_seconds"] = json!(1);
    let id = created(ask(&app, &s.agent, &s.session, "ask", &soon).await).await;
    wait_for("the widget's second to pass", || async {
        widgetd_domain::widgets::expire_due(&app.state)
            .await
            .unwrap()
            > 0
    })
    .await;
    assert_eq!(widget(&app, &s.agent, &id).await["status"], "expired");
    let browser = app.login("alice").await;
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(
        page.contains(&format!("data-widget=\"{id}\" data-status=\"expired\"")),
        "{page}"
    );
    assert!(page.contains("Question expired"), "{page}");
    let prompts = app.prompts(&s.host, &s.session, 0).await;
    assert!(
        prompts.iter().any(|p| p["widget_id"] == json!(id)
            && p["text"]
                .as_str()
                .unwrap()
                .contains("expired before the user answered")),
        "{prompts:?}"
    );
}

#[tokio::test]
async fn over_mcp_the_agent_lists_withdraws_and_replaces() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let other = scene(&app, "bob").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for tool in ["cancel_widget", "list_pending_widgets"] {
        assert!(names.contains(&tool), "{names:?}");
    }
    for tool in [
        "request_env_vars",
        "ask_user",
        "ask",
        "request_approval",
        "request_clarification",
    ] {
        let t = tools.iter().find(|t| t.name == tool).unwrap();
        let props = &t.input_schema["properties"];
        assert!(props["expires_in_seconds"].is_object(), "{tool}");
        assert!(props["replaces"].is_object(), "{tool}");
    }

    let first = structured(call(&client, "ask", radio("Which region?")).await);
    let first = first["widget_id"].as_str().unwrap().to_owned();
    let listed = structured(call(&client, "list_pending_widgets", json!({})).await);
    assert_eq!(ids(&listed), vec![first.clone()]);
    assert_eq!(
        listed["widgets"][0]["params"]["questions"][0]["question"],
        "Which region?"
    );

    let mut amended = radio("Which region for the EU data?");
    amended["replaces"] = json!({ "widget_id": first, "reason": "forgot the EU data" });
    amended["expires_in_seconds"] = json!(3600);
    let second = structured(call(&client, "ask", amended).await);
    let second = second["widget_id"].as_str().unwrap().to_owned();
    let listed = structured(call(&client, "list_pending_widgets", json!({})).await);
    assert_eq!(ids(&listed), vec![second.clone()]);
    let old = widget(&app, &s.agent, &first).await;
    assert_eq!(old["result"]["replaced_by"], json!(second));

    // Another session's widget is not found; a withdrawn one is not pending.
    let theirs =
        created(ask(&app, &other.agent, &other.session, "ask", &radio("Bob's?")).await).await;
    let r = call(&client, "cancel_widget", json!({ "widget_id": theirs })).await;
    assert_eq!(error_code(&r), "not_found");
    let r = call(&client, "cancel_widget", json!({ "widget_id": first })).await;
    assert_eq!(error_code(&r), "widget_not_pending");
    let r = call(
        &client,
        "list_pending_widgets",
        json!({ "session_id": s.session }),
    )
    .await;
    assert_eq!(error_code(&r), "invalid_body");

    let done = call(
        &client,
        "cancel_widget",
        json!({ "widget_id": second, "reason": "no longer needed" }),
    )
    .await;
    let done = structured(done);
    assert_eq!(done["status"], "cancelled");
    assert_eq!(done["result"]["reason"], "no longer needed");
    let listed = structured(call(&client, "list_pending_widgets", json!({})).await);
    assert_eq!(listed["widgets"], json!([]));
    assert_eq!(
        widget(&app, &other.agent, &theirs).await["status"],
        "pending"
    );
    let r = call(&client, "ask", {
        let mut q = radio("Too long?");
        q["expires_in_seconds"] = json!(u64::MAX);
        q
    })
    .await;
    assert_eq!(error_code(&r), "expiry_too_long");
}
