//! The reply box under the transcript: what a person writes becomes a
//! transcript line (role `user`, with its author) and a resume prompt; bad
//! text, the wrong person, an archived session and a stored value in the
//! text are refused without writing anything.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/web/replies.rs`.

use serde_json::json;

use crate::helpers::chrome::{Chrome, wait_for};
use crate::helpers::{scene, spawn_app};

#[tokio::test]
async fn a_reply_typed_in_the_browser_reaches_the_agent_and_a_second_tab() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let url = format!("{}/sessions/{}", app.url, s.session);
    let (writer, watcher) = tokio::join!(Chrome::launch(), Chrome::launch());
    tokio::join!(
        writer.sign_in(&app.url, "alice"),
        watcher.sign_in(&app.url, "alice")
    );
    writer.open(&url).await;
    watcher.open(&url).await;
    watcher.wait_css("#transcript").await;
    watcher.mark_document().await;

    writer
        .css("#reply-text")
        .await
        .send_keys("Try the second region first.")
        .await
        .unwrap();
    writer
        .css("#reply button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    let line = "#transcript .message.role-user";
    let text = writer.wait_css(line).await.text().await.unwrap();
    assert!(text.contains("alice"), "{text}");
    assert!(text.contains("Try the second region first."), "{text}");
    assert!(
        writer
            .current_url()
            .await
            .unwrap()
            .fragment()
            .unwrap_or_default()
            .starts_with("m-"),
        "the page returns to the new line"
    );
    // The reply box is empty again.
    assert_eq!(
        writer
            .js("return document.getElementById('reply-text').value;")
            .await,
        json!("")
    );

    // The other tab gets the line live, with its author.
    wait_for("the reply in the second tab", || async {
        watcher.count(line).await == 1
    })
    .await;
    assert!(watcher.same_document().await, "the second tab reloaded");
    let seen = watcher.css(line).await.text().await.unwrap();
    assert!(
        seen.contains("alice") && seen.contains("second region"),
        "{seen}"
    );

    let prompts = app.prompts(&s.host, &s.session, 0).await;
    assert_eq!(
        prompts[0]["text"],
        "[Agor] User alice wrote: Try the second region first."
    );
    writer.close().await;
    watcher.close().await;
}
