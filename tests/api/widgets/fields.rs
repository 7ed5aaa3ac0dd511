//! Typed questions (`ask_fields`) end to end: asked over REST and with the
//! rmcp client, refused with a code per problem and nothing created,
//! answered as JSON and as forms (a refusal names every failing field, and
//! changes nothing), the typed answers in the result and the prompt, the
//! client's form in MCP form mode one to one, and the card in a real
//! Chromium with JavaScript on and off.
//!
//! The tests that drive Chromium are in `tests/slow/widgets/fields.rs`.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::chrome::wait_for;
use crate::helpers::mcp::{call, connect, error_code, form_app, opted_in, structured};
use crate::helpers::samples::staging;
use crate::helpers::{Scene, ask, scene, spawn_app, submit_form, submit_json, widget};
use crate::mcp::elicitation::{Declares, accept, desk};

/// `(status, code, message)` of a refusal.
async fn refusal(r: Response) -> (StatusCode, String, String) {
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (status, code, message)
}

fn good_answers() -> Value {
    json!({ "answers": {
        "url": "https://staging.example.com",
        "port": 8443,
        "ratio": 0.25,
        "tag": "v1.2",
        "notes": "line one\r\nline two",
        "owner": "ops@example.com",
        "day": "2026-12-01",
        "migrate": false,
    } })
}

