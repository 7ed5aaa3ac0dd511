//! The web app in a real headless Chromium (and, where no browser is needed,
//! over plain HTTP as a browser would send it): answering widgets live, XSS
//! staying inert, CSRF, the session cookie, and no value on any page.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/web/browser.rs`.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::chrome::{Chrome, XSS, assert_inert, wait_for};
use crate::helpers::{Scene, TestApp, assert_error, canary, scene, spawn_app, widget_status};

const DISCLAIMER: &str = "Type values here, never paste them into chat.";

/// The transcript page of `session`.
fn transcript(app: &TestApp, session: &str) -> String {
    format!("{}/sessions/{session}", app.url)
}

async fn created_widget(r: Response) -> String {
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "pending", "{body}");
    body["widget_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_person_answers_a_widget_in_the_browser() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    assert_eq!(chrome.current_url().await.unwrap().path(), "/");
    chrome.open(&transcript(&app, &session)).await;
    chrome.wait_css("#transcript").await;
    chrome.mark_document().await;

    // The agent asks while the page is open: the card arrives without a reload.
    let reason = "to read your HubSpot contacts";
    let id = created_widget(
        app.request_env_vars(
            &agent,
            &session,
            &json!({
                "names": ["HUBSPOT_API_KEY"],
                "reason": reason,
                "instructions": "Open **Settings → Private apps** and copy the *access token*. \
                                 See [the docs](https://developers.hubspot.com/docs/api/private-apps).",
            }),
        )
        .await,
    )
    .await;
    let card = format!("#w-{id}");
    chrome.wait_css(&card).await;
    assert!(
        chrome.same_document().await,
        "the card appeared only through a reload"
    );
    assert_eq!(
        chrome
            .css(&format!("{card}[data-status=pending] h2"))
            .await
            .text()
            .await
            .unwrap(),
        "The agent needs HUBSPOT_API_KEY"
    );
    assert_eq!(
        chrome
            .css(&format!("{card} .reason"))
            .await
            .text()
            .await
            .unwrap(),
        reason
    );
    let markdown = chrome
        .js(&format!(
            "const i = document.querySelector('{card} .instructions');
             const a = i.querySelector('a');
             return [i.querySelector('strong').textContent, i.querySelector('em').textContent,
                     a.href, a.rel];"
        ))
        .await;
    assert_eq!(
        markdown,
        json!([
            "Settings → Private apps",
            "access token",
            "https://developers.hubspot.com/docs/api/private-apps",
            "noopener noreferrer nofollow"
        ])
    );
    assert_eq!(
        chrome
            .css(&format!("{card} .disclaimer"))
            .await
            .text()
            .await
            .unwrap(),
        DISCLAIMER
    );
    let password = format!("{card} input[type=password][name=\"value.HUBSPOT_API_KEY\"]");
    assert_eq!(
        chrome.count(&password).await,
        1,
        "one password input per name"
    );
    let radios = chrome
        .js(&format!(
            "return [...document.querySelectorAll('{card} input[type=radio][name=scope]')]
                 .map(r => [r.value, r.checked]);"
        ))
        .await;
    assert_eq!(
        radios,
        json!([["session", true], ["global", false]]),
        "the scope selector is preset to the default scope (session)"
    );
    let buttons = chrome
        .js(&format!(
            "return [...document.querySelectorAll('{card} button')].map(b => b.textContent.trim());"
        ))
        .await;
    assert_eq!(buttons, json!(["Save & continue", "Dismiss"]));
    let shot = chrome.screenshot_to("pending-form.png").await;
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000, "{shot:?}");

    // The person types the value and saves it for all their sessions.
    let secret = canary("browser");
    chrome
        .css(&password)
        .await
        .send_keys(&secret)
        .await
        .unwrap();
    chrome
        .css(&format!("{card} input[name=scope][value=global]"))
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
    let badge = chrome.wait_css(&format!("{card} .badge-submitted")).await;
    let back = chrome.current_url().await.unwrap();
    assert_eq!(
        back.path(),
        format!("/sessions/{session}"),
        "the form redirects back to the transcript"
    );
    assert_eq!(
        back.fragment(),
        Some(&*format!("w-{id}")),
        "at the card it answered, not at the top"
    );
    let text = badge.text().await.unwrap();
    assert!(
        text.contains("HUBSPOT_API_KEY")
            && text.contains("scope: global")
            && text.contains("alice"),
        "{text}"
    );
    assert_eq!(
        chrome.count(&format!("{card} form, {card} input")).await,
        0,
        "a resolved widget has no form left"
    );
    chrome.screenshot_to("resolved-badge.png").await;
    let source = chrome.source().await.unwrap();
    assert!(!source.contains(&secret), "the page shows the value");

    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert_eq!(prompts[0]["widget_id"], id.as_str());
    assert_eq!(
        prompts[0]["text"],
        "[Agor] User submitted HUBSPOT_API_KEY (scope: global). You can now retry the operation that needed it."
    );
    assert_eq!(
        app.env_of(&session, &host).await,
        json!({ "HUBSPOT_API_KEY": secret }),
        "the value typed in the browser is stored byte for byte"
    );

    // A second request, dismissed.
    chrome.mark_document().await;
    let second = app.pending_widget(&agent, &session, &["SLACK_TOKEN"]).await;
    let card = format!("#w-{second}");
    chrome
        .wait_css(&format!("{card}[data-status=pending]"))
        .await;
    assert!(chrome.same_document().await);
    chrome
        .css(&format!("{card} button[form=\"dismiss-{second}\"]"))
        .await
        .click()
        .await
        .unwrap();
    let badge = chrome.wait_css(&format!("{card} .badge-dismissed")).await;
    assert!(
        badge.text().await.unwrap().contains("SLACK_TOKEN"),
        "{:?}",
        badge.text().await
    );
    assert_eq!(widget_status(&app, &agent, &second).await, "dismissed");
    assert_eq!(widget_status(&app, &agent, &id).await, "submitted");
    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert_eq!(
        prompts[1]["text"],
        "[Agor] User dismissed the request for SLACK_TOKEN. Do not re-request immediately — ask whether to proceed without, or move on to other work."
    );
    chrome.close().await;
}

