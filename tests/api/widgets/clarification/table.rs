//! `table`: created over MCP, edited in Chromium in place (with JavaScript)
//! and through plain form controls (with it off), its limits and bad
//! answers refused with stable codes, and agent-written headings, cells
//! and options inert against the XSS corpus.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/table.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::connect;
use crate::helpers::samples::{owners, rows};
use crate::helpers::{
    ask, assert_error, canary, created_alone, malformed_on_both, refused_on_both, scene, spawn_app,
    submit_json, unchanged, widget,
};

#[tokio::test]
async fn table_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = owners();
        change(&mut body["widget"]);
        body
    };
    let column = |i: usize| json!({ "key": format!("k{i}"), "label": "L", "editable": true });
    let cases = [
        (with(&|w| w["columns"] = json!([])), "columns_count"),
        (
            with(&|w| w["columns"] = json!((0..21).map(column).collect::<Vec<_>>())),
            "columns_count",
        ),
        (with(&|w| w["rows"] = json!([])), "rows_count"),
        (
            with(&|w| w["rows"] = json!(vec![json!({}); 201])),
            "rows_count",
        ),
        (
            with(&|w| w["columns"][1]["key"] = json!("a.b")),
            "invalid_column_key",
        ),
        (
            with(&|w| w["columns"][1]["key"] = json!("name")),
            "duplicate_column_key",
        ),
        (
            with(&|w| {
                for c in 1..4 {
                    w["columns"][c]["editable"] = json!(false);
                }
            }),
            "no_editable_column",
        ),
        (
            with(&|w| w["columns"][0]["label"] = json!(" ")),
            "empty_label",
        ),
        (
            with(&|w| w["columns"][0]["label"] = json!("l".repeat(81))),
            "label_too_long",
        ),
        (
            with(&|w| w["columns"][3]["options"] = json!([])),
            "options_count",
        ),
        (
            with(&|w| w["columns"][1]["options"] = json!(["x"])),
            "options_not_allowed",
        ),
        (
            with(&|w| w["rows"][0]["colour"] = json!("red")),
            "unknown_column",
        ),
        (
            with(&|w| w["rows"][0]["on_call"] = json!("yes")),
            "invalid_cell",
        ),
        (
            with(&|w| w["rows"][0]["tier"] = json!("bronze")),
            "invalid_cell",
        ),
        (
            with(&|w| w["rows"][0]["owner"] = json!("o".repeat(501))),
            "cell_too_long",
        ),
    ];
    for (body, code) in &cases {
        let message = refused_on_both(&app, (&s, &client), body, code, Some("bronze")).await;
        assert!(!message.contains("colour"), "{message}");
    }
    for (body, at) in [
        (with(&|w| w["colour"] = json!("red")), "(at `widget`)"),
        (
            with(&|w| w["columns"][0]["width"] = json!(3)),
            "(at `widget.columns.0`)",
        ),
        (
            with(&|w| w["columns"][0]["type"] = json!("date")),
            "(at `widget.columns.0.type`)",
        ),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, None).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    // At the limits, it is accepted: 20 columns, 200 rows.
    let body = with(&|w| {
        w["columns"] = json!((0..20).map(column).collect::<Vec<_>>());
        w["rows"] = json!(vec![json!({ "k0": "c".repeat(500) }); 200]);
    });
    created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
}

#[tokio::test]
async fn bad_table_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let secret = canary("cell");
    let r = app
        .put_env(
            &s.host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let id = created_alone(ask(&app, &s.agent, &s.session, "clarification", &owners()).await).await;
    let cases = [
        (json!({ "structured": { "rows": [{}] } }), "rows_changed"),
        (
            json!({ "structured": { "rows": [{}, {}, {}] } }),
            "rows_changed",
        ),
        (
            json!({ "structured": { "rows": [{ "name": "Mars" }, {}] } }),
            "read_only_cell",
        ),
        (
            json!({ "structured": { "rows": [{ "colour": "Mars" }, {}] } }),
            "unknown_column",
        ),
        (
            json!({ "structured": { "rows": [{}, { "on_call": "Mars" }] } }),
            "invalid_cell",
        ),
        (
            json!({ "structured": { "rows": [{}, { "tier": "Mars" }] } }),
            "invalid_cell",
        ),
        (
            json!({ "structured": { "rows": [{}, { "owner": "Ma\nrs" }] } }),
            "invalid_cell",
        ),
        (
            json!({ "structured": { "rows": [{}, { "owner": "o".repeat(501) }] } }),
            "cell_too_long",
        ),
        (
            json!({ "structured": { "rows": [{}, { "owner": format!("key {secret}") }] } }),
            "answer_contains_secret",
        ),
        (
            json!({ "structured": { "rows": rows() } }),
            "answer_required",
        ),
    ];
    for (body, code) in &cases {
        let r = submit_json(&app, &browser, &id, body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some(&secret)).await;
        assert!(
            !message.contains("Mars") && !message.contains("colour"),
            "{message}"
        );
    }
    for body in [
        json!({ "structured": { "rows": [{}, {}], "selected": [] } }),
        json!({ "structured": { "rows": {} } }),
        json!({ "structured": { "rows": ["api", "web"] } }),
    ] {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    let holding = format!("key {secret}");
    for (fields, code) in [
        (vec![("cell.0.name", "Mars")], "read_only_cell"),
        (vec![("cell.2.owner", "Mars")], "unknown_cell"),
        (vec![("cell.0.colour", "Mars")], "unknown_cell"),
        (vec![("cell.0.tier", "Mars")], "invalid_cell"),
        (
            vec![("cell.0.owner", holding.as_str())],
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
    // Cells left out are unchanged; a read-only cell sent as it was is fine.
    let sent = json!({ "structured": { "rows": [{ "name": "api", "owner": "bob" }, {}] } });
    assert_eq!(
        submit_json(&app, &browser, &id, &sent).await.status(),
        StatusCode::OK
    );
    let result = &widget(&app, &s.agent, &id).await["result"];
    assert_eq!(result["structured"]["rows"][0]["owner"], "bob");
    assert_eq!(result["structured"]["rows"][1], rows()[1]);
    let r = submit_json(&app, &browser, &id, &json!({ "freeform": "again" })).await;
    assert_error(r, StatusCode::CONFLICT, "widget_not_pending", None).await;
}
