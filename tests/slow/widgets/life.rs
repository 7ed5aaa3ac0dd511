//! A widget's life after it is asked: `expires_in_seconds` on every kind,
//! the agent withdrawing (`cancel_widget`, `POST /api/v1/widgets/{id}/cancel`)
//! and replacing (`replaces`) its own pending widgets, and listing them
//! (`list_pending_widgets`, `GET /api/v1/sessions/{id}/widgets`), over REST,
//! the rmcp client, and the page with JavaScript on and off.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/life.rs`.

use serde_json::json;

use crate::helpers::chrome::{Chrome, wait_for};
use crate::helpers::samples::radio;
use crate::helpers::{ask, created, scene, spawn_app};

#[tokio::test]
async fn the_person_sees_a_replacement_arrive_live_and_without_javascript() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css("#transcript").await;
    chrome.mark_document().await;
    let old = created(ask(&app, &s.agent, &s.session, "ask", &radio("Which region?")).await).await;
    chrome.wait_css(&format!("#w-{old} form")).await;

    let mut amended = radio("Which region for the EU data?");
    amended["replaces"] = json!({ "widget_id": old, "reason": "I forgot the EU data" });
    let new = created(ask(&app, &s.agent, &s.session, "ask", &amended).await).await;
    let link = chrome
        .wait_css(&format!("#w-{old} .withdrawn a.replaced-by"))
        .await;
    assert!(chrome.same_document().await, "the change came by a reload");
    assert_eq!(chrome.count(&format!("#w-{old} form.widget-form")).await, 0);
    let reason = chrome.css(&format!("#w-{old} .withdrawn q.reason")).await;
    assert_eq!(reason.text().await.unwrap(), "I forgot the EU data");
    chrome.wait_css(&format!("#w-{new} form")).await;
    link.click().await.unwrap();
    wait_for("the new request's page", || async {
        chrome.current_url().await.unwrap().path() == format!("/widgets/{new}")
    })
    .await;
    chrome.close().await;

    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    let text = chrome
        .wait_css(&format!("#w-{old} .withdrawn"))
        .await
        .text()
        .await
        .unwrap();
    assert!(text.contains("replaced this request"), "{text}");
    assert!(text.contains("See the new request"), "{text}");
    chrome.css(&format!("#w-{new} form")).await;
    chrome.close().await;
}
