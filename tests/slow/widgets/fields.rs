//! Typed questions (`ask_fields`) end to end: asked over REST and with the
//! rmcp client, refused with a code per problem and nothing created,
//! answered as JSON and as forms (a refusal names every failing field, and
//! changes nothing), the typed answers in the result and the prompt, the
//! client's form in MCP form mode one to one, and the card in a real
//! Chromium with JavaScript on and off.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/fields.rs`.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::chrome::{Chrome, XSS, assert_inert, texts, wait_for};
use crate::helpers::samples::staging;
use crate::helpers::{Scene, ask, created, scene, spawn_app, widget};

/// The card of `id` is answered: its badge is there.
async fn answered_card(chrome: &Chrome, id: &str) {
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
}

#[tokio::test]
async fn typed_questions_in_chromium_with_javascript_and_without() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let transcript = format!("{}/sessions/{session}", app.url);

    // With JavaScript: the card arrives live; the browser's own checks
    // show beside their field; a good answer is sent.
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&transcript).await;
    chrome.wait_css("#transcript").await;
    let id = created(ask(&app, &agent, &session, "fields", &staging()).await).await;
    let card = format!("#w-{id}");
    chrome.wait_css(&format!("{card} form.fields")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} .field label")).await,
        json!([
            "Staging URL",
            "Port",
            "Canary share (optional)",
            "Release tag",
            "Notes (optional)",
            "Owner's email",
            "Go-live date",
            "Run migrations"
        ])
    );
    assert_eq!(
        chrome.js(&format!("return [document.querySelector('#w-{id}-f-port').value, document.querySelector('#w-{id}-f-port').type, document.querySelector('#w-{id}-f-migrate').checked, document.querySelector('#w-{id}-f-day').type, document.querySelector('#w-{id}-f-notes').tagName];")).await,
        json!(["8080", "number", true, "date", "TEXTAREA"])
    );
    chrome
        .css(&format!("#w-{id}-f-url"))
        .await
        .send_keys("not a url")
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    wait_for("the URL field's own message", || async {
        chrome
            .js(&format!("const e = document.querySelector('#w-{id}-f-url-error'); return !e.hidden && e.textContent.length > 0;"))
            .await
            == json!(true)
    })
    .await;
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    // Fix it and fill the rest; typing clears the field's message.
    chrome
        .js(&format!(
            "document.querySelector('#w-{id}-f-url').value = ''; return true;"
        ))
        .await;
    chrome
        .css(&format!("#w-{id}-f-url"))
        .await
        .send_keys("https://staging.example.com")
        .await
        .unwrap();
    assert_eq!(
        chrome
            .js(&format!(
                "return document.querySelector('#w-{id}-f-url-error').hidden;"
            ))
            .await,
        json!(true)
    );
    chrome
        .css(&format!("#w-{id}-f-tag"))
        .await
        .send_keys("v3.1")
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{id}-f-owner"))
        .await
        .send_keys("ops@example.com")
        .await
        .unwrap();
    chrome
        .js(&format!(
            "document.querySelector('#w-{id}-f-day').value = '2026-12-24'; return true;"
        ))
        .await;
    chrome
        .css(&format!("#w-{id}-f-migrate"))
        .await
        .click()
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    answered_card(&chrome, &id).await;
    let done = widget(&app, &agent, &id).await;
    assert_eq!(
        done["result"]["answers"],
        json!({ "url": "https://staging.example.com", "port": 8080, "ratio": null, "tag": "v3.1",
                "notes": null, "owner": "ops@example.com", "day": "2026-12-24", "migrate": false }),
        "{done}"
    );
    assert_eq!(
        texts(&chrome, &format!("{card} dl.answers dd")).await,
        json!([
            "https://staging.example.com",
            "8080",
            "—",
            "v3.1",
            "—",
            "ops@example.com",
            "2026-12-24",
            "no"
        ])
    );
    chrome.close().await;

    // Without JavaScript: the form still works; the server's refusal of a
    // field the browser cannot check (a pattern) is shown at that field.
    let release = json!({ "question": "Which release?", "fields": [
        { "name": "url", "label": "Staging URL", "type": "url" },
        { "name": "tag", "label": "Release tag", "pattern": "v[0-9]+\\.[0-9]+" },
        { "name": "port", "label": "Port", "type": "integer", "default": 8080 },
    ] });
    let id = created(ask(&app, &agent, &session, "fields", &release).await).await;
    let card = format!("#w-{id}");
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&transcript).await;
    chrome.wait_css(&format!("{card} form.fields")).await;
    for (field, text) in [("url", "https://staging.example.com"), ("tag", "latest")] {
        chrome
            .css(&format!("#w-{id}-f-{field}"))
            .await
            .send_keys(text)
            .await
            .unwrap();
    }
    chrome
        .css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .field.has-error")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} .field.has-error .field-error")).await,
        json!(["does not have the form asked for"])
    );
    assert_eq!(
        chrome
            .count(&format!(
                "{card} .field.has-error input[name='field.tag'][aria-invalid=true]"
            ))
            .await,
        1
    );
    assert_eq!(
        texts(&chrome, &format!("{card} p.alert")).await,
        json!(["Some answers need fixing; each says why below."])
    );
    for (field, text) in [("url", "https://staging.example.com"), ("tag", "v4.0")] {
        chrome
            .css(&format!("#w-{id}-f-{field}"))
            .await
            .send_keys(text)
            .await
            .unwrap();
    }
    chrome
        .css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    answered_card(&chrome, &id).await;
    assert_eq!(
        widget(&app, &agent, &id).await["result"]["answers"],
        json!({ "url": "https://staging.example.com", "tag": "v4.0", "port": 8080 })
    );
    chrome.close().await;

    // A plain form post (what any browser without JavaScript sends):
    // every failing field is named beside its input, nothing is kept.
    let id = created(ask(&app, &agent, &session, "fields", &staging()).await).await;
    let alice = app.login("alice").await;
    let r = app
        .post_form(
            &alice,
            &format!("/widgets/{id}/submit"),
            &[
                ("field.url", "ftp://x"),
                ("field.port", "0"),
                ("field.migrate", "false"),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = r.text().await.unwrap();
    for error in [
        format!(r#"id="w-{id}-f-url-error">must be an http or https URL"#),
        format!(r#"id="w-{id}-f-port-error">must be at least 1</p>"#),
        format!(r#"id="w-{id}-f-tag-error">needs an answer</p>"#),
    ] {
        assert!(page.contains(&error), "{error} in the refused page");
    }
    assert!(page.contains(r#"data-code="invalid_url""#));
    assert_eq!(widget(&app, &agent, &id).await["status"], "pending");
    assert!(app.prompts(&host, &session, 0).await.len() == 2);

    // Agent-written text stays text.
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    for (n, xss) in XSS.iter().enumerate() {
        let label: String = xss.chars().take(80).collect();
        let body = json!({ "question": xss, "fields": [
            { "name": "a", "label": label, "description": xss.chars().take(300).collect::<String>() },
        ] });
        let r = ask(&app, &agent, &session, "fields", &body).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{n}");
    }
    chrome.open(&transcript).await;
    chrome.wait_css("#transcript").await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}
