//! Archiving a session and revoking its agent token, from the page, the
//! REST API and the command line: revoking locks the agent out without
//! archiving, a new token is shown once, a session created in the browser
//! is created once (POST/redirect/GET), and every change is audited.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/sessions/admin.rs`.

use widgetd_domain::auth::Role;

use crate::helpers::chrome::Chrome;
use crate::helpers::spawn_app;

#[tokio::test]
async fn a_session_created_in_the_browser_survives_a_reload_once() {
    let app = spawn_app().await;
    app.user("alice", Role::Member).await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .css("#title")
        .await
        .send_keys("Tidy the logs")
        .await
        .unwrap();
    chrome
        .css("form[action='/sessions'] button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    let token = chrome.wait_css("#agent-token").await.text().await.unwrap();
    assert!(token.starts_with("wda_"), "{token}");
    assert!(
        chrome
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/settings"),
        "the form redirected to the session's settings"
    );
    chrome.refresh().await.unwrap();
    chrome.wait_css("#agent").await;
    assert_eq!(chrome.count("#agent-token").await, 0, "shown twice");
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, 1);
    chrome.back().await.unwrap();
    chrome.wait_css("#title").await;
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, 1);
    chrome.close().await;
}
