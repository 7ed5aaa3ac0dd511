//! Approvals, issue 26 §3 and the quorum of §4: the person edits the input
//! before allowing it (only where the agent allowed it), a comment goes
//! with any decision, "Always" holds for this session or all of the
//! creator's sessions, and a request may need several approvers. Over
//! REST, the rmcp client, a Claude Code hook, plain form posts and a real
//! Chromium.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/approval_edit.rs`.

use serde_json::json;

use crate::helpers::chrome::{Chrome, texts};
use crate::helpers::samples::rm_build;
use crate::helpers::{Scene, ask, created, prompt_texts, scene, spawn_app, widget};

#[tokio::test]
async fn edit_and_scope_in_chromium() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome.wait_css("#transcript").await;
    let id = created(ask(&app, &agent, &session, "approval", &rm_build(true)).await).await;
    let card = format!("#w-{id}");
    chrome.wait_css(&format!("#w-{id}-edit")).await;
    assert_eq!(
        chrome
            .js(&format!(
                "return JSON.parse(document.querySelector('#w-{id}-edit').value);"
            ))
            .await,
        json!({ "command": "rm -rf build", "timeout": 5 })
    );
    assert_eq!(
        chrome
            .js(&format!(
                "return document.querySelector('#w-{id}-scope-session').checked;"
            ))
            .await,
        json!(true),
        "\"Always\" is for this session unless the person says otherwise"
    );
    chrome
        .js(&format!("document.querySelector('#w-{id}-edit').value = '{{\"command\": \"rm -rf build/cache\", \"timeout\": 5}}'; return true;"))
        .await;
    chrome
        .css(&format!("#w-{id}-reason"))
        .await
        .send_keys("cache only")
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button[value=once]"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} pre.edited-input")).await,
        json!(["{\n  \"command\": \"rm -rf build/cache\",\n  \"timeout\": 5\n}"])
    );
    let badge = texts(&chrome, &format!("{card} .badge-submitted")).await;
    assert!(
        badge[0]
            .as_str()
            .unwrap()
            .contains("with the input edited: cache only"),
        "{badge}"
    );
    let done = widget(&app, &agent, &id).await;
    assert_eq!(
        done["result"]["edited_input"]["command"],
        "rm -rf build/cache"
    );
    assert_eq!(prompt_texts(&app, &host, &session).await.len(), 1);
    chrome.close().await;
}
