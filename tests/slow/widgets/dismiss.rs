//! Dismissing with a note, for every kind: the note reaches the agent in
//! the dismissal prompt and the result, the badge shows it, and a bad note
//! (too long, control characters, one of the creator's stored values) is
//! refused with a stable code, never echoed, changing nothing.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/dismiss.rs`.

use crate::helpers::chrome::Chrome;
use crate::helpers::samples::one_of_each;
use crate::helpers::{Scene, ask, created, prompt_of, scene, spawn_app};

#[tokio::test]
async fn a_note_typed_in_the_browser_goes_with_the_dismissal() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let (path, body, prompt) = &one_of_each()[0];
    let id = created(ask(&app, &agent, &session, path, body).await).await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!("{card} .dismiss-note summary"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{id}-note"))
        .await
        .send_keys("not this week")
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button[form=\"dismiss-{id}\"]"))
        .await
        .click()
        .await
        .unwrap();
    let badge = chrome.wait_css(&format!("{card} .badge-dismissed")).await;
    let text = badge.text().await.unwrap();
    assert!(text.ends_with(": not this week"), "{text}");
    assert_eq!(
        prompt_of(&app, &host, &session, &id).await,
        format!(r#"{prompt} User's note: "not this week""#)
    );
    chrome.close().await;
}