#[tokio::test]
async fn typed_questions_over_rest_and_mcp_with_a_code_per_refusal() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;

    // Refused requests: a stable code, nothing quoted, nothing created.
    let canary = "CANARY-typed";
    let bad = [
        (
            json!({ "question": " ", "fields": [{ "name": "a" }] }),
            "invalid_question",
        ),
        (json!({ "question": "Q?", "fields": [] }), "fields_count"),
        (
            json!({ "question": "Q?", "fields": [{ "name": canary }] }),
            "invalid_field_name",
        ),
        (
            json!({ "question": "Q?", "fields": [{ "name": "a" }, { "name": "a" }] }),
            "duplicate_field_name",
        ),
        (
            json!({ "question": "Q?", "fields": [{ "name": "a", "type": "date", "min": 1 }] }),
            "invalid_bounds",
        ),
        (
            json!({ "question": "Q?", "fields": [{ "name": "a", "pattern": format!("({canary}") }] }),
            "invalid_pattern",
        ),
        (
            json!({ "question": "Q?", "fields": [{ "name": "a", "type": "url", "default": canary }] }),
            "invalid_default",
        ),
        (
            json!({ "question": "Q?", "fields": [{ "name": "a" }], "wait_seconds": 301 }),
            "wait_too_long",
        ),
    ];
    for (body, code) in bad {
        let (status, got, message) =
            refusal(ask(&app, &agent, &session, "fields", &body).await).await;
        assert_eq!(
            (status, got.as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, code),
            "{body}"
        );
        assert!(!message.contains(canary), "{message}");
    }
    let (status, code, message) = refusal(
        ask(
            &app,
            &agent,
            &session,
            "fields",
            &json!({ "question": "Q?", "fields": [{ "name": "a", "type": "text", canary: 1 }] }),
        )
        .await,
    )
    .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "invalid_body")
    );
    assert!(!message.contains(canary), "{message}");
    assert_eq!(app.count("SELECT COUNT(*) FROM widgets").await, 0);

    // Over MCP, with the rmcp client: the tool is listed with its schema.
    let client = connect(&app, Some(&agent)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "ask_fields")
        .expect("ask_fields is listed");
    let schema = Value::Object((*tool.input_schema).clone());
    assert_eq!(schema["additionalProperties"], false, "{schema}");
    let refused = call(
        &client,
        "ask_fields",
        json!({ "question": "Q?", "fields": [{ "name": "a", "type": "integer", "max": 0.5 }] }),
    )
    .await;
    assert_eq!(error_code(&refused), "invalid_bounds");
    let made = structured(call(&client, "ask_fields", staging()).await);
    assert_eq!(made["status"], "pending", "{made}");
    let id = made["widget_id"].as_str().unwrap().to_owned();
    let stored = widget(&app, &agent, &id).await;
    assert_eq!(stored["kind"], "fields");
    assert_eq!(stored["params"]["fields"][1]["default"], 8080, "{stored}");
    assert_eq!(
        stored["params"]["fields"][7]["required"], false,
        "a boolean always has an answer"
    );

    // Refused answers name every failing field with its code; nothing changes.
    let alice = app.login("alice").await;
    let wrong = json!({ "answers": {
        "url": "javascript:alert(1)", "port": 70000, "tag": "CANARY-typed", "owner": "nobody",
        "day": "2026-02-30", "ratio": "lots",
    } });
    let (status, code, message) = refusal(submit_json(&app, &alice, &id, &wrong).await).await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_url")
    );
    for part in [
        "field `url` (invalid_url)",
        "field `port` (out_of_range): must be at most 65535",
        "field `ratio` (invalid_number)",
        "field `tag` (pattern_mismatch)",
        "field `owner` (invalid_email)",
        "field `day` (invalid_date)",
    ] {
        assert!(message.contains(part), "{part} in {message}");
    }
    assert!(
        !message.contains("CANARY") && !message.contains("70000"),
        "{message}"
    );
    let (_, code, _) = refusal(
        submit_json(
            &app,
            &alice,
            &id,
            &json!({ "answers": { "url": "https://x.example" } }),
        )
        .await,
    )
    .await;
    assert_eq!(code, "field_required");
    let (_, code, _) =
        refusal(submit_json(&app, &alice, &id, &json!({ "answers": { "nope": "x" } })).await).await;
    assert_eq!(code, "unknown_field");
    // A field sent twice (a form can repeat a name) is refused, not read
    // as whichever came last.
    let twice = [
        ("field.url", "https://a.example"),
        ("field.url", "https://b.example"),
    ];
    let r = submit_form(&app, &alice, &id, &twice).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().await.unwrap().contains("duplicate_field"));
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    let (status, code, _) =
        refusal(submit_json(&app, &alice, &id, &json!({ "answers": { "url": ["a"] } })).await)
            .await;
    assert_eq!(
        (status, code.as_str()),
        (StatusCode::BAD_REQUEST, "invalid_body")
    );
    // A stored value typed into an answer is refused, naming the variable.
    let put = app
        .put_env(
            &host,
            "DEPLOY_TOKEN",
            &json!({ "value": "s3cr3t-value-xyz" }),
        )
        .await;
    assert!(put.status().is_success(), "{}", put.status());
    let mut leaking = good_answers();
    leaking["answers"]["notes"] = json!("token is s3cr3t-value-xyz");
    let (_, code, message) = refusal(submit_json(&app, &alice, &id, &leaking).await).await;
    assert_eq!(code, "answer_contains_secret");
    assert!(!message.contains("s3cr3t"), "{message}");
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    assert!(app.prompts(&host, &session, 0).await.is_empty());

    // The answer: typed values keyed by name, in the result and the prompt.
    let r = submit_json(&app, &alice, &id, &good_answers()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let done = widget(&app, &agent, &id).await;
    let answers = json!({
        "url": "https://staging.example.com", "port": 8443, "ratio": 0.25, "tag": "v1.2",
        "notes": "line one\nline two", "owner": "ops@example.com", "day": "2026-12-01",
        "migrate": false,
    });
    assert_eq!(done["status"], "submitted");
    assert_eq!(done["result"]["answers"], answers, "{done}");
    assert_eq!(done["result"]["answered_by"], "alice");
    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 1);
    assert_eq!(
        prompts[0]["text"],
        format!("[Agor] User answered your question \"Where is staging?\": {answers}")
    );
    let status = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(status["result"]["answers"]["port"], 8443, "{status}");

    // Waiting: the answer comes back in the call, as `answers`.
    let waiting = {
        let app_url = app.url.clone();
        let agent = agent.clone();
        let session = session.clone();
        let client = app.client.clone();
        tokio::spawn(async move {
            client
                .post(format!("{app_url}/api/v1/sessions/{session}/widgets/fields"))
                .bearer_auth(&agent)
                .json(&json!({ "question": "Port?", "fields": [{ "name": "port", "type": "integer" }], "wait_seconds": 20 }))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        })
    };
    let pending_sql = "SELECT COUNT(*) FROM widgets WHERE status = 'pending' AND kind = 'fields'";
    wait_for("the waiting question", || async {
        app.count(pending_sql).await == 1
    })
    .await;
    let pending: String =
        sqlx::query_scalar("SELECT id FROM widgets WHERE status = 'pending' AND kind = 'fields'")
            .fetch_one(&app.state.db.read)
            .await
            .unwrap();
    let r = app
        .post_form(
            &alice,
            &format!("/widgets/{pending}/submit"),
            &[("field.port", " 22 ")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let waited = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
        .await
        .expect("the waiting call returns")
        .unwrap();
    assert_eq!(waited["status"], "submitted", "{waited}");
    assert_eq!(waited["answers"], json!({ "port": 22 }), "{waited}");
}

#[tokio::test]
async fn a_typed_question_is_a_client_form_one_to_one() {
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    for modern in [false, true] {
        let mut client = desk(&app, &alice.agent, Declares::Form, modern).await;
        client
            .answers
            .send(accept(json!({
                "url": "https://staging.example.com", "port": 8443, "tag": "v2.0",
                "owner": "ops@example.com", "day": "2026-12-01", "migrate": true, "extra": "x",
            })))
            .unwrap();
        let body = crate::mcp::elicitation::call(&client, "ask_fields", staging()).await;
        let Ok(rmcp::model::ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        }) = client.asked.try_recv()
        else {
            panic!("no form elicitation");
        };
        assert_eq!(message, "Where is staging?");
        let schema = serde_json::to_value(&requested_schema).unwrap();
        let p = &schema["properties"];
        assert_eq!(
            p["url"],
            json!({ "type": "string", "title": "Staging URL",
            "description": "Where the app answers", "format": "uri", "maxLength": 1000 }),
            "{schema}"
        );
        assert_eq!(
            p["port"],
            json!({ "type": "integer", "title": "Port", "minimum": 1,
            "maximum": 65535, "default": 8080 }),
            "{schema}"
        );
        assert_eq!(p["ratio"]["type"], "number", "{schema}");
        assert_eq!(p["ratio"]["maximum"].as_f64(), Some(1.0), "{schema}");
        assert_eq!(p["notes"]["maxLength"], 4000, "{schema}");
        assert_eq!(p["owner"]["format"], "email", "{schema}");
        assert_eq!(p["day"]["format"], "date", "{schema}");
        assert_eq!(
            p["migrate"],
            json!({ "type": "boolean", "title": "Run migrations", "default": true })
        );
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["day", "owner", "port", "tag", "url"]);
        assert_eq!(body["status"], "submitted", "{body}");
        assert_eq!(body["answers"]["port"], 8443, "{body}");
        assert_eq!(body["answers"]["migrate"], true, "{body}");
        assert_eq!(body["answers"]["ratio"], Value::Null, "{body}");
        assert_eq!(body["result"]["answered_by"], "mcp-client");

        // The client's answer is checked as the transcript's: `pattern` too.
        let client = desk(&app, &alice.agent, Declares::Form, modern).await;
        client
            .answers
            .send(accept(json!({
                "url": "https://staging.example.com", "port": 8443, "tag": "latest-canary",
                "owner": "ops@example.com", "day": "2026-12-01",
            })))
            .unwrap();
        let body = crate::mcp::elicitation::call(&client, "ask_fields", staging()).await;
        assert_eq!(body["status"], "pending", "{body}");
        assert_eq!(body["elicitation"]["refused"], "pattern_mismatch", "{body}");
        assert!(!body.to_string().contains("latest-canary"), "{body}");
    }
}
