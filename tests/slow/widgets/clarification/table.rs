//! `table`: created over MCP, edited in Chromium in place (with JavaScript)
//! and through plain form controls (with it off), its limits and bad
//! answers refused with stable codes, and agent-written headings, cells
//! and options inert against the XSS corpus.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/table.rs`.

use serde_json::{Value, json};

use crate::helpers::chrome::{
    Chrome, XSS, assert_inert, enabled, open_transcript, texts, wait_for,
};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::{owners, rows};
use crate::helpers::{Scene, ask, created_alone, prompt_of, scene, spawn_app, widget};

const ENTER: &str = "\u{E007}";

const ESCAPE: &str = "\u{E00C}";

#[tokio::test]
async fn a_table_asked_over_mcp_is_edited_in_place_in_chromium() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    let id = clarify_over_mcp(&client, owners()).await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!(
            "{card} form.clarification.type-table button.cell-view"
        ))
        .await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        texts(&chrome, &format!("{card} th")).await,
        json!(["Service", "Owner", "On call", "Tier"])
    );
    // Text cells show their value as a button, with the field hidden.
    assert_eq!(
        texts(&chrome, &format!("{card} button.cell-view")).await,
        json!(["alice", "—"])
    );
    assert_eq!(
        chrome
            .css(&format!("{card} button.cell-view"))
            .await
            .attr("aria-label")
            .await
            .unwrap()
            .as_deref(),
        Some("Edit Owner, row 1: alice")
    );
    let owner = format!("#w-{id}-r0-c1");
    assert!(!chrome.css(&owner).await.is_displayed().await.unwrap());
    let send = format!("{card} form.clarification button.primary");
    assert!(!enabled(&chrome, &send).await, "nothing edited or typed");

    // Click the owner, type over it, Enter: the edit stays, the focus goes
    // back to the cell, the form is not sent.
    chrome
        .css(&format!("{card} td.editable button.cell-view"))
        .await
        .click()
        .await
        .unwrap();
    assert!(chrome.css(&owner).await.is_displayed().await.unwrap());
    assert_eq!(
        chrome.js("return document.activeElement.id;").await,
        json!(format!("w-{id}-r0-c1"))
    );
    chrome
        .active_element()
        .await
        .unwrap()
        .send_keys(&format!("bob{ENTER}"))
        .await
        .unwrap();
    assert_eq!(
        texts(&chrome, &format!("{card} button.cell-view")).await,
        json!(["bob", "—"])
    );
    assert_eq!(
        chrome.js("return document.activeElement.className;").await,
        "cell-view"
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .table-status")).await,
        json!(["1 cell edited"])
    );
    assert_eq!(chrome.count(&format!("{card} td.edited")).await, 1);
    assert!(enabled(&chrome, &send).await);
    assert_eq!(widget(&app, &s.agent, &id).await["status"], "pending");

    // The second owner, by keyboard: Enter on the focused cell opens it,
    // Escape drops what was typed.
    chrome
        .js(&format!(
            "document.querySelectorAll('{card} button.cell-view')[1].focus(); return true;"
        ))
        .await;
    chrome
        .active_element()
        .await
        .unwrap()
        .send_keys(ENTER)
        .await
        .unwrap();
    let second = format!("#w-{id}-r1-c1");
    assert!(chrome.css(&second).await.is_displayed().await.unwrap());
    chrome
        .active_element()
        .await
        .unwrap()
        .send_keys(&format!("nobody{ESCAPE}"))
        .await
        .unwrap();
    assert_eq!(
        texts(&chrome, &format!("{card} button.cell-view")).await,
        json!(["bob", "—"])
    );
    assert_eq!(
        chrome
            .js(&format!("return document.querySelector('{second}').value;"))
            .await,
        ""
    );

    // Tick on-call off for web, pick a tier, and a few words.
    chrome
        .css(&format!("#w-{id}-r1-c2"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{id}-r1-c3"))
        .await
        .select_by_value("silver")
        .await
        .unwrap();
    assert_eq!(
        texts(&chrome, &format!("{card} .table-status")).await,
        json!(["3 cells edited"])
    );
    chrome
        .css(&format!("#w-{id}-freeform"))
        .await
        .send_keys("web needs an owner")
        .await
        .unwrap();
    chrome.screenshot_to("clarification-table.png").await;
    chrome.css(&send).await.click().await.unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(chrome.count(&format!("{card} form")).await, 0);
    assert_eq!(
        texts(&chrome, &format!("{card} td.edited")).await,
        json!(["bob (edited)", "no (edited)", "silver (edited)"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} dl.answers dd")).await,
        json!(["3 cells", "web needs an owner"])
    );
    let expected = json!({ "rows": [
        { "name": "api", "owner": "bob", "on_call": false, "tier": "gold" },
        { "name": "web", "owner": "", "on_call": false, "tier": "silver" },
    ] });
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        r#"[Agor] User answered your question "Who owns these services?": {"structured":{"edited":[{"column":"owner","row":0,"value":"bob"},{"column":"on_call","row":1,"value":false},{"column":"tier","row":1,"value":"silver"}]},"freeform":"web needs an owner"}"#
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(
        state["result"],
        json!({ "structured": expected, "freeform": "web needs an owner", "answered_by": "alice" })
    );
    assert_eq!(state["params"]["widget"]["rows"], rows());
    chrome.close().await;
}

#[tokio::test]
async fn a_table_is_answered_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let edited = clarify_over_mcp(&client, owners()).await;
    let typed = clarify_over_mcp(&client, owners()).await;
    let nothing = clarify_over_mcp(&client, owners()).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{edited} form")).await;
    assert_eq!(chrome.count("button.cell-view").await, 0, "no script ran");
    let send = |id: &str| format!("#w-{id} form.clarification button.primary");
    assert!(enabled(&chrome, &send(&edited)).await);

    // Every editable cell is a plain control: a text field, a check box, a
    // select.
    let owner = chrome.css(&format!("#w-{edited}-r0-c1")).await;
    owner.clear().await.unwrap();
    owner.send_keys("carol").await.unwrap();
    chrome
        .css(&format!("#w-{edited}-r1-c1"))
        .await
        .send_keys("dave")
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{edited}-r0-c2"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{edited}-r0-c3"))
        .await
        .select_by_value("")
        .await
        .unwrap();
    chrome.css(&send(&edited)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{edited} .badge-submitted"))
        .await;
    let expected = json!({ "rows": [
        { "name": "api", "owner": "carol", "on_call": true, "tier": null },
        { "name": "web", "owner": "dave", "on_call": true, "tier": null },
    ] });
    assert_eq!(
        widget(&app, &s.agent, &edited).await["result"]["structured"],
        expected
    );
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &edited).await,
        r#"[Agor] User answered your question "Who owns these services?": {"structured":{"edited":[{"column":"owner","row":0,"value":"carol"},{"column":"on_call","row":0,"value":true},{"column":"tier","row":0,"value":null},{"column":"owner","row":1,"value":"dave"}]},"freeform":""}"#
    );

    // Only words: the table as it was is kept beside them (the check box
    // still ticked is sent as ticked, the one left unticked as false).
    chrome
        .css(&format!("#w-{typed}-freeform"))
        .await
        .send_keys("Ask the team leads")
        .await
        .unwrap();
    chrome.css(&send(&typed)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{typed} .badge-submitted"))
        .await;
    let state = widget(&app, &s.agent, &typed).await;
    assert_eq!(state["result"]["structured"], json!({ "rows": rows() }));
    assert_eq!(state["result"]["freeform"], "Ask the team leads");

    // Nothing at all: the reason beside the card.
    chrome.css(&send(&nothing)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{nothing} .alert[data-code=answer_required]"))
        .await;
    assert_eq!(widget(&app, &s.agent, &nothing).await["status"], "pending");
    chrome.close().await;
}

#[tokio::test]
async fn agent_written_headings_cells_and_options_are_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = open_transcript(&app, "alice", &session).await;

    // The corpus as the question, headings, read-only and editable cells
    // and select options, in one table arriving while the page is open.
    let columns = json!([
        { "key": "label", "label": XSS[0] },
        { "key": "note", "label": XSS[1], "editable": true },
        { "key": "pick", "label": XSS[2], "editable": true, "type": "select", "options": XSS },
    ]);
    let rows: Vec<Value> = XSS
        .iter()
        .map(|p| json!({ "label": p, "note": p, "pick": p }))
        .collect();
    let body = json!({ "question": XSS[3], "widget": { "type": "table", "columns": columns, "rows": rows } });
    let id = created_alone(ask(&app, &agent, &session, "clarification", &body).await).await;
    let card = format!("#w-{id}");
    wait_for("the card to arrive live", || async {
        chrome.count(&format!("{card} button.cell-view")).await == XSS.len()
    })
    .await;
    assert!(chrome.same_document().await);
    assert_inert(&chrome, "test · widgetd").await;
    let corpus = json!(XSS);
    assert_eq!(texts(&chrome, &format!("{card} th")).await, json!(XSS[..3]));
    let read_only = format!(
        "return [...document.querySelectorAll('{card} tbody tr td:first-child')].map(e => e.textContent);"
    );
    assert_eq!(chrome.js(&read_only).await, corpus);
    let values = format!(
        "return [...document.querySelectorAll('{card} td.editable input[type=text]')].map(e => e.value);"
    );
    assert_eq!(chrome.js(&values).await, corpus);
    let buttons = format!(
        "return [...document.querySelectorAll('{card} button.cell-view')].map(e => e.textContent);"
    );
    assert_eq!(chrome.js(&buttons).await, corpus);
    let options = format!(
        "return [...document.querySelector('#w-{id}-r0-c2').options].slice(1).map(o => o.value);"
    );
    assert_eq!(chrome.js(&options).await, corpus);

    // Edited by typing, then shown in the answered card.
    chrome
        .css(&format!("{card} button.cell-view"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .active_element()
        .await
        .unwrap()
        .send_keys(&format!("{}{ENTER}", XSS[4]))
        .await
        .unwrap();
    assert_inert(&chrome, "test · widgetd").await;
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    let result = widget(&app, &agent, &id).await["result"]["structured"].clone();
    assert_eq!(result["rows"][0]["note"], XSS[4]);
    let prompt = prompt_of(&app, &host, &session, &id).await;
    assert!(prompt.contains(&json!(XSS[4]).to_string()), "{prompt}");
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    assert_eq!(
        texts(&chrome, &format!("{card} td.edited")).await,
        json!([format!("{} (edited)", XSS[4])])
    );
    chrome.close().await;
}
