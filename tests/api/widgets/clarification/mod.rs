//! `request_clarification` end to end. The plumbing every widget type
//! shares is tested here (the strict tool schema, unknown types, answers in
//! words only, dismissal, waiting, expiry); each type has its own module
//! beside this one (`choice.rs`) with its creation over MCP and its limits
//! and bad answers; its real interaction in Chromium, the same with
//! JavaScript off, and the XSS corpus are in the file of the same name in
//! `tests/slow/widgets/clarification/`. What they share (the bodies of each
//! type, `refused_on_both`, `unchanged`) is in `tests/api/helpers/`.

mod annotation;
mod choice;
mod curation;
mod mapping;
mod ranking;
mod table;
mod tree;

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::widgets;

use crate::helpers::mcp::{call, connect, error_code, structured};
use crate::helpers::samples::choice;
use crate::helpers::{ask, created_alone, prompt_of, submit_json, widget};
use crate::helpers::{assert_error, scene, spawn_app};

/// Every object schema in `schema` (properties given) forbids other
/// properties; returns the paths of those that do not.
fn loose_objects(schema: &Value, path: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties")
                && map.get("additionalProperties") != Some(&json!(false))
            {
                found.push(path.to_owned());
            }
            for (k, v) in map {
                loose_objects(v, &format!("{path}.{k}"), found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                loose_objects(v, &format!("{path}.{i}"), found);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn the_tool_schema_is_strict_at_every_level_and_lists_only_existing_types() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let tool = tools
        .iter()
        .find(|t| t.name == "request_clarification")
        .expect("the tool is listed");
    let schema = Value::Object((*tool.input_schema).clone());
    let mut loose = Vec::new();
    loose_objects(&schema, "", &mut loose);
    assert!(
        loose.is_empty(),
        "objects that allow more: {loose:?} in {schema:#}"
    );
    assert_eq!(
        schema["required"],
        json!(["question", "widget"]),
        "{schema}"
    );
    let mut keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "expires_in_seconds",
            "question",
            "replaces",
            "wait_seconds",
            "widget"
        ]
    );
    // `widget` is one object per type that exists, each with its own
    // properties, its `type` among them.
    let text = schema.to_string();
    let variants = schema["$defs"]["WidgetSchema"]["oneOf"].as_array().unwrap();
    let types: Vec<&Value> = variants
        .iter()
        .map(|v| &v["properties"]["type"]["const"])
        .collect();
    assert_eq!(
        types,
        [
            &json!("choice"),
            &json!("table"),
            &json!("mapping"),
            &json!("ranking"),
            &json!("curation"),
            &json!("tree"),
            &json!("annotation")
        ],
        "{schema}"
    );
    assert_eq!(
        variants[0]["required"],
        json!(["type", "options"]),
        "{schema}"
    );
    assert!(
        text.contains("multi_select") && text.contains("markdown"),
        "{schema}"
    );
    let description = tool.description.as_deref().unwrap();
    assert!(description.contains("END YOUR TURN"), "{description}");
    assert!(
        description.contains("{structured, freeform}"),
        "{description}"
    );
}

