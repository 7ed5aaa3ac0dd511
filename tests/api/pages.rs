//! The pages as people see them, in real headless Chromium: times in words
//! and in the person's time zone, icons that need no font, dark mode, a
//! phone-sized screen, screenshots of every page.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd::auth::Role;

use crate::helpers::{Browser, TestApp, spawn_app};
use crate::webdriver::Chrome;

/// A daemon with something on every page: a transcript holding each widget
/// kind, pending and ended, agent messages and a reply; an env var, an
/// "Always" rule, a webhook; `alice` is an admin so the admin pages show.
pub struct Tour {
    pub app: TestApp,
    pub session: String,
    pub browser: Browser,
    /// Every page a logged-in person reaches from the navigation.
    pub pages: Vec<(&'static str, String)>,
}

async fn created(r: reqwest::Response) -> String {
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["widget_id"].as_str().unwrap().to_owned()
}

async fn said(app: &TestApp, agent: &str, session: &str, text: &str) {
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{session}/messages"),
            agent,
            &json!({ "text": text }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn widget(app: &TestApp, agent: &str, session: &str, kind: &str, body: Value) -> String {
    created(
        app.post_json(
            &format!("/api/v1/sessions/{session}/widgets/{kind}"),
            agent,
            &body,
        )
        .await,
    )
    .await
}

async fn answered(app: &TestApp, browser: &Browser, id: &str, fields: &[(&str, &str)]) {
    let r = app
        .post_form(browser, &format!("/widgets/{id}/submit"), fields)
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{id} is answered");
}

async fn dismissed(app: &TestApp, browser: &Browser, id: &str) {
    let r = app
        .post_form(
            browser,
            &format!("/widgets/{id}/dismiss"),
            &[("note", "later")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{id} is dismissed");
}

pub async fn tour() -> Tour {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Admin).await;
    app.user("bob", Role::Member).await;
    let host = app.token(&alice, "sessions,env:read,env:write").await;
    let (session, agent) = app.session(&host).await;
    let browser = app.login("alice").await;
    let (a, s, b) = (&app, session.as_str(), &browser);

    said(
        a,
        &agent,
        s,
        "I will set up the CRM sync. First I need a key.",
    )
    .await;
    let env = widget(
        a,
        &agent,
        s,
        "env-vars",
        json!({ "names": ["HUBSPOT_API_KEY"], "reason": "To sync your CRM contacts." }),
    )
    .await;
    answered(
        a,
        b,
        &env,
        &[
            ("value.HUBSPOT_API_KEY", "pat-eu1-0000"),
            ("scope", "global"),
        ],
    )
    .await;
    said(a, &agent, s, "Thanks, the key works.").await;
    let ask = widget(
        a,
        &agent,
        s,
        "ask",
        json!({ "items": [
        { "question": "Deploy now?", "label": "Deploy" },
        { "question": "Which environment?", "label": "Target", "widget": "select",
          "options": [{ "label": "Production, EU", "value": "prod-eu" }, "staging"] },
        { "question": "Who to notify?", "widget": "checkbox", "options": ["Ops", "Sales"],
          "allow_freeform": true },
    ] }),
    )
    .await;
    dismissed(a, b, &ask).await;
    let question = json!({ "questions": [{
        "question": "Which database?", "header": "Database",
        "options": [{ "label": "Postgres", "description": "A server", "preview_markdown": "Needs **DATABASE_URL**" },
                    { "label": "SQLite", "description": "One file" }],
    }] });
    let q = widget(a, &agent, s, "ask-user", question.clone()).await;
    answered(a, b, &q, &[("answer.0", "SQLite")]).await;
    let approval = json!({ "tool": "Bash", "input": { "command": "git status --short" }, "reason": "See what changed." });
    let ap = widget(a, &agent, s, "approval", approval).await;
    answered(a, b, &ap, &[("decision", "always")]).await;
    let clarify = json!({ "question": "Which region should the database live in?",
        "widget": { "type": "choice", "options": [
            { "label": "EU", "description": "Frankfurt" }, { "label": "US" }] } });
    let c = widget(a, &agent, s, "clarification", clarify.clone()).await;
    dismissed(a, b, &c).await;
    let r = app
        .post_form(
            b,
            &format!("/sessions/{s}/reply"),
            &[("text", "Please use the EU region.")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "the reply is sent");
    said(a, &agent, s, "Understood. A few more questions:").await;
    // Pending, one of each kind.
    widget(
        a,
        &agent,
        s,
        "env-vars",
        json!({ "names": ["DATABASE_URL", "TLS_KEY"], "reason": "To connect.",
        "variable_metadata": { "TLS_KEY": { "multiline": true } } }),
    )
    .await;
    widget(a, &agent, s, "ask-user", question).await;
    widget(a, &agent, s, "approval", json!({ "tool": "Bash", "input": { "command": "rm -rf build" }, "reason": "Clean the build." })).await;
    widget(a, &agent, s, "clarification", clarify).await;

    let r = app
        .post_form(
            b,
            "/settings/webhooks",
            &[("url", "https://example.com/hook"), ("format", "standard")],
        )
        .await;
    assert!(r.status().is_success() || r.status().is_redirection());

    let pages = vec![
        ("sessions", "/".to_owned()),
        ("transcript", format!("/sessions/{session}")),
        ("session-settings", format!("/sessions/{session}/settings")),
        ("env-vars", "/settings/env".to_owned()),
        ("approvals", "/settings/approvals".to_owned()),
        ("notifications", "/settings/webhooks".to_owned()),
        ("password", "/settings/password".to_owned()),
        ("users", "/admin/users".to_owned()),
        ("audit", "/admin/audit".to_owned()),
    ];
    Tour {
        app,
        session,
        browser,
        pages,
    }
}

/// The `<time datetime>` elements of the page: (datetime, text, title).
async fn times(chrome: &Chrome) -> Vec<(String, String, String)> {
    let found = chrome
        .js("return [...document.querySelectorAll('time[datetime]')].map(t => [t.getAttribute('datetime'), t.textContent, t.title]);")
        .await;
    found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = |i: usize| t[i].as_str().unwrap_or_default().to_owned();
            (s(0), s(1), s(2))
        })
        .collect()
}

/// RFC 3339 as a machine writes it ("2026-11-23T04:04:18.511Z") somewhere
/// in `text`.
fn has_raw_iso(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(13).any(|w| {
        w[..4].iter().all(u8::is_ascii_digit)
            && w[4] == b'-'
            && w[7] == b'-'
            && w[10] == b'T'
            && w[11].is_ascii_digit()
    })
}

async fn visible_text(chrome: &Chrome) -> String {
    chrome
        .js("return document.body.innerText;")
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn times_read_as_people_say_them_in_their_own_time_zone() {
    let tour = tour().await;
    let url = &tour.app.url;

    // Without JavaScript: a readable UTC time, never raw ISO.
    let plain = Chrome::launch_without_javascript().await;
    plain.login(url, "alice").await;
    for (name, path) in &tour.pages {
        plain.open(&format!("{url}{path}")).await;
        let text = visible_text(&plain).await;
        assert!(!has_raw_iso(&text), "{name} shows raw ISO times:\n{text}");
        for (iso, shown, _) in times(&plain).await {
            assert!(has_raw_iso(&iso), "{name}: datetime={iso}");
            assert!(
                shown.ends_with(" UTC") && shown.len() <= "at 2026-11-23 08:15 UTC".len(),
                "{name}: {shown}"
            );
        }
    }
    plain.close().await;

    // With it: "just now", "3 min ago"; the exact time in the person's zone
    // on hover.
    let chrome = Chrome::launch().await;
    chrome
        .cdp(
            "Emulation.setTimezoneOverride",
            json!({ "timezoneId": "Asia/Tokyo" }),
        )
        .await;
    chrome.login(url, "alice").await;
    let mut seen = 0;
    for (name, path) in &tour.pages {
        chrome.open(&format!("{url}{path}")).await;
        let text = visible_text(&chrome).await;
        assert!(!has_raw_iso(&text), "{name} shows raw ISO times:\n{text}");
        for (iso, shown, title) in times(&chrome).await {
            seen += 1;
            assert!(
                shown == "just now" || shown.ends_with(" min ago"),
                "{name}: {iso} reads {shown:?}"
            );
            assert!(
                title.contains("GMT+9"),
                "{name}: the exact time {title:?} is not in Tokyo time"
            );
        }
    }
    assert!(seen >= 10, "only {seen} times on the pages");
    // A message that arrives live gets its time too.
    let session = &tour.session;
    chrome.open(&format!("{url}/sessions/{session}")).await;
    let before = chrome.count("time[datetime]").await;
    let r = tour
        .app
        .post_form(
            &tour.browser,
            &format!("/sessions/{session}/reply"),
            &[("text", "One more thing.")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    crate::webdriver::wait_for("the live reply with its time", || async {
        chrome.count("time[datetime]").await > before
    })
    .await;
    let last = times(&chrome).await.pop().unwrap();
    assert_eq!(last.1, "just now", "{last:?}");
    chrome.close().await;
}

/// Characters that render only with an emoji or symbol font.
fn font_glyphs(html: &str) -> Vec<char> {
    html.chars()
        .filter(|c| matches!(u32::from(*c), 0x2190..=0x2BFF | 0x1F000..=0x1FFFF | 0xFE0F))
        .collect()
}

#[tokio::test]
async fn icons_dark_mode_and_a_phone_sized_screen() {
    let tour = tour().await;
    let url = &tour.app.url;
    let chrome = Chrome::launch().await;
    chrome.open(&format!("{url}/login")).await;
    chrome.viewport(1280, 900, false).await;
    chrome.screenshot_as("login-1280.png").await;
    chrome.viewport(390, 844, true).await;
    chrome.screenshot_as("login-390.png").await;
    chrome.login(url, "alice").await;

    for (name, path) in &tour.pages {
        chrome.open(&format!("{url}{path}")).await;
        let html = chrome.source().await.unwrap();
        assert!(
            font_glyphs(&html).is_empty(),
            "{name} uses glyphs {:?}",
            font_glyphs(&html)
        );
        for (width, mobile) in [(1280, false), (390, true)] {
            chrome.viewport(width, 900, mobile).await;
            chrome.open(&format!("{url}{path}")).await;
            let overflow = chrome
                .js("return [document.documentElement.scrollWidth, window.innerWidth];")
                .await;
            assert!(
                overflow[0].as_i64() <= overflow[1].as_i64(),
                "{name} scrolls sideways at {width} px: {overflow}"
            );
            chrome.screenshot_as(&format!("{name}-{width}.png")).await;
        }
    }

    // Ended widgets carry an SVG icon, drawn in the text colour.
    chrome.viewport(1280, 900, false).await;
    chrome
        .open(&format!("{url}/sessions/{}", tour.session))
        .await;
    assert!(chrome.count(".badge svg.icon").await >= 4);
    assert_eq!(
        chrome.count(".badge svg.icon").await,
        chrome.count(".badge").await
    );

    // Dark mode follows the system.
    let background = "return getComputedStyle(document.body).backgroundColor;";
    let light = chrome.js(background).await;
    chrome.color_scheme("dark").await;
    let dark = chrome.js(background).await;
    assert_ne!(light, dark);
    let lum = |v: &Value| -> u32 {
        v.as_str()
            .unwrap()
            .trim_start_matches("rgb(")
            .trim_end_matches(')')
            .split(',')
            .map(|n| n.trim().parse::<u32>().unwrap())
            .sum()
    };
    assert!(lum(&dark) < 150 && lum(&light) > 600, "{light} / {dark}");
    chrome.screenshot_as("transcript-dark-1280.png").await;
    chrome.viewport(390, 844, true).await;
    chrome.screenshot_as("transcript-dark-390.png").await;

    // Focus is visible: a keyboard user sees where they are.
    chrome.color_scheme("light").await;
    chrome.viewport(1280, 900, false).await;
    chrome.open(&format!("{url}/")).await;
    chrome
        .css("body")
        .await
        .send_keys("\u{E004}")
        .await
        .unwrap();
    let focused = chrome
        .js("const a = document.activeElement; return [a.tagName, getComputedStyle(a).outlineStyle, a.getBoundingClientRect().left >= 0];")
        .await;
    assert_eq!(
        focused,
        json!(["A", "solid", true]),
        "the first Tab shows where focus is"
    );
    chrome.close().await;
}