#[tokio::test]
async fn a_second_tab_sees_the_resolution_live() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY"])
        .await;
    // Two browsers, each with its own profile and login.
    let (a, b) = tokio::join!(Chrome::launch(), Chrome::launch());
    tokio::join!(a.sign_in(&app.url, "alice"), b.sign_in(&app.url, "alice"));
    let card = format!("#w-{id}");
    for tab in [&a, &b] {
        tab.open(&transcript(&app, &session)).await;
        tab.wait_css(&format!("{card}[data-status=pending] form"))
            .await;
    }
    b.mark_document().await;

    a.css(&format!("{card} input[type=password]"))
        .await
        .send_keys(&canary("second-tab"))
        .await
        .unwrap();
    a.css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    a.wait_css(&format!("{card} .badge-submitted")).await;

    let badge = b
        .wait_css(&format!("{card}[data-status=submitted] .badge-submitted"))
        .await;
    assert!(
        b.same_document().await,
        "the other tab only saw the answer by reloading"
    );
    assert!(badge.text().await.unwrap().contains("HUBSPOT_API_KEY"));
    assert_eq!(
        b.count(&format!("{card} form")).await,
        0,
        "the other tab's form is gone"
    );
    a.close().await;
    b.close().await;
}

/// The text of every element matching `css` (an input's placeholder).
async fn texts(chrome: &Chrome, css: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('{css}')]
                 .map(e => e instanceof HTMLInputElement ? e.placeholder : e.textContent);"
        ))
        .await
}

/// Clicks every link in agent-written instructions; none may run script
/// or leave the page.
async fn click_instruction_links(chrome: &Chrome) {
    let here = chrome.current_url().await.unwrap();
    let links = chrome
        .find_all(fantoccini::Locator::Css(".instructions a"))
        .await
        .unwrap();
    assert!(!links.is_empty(), "the corpus has links to click");
    for link in links {
        link.click().await.unwrap();
        assert_eq!(chrome.current_url().await.unwrap(), here);
        assert_eq!(chrome.js("return typeof window.__xss;").await, "undefined");
    }
}

