//! `choice`: created over MCP, answered in Chromium by real clicks and
//! typing (with JavaScript, and again with it off), its limits and bad
//! answers refused with stable codes, and agent-written labels,
//! descriptions and markdown inert against the XSS corpus.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/choice.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::connect;
use crate::helpers::samples::regions;
use crate::helpers::{
    ask, assert_error, canary, created_alone, malformed_on_both, refused_on_both, scene, spawn_app,
    submit_json, unchanged, widget,
};

#[tokio::test]
async fn choice_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = regions(false);
        change(&mut body);
        body
    };
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({ "label": format!("o{i}") }))
        .collect();
    let cases = [
        (
            with(&|b| b["widget"]["options"] = json!([{ "label": "a" }])),
            "options_count",
        ),
        (
            with(&|b| b["widget"]["options"] = json!(eleven)),
            "options_count",
        ),
        (
            with(&|b| b["widget"]["options"][1]["label"] = json!("  ")),
            "empty_label",
        ),
        (
            with(&|b| b["widget"]["options"][1]["label"] = json!("l".repeat(81))),
            "label_too_long",
        ),
        (
            with(&|b| b["widget"]["options"][1]["label"] = json!("a\tb")),
            "invalid_label",
        ),
        (
            with(&|b| b["widget"]["options"][2]["label"] = json!(" EU")),
            "duplicate_label",
        ),
        (
            with(&|b| b["widget"]["options"][0]["description"] = json!("d".repeat(301))),
            "description_too_long",
        ),
        (
            with(&|b| b["widget"]["options"][0]["markdown"] = json!("m".repeat(4001))),
            "markdown_too_long",
        ),
        (with(&|b| b["question"] = json!("")), "invalid_question"),
        (
            with(&|b| b["question"] = json!("q".repeat(1001))),
            "invalid_question",
        ),
        (with(&|b| b["wait_seconds"] = json!(301)), "wait_too_long"),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    // Unknown fields at every level, and wrong types, are `invalid_body`
    // naming the place.
    for (body, at) in [
        (
            with(&|b| b["widget"]["colour"] = json!("red")),
            "(at `widget`)",
        ),
        (
            with(&|b| b["widget"]["options"][0]["value"] = json!("eu")),
            "(at `widget.options.0`)",
        ),
        (
            with(&|b| b["widget"]["multi_select"] = json!("yes")),
            "(at `widget.multi_select`)",
        ),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, Some("yes")).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'widget.create'")
            .await,
        0
    );
    // At the limits, it is accepted.
    let ten: Vec<Value> = (0..10)
        .map(|i| json!({ "label": format!("{i}{}", "l".repeat(79)) }))
        .collect();
    let body = with(&|b| {
        b["widget"]["options"] = json!(ten);
        b["question"] = json!("q".repeat(1000));
    });
    created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
}

#[tokio::test]
async fn bad_choice_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let secret = canary("freeform");
    let r = app
        .put_env(
            &s.host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let id = created_alone(ask(&app, &s.agent, &s.session, "clarification", &regions(false)).await)
        .await;
    let holding = format!("use {secret} for it");
    let cases = [
        (
            json!({ "structured": { "selected": ["Mars"] } }),
            "unknown_option",
        ),
        (
            json!({ "structured": { "selected": ["EU", "US"] } }),
            "single_answer",
        ),
        (
            json!({ "structured": { "selected": [] }, "freeform": "" }),
            "answer_required",
        ),
        (json!({ "freeform": "f".repeat(4001) }), "freeform_too_long"),
        (json!({ "freeform": "bell\u{7}" }), "invalid_freeform"),
        (
            json!({ "structured": { "selected": ["EU"] }, "freeform": holding }),
            "answer_contains_secret",
        ),
    ];
    for (body, code) in &cases {
        let r = submit_json(&app, &browser, &id, body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some(&secret)).await;
        assert!(!message.contains("Mars"), "{message}");
    }
    for body in [
        json!({ "structured": { "selected": ["EU"], "ranked": [] } }),
        json!({ "structured": { "selected": "EU" } }),
        json!({ "answer.0": "EU" }),
    ] {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    // The form too: the page again, the reason beside the card, no value.
    for (fields, code) in [
        (vec![("selected", "Mars")], "unknown_option"),
        (
            vec![("selected", "EU"), ("selected", "APAC")],
            "single_answer",
        ),
        (
            vec![("freeform", holding.as_str())],
            "answer_contains_secret",
        ),
    ] {
        let r = app
            .post_form(&browser, &format!("/widgets/{id}/submit"), &fields)
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(&format!(r#"data-code="{code}""#)), "{code}");
        assert!(!page.contains(&secret));
    }
    unchanged(&app, &s, &id).await;
    // Once answered, a second answer is 409 and changes nothing.
    let r = submit_json(
        &app,
        &browser,
        &id,
        &json!({ "structured": { "selected": ["APAC"] } }),
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = submit_json(&app, &browser, &id, &json!({ "freeform": "again" })).await;
    assert_error(r, StatusCode::CONFLICT, "widget_not_pending", None).await;
    assert_eq!(widget(&app, &s.agent, &id).await["result"]["freeform"], "");
}
