//! `tree`: created over MCP, edited in Chromium by renaming a node in place,
//! moving one under another with "Move" and "Put here", deleting one and
//! adding one; again with JavaScript off through the name fields, parent
//! selects and delete boxes; its limits and bad answers refused with stable
//! codes, and agent-written labels, ids and metadata inert against the XSS
//! corpus.

use fantoccini::key::Key;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{malformed_on_both, open_transcript, refused_on_both, unchanged};
use crate::helpers::chrome::Chrome;
use crate::helpers::chrome::click;
use crate::helpers::chrome::texts;
use crate::helpers::mcp::clarify_over_mcp;
use crate::helpers::mcp::{call, connect, structured};
use crate::helpers::{Scene, assert_error, canary, scene, spawn_app};
use crate::helpers::{ask, created_alone, prompt_of, submit_json, widget};
use crate::web::browser::{XSS, assert_inert};

/// A docs site's sections: guide ─ install, guide ─ usage, reference ─ api.
fn sections(all: bool) -> Value {
    json!({
        "question": "How should the docs be organised?",
        "widget": {
            "type": "tree",
            "nodes": [
                { "id": "guide", "label": "Guide" },
                { "id": "install", "label": "Install", "parent_id": "guide", "metadata": { "pages": 3 } },
                { "id": "usage", "label": "Usage", "parent_id": "guide" },
                { "id": "reference", "label": "Reference" },
                { "id": "api", "label": "API", "parent_id": "reference", "metadata": { "owner": "bob" } },
            ],
            "allow_reparent": all,
            "allow_delete": all,
            "allow_rename": all,
            "allow_add": all,
        },
    })
}

/// The rows as shown, in order: `"depth name"`.
async fn shown(chrome: &Chrome, id: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('#w-{id} li.tree-row')].map(r =>
               [...r.classList].find(c => c.startsWith('depth-')).slice(6) + ' ' +
               (r.querySelector('button.tree-name-view, span.tree-name') || r.querySelector('.tree-name')).textContent.trim()
               + (r.classList.contains('removed') ? ' (removed)' : ''));"
        ))
        .await
}

#[tokio::test]
async fn a_tree_asked_over_mcp_is_edited_in_chromium() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    let id = clarify_over_mcp(&client, sections(true)).await;
    let card = format!("#w-{id}");
    chrome.wait_css(&format!("{card} fieldset.tree.live")).await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        shown(&chrome, &id).await,
        json!(["0 Guide", "1 Install", "1 Usage", "0 Reference", "1 API"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .tree-meta")).await,
        json!(["pages: 3", "owner: bob"])
    );
    assert!(
        !chrome
            .css(&format!("#w-{id}-n1-parent"))
            .await
            .is_displayed()
            .await
            .unwrap(),
        "the select is the state, not the control"
    );

    // Rename "Usage" in place: press the name, type, Enter.
    click(&chrome, &format!("#w-{id}-n2-label-view")).await;
    let field = chrome.active_element().await.unwrap();
    assert_eq!(
        field.attr("name").await.unwrap().as_deref(),
        Some("label.2")
    );
    field.send_keys("Using it").await.unwrap();
    field.send_keys(&Key::Enter).await.unwrap();
    assert_eq!(
        chrome.js("return document.activeElement.id;").await,
        format!("w-{id}-n2-label-view"),
        "the focus goes back to the name"
    );
    // Escape drops an edit.
    click(&chrome, &format!("#w-{id}-n0-label-view")).await;
    let field = chrome.active_element().await.unwrap();
    field.send_keys("Nope").await.unwrap();
    field.send_keys(&Key::Escape).await.unwrap();

    // Move "API" under "Guide": Move, then Put here on Guide. Its own row
    // and Reference (its parent) offer no place.
    click(&chrome, &format!("#w-{id}-n4-move")).await;
    assert!(
        !chrome
            .css(&format!("#w-{id}-n4-drop"))
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    assert!(
        !chrome
            .css(&format!("#w-{id}-n3-drop"))
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    click(&chrome, &format!("#w-{id}-n0-drop")).await;
    // Delete "Reference" and add "FAQ" under Guide.
    click(&chrome, &format!("#w-{id}-n3-delete")).await;
    chrome
        .css(&format!("#w-{id}-add0-label"))
        .await
        .send_keys("FAQ")
        .await
        .unwrap();
    click(
        &chrome,
        &format!("#w-{id}-add0-parent option[value='guide']"),
    )
    .await;
    assert_eq!(
        shown(&chrome, &id).await,
        json!([
            "0 Guide",
            "1 Install",
            "1 Using it",
            "1 API",
            "0 Reference (removed)"
        ])
    );
    chrome.screenshot_to("clarification-tree.png").await;
    click(
        &chrome,
        &format!("{card} form.clarification button.primary"),
    )
    .await;
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} .tree-deleted dd")).await,
        json!(["Reference"])
    );
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        r#"[Agor] User answered your question "How should the docs be organised?": {"structured":{"added":[["new-1","FAQ","guide"]],"deleted":["reference"],"moved":[["api","guide"]],"renamed":[["usage","Using it"]]},"freeform":""}"#
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(
        state["result"]["structured"],
        json!({ "nodes": [
            { "id": "guide", "label": "Guide" },
            { "id": "install", "label": "Install", "parent_id": "guide", "metadata": { "pages": 3 } },
            { "id": "usage", "label": "Using it", "parent_id": "guide" },
            { "id": "api", "label": "API", "parent_id": "guide", "metadata": { "owner": "bob" } },
            { "id": "new-1", "label": "FAQ", "parent_id": "guide" },
        ] })
    );
    chrome.close().await;
}

