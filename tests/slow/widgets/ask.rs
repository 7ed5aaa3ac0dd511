//! Question widgets (`ask_user` and the simple `ask` widgets) end to end:
//! asked over MCP and REST, answered in the form (plain HTTP and a real
//! headless Chromium), the answer in the resume prompt or through a waiting
//! call, validation codes, and the prompts of unanswered questions.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/ask.rs`.

use fantoccini::key::Key;
use serde_json::{Value, json};

use crate::helpers::chrome::{Chrome, texts, wait_for};
use crate::helpers::samples::{ANSWERED, two_questions};
use crate::helpers::{Scene, ask, created_alone, prompt_of, prompt_texts, scene, spawn_app};

/// Whether the element `css` is disabled (its DOM property).
async fn disabled(chrome: &Chrome, css: &str) -> Value {
    chrome
        .js(&format!("return document.querySelector('{css}').disabled;"))
        .await
}

/// Focuses the input `css` and presses Space, as a keyboard user does.
async fn press_space(chrome: &Chrome, css: &str) {
    chrome.css(css).await.send_keys(&Key::Space).await.unwrap();
}

#[tokio::test]
async fn questions_in_a_real_browser() {
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
    chrome.mark_document().await;

    // The agent asks while the page is open: the card arrives live.
    let id = created_alone(ask(&app, &agent, &session, "ask-user", &two_questions()).await).await;
    let card = format!("#w-{id}");
    chrome.wait_css(&format!("{card} form.needs-choice")).await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        texts(&chrome, &format!("{card} fieldset.question .chip")).await,
        json!(["Database", "Regions"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} fieldset.question legend")).await,
        json!(["Database Which database?", "Regions Regions?"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} label.option strong")).await,
        json!(["Postgres", "SQLite", "EU", "US", "APAC"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} label.option .hint")).await,
        json!([
            "A server; best with many writers",
            "One file next to the app"
        ])
    );
    assert_eq!(
        texts(
            &chrome,
            &format!("{card} .preview strong, {card} .preview em")
        )
        .await,
        json!(["DATABASE_URL", "data/app.db"])
    );
    for q in 0..2 {
        let other = chrome.css(&format!("#w-{id}-q{q}-other")).await;
        assert!(other.is_displayed().await.unwrap(), "Other {q} is hidden");
    }
    for css in [
        format!("{card} .chip"),
        format!("{card} .preview"),
        format!("#w-{id}-q1-o2"),
    ] {
        assert!(
            chrome.css(&css).await.is_displayed().await.unwrap(),
            "{css} is hidden"
        );
    }

    // "Send answer" waits until every question has an answer.
    let send = format!("{card} form.needs-choice button.primary");
    assert_eq!(texts(&chrome, &send).await, json!(["Send answer"]));
    assert_eq!(disabled(&chrome, &send).await, json!(true));
    press_space(&chrome, &format!("#w-{id}-q0-o1")).await;
    let checked = format!(
        "return ['#w-{id}-q0-o0', '#w-{id}-q0-o1', '#w-{id}-q1-o0', '#w-{id}-q1-o1', '#w-{id}-q1-o2']
             .map(s => document.querySelector(s).checked);"
    );
    assert_eq!(
        chrome.js(&checked).await,
        json!([false, true, false, false, false]),
        "Space picks the focused radio"
    );
    assert_eq!(
        disabled(&chrome, &send).await,
        json!(true),
        "one question is still unanswered"
    );
    press_space(&chrome, &format!("#w-{id}-q1-o0")).await;
    assert_eq!(disabled(&chrome, &send).await, json!(false));
    press_space(&chrome, &format!("#w-{id}-q1-o2")).await;
    // Unticking the only choice of a question takes the answer away again.
    press_space(&chrome, &format!("#w-{id}-q1-o0")).await;
    assert_eq!(
        disabled(&chrome, &send).await,
        json!(false),
        "APAC is still ticked"
    );
    press_space(&chrome, &format!("#w-{id}-q1-o2")).await;
    assert_eq!(
        disabled(&chrome, &send).await,
        json!(true),
        "nothing ticked"
    );
    press_space(&chrome, &format!("#w-{id}-q1-o0")).await;
    press_space(&chrome, &format!("#w-{id}-q1-o2")).await;
    assert_eq!(
        chrome.js(&checked).await,
        json!([false, true, true, false, true])
    );
    assert_eq!(disabled(&chrome, &send).await, json!(false));
    let shot = chrome.screenshot_to("question-form.png").await;
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000, "{shot:?}");

    chrome.css(&send).await.click().await.unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        chrome.current_url().await.unwrap().path(),
        format!("/sessions/{session}")
    );
    let answers = chrome
        .js(&format!(
            "return [...document.querySelectorAll('{card} dl.answers dt')]
                 .map(dt => [dt.textContent, dt.nextElementSibling.textContent]);"
        ))
        .await;
    assert_eq!(
        answers,
        json!([["Regions?", "EU, APAC"], ["Which database?", "SQLite"]])
    );
    let badge = texts(&chrome, &format!("{card} .badge-submitted")).await;
    assert!(
        badge[0].as_str().unwrap().contains("Answered by alice"),
        "{badge}"
    );
    assert_eq!(chrome.count(&format!("{card} form")).await, 0);
    assert_eq!(prompt_texts(&app, &host, &session).await, [ANSWERED]);

    // A confirm: one click on "Yes" answers it.
    chrome.mark_document().await;
    let confirm = created_alone(
        ask(
            &app,
            &agent,
            &session,
            "ask",
            &json!({ "question": "Deploy now?" }),
        )
        .await,
    )
    .await;
    let card = format!("#w-{confirm}");
    chrome.wait_css(&format!("{card} form")).await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        texts(&chrome, &format!("{card} button")).await,
        json!(["Yes", "No", "Dismiss"])
    );
    chrome
        .css(&format!("{card} button[name='answer.0'][value='Yes']"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} dl.answers dd")).await,
        json!(["Yes"])
    );
    wait_for("the confirm's prompt", || async {
        app.prompts(&host, &session, 0).await.len() == 2
    })
    .await;
    assert_eq!(
        prompt_of(&app, &host, &session, &confirm).await,
        r#"[Agor] User answered: {"Deploy now?":"Yes"}"#
    );
    chrome.close().await;
}
