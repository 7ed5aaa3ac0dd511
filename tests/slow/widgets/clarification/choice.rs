//! `choice`: created over MCP, answered in Chromium by real clicks and
//! typing (with JavaScript, and again with it off), its limits and bad
//! answers refused with stable codes, and agent-written labels,
//! descriptions and markdown inert against the XSS corpus.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/choice.rs`.

use serde_json::{Value, json};

use crate::helpers::chrome::{
    Chrome, XSS, assert_inert, enabled, open_transcript, texts, wait_for,
};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::regions;
use crate::helpers::{Scene, ask, created_alone, prompt_of, scene, spawn_app, widget};

#[tokio::test]
async fn a_choice_asked_over_mcp_is_answered_in_chromium() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    // The card arrives live, with its options, markdown and the text box.
    let id = clarify_over_mcp(&client, regions(false)).await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!("{card} form.clarification.type-choice"))
        .await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        texts(&chrome, &format!("{card} .question-text")).await,
        json!(["Which region should the database live in?"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} legend")).await,
        json!(["Pick one"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} label.option strong")).await,
        json!(["EU", "US", "APAC"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} label.option .hint")).await,
        json!(["Frankfurt"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .markdown strong")).await,
        json!(["US_REGION"])
    );
    let send = format!("{card} form.clarification button.primary");
    let clear = format!("{card} button.clear-choice");
    let freeform = format!("#w-{id}-freeform");
    assert!(chrome.css(&freeform).await.is_displayed().await.unwrap());
    assert!(
        !enabled(&chrome, &send).await,
        "nothing picked or typed yet"
    );
    assert!(!chrome.css(&clear).await.is_displayed().await.unwrap());

    // Pick US, change our mind: clear it, so that only words would go.
    chrome
        .css(&format!("#w-{id}-c1"))
        .await
        .click()
        .await
        .unwrap();
    assert!(enabled(&chrome, &send).await);
    chrome.css(&clear).await.click().await.unwrap();
    let picked = format!(
        "return [...document.querySelectorAll('{card} input[name=selected]')].map(i => i.checked);"
    );
    assert_eq!(chrome.js(&picked).await, json!([false, false, false]));
    assert!(!enabled(&chrome, &send).await);
    assert_eq!(
        chrome.js("return document.activeElement.name;").await,
        "freeform",
        "focus goes to the text box, not nowhere"
    );
    // Then EU, and a few words too.
    chrome
        .css(&format!("#w-{id}-c0"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&freeform)
        .await
        .send_keys("EU only, for now")
        .await
        .unwrap();
    chrome.screenshot_to("clarification-choice.png").await;
    chrome.css(&send).await.click().await.unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} dl.answers dd")).await,
        json!(["EU", "EU only, for now"])
    );
    assert_eq!(chrome.count(&format!("{card} form")).await, 0);
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        r#"[Agor] User answered your question "Which region should the database live in?": {"structured":{"selected":["EU"]},"freeform":"EU only, for now"}"#
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(
        state["result"],
        json!({ "structured": { "selected": ["EU"] }, "freeform": "EU only, for now", "answered_by": "alice" })
    );

    // Several, with `multi_select`: check boxes, answered in the options' order.
    chrome.mark_document().await;
    let multi = clarify_over_mcp(&client, regions(true)).await;
    let card = format!("#w-{multi}");
    chrome
        .wait_css(&format!("{card} input[type=checkbox]"))
        .await;
    assert_eq!(
        texts(&chrome, &format!("{card} legend")).await,
        json!(["Pick any that fit"])
    );
    assert_eq!(
        chrome.count(&format!("{card} button.clear-choice")).await,
        0
    );
    chrome
        .css(&format!("#w-{multi}-c2"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{multi}-c0"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    let state = widget(&app, &s.agent, &multi).await;
    assert_eq!(
        state["result"]["structured"],
        json!({ "selected": ["EU", "APAC"] })
    );
    assert_eq!(state["result"]["freeform"], "");
    chrome.close().await;
}

#[tokio::test]
async fn a_choice_is_answered_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let picked = clarify_over_mcp(&client, regions(false)).await;
    let typed = clarify_over_mcp(&client, regions(false)).await;
    let nothing = clarify_over_mcp(&client, regions(false)).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{picked} form")).await;
    // No script ran: the title counts nothing, "Send answer" was never
    // disabled, "Clear the choice" stays hidden.
    assert_eq!(chrome.title().await.unwrap(), "test · widgetd");
    let send = |id: &str| format!("#w-{id} form.clarification button.primary");
    assert!(enabled(&chrome, &send(&picked)).await);
    assert!(
        !chrome
            .css(&format!("#w-{picked} button.clear-choice"))
            .await
            .is_displayed()
            .await
            .unwrap()
    );

    // A pick and two lines of text (the browser sends CRLF; the agent gets LF).
    chrome
        .css(&format!("#w-{picked}-c1"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{picked}-freeform"))
        .await
        .send_keys("US, but\nonly for the beta")
        .await
        .unwrap();
    chrome.css(&send(&picked)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{picked} .badge-submitted"))
        .await;
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &picked).await,
        r#"[Agor] User answered your question "Which region should the database live in?": {"structured":{"selected":["US"]},"freeform":"US, but\nonly for the beta"}"#
    );

    // Only words: the widget's state (nothing picked) is kept beside them.
    chrome
        .css(&format!("#w-{typed}-freeform"))
        .await
        .send_keys("Ask the customer")
        .await
        .unwrap();
    chrome.css(&send(&typed)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{typed} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &typed).await["result"]["structured"],
        json!({ "selected": [] })
    );

    // Nothing at all: the page comes back with the reason beside the card.
    chrome.css(&send(&nothing)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{nothing} .alert[data-code=answer_required]"))
        .await;
    assert_eq!(widget(&app, &s.agent, &nothing).await["status"], "pending");
    chrome.close().await;
}

#[tokio::test]
async fn agent_written_labels_and_markdown_are_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = open_transcript(&app, "alice", &session).await;

    // The corpus as questions, labels, descriptions and markdown, in
    // widgets of 9 options each, arriving while the page is open.
    let mut ids = Vec::new();
    for (n, chunk) in XSS.chunks(9).enumerate() {
        let options: Vec<Value> = chunk
            .iter()
            .map(|p| {
                json!({
                    "label": p,
                    "description": p,
                    "markdown": format!("{p}\n\n* [click](javascript:window.__xss=1)\n\n**{p}**"),
                })
            })
            .collect();
        let body = json!({ "question": XSS[n], "widget": { "type": "choice", "options": options, "multi_select": true } });
        ids.push(created_alone(ask(&app, &agent, &session, "clarification", &body).await).await);
    }
    wait_for("every card to arrive live", || async {
        chrome.count("form.clarification").await == ids.len()
    })
    .await;
    assert!(chrome.same_document().await);
    assert_inert(&chrome, "test · widgetd").await;
    let mut sorted: Vec<&str> = XSS.to_vec();
    sorted.sort_unstable();
    for css in [".choice label.option strong", ".choice label.option .hint"] {
        let mut shown: Vec<String> = serde_json::from_value(texts(&chrome, css).await).unwrap();
        shown.sort_unstable();
        assert_eq!(shown, sorted, "{css} shows the corpus as text");
    }

    // Picked and sent by clicking, then shown in the answered card.
    let first = &ids[0];
    chrome
        .css(&format!("#w-{first}-c0"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{first}-c1"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{first} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .wait_css(&format!("#w-{first} .badge-submitted"))
        .await;
    assert_inert(&chrome, "test · widgetd").await;
    assert_eq!(
        texts(&chrome, &format!("#w-{first} dl.answers dd")).await,
        json!([format!("{}, {}", XSS[0], XSS[1])])
    );
    let expected = json!({ "selected": [XSS[0], XSS[1]] });
    assert_eq!(
        widget(&app, &agent, first).await["result"]["structured"],
        expected
    );
    let prompt = prompt_of(&app, &host, &session, first).await;
    assert!(prompt.contains(&expected.to_string()), "{prompt}");

    // The same transcript rendered by the server.
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome
        .wait_css(&format!("#w-{first} .badge-submitted"))
        .await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}