#[tokio::test]
async fn a_tree_is_edited_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let edited = clarify_over_mcp(&client, sections(true)).await;
    let cycled = clarify_over_mcp(&client, sections(true)).await;
    let fixed = clarify_over_mcp(&client, sections(false)).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{edited} form")).await;
    assert_eq!(
        chrome.count(&format!("#w-{edited} button.tree-move")).await,
        0
    );
    let send = |id: &str| format!("#w-{id} form.clarification button.primary");

    // Rename by typing at the end of the field, move by the select, delete
    // by the box (which takes what is under it), add by a row.
    chrome
        .css(&format!("#w-{edited}-n3-label"))
        .await
        .send_keys(" docs")
        .await
        .unwrap();
    click(
        &chrome,
        &format!("#w-{edited}-n1-parent option[value='reference']"),
    )
    .await;
    click(&chrome, &format!("#w-{edited}-n0-delete")).await;
    chrome
        .css(&format!("#w-{edited}-add1-label"))
        .await
        .send_keys("Changelog")
        .await
        .unwrap();
    click(&chrome, &send(&edited)).await;
    chrome
        .wait_css(&format!("#w-{edited} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &edited).await["result"]["structured"],
        json!({ "nodes": [
            { "id": "install", "label": "Install", "parent_id": "reference", "metadata": { "pages": 3 } },
            { "id": "reference", "label": "Reference docs" },
            { "id": "api", "label": "API", "parent_id": "reference", "metadata": { "owner": "bob" } },
            { "id": "new-2", "label": "Changelog" },
        ] })
    );
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &edited).await,
        r#"[Agor] User answered your question "How should the docs be organised?": {"structured":{"added":[["new-2","Changelog",null]],"deleted":["guide","usage"],"moved":[["install","reference"]],"renamed":[["reference","Reference docs"]]},"freeform":""}"#
    );

    // A node under its own child: refused, the reason beside the card.
    click(
        &chrome,
        &format!("#w-{cycled}-n0-parent option[value='install']"),
    )
    .await;
    click(&chrome, &send(&cycled)).await;
    chrome
        .wait_css(&format!("#w-{cycled} .alert[data-code=cycle]"))
        .await;
    assert_eq!(widget(&app, &s.agent, &cycled).await["status"], "pending");

    // Nothing allowed: the tree is shown as text, answered in words.
    assert_eq!(
        chrome
            .count(&format!("#w-{fixed} input.tree-name, #w-{fixed} select"))
            .await,
        0
    );
    assert_eq!(
        texts(&chrome, &format!("#w-{fixed} li.tree-row span.tree-name")).await,
        json!(["Guide", "Install", "Usage", "Reference", "API"])
    );
    chrome
        .css(&format!("#w-{fixed}-freeform"))
        .await
        .send_keys("Fine as it is")
        .await
        .unwrap();
    click(&chrome, &send(&fixed)).await;
    chrome
        .wait_css(&format!("#w-{fixed} .badge-submitted"))
        .await;
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &fixed).await,
        r#"[Agor] User answered your question "How should the docs be organised?": {"structured":{"added":[],"deleted":[],"moved":[],"renamed":[]},"freeform":"Fine as it is"}"#
    );
    chrome.close().await;
}

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

#[tokio::test]
async fn agent_written_tree_labels_and_metadata_are_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = open_transcript(&app, "alice", &session).await;

    // The corpus as ids, labels, metadata keys and values, each node under
    // the one before.
    let nodes: Vec<Value> = XSS
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut n = json!({ "id": p, "label": p, "metadata": { p.chars().take(40).collect::<String>(): p } });
            if i > 0 {
                n["parent_id"] = json!(XSS[i - 1]);
            }
            n
        })
        .collect();
    let body = json!({
        "question": XSS[12],
        "widget": { "type": "tree", "nodes": nodes, "allow_rename": true, "allow_reparent": true, "allow_delete": true, "allow_add": true },
    });
    let id = created_alone(ask(&app, &agent, &session, "clarification", &body).await).await;
    chrome
        .wait_css(&format!("#w-{id} fieldset.tree.live"))
        .await;
    assert!(chrome.same_document().await);
    assert_inert(&chrome, "test · widgetd").await;
    let names = chrome
        .js(&format!(
            "return [...document.querySelectorAll('#w-{id} button.tree-name-view')].map(b => b.textContent);"
        ))
        .await;
    assert_eq!(names, json!(XSS));

    // Move the last node to the top level and rename the first, by the page.
    let last = XSS.len() - 1;
    click(&chrome, &format!("#w-{id}-n{last}-move")).await;
    click(&chrome, &format!("#w-{id}-tree-top")).await;
    click(&chrome, &format!("#w-{id}-n0-label-view")).await;
    let field = chrome.active_element().await.unwrap();
    field.send_keys(XSS[1]).await.unwrap();
    field.send_keys(&Key::Enter).await.unwrap();
    click(
        &chrome,
        &format!("#w-{id} form.clarification button.primary"),
    )
    .await;
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    let result = widget(&app, &agent, &id).await["result"]["structured"].clone();
    assert_eq!(result["nodes"][0]["label"], XSS[1]);
    assert_eq!(result["nodes"][0]["id"], XSS[0]);
    assert!(result["nodes"][last].get("parent_id").is_none(), "{result}");
    let prompt = prompt_of(&app, &host, &session, &id).await;
    let renamed = json!([[XSS[0], XSS[1]]]).to_string();
    assert!(prompt.contains(&renamed), "{prompt}");

    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}