#[tokio::test]
async fn an_unknown_widget_type_is_refused_listing_the_types() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    for ty in ["sorting", "no-such-type-7f3a"] {
        let body = json!({ "question": "Which?", "widget": { "type": ty, "items": [] } });
        let r = ask(&app, &s.agent, &s.session, "clarification", &body).await;
        let message = assert_error(
            r,
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_widget_type",
            Some(ty),
        )
        .await;
        assert_eq!(
            message,
            "`widget.type` is one of `choice`, `table`, `mapping`, `ranking`, `curation`, `tree`, `annotation`"
        );
        let result = call(&client, "request_clarification", body).await;
        assert_eq!(error_code(&result), "unknown_widget_type");
    }
    for widget in [
        json!({ "options": [] }),
        json!("choice"),
        json!({ "type": 7 }),
    ] {
        let body = json!({ "question": "Which?", "widget": widget });
        let r = ask(&app, &s.agent, &s.session, "clarification", &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    let extra = json!({ "question": "Which?", "widget": choice(&["a", "b"], false), "why": 1 });
    let r = ask(&app, &s.agent, &s.session, "clarification", &extra).await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
}

#[tokio::test]
async fn a_person_may_answer_in_words_only_or_not_at_all() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let body = json!({ "question": "Which region?", "widget": choice(&["EU", "US"], false) });

    // Words only, as JSON (no `structured`: the widget is untouched) and as
    // the form (which sends the widget's state: nothing picked).
    let by_json =
        created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    let r = submit_json(
        &app,
        &browser,
        &by_json,
        &json!({ "freeform": "Wherever is cheapest" }),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let by_form =
        created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{by_form}/submit"),
            &[("freeform", "Wherever is cheapest")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    for id in [&by_json, &by_form] {
        let state = widget(&app, &s.agent, id).await;
        assert_eq!(
            state["result"],
            json!({ "structured": { "selected": [] }, "freeform": "Wherever is cheapest", "answered_by": "alice" })
        );
        assert_eq!(
            prompt_of(&app, &s.host, &s.session, id).await,
            r#"[Agor] User answered your question "Which region?": {"structured":{"selected":[]},"freeform":"Wherever is cheapest"}"#
        );
    }

    // Neither the widget nor words: refused.
    let empty = created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    for sent in [
        json!({}),
        json!({ "freeform": "  \n " }),
        json!({ "structured": { "selected": [] } }),
    ] {
        let r = submit_json(&app, &browser, &empty, &sent).await;
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "answer_required", None).await;
    }
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{empty}/submit"),
            &[("freeform", "")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains(r#"data-code="answer_required""#)
    );
    assert_eq!(widget(&app, &s.agent, &empty).await["status"], "pending");
}

#[tokio::test]
async fn clarifications_wait_dismiss_and_expire_like_every_widget() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let question = "Which \"region\" first?";
    let body = json!({ "question": question, "widget": choice(&["EU", "US"], false) });

    // `wait_seconds`: the call returns the answer given meanwhile.
    let mut waiting = body.clone();
    waiting["wait_seconds"] = json!(20);
    let call = {
        let (app_url, agent, session) = (app.url.clone(), s.agent.clone(), s.session.clone());
        tokio::spawn(async move {
            crate::helpers::client()
                .post(format!(
                    "{app_url}/api/v1/sessions/{session}/widgets/clarification"
                ))
                .bearer_auth(agent)
                .json(&waiting)
                .send()
                .await
                .unwrap()
        })
    };
    let id = crate::widgets::ask::first_widget_id(&app).await;
    let sent = json!({ "structured": { "selected": ["US"] }, "freeform": "then EU" });
    assert_eq!(
        submit_json(&app, &browser, &id, &sent).await.status(),
        StatusCode::OK
    );
    let r = call.await.unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let waited: Value = r.json().await.unwrap();
    assert_eq!(waited["status"], "submitted", "{waited}");
    assert_eq!(
        waited["result"]["structured"],
        json!({ "selected": ["US"] })
    );
    assert_eq!(waited["result"]["freeform"], "then EU");

    // Dismissed with a note: the prompt carries the question and the note.
    let dismissed =
        created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{dismissed}/dismiss"),
            &[("note", "ask Bob")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &dismissed).await,
        r#"[Agor] User dismissed your question "Which \"region\" first?" without answering. Do not ask again immediately — decide how to proceed, or move on to other work. User's note: "ask Bob""#
    );

    // Expired: the question again, and no answer.
    let expiring =
        created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    sqlx::query("UPDATE widgets SET expires_at = 0 WHERE id = $1")
        .bind(&expiring)
        .execute(&app.state.db.write)
        .await
        .unwrap();
    assert_eq!(widgets::expire_due(&app.state).await.unwrap(), 1);
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &expiring).await,
        r#"[Agor] Your question "Which \"region\" first?" expired before the user answered; no answer was given. Do not ask again immediately — decide how to proceed, or move on to other work."#
    );
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(page.contains("Question expired <time"), "{page}");
    assert!(page.contains("Question dismissed by alice <time") && page.contains(": ask Bob"));
}

#[tokio::test]
async fn get_widget_status_shows_the_question_and_both_parts_of_the_answer() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let body = json!({ "question": "Which?", "widget": choice(&["a", "b"], true) });
    let made = structured(call(&client, "request_clarification", body).await);
    let id = made["widget_id"].as_str().unwrap().to_owned();
    let sent = json!({ "structured": { "selected": ["b", "a"] }, "freeform": "both" });
    assert_eq!(
        submit_json(&app, &browser, &id, &sent).await.status(),
        StatusCode::OK
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(state["kind"], "clarification");
    assert_eq!(state["status"], "submitted");
    assert_eq!(state["params"]["question"], "Which?");
    assert_eq!(state["params"]["widget"]["type"], "choice");
    assert_eq!(
        state["result"],
        json!({ "structured": { "selected": ["a", "b"] }, "freeform": "both", "answered_by": "alice" })
    );
}
