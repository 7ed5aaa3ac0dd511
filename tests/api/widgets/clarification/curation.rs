//! `curation`: created over MCP, curated in Chromium by typing in the
//! search box, ticking items and whole groups, answered again with
//! JavaScript off through the check boxes; its limits and bad answers
//! refused with stable codes, and agent-written labels, metadata and group
//! names inert against the XSS corpus.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/curation.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::connect;
use crate::helpers::samples::files;
use crate::helpers::{
    ask, assert_error, created_alone, malformed_on_both, prompt_of, refused_on_both, scene,
    spawn_app, submit_json, unchanged,
};

#[tokio::test]
async fn curation_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = files("all_selected");
        change(&mut body["widget"]);
        body
    };
    let items = |n: usize| {
        json!(
            (0..n)
                .map(|i| json!({ "id": format!("i{i}"), "label": format!("Item {i}") }))
                .collect::<Vec<_>>()
        )
    };
    let cases = [
        (with(&|w| w["items"] = json!([])), "items_count"),
        (with(&|w| w["items"] = items(501)), "items_count"),
        (
            with(&|w| w["items"][1]["id"] = json!("auth")),
            "duplicate_id",
        ),
        (with(&|w| w["items"][1]["id"] = json!(" ")), "empty_id"),
        (with(&|w| w["items"][1]["id"] = json!("a\tb")), "invalid_id"),
        (with(&|w| w["items"][1]["label"] = json!("")), "empty_label"),
        (
            with(&|w| w["items"][1]["label"] = json!("l".repeat(201))),
            "label_too_long",
        ),
        (
            with(&|w| w["items"][1]["label"] = json!("a\u{7}")),
            "invalid_label",
        ),
        (
            with(&|w| w["items"][1]["metadata"]["suite"] = json!(["a"])),
            "invalid_metadata",
        ),
        (
            with(&|w| w["items"][1]["metadata"]["suite"] = json!("s".repeat(201))),
            "invalid_metadata",
        ),
        (
            with(&|w| w["columns"] = json!(["a", "b", "c", "d", "e", "f", "g", "h", "i"])),
            "columns_count",
        ),
        (
            with(&|w| w["columns"] = json!(["size", "size"])),
            "duplicate_column",
        ),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    for (body, at) in [
        (with(&|w| w["sort"] = json!("asc")), "(at `widget`)"),
        (
            with(&|w| w["items"][0]["selected"] = json!(true)),
            "(at `widget.items.0`)",
        ),
        (
            with(&|w| w["default_state"] = json!("some_selected")),
            "(at `widget.default_state`)",
        ),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, None).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    let body = with(&|w| w["items"] = items(500));
    let id = created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    // 500 kept ids do not fit a prompt whole; the compact form carries the
    // shorter list.
    let browser = app.login("alice").await;
    let removed: Vec<String> = (0..3).map(|i| format!("i{i}")).collect();
    let kept: Vec<String> = (3..500).map(|i| format!("i{i}")).collect();
    let sent = json!({ "structured": { "kept": kept, "removed": removed } });
    assert_eq!(
        submit_json(&app, &browser, &id, &sent).await.status(),
        StatusCode::OK
    );
    assert!(
        prompt_of(&app, &s.host, &s.session, &id)
            .await
            .contains(r#"{"structured":{"kept_count":497,"removed":["i0","i1","i2"],"removed_count":3},"freeform":""}"#)
    );
}

#[tokio::test]
async fn bad_curation_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let id = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &files("all_selected"),
        )
        .await,
    )
    .await;
    let all = ["auth", "billing", "cache", "checkout", "search"];
    let cases = [
        (
            json!({ "structured": { "kept": all, "removed": [] } }),
            "missing_item",
        ),
        (
            json!({ "structured": { "kept": all, "removed": ["signup", "auth"] } }),
            "duplicate_item",
        ),
        (
            json!({ "structured": { "kept": all, "removed": ["signup", "Mars"] } }),
            "unknown_item",
        ),
        (
            json!({ "structured": { "kept": ["auth", "billing", "cache", "checkout", "search", "signup"], "removed": [] } }),
            "answer_required",
        ),
    ];
    for (body, code) in &cases {
        let r = submit_json(&app, &browser, &id, body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some("Mars")).await;
        assert!(!message.contains("Mars"), "{message}");
    }
    for body in [
        json!({ "structured": { "kept": all } }),
        json!({ "structured": { "kept": all, "removed": [], "selected": [] } }),
        json!({ "structured": { "kept": "auth", "removed": [] } }),
    ] {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    for fields in [
        vec![("keep_sent", "1"), ("keep", "6")],
        vec![("keep_sent", "1"), ("keep", "Mars")],
    ] {
        let r = app
            .post_form(&browser, &format!("/widgets/{id}/submit"), &fields)
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(r#"data-code="unknown_item""#));
    }
    unchanged(&app, &s, &id).await;
}