#[tokio::test]
async fn an_xss_corpus_is_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;

    // Names cannot carry markup at all.
    for name in ["<script>", "X<svg/onload=1>", "A\"B", "javascript:X"] {
        let r = app
            .request_env_vars(&agent, &session, &json!({ "names": [name], "reason": "r" }))
            .await;
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, "invalid_name", None).await;
    }
    // Session titles carry the corpus (one session each).
    let mut titled = Vec::new();
    for payload in XSS {
        let r = app
            .post_json("/api/v1/sessions", &host, &json!({ "title": payload }))
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "{payload}");
        let body: Value = r.json().await.unwrap();
        titled.push(body["session_id"].as_str().unwrap().to_owned());
    }

    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&transcript(&app, &session)).await;
    chrome.wait_css("#transcript").await;
    assert_eq!(
        chrome.js("return typeof window.__xss;").await,
        "undefined",
        "the trap is set before anything is injected"
    );
    chrome.mark_document().await;

    // While the page is open: transcript text, and widgets whose reason,
    // instructions, description and placeholder carry the corpus.
    let mut ids = Vec::new();
    for (i, payload) in XSS.iter().enumerate() {
        let r = app
            .post_json(
                &format!("/api/v1/sessions/{session}/messages"),
                &host,
                &json!({ "text": payload }),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED, "{payload}");
        let name = format!("XSS_{i}");
        let body = json!({
            "names": [name],
            "reason": payload,
            "instructions": format!("{payload}\n\n* {payload}\n* [click](javascript:window.__xss=1)\n\n**{payload}**"),
            "variable_metadata": { name.as_str(): { "description": payload, "placeholder": payload } },
        });
        ids.push(created_widget(app.request_env_vars(&agent, &session, &body).await).await);
    }
    wait_for("every message and card to arrive live", || async {
        chrome.count(".message").await == XSS.len()
            && chrome.count(".widget[data-status=pending]").await == XSS.len()
    })
    .await;
    assert!(chrome.same_document().await);
    let title = "test · widgetd";
    assert_inert(&chrome, title).await;
    // Shown, as text: nothing was dropped or mangled. (Cards arrive in the
    // order their fetches finish.)
    let corpus = json!(XSS);
    let mut sorted: Vec<&str> = XSS.to_vec();
    sorted.sort_unstable();
    assert_eq!(texts(&chrome, ".message .body").await, corpus);
    for field in [
        ".widget .reason",
        ".widget .hint",
        ".widget input[type=password]",
    ] {
        let mut shown: Vec<String> = serde_json::from_value(texts(&chrome, field).await).unwrap();
        shown.sort_unstable();
        assert_eq!(shown, sorted, "{field}");
    }
    click_instruction_links(&chrome).await;
    assert_inert(&chrome, title).await;

    // The same transcript rendered by the server.
    chrome.open(&transcript(&app, &session)).await;
    for id in &ids {
        assert_eq!(chrome.count(&format!("#w-{id}")).await, 1);
    }
    assert_inert(&chrome, title).await;
    assert_eq!(texts(&chrome, ".message .body").await, corpus);
    assert_eq!(texts(&chrome, ".widget .reason").await, corpus);
    click_instruction_links(&chrome).await;
    assert_inert(&chrome, title).await;

    // Titles: in the session list, and each transcript's <title> and heading.
    chrome.open(&format!("{}/", app.url)).await;
    assert_inert(&chrome, "Sessions · widgetd").await;
    let listed = texts(&chrome, ".sessions li a").await;
    for payload in XSS {
        assert!(
            listed.as_array().unwrap().contains(&json!(payload)),
            "{payload} is not listed as text: {listed}"
        );
    }
    for (id, payload) in titled.iter().zip(XSS) {
        chrome.open(&transcript(&app, id)).await;
        assert_inert(&chrome, &format!("{payload} · widgetd")).await;
        assert_eq!(texts(&chrome, "h1.session-title").await, json!([payload]));
    }
    chrome.close().await;

    // The policy that would stop whatever slipped through anyway.
    let browser = app.login("alice").await;
    for path in [
        format!("/sessions/{session}"),
        "/".to_owned(),
        "/settings/env".to_owned(),
        "/login".to_owned(),
        "/sessions/nope".to_owned(),
    ] {
        let mut request = app.client.get(format!("{}{path}", app.url));
        if path != "/login" {
            request = request.header("cookie", &browser.cookie);
        }
        let r = request.send().await.unwrap();
        let h = |name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let csp = h("content-security-policy");
        assert!(
            csp.contains("script-src 'self'")
                && csp.contains("frame-ancestors 'none'")
                && !csp.contains("unsafe-inline"),
            "{path}: {csp}"
        );
        assert_eq!(h("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(h("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(h("cache-control"), "no-store", "{path}");
    }
}

/// A throwaway Ed25519 key made for this test only; it guards nothing.
const TEST_SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACCqvreWYu/OC+Jclp9uKm8Hcaytfz7+6s6I9cyARlk0kwAAAJAdOlRWHTpU
VgAAAAtzc2gtZWQyNTUxOQAAACCqvreWYu/OC+Jclp9uKm8Hcaytfz7+6s6I9cyARlk0kw
AAAEDph6dn11ng1I4lQHNS4lxdoRoqeBs042WKUNlgGj0tD6q+t5Zi784L4lyWn24qbwdx
rK1/Pv7qzoj1zIBGWTSTAAAADHdpZGdldGQtdGVzdAE=
-----END OPENSSH PRIVATE KEY-----
";

/// A private key typed into a multi-line field reaches the store with the
/// LF line ends it was typed with (the browser sends CRLF), so SSH and TLS
/// tools can read it.
#[tokio::test]
async fn a_key_typed_into_a_multiline_field_keeps_its_line_ends() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = created_widget(
        app.request_env_vars(
            &agent,
            &session,
            &json!({
                "names": ["DEPLOY_KEY"],
                "reason": "to push to the deploy remote",
                "variable_metadata": { "DEPLOY_KEY": { "multiline": true } },
            }),
        )
        .await,
    )
    .await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&transcript(&app, &session)).await;
    let card = format!("#w-{id}");
    let field = format!("{card} textarea[name=\"value.DEPLOY_KEY\"]");
    chrome
        .wait_css(&field)
        .await
        .send_keys(TEST_SSH_KEY)
        .await
        .unwrap();
    chrome
        .css(&format!("{card} button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        app.env_of(&session, &host).await,
        json!({ "DEPLOY_KEY": TEST_SSH_KEY }),
        "the key is stored exactly as typed, with LF line ends"
    );
    chrome.close().await;
}

