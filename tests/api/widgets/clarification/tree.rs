//! `tree`: created over MCP, edited in Chromium by renaming a node in place,
//! moving one under another with "Move" and "Put here", deleting one and
//! adding one; again with JavaScript off through the name fields, parent
//! selects and delete boxes; its limits and bad answers refused with stable
//! codes, and agent-written labels, ids and metadata inert against the XSS
//! corpus.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/tree.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::mcp::connect;
use crate::helpers::samples::sections;
use crate::helpers::{
    ask, assert_error, canary, created_alone, malformed_on_both, refused_on_both, scene, spawn_app,
    submit_json, unchanged,
};

#[tokio::test]
async fn tree_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = sections(true);
        change(&mut body);
        body
    };
    let many: Vec<Value> = (0..501)
        .map(|i| json!({ "id": format!("n{i}"), "label": "n" }))
        .collect();
    let cases = [
        (with(&|b| b["widget"]["nodes"] = json!([])), "nodes_count"),
        (with(&|b| b["widget"]["nodes"] = json!(many)), "nodes_count"),
        (
            with(&|b| b["widget"]["nodes"][4]["id"] = json!("guide")),
            "duplicate_id",
        ),
        (
            with(&|b| b["widget"]["nodes"][4]["parent_id"] = json!("nowhere")),
            "unknown_parent",
        ),
        (
            with(&|b| b["widget"]["nodes"][0]["parent_id"] = json!("usage")),
            "cycle",
        ),
        (
            with(&|b| b["widget"]["nodes"][0]["label"] = json!("l".repeat(201))),
            "label_too_long",
        ),
        (
            with(&|b| b["widget"]["nodes"][0]["id"] = json!("")),
            "empty_id",
        ),
        (
            with(&|b| b["widget"]["nodes"][1]["metadata"] = json!({ "pages": [1] })),
            "invalid_metadata",
        ),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    for (body, at) in [
        (
            with(&|b| b["widget"]["allow_move"] = json!(true)),
            "(at `widget`)",
        ),
        (
            with(&|b| b["widget"]["nodes"][2]["children"] = json!([])),
            "(at `widget.nodes.2`)",
        ),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, None).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    // At the limit: 500 nodes, a chain 500 deep, accepted and shown.
    let chain: Vec<Value> = (0..500)
        .map(|i| {
            let mut n = json!({ "id": format!("n{i}"), "label": format!("Node {i}") });
            if i > 0 {
                n["parent_id"] = json!(format!("n{}", i - 1));
            }
            n
        })
        .collect();
    let body = with(&|b| b["widget"]["nodes"] = json!(chain));
    let id = created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    let browser = app.login("alice").await;
    let page = app
        .page(&browser, &format!("/sessions/{}", s.session))
        .await;
    assert!(page.contains(&format!(r#"id="w-{id}-n499""#)));
    assert!(
        page.contains(r#"list="w-"#),
        "past 100 nodes, parents are typed ids"
    );
}

#[tokio::test]
async fn bad_tree_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let secret = canary("tree");
    let r = app
        .put_env(
            &s.host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let open =
        created_alone(ask(&app, &s.agent, &s.session, "clarification", &sections(true)).await)
            .await;
    let fixed = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &sections(false),
        )
        .await,
    )
    .await;
    let nodes = |change: &dyn Fn(&mut Vec<Value>)| -> Value {
        let mut n: Vec<Value> = sections(true)["widget"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| json!({ "id": n["id"], "label": n["label"], "parent_id": n["parent_id"] }))
            .collect();
        change(&mut n);
        json!({ "structured": { "nodes": n } })
    };
    for (id, body, code) in [
        (
            &fixed,
            nodes(&|n| n[0]["label"] = json!("Tutorial")),
            "rename_not_allowed",
        ),
        (
            &fixed,
            nodes(&|n| n[2]["parent_id"] = json!("reference")),
            "reparent_not_allowed",
        ),
        (
            &fixed,
            nodes(&|n| {
                n.pop();
            }),
            "delete_not_allowed",
        ),
        (
            &fixed,
            nodes(&|n| n.push(json!({ "id": "x", "label": "X" }))),
            "add_not_allowed",
        ),
        (
            &open,
            nodes(&|n| n[0]["parent_id"] = json!("install")),
            "cycle",
        ),
        (
            &open,
            nodes(&|n| {
                n.remove(3);
            }),
            "unknown_parent",
        ),
        (
            &open,
            nodes(&|n| n[1]["parent_id"] = json!("Mars")),
            "unknown_parent",
        ),
        (
            &open,
            nodes(&|n| n.push(json!({ "id": "guide", "label": "Again" }))),
            "duplicate_id",
        ),
        (
            &open,
            nodes(&|n| n[0]["label"] = json!("a\u{7}")),
            "invalid_label",
        ),
        (
            &open,
            nodes(&|n| n[4]["metadata"] = json!({ "owner": "eve" })),
            "metadata_changed",
        ),
        (
            &open,
            nodes(&|n| n[0]["label"] = json!(format!("key {secret}"))),
            "answer_contains_secret",
        ),
        (&fixed, nodes(&|_| {}), "answer_required"),
    ] {
        let r = submit_json(&app, &browser, id, &body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some(&secret)).await;
        assert!(
            !message.contains("Mars") && !message.contains("Tutorial"),
            "{message}"
        );
    }
    for (fields, code) in [
        (vec![("label.9", "x")], "unknown_node"),
        (vec![("add.5.label", "x")], "unknown_node"),
        (vec![("parent.0", "usage")], "cycle"),
        (vec![("label.0", "")], "empty_label"),
    ] {
        let r = app
            .post_form(&browser, &format!("/widgets/{open}/submit"), &fields)
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(&format!(r#"data-code="{code}""#)), "{code}");
    }
    for body in [
        json!({ "structured": { "nodes": [{ "id": "guide", "label": "Guide", "children": [] }] } }),
        json!({ "structured": { "nodes": {} } }),
        json!({ "structured": {} }),
    ] {
        let r = submit_json(&app, &browser, &open, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    unchanged(&app, &s, &open).await;
}
