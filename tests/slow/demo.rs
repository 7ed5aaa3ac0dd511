//! `serve --demo` on the real binary: the built-in demo agent asks for an
//! env var, a question, a choice and an approval, and answers each outcome;
//! once over HTTP as the forms post, once clicked through in Chromium.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/demo.rs`.

use crate::helpers::Daemon;
use crate::helpers::chrome::{Chrome, wait_for};

/// The tour as a newcomer takes it: in Chromium, by clicking, at a desktop
/// width and at a phone's (screenshots of both go to the test artifacts).
#[tokio::test]
async fn the_demo_runs_end_to_end_by_clicking_in_a_browser() {
    let dir = crate::helpers::test_dir();
    let data = dir.path().join("data");
    let daemon = Daemon::start_with(&data, dir.path(), "demo-browser", &["--demo"]);
    let chrome = Chrome::launch().await;
    chrome.set_window_size(1280, 900).await.unwrap();
    chrome.sign_in(&daemon.url, "demo").await;
    // The sessions list leads to the demo session.
    chrome.open(&format!("{}/", daemon.url)).await;
    chrome
        .wait_css("a[href^='/sessions/']")
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css("#transcript").await;
    let page = chrome.source().await.unwrap();
    assert!(
        page.contains("Demo: a tour of widgetd"),
        "labelled as a demo"
    );

    // 1. The key, typed into the password field.
    let value = crate::helpers::canary("demo-browser");
    chrome
        .wait_css("input[name='value.DEMO_WEATHER_API_KEY']")
        .await
        .send_keys(&value)
        .await
        .unwrap();
    chrome.screenshot_to("demo-1280-env.png").await;
    chrome
        .css("form.widget-form button.primary")
        .await
        .click()
        .await
        .unwrap();
    // 2. The question: pick Oslo, send.
    chrome
        .wait_css("form.widget-form.ask input[value='Oslo']")
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css("form.widget-form.ask button.primary")
        .await
        .click()
        .await
        .unwrap();
    // 3. The choice: tick two, add words, send.
    chrome
        .wait_css("form.clarification input[value='Rain']")
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css("form.clarification input[value='Wind']")
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css("form.clarification textarea[name='freeform']")
        .await
        .send_keys("and the sunset time")
        .await
        .unwrap();
    chrome
        .css("form.clarification button.primary")
        .await
        .click()
        .await
        .unwrap();
    // 4. The approval: allow once.
    chrome
        .wait_css("form.approval button[value='once']")
        .await
        .click()
        .await
        .unwrap();
    wait_for("the end of the tour", || async {
        let page = chrome.source().await.unwrap_or_default();
        page.contains("That is the tour")
    })
    .await;
    let page = chrome.source().await.unwrap();
    for said in [
        "DEMO_WEATHER_API_KEY is saved",
        "You answered Oslo.",
        "You picked Rain, Wind and wrote",
        "sunset time",
        "Approved.",
    ] {
        assert!(page.contains(said), "the transcript says {said:?}");
    }
    assert!(!page.contains(&value), "the page shows the value");
    assert_eq!(
        chrome.count("form.widget-form").await,
        0,
        "nothing left to answer"
    );
    chrome.screenshot_to("demo-1280-end.png").await;
    chrome.set_window_size(390, 844).await.unwrap();
    chrome.screenshot_to("demo-390-end.png").await;
    let overflow = chrome
        .js("return document.documentElement.scrollWidth - window.innerWidth;")
        .await;
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "the page is wider than a 390 px screen by {overflow} px"
    );
    chrome.close().await;
    daemon.stop();
}
