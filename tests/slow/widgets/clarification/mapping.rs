//! `mapping`: created over MCP, answered in Chromium by clicking a left
//! item and then the right item it goes to (and by the keyboard), again
//! with JavaScript off through the selects, its limits and bad answers
//! refused with stable codes, and agent-written labels, groups and ids
//! inert against the XSS corpus.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/mapping.rs`.

use fantoccini::key::Key;
use serde_json::{Value, json};

use crate::helpers::chrome::{Chrome, XSS, assert_inert, click, open_transcript, texts, wait_for};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::columns;
use crate::helpers::{Scene, ask, created_alone, prompt_of, scene, spawn_app, widget};

/// The value of each left item's select.
async fn selects(chrome: &Chrome, id: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('#w-{id} fieldset.mapping select')].map(s => s.value);"
        ))
        .await
}

/// Presses left item `l`, then right item `r`, with the mouse.
async fn connect_by_mouse(chrome: &Chrome, id: &str, l: usize, r: usize) {
    click(chrome, &format!("#w-{id}-m{l}-source")).await;
    click(chrome, &format!("#w-{id}-r{r}")).await;
}

async fn lines(chrome: &Chrome, id: &str) -> Value {
    chrome
        .js(&format!(
            "return document.querySelector('#w-{id} canvas.mapping-lines').dataset.lines;"
        ))
        .await
}

#[tokio::test]
async fn a_mapping_asked_over_mcp_is_connected_in_chromium() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    // The card arrives live and becomes two columns of buttons.
    let id = clarify_over_mcp(&client, columns(false, false)).await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!("{card} fieldset.mapping.connect"))
        .await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        texts(&chrome, &format!("{card} button.mapping-source")).await,
        json!([
            "E-mail address (not connected)",
            "Full name (not connected)",
            "Signed up (Dates) (not connected)"
        ])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} button.mapping-target")).await,
        json!(["Email", "Name", "Created at (Timestamps)", "Do not import"])
    );
    assert!(
        !chrome
            .css(&format!("#w-{id}-m0"))
            .await
            .is_displayed()
            .await
            .unwrap(),
        "the select is the state, not the control"
    );
    assert_eq!(lines(&chrome, &id).await, "0");

    // Click-to-connect: e-mail → Email, full name → Email (which takes it
    // from e-mail: one each), then e-mail → Name.
    connect_by_mouse(&chrome, &id, 0, 0).await;
    assert_eq!(
        selects(&chrome, &id).await,
        json!(["contact.email", "", ""])
    );
    assert_eq!(lines(&chrome, &id).await, "1");
    connect_by_mouse(&chrome, &id, 1, 0).await;
    assert_eq!(
        selects(&chrome, &id).await,
        json!(["", "contact.email", ""])
    );
    connect_by_mouse(&chrome, &id, 0, 1).await;
    // Pressing the connected right item again takes the connection away.
    connect_by_mouse(&chrome, &id, 1, 0).await;
    assert_eq!(selects(&chrome, &id).await, json!(["contact.name", "", ""]));
    connect_by_mouse(&chrome, &id, 1, 0).await;
    // By the keyboard: Enter on "Signed up", then Enter on "Do not import".
    let source = chrome.css(&format!("#w-{id}-m2-source")).await;
    source.send_keys(&Key::Enter).await.unwrap();
    assert_eq!(
        chrome
            .js(&format!(
                "return document.querySelector('#w-{id}-m2-source').getAttribute('aria-pressed');"
            ))
            .await,
        "true"
    );
    chrome
        .css(&format!("#w-{id}-r3"))
        .await
        .send_keys(&Key::Enter)
        .await
        .unwrap();
    assert_eq!(
        selects(&chrome, &id).await,
        json!(["contact.name", "contact.email", "skip"])
    );
    assert_eq!(lines(&chrome, &id).await, "3");
    assert_eq!(
        texts(&chrome, &format!("{card} button.mapping-source")).await,
        json!([
            "E-mail address → Name",
            "Full name → Email",
            "Signed up (Dates) → Do not import"
        ])
    );
    chrome
        .css(&format!("#w-{id}-freeform"))
        .await
        .send_keys("Names are in the e-mail column, yes")
        .await
        .unwrap();
    chrome.screenshot_to("clarification-mapping.png").await;
    click(
        &chrome,
        &format!("{card} form.clarification button.primary"),
    )
    .await;
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} .mapping-pairs li")).await,
        json!([
            "E-mail address → Name",
            "Full name → Email",
            "Signed up → Do not import"
        ])
    );
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        r#"[Agor] User answered your question "Which field does each column of contacts.csv fill?": {"structured":{"mappings":[["email","contact.name"],["full_name","contact.email"],["signup","skip"]]},"freeform":"Names are in the e-mail column, yes"}"#
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(
        state["result"],
        json!({
            "structured": { "mappings": [
                { "left": "email", "right": "contact.name" },
                { "left": "full_name", "right": "contact.email" },
                { "left": "signup", "right": "skip" },
            ] },
            "freeform": "Names are in the e-mail column, yes",
            "answered_by": "alice",
        })
    );

    // With many-to-one and unmapped allowed: two on one, one left alone.
    let loose = clarify_over_mcp(&client, columns(true, true)).await;
    chrome
        .wait_css(&format!("#w-{loose} fieldset.mapping.connect"))
        .await;
    connect_by_mouse(&chrome, &loose, 0, 3).await;
    connect_by_mouse(&chrome, &loose, 2, 3).await;
    assert_eq!(lines(&chrome, &loose).await, "2");
    click(
        &chrome,
        &format!("#w-{loose} form.clarification button.primary"),
    )
    .await;
    chrome
        .wait_css(&format!("#w-{loose} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &loose).await["result"]["structured"],
        json!({ "mappings": [
            { "left": "email", "right": "skip" },
            { "left": "signup", "right": "skip" },
        ] })
    );
    chrome.close().await;
}

