//! `mapping`: created over MCP, answered in Chromium by clicking a left
//! item and then the right item it goes to (and by the keyboard), again
//! with JavaScript off through the selects, its limits and bad answers
//! refused with stable codes, and agent-written labels, groups and ids
//! inert against the XSS corpus.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/mapping.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::connect;
use crate::helpers::samples::columns;
use crate::helpers::{
    ask, assert_error, canary, created_alone, malformed_on_both, refused_on_both, scene, spawn_app,
    submit_json, unchanged,
};

#[tokio::test]
async fn mapping_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = columns(false, false);
        change(&mut body);
        body
    };
    let many: Vec<Value> = (0..201)
        .map(|i| json!({ "id": format!("r{i}"), "label": format!("R {i}") }))
        .collect();
    let cases = [
        (with(&|b| b["widget"]["left"] = json!([])), "left_count"),
        (with(&|b| b["widget"]["right"] = json!(many)), "right_count"),
        (
            with(&|b| b["widget"]["left"][2]["id"] = json!("email")),
            "duplicate_id",
        ),
        (
            with(&|b| b["widget"]["right"][0]["id"] = json!(" ")),
            "empty_id",
        ),
        (
            with(&|b| b["widget"]["right"][0]["id"] = json!("i".repeat(101))),
            "id_too_long",
        ),
        (
            with(&|b| b["widget"]["left"][0]["id"] = json!("a\nb")),
            "invalid_id",
        ),
        (
            with(&|b| b["widget"]["left"][0]["label"] = json!("")),
            "empty_label",
        ),
        (
            with(&|b| b["widget"]["left"][0]["label"] = json!("l".repeat(201))),
            "label_too_long",
        ),
        (
            with(&|b| b["widget"]["left"][0]["label"] = json!("a\tb")),
            "invalid_label",
        ),
        (
            with(&|b| b["widget"]["right"][1]["group"] = json!("g".repeat(81))),
            "group_too_long",
        ),
        (
            with(&|b| b["widget"]["right"] = json!([{ "id": "x", "label": "X" }])),
            "mapping_impossible",
        ),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    for (body, at) in [
        (with(&|b| b["widget"]["pairs"] = json!([])), "(at `widget`)"),
        (
            with(&|b| b["widget"]["right"][1]["value"] = json!(1)),
            "(at `widget.right.1`)",
        ),
        (
            with(&|b| b["widget"]["allow_unmapped"] = json!("yes")),
            "(at `widget.allow_unmapped`)",
        ),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, Some("yes")).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    // At the limits, it is accepted: 200 a side, the longest texts.
    let side = |p: &str| -> Value {
        (0..200)
            .map(|i| {
                json!({
                    "id": format!("{p}{i:03}{}", "i".repeat(96)),
                    "label": "l".repeat(200),
                    "group": "g".repeat(80),
                })
            })
            .collect()
    };
    let body = with(&|b| {
        b["widget"]["left"] = side("l");
        b["widget"]["right"] = side("r");
    });
    created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
}

#[tokio::test]
async fn bad_mapping_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let secret = canary("mapping");
    let r = app
        .put_env(
            &s.host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let id = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &columns(false, false),
        )
        .await,
    )
    .await;
    let pairs = |p: &[(&str, &str)]| -> Value {
        let m: Vec<Value> = p
            .iter()
            .map(|(l, r)| json!({ "left": l, "right": r }))
            .collect();
        json!({ "structured": { "mappings": m } })
    };
    let all = [
        ("email", "contact.email"),
        ("full_name", "contact.name"),
        ("signup", "skip"),
    ];
    let cases = [
        (pairs(&[("Mars", "skip")]), "unknown_id"),
        (pairs(&[("email", "Mars")]), "unknown_id"),
        (
            pairs(&[
                ("email", "skip"),
                ("full_name", "skip"),
                ("signup", "contact.email"),
            ]),
            "many_to_one",
        ),
        (pairs(&[("email", "skip")]), "unmapped_left"),
        (
            pairs(&[("email", "skip"), ("email", "contact.name")]),
            "left_mapped_twice",
        ),
        (pairs(&[]), "answer_required"),
        (
            {
                let mut b = pairs(&all);
                b["freeform"] = json!(format!("use {secret}"));
                b
            },
            "answer_contains_secret",
        ),
    ];
    for (body, code) in &cases {
        let r = submit_json(&app, &browser, &id, body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some(&secret)).await;
        assert!(!message.contains("Mars"), "{message}");
    }
    for body in [
        json!({ "structured": { "mappings": [{ "left": "email", "right": "skip", "why": 1 }] } }),
        json!({ "structured": { "mappings": { "email": "skip" } } }),
        json!({ "structured": { "selected": [] } }),
    ] {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    for (fields, code) in [
        (vec![("map.7", "skip")], "unknown_id"),
        (vec![("map.0", "Mars")], "unknown_id"),
        (
            vec![
                ("map.0", "skip"),
                ("map.1", "skip"),
                ("map.2", "contact.name"),
            ],
            "many_to_one",
        ),
        (
            vec![("map.0", "skip"), ("map.1", ""), ("map.2", "")],
            "unmapped_left",
        ),
    ] {
        let r = app
            .post_form(&browser, &format!("/widgets/{id}/submit"), &fields)
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(&format!(r#"data-code="{code}""#)), "{code}");
    }
    unchanged(&app, &s, &id).await;
    let r = submit_json(&app, &browser, &id, &pairs(&all)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = submit_json(&app, &browser, &id, &pairs(&all)).await;
    assert_error(r, StatusCode::CONFLICT, "widget_not_pending", None).await;
}