/// The tab's title counts the requests that wait, live.
#[tokio::test]
async fn the_tab_title_counts_waiting_requests() {
    let app = spawn_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&transcript(&app, &session)).await;
    chrome.wait_css("#transcript").await;
    let title = || async { chrome.js("return document.title;").await };
    assert_eq!(title().await, json!("test · widgetd"));
    let first = app.pending_widget(&agent, &session, &["FIRST_KEY"]).await;
    app.pending_widget(&agent, &session, &["SECOND_KEY"]).await;
    wait_for("the title to count two", || async {
        title().await == json!("(2) test · widgetd")
    })
    .await;
    let browser = app.login("alice").await;
    let r = app
        .post_form(&browser, &format!("/widgets/{first}/dismiss"), &[])
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    wait_for("the title to count one", || async {
        title().await == json!("(1) test · widgetd")
    })
    .await;
    chrome.close().await;
}

#[tokio::test]
async fn a_form_being_sent_shows_a_busy_button_and_is_not_sent_twice() {
    let app = spawn_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let id = created_widget(
        app.request_env_vars(
            &agent,
            &session,
            &json!({ "names": ["BUSY_KEY"], "reason": "to deploy" }),
        )
        .await,
    )
    .await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&transcript(&app, &session)).await;
    let card = format!("#w-{id}");
    chrome.wait_css(&card).await;
    // Hold the post in the page (this listener runs after the page's own),
    // count attempts, then press the button twice.
    let state = chrome
        .js(&format!(
            "const f = document.querySelector('{card} form:not([hidden])');
             window.sent = 0;
             f.addEventListener('submit', e => {{ if (!e.defaultPrevented) window.sent += 1; e.preventDefault(); }});
             f.querySelector('input[type=password]').value = 'x';
             const b = f.querySelector('button.primary');
             b.click(); b.click();
             return [b.getAttribute('aria-busy'), b.classList.contains('busy'), b.disabled, window.sent];"
        ))
        .await;
    assert_eq!(state, json!(["true", true, false, 1]));
}