#[tokio::test]
async fn a_mapping_is_answered_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let mapped = clarify_over_mcp(&client, columns(false, false)).await;
    let typed = clarify_over_mcp(&client, columns(false, false)).await;
    let refused = clarify_over_mcp(&client, columns(false, false)).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{mapped} form")).await;
    // No script ran: a select per left item, no buttons, no lines.
    assert_eq!(
        chrome
            .count(&format!("#w-{mapped} button.mapping-source"))
            .await,
        0
    );
    assert_eq!(chrome.count(&format!("#w-{mapped} canvas")).await, 0);
    assert!(
        !chrome
            .css(&format!("#w-{mapped} .mapping-right"))
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    assert_eq!(
        texts(&chrome, &format!("#w-{mapped} .mapping-row label")).await,
        json!(["E-mail address", "Full name", "Signed up (Dates)"])
    );
    let pick = |id: &str, l: usize, right: &str| format!("#w-{id}-m{l} option[value='{right}']");
    click(&chrome, &pick(&mapped, 0, "contact.email")).await;
    click(&chrome, &pick(&mapped, 1, "contact.name")).await;
    click(&chrome, &pick(&mapped, 2, "contact.created")).await;
    let send = |id: &str| format!("#w-{id} form.clarification button.primary");
    click(&chrome, &send(&mapped)).await;
    chrome
        .wait_css(&format!("#w-{mapped} .badge-submitted"))
        .await;
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &mapped).await,
        r#"[Agor] User answered your question "Which field does each column of contacts.csv fill?": {"structured":{"mappings":[["email","contact.email"],["full_name","contact.name"],["signup","contact.created"]]},"freeform":""}"#
    );

    // Words only: nothing connected, which is kept beside them.
    chrome
        .css(&format!("#w-{typed}-freeform"))
        .await
        .send_keys("Skip the import")
        .await
        .unwrap();
    click(&chrome, &send(&typed)).await;
    chrome
        .wait_css(&format!("#w-{typed} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &typed).await["result"],
        json!({ "structured": { "mappings": [] }, "freeform": "Skip the import", "answered_by": "alice" })
    );

    // Two columns on one field: the page again, the reason beside the card,
    // then half of them: every left item must be connected.
    click(&chrome, &pick(&refused, 0, "contact.email")).await;
    click(&chrome, &pick(&refused, 1, "contact.email")).await;
    click(&chrome, &pick(&refused, 2, "skip")).await;
    click(&chrome, &send(&refused)).await;
    chrome
        .wait_css(&format!("#w-{refused} .alert[data-code=many_to_one]"))
        .await;
    click(&chrome, &pick(&refused, 0, "")).await;
    click(&chrome, &pick(&refused, 1, "contact.email")).await;
    click(&chrome, &send(&refused)).await;
    chrome
        .wait_css(&format!("#w-{refused} .alert[data-code=unmapped_left]"))
        .await;
    assert_eq!(widget(&app, &s.agent, &refused).await["status"], "pending");
    chrome.close().await;
}

#[tokio::test]
async fn agent_written_mapping_labels_are_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = open_transcript(&app, "alice", &session).await;

    // The corpus as ids, labels and groups on both sides, and as the question.
    let side: Vec<Value> = XSS
        .iter()
        .map(|p| json!({ "id": p, "label": p, "group": p.chars().take(80).collect::<String>() }))
        .collect();
    let body = json!({
        "question": XSS[11],
        "widget": { "type": "mapping", "left": side, "right": side, "allow_unmapped": true },
    });
    let id = created_alone(ask(&app, &agent, &session, "clarification", &body).await).await;
    chrome
        .wait_css(&format!("#w-{id} fieldset.mapping.connect"))
        .await;
    assert!(chrome.same_document().await);
    assert_inert(&chrome, "test · widgetd").await;
    let mut sorted: Vec<String> = XSS.iter().map(|s| s.to_string()).collect();
    sorted.sort_unstable();
    let shown = |css: &'static str| {
        let chrome = &chrome;
        let id = id.clone();
        async move {
            let all = chrome
                .js(&format!(
                    "return [...document.querySelectorAll('#w-{id} {css}')].map(e => e.firstChild.textContent);"
                ))
                .await;
            let mut all: Vec<String> = serde_json::from_value(all).unwrap();
            all.sort_unstable();
            all
        }
    };
    assert_eq!(shown("button.mapping-target .mapping-name").await, sorted);
    assert_eq!(shown(".mapping-row .mapping-name").await, sorted);

    // Connected by clicking: the ids go back exactly as the agent sent them.
    connect_by_mouse(&chrome, &id, 0, 1).await;
    connect_by_mouse(&chrome, &id, 1, 0).await;
    wait_for("two lines", || async { lines(&chrome, &id).await == "2" }).await;
    click(
        &chrome,
        &format!("#w-{id} form.clarification button.primary"),
    )
    .await;
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    let expected = json!({ "mappings": [
        { "left": XSS[0], "right": XSS[1] },
        { "left": XSS[1], "right": XSS[0] },
    ] });
    assert_eq!(
        widget(&app, &agent, &id).await["result"]["structured"],
        expected
    );
    let prompt = prompt_of(&app, &host, &session, &id).await;
    let compact = json!({ "mappings": [[XSS[0], XSS[1]], [XSS[1], XSS[0]]] });
    assert!(prompt.contains(&compact.to_string()), "{prompt}");

    // The same transcript rendered by the server.
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}
