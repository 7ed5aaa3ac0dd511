//! `tree`: created over MCP, edited in Chromium by renaming a node in place,
//! moving one under another with "Move" and "Put here", deleting one and
//! adding one; again with JavaScript off through the name fields, parent
//! selects and delete boxes; its limits and bad answers refused with stable
//! codes, and agent-written labels, ids and metadata inert against the XSS
//! corpus.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/tree.rs`.

use fantoccini::key::Key;
use serde_json::{Value, json};

use crate::helpers::chrome::{Chrome, XSS, assert_inert, click, open_transcript, texts};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::sections;
use crate::helpers::{Scene, ask, created_alone, prompt_of, scene, spawn_app, widget};

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
