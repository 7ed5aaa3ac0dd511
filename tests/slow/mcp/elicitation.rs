//! MCP elicitation: a widget's own page (`GET /widgets/{id}`), where a
//! client's URL-mode elicitation sends the person, and the elicitation
//! modes an agent's client is offered.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/mcp/elicitation.rs`.

use serde_json::json;
use widgetd_domain::auth::Role;

use crate::helpers::chrome::{Chrome, wait_for};
use crate::helpers::{canary, scene, share, spawn_app, widget_status};

/// Fills the login form the page redirected to and sends it.
async fn log_in_here(chrome: &Chrome, user: &str) {
    chrome.css("#username").await.send_keys(user).await.unwrap();
    chrome
        .css("#password")
        .await
        .send_keys(crate::helpers::PASSWORD)
        .await
        .unwrap();
    chrome
        .css("form[action='/login'] button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    wait_for("the login to finish", || async {
        chrome.current_url().await.unwrap().path() != "/login"
    })
    .await;
}

#[tokio::test]
async fn a_widget_page_takes_the_answer_of_a_prompt_user_only() {
    let app = spawn_app().await;
    let alice = scene(&app, "alice").await;
    app.user("bob", Role::Member).await;
    app.user("carol", Role::Member).await;
    app.user("dave", Role::Member).await;
    share(
        &app,
        &alice.host,
        &alice.session,
        json!({ "grants": { "bob": "prompt", "carol": "view" } }),
    )
    .await;
    let id = app
        .pending_widget(&alice.agent, &alice.session, &["PAGE_KEY"])
        .await;
    let page = format!("{}/widgets/{id}", app.url);

    // Bob is not logged in: the page sends him to log in and straight back.
    let chrome = Chrome::launch().await;
    chrome.open(&page).await;
    let at = chrome.current_url().await.unwrap();
    assert_eq!(at.path(), "/login");
    assert_eq!(
        at.query_pairs().collect::<Vec<_>>(),
        vec![("next".into(), format!("/widgets/{id}").into())]
    );
    log_in_here(&chrome, "bob").await;
    let at = chrome.current_url().await.unwrap();
    assert_eq!(at.path(), format!("/widgets/{id}"), "back at the widget");
    let card = format!("#w-{id}[data-status=pending]");
    chrome.wait_css(&card).await;
    assert_eq!(chrome.count("#transcript").await, 0, "the widget alone");
    assert_eq!(chrome.count("#done").await, 0);
    let secret = canary("widget-page");
    chrome
        .css(&format!(
            "{card} input[type=password][name=\"value.PAGE_KEY\"]"
        ))
        .await
        .send_keys(&secret)
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    let done = chrome.wait_css("#done").await;
    assert!(
        done.text()
            .await
            .unwrap()
            .contains("You can return to your agent"),
        "{:?}",
        done.text().await
    );
    assert_eq!(
        chrome.current_url().await.unwrap().path(),
        format!("/widgets/{id}"),
        "the answer comes back to the widget's page"
    );
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
    chrome.screenshot_to("widget-page-done.png").await;
    assert!(!chrome.source().await.unwrap().contains(&secret));
    assert_eq!(widget_status(&app, &alice.agent, &id).await, "submitted");
    assert_eq!(
        app.env_of(&alice.session, &alice.host).await,
        json!({ "PAGE_KEY": secret }),
        "the value goes to the creator's vault, as from the transcript"
    );
    chrome.close().await;

    // Carol may only view the session: the page refuses her, with no form.
    // Dave has nothing to do with it: for him there is no such widget.
    let second = app
        .pending_widget(&alice.agent, &alice.session, &["OTHER_KEY"])
        .await;
    for (user, status) in [("carol", "403"), ("dave", "404")] {
        let chrome = Chrome::launch().await;
        chrome.open(&format!("{}/widgets/{second}", app.url)).await;
        log_in_here(&chrome, user).await;
        assert_eq!(
            chrome.current_url().await.unwrap().path(),
            format!("/widgets/{second}")
        );
        chrome.wait_css(".error-page").await;
        assert_eq!(chrome.count("form[action$='/submit']").await, 0, "{user}");
        assert_eq!(chrome.count("input[type=password]").await, 0, "{user}");
        let plain = app
            .client
            .get(format!("{}/widgets/{second}", app.url))
            .header("cookie", &app.login(user).await.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(plain.status().as_str(), status, "{user}");
        chrome.close().await;
    }
    assert_eq!(widget_status(&app, &alice.agent, &second).await, "pending");
}
