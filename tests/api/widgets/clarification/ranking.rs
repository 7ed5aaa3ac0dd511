//! `ranking`: created over MCP, ordered in Chromium by dragging and by the
//! keyboard, placed in tiers the same ways, answered again through the
//! position and tier selects with JavaScript off; its limits and bad
//! answers refused with stable codes, and agent-written labels inert
//! against the XSS corpus.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/ranking.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::connect;
use crate::helpers::samples::features;
use crate::helpers::{
    ask, assert_error, created_alone, malformed_on_both, refused_on_both, scene, spawn_app,
    submit_json, unchanged,
};

#[tokio::test]
async fn ranking_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = features(None);
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
        (with(&|w| w["items"] = items(1)), "items_count"),
        (with(&|w| w["items"] = items(101)), "items_count"),
        (
            with(&|w| w["items"][1]["id"] = json!("sso")),
            "duplicate_id",
        ),
        (with(&|w| w["items"][1]["id"] = json!("")), "empty_id"),
        (
            with(&|w| w["items"][1]["id"] = json!("i".repeat(101))),
            "id_too_long",
        ),
        (
            with(&|w| w["items"][1]["label"] = json!(" ")),
            "empty_label",
        ),
        (
            with(&|w| w["items"][1]["label"] = json!("l".repeat(201))),
            "label_too_long",
        ),
        (
            with(&|w| w["items"][1]["label"] = json!("a\nb")),
            "invalid_label",
        ),
        (
            with(&|w| w["items"][1]["description"] = json!("d".repeat(301))),
            "description_too_long",
        ),
        (with(&|w| w["tiers"] = json!(["Must"])), "tiers_count"),
        (
            with(&|w| w["tiers"] = json!((0..11).map(|i| format!("t{i}")).collect::<Vec<_>>())),
            "tiers_count",
        ),
        (
            with(&|w| w["tiers"] = json!(["Must", "Must"])),
            "duplicate_tier",
        ),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    for (body, at) in [
        (with(&|w| w["order"] = json!("asc")), "(at `widget`)"),
        (
            with(&|w| w["items"][0]["score"] = json!(3)),
            "(at `widget.items.0`)",
        ),
        (with(&|w| w["tiers"] = json!("Must")), "(at `widget.tiers`)"),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, None).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    let body = with(&|w| {
        w["items"] = items(100);
        w["tiers"] = json!((0..10).map(|i| format!("t{i}")).collect::<Vec<_>>());
    });
    created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
}

#[tokio::test]
async fn bad_ranking_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let ordered =
        created_alone(ask(&app, &s.agent, &s.session, "clarification", &features(None)).await)
            .await;
    let tiered = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &features(Some(&["Must", "Later"])),
        )
        .await,
    )
    .await;
    let cases = [
        (
            &ordered,
            json!({ "structured": { "ranked": ["sso", "csv", "dark"] } }),
            "missing_item",
        ),
        (
            &ordered,
            json!({ "structured": { "ranked": ["sso", "csv", "dark", "dark"] } }),
            "duplicate_item",
        ),
        (
            &ordered,
            json!({ "structured": { "ranked": ["sso", "csv", "dark", "Mars"] } }),
            "unknown_item",
        ),
        (
            &ordered,
            json!({ "structured": { "tiers": {} } }),
            "ranking_shape",
        ),
        (&ordered, json!({ "structured": {} }), "ranking_shape"),
        (
            &ordered,
            json!({ "structured": { "ranked": ["sso", "csv", "dark", "api"] } }),
            "answer_required",
        ),
        (
            &tiered,
            json!({ "structured": { "tiers": { "Mars": ["sso"] } } }),
            "unknown_tier",
        ),
        (
            &tiered,
            json!({ "structured": { "tiers": { "Must": ["Mars"] } } }),
            "unknown_item",
        ),
        (
            &tiered,
            json!({ "structured": { "tiers": { "Must": ["sso"], "Later": ["sso"] } } }),
            "duplicate_item",
        ),
        (
            &tiered,
            json!({ "structured": { "ranked": ["sso", "csv", "dark", "api"] } }),
            "ranking_shape",
        ),
        (
            &tiered,
            json!({ "structured": { "tiers": {} } }),
            "answer_required",
        ),
    ];
    for (id, body, code) in &cases {
        let r = submit_json(&app, &browser, id, body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some("Mars")).await;
        assert!(!message.contains("Mars"), "{message}");
    }
    for body in [
        json!({ "structured": { "ranked": [], "order": [] } }),
        json!({ "structured": { "ranked": "sso" } }),
        json!({ "structured": { "tiers": { "Must": "sso" } } }),
    ] {
        let r = submit_json(&app, &browser, &ordered, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    for (id, fields, code) in [
        (&ordered, vec![("position.0", "5")], "invalid_position"),
        (&ordered, vec![("position.0", "Mars")], "invalid_position"),
        (&ordered, vec![("position.4", "1")], "unknown_item"),
        (&tiered, vec![("tier.0", "Mars")], "unknown_tier"),
        (&tiered, vec![("tier.9", "Must")], "unknown_item"),
    ] {
        let r = app
            .post_form(&browser, &format!("/widgets/{id}/submit"), &fields)
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(&format!(r#"data-code="{code}""#)), "{code}");
    }
    unchanged(&app, &s, &ordered).await;
    unchanged(&app, &s, &tiered).await;
}
