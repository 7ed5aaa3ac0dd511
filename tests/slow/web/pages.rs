//! The pages as people see them, in real headless Chromium: times in words
//! and in the person's time zone, icons that need no font, dark mode, a
//! phone-sized screen, screenshots of every page.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/web/pages.rs`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::chrome::Chrome;
use crate::helpers::{Browser, TestApp, dismissed, new_widget, spawn_app, titled_session};

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

async fn answered(app: &TestApp, browser: &Browser, id: &str, fields: &[(&str, &str)]) {
    let r = app
        .post_form(browser, &format!("/widgets/{id}/submit"), fields)
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{id} is answered");
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
    let env = new_widget(
        a,
        &agent,
        s,
        "env-vars",
        &json!({ "names": ["HUBSPOT_API_KEY"], "reason": "To sync your CRM contacts." }),
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
    let ask = new_widget(
        a,
        &agent,
        s,
        "ask",
        &json!({ "items": [
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
    let q = new_widget(a, &agent, s, "ask-user", &question.clone()).await;
    answered(a, b, &q, &[("answer.0", "SQLite")]).await;
    let approval = json!({ "tool": "Bash", "input": { "command": "git status --short" }, "reason": "See what changed." });
    let ap = new_widget(a, &agent, s, "approval", &approval).await;
    answered(a, b, &ap, &[("decision", "always")]).await;
    let clarify = json!({ "question": "Which region should the database live in?",
        "widget": { "type": "choice", "options": [
            { "label": "EU", "description": "Frankfurt" }, { "label": "US" }] } });
    let c = new_widget(a, &agent, s, "clarification", &clarify.clone()).await;
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
    let waiting = new_widget(
        a,
        &agent,
        s,
        "env-vars",
        &json!({ "names": ["DATABASE_URL", "TLS_KEY"], "reason": "To connect.",
        "variable_metadata": { "TLS_KEY": { "multiline": true } } }),
    )
    .await;
    new_widget(a, &agent, s, "ask-user", &question).await;
    new_widget(a, &agent, s, "approval", &json!({ "tool": "Bash", "input": { "command": "rm -rf build" }, "reason": "Clean the build." })).await;
    new_widget(a, &agent, s, "clarification", &clarify).await;
    new_widget(a, &agent, s, "clarification", &json!({ "question": "Who owns these services?",
        "widget": { "type": "table", "columns": [
            { "key": "name", "label": "Service" },
            { "key": "owner", "label": "Owner", "editable": true },
            { "key": "on_call", "label": "On call", "editable": true, "type": "boolean" },
            { "key": "tier", "label": "Tier", "editable": true, "type": "select", "options": ["gold", "silver"] }],
          "rows": [{ "name": "api", "owner": "alice", "tier": "gold" }, { "name": "web", "on_call": true }] } })).await;
    new_widget(a, &agent, s, "clarification", &json!({ "question": "Which field does each column fill?",
        "widget": { "type": "mapping",
          "left": [{ "id": "email", "label": "E-mail address" }, { "id": "full_name", "label": "Full name" }],
          "right": [{ "id": "contact.email", "label": "Email" }, { "id": "contact.name", "label": "Name" }] } })).await;
    new_widget(a, &agent, s, "clarification", &json!({ "question": "What should we build first?",
        "widget": { "type": "ranking", "items": [
            { "id": "sso", "label": "Single sign-on" },
            { "id": "csv", "label": "CSV export", "description": "asked for by three customers" }] } })).await;
    new_widget(a, &agent, s, "clarification", &json!({ "question": "Which tests stay in the quick run?",
        "widget": { "type": "curation", "items": [
            { "id": "auth", "label": "tests/auth.rs", "metadata": { "suite": "unit", "size": 12 } },
            { "id": "billing", "label": "tests/billing.rs", "metadata": { "suite": "integration", "size": 340 } }],
          "columns": ["size"], "group_by": "suite", "default_state": "all_selected", "searchable": true } })).await;
    new_widget(a, &agent, s, "clarification", &json!({ "question": "How should the docs be organised?",
        "widget": { "type": "tree", "nodes": [
            { "id": "guide", "label": "Guide" },
            { "id": "install", "label": "Install", "parent_id": "guide" },
            { "id": "reference", "label": "Reference" }],
          "allow_reparent": true, "allow_delete": true, "allow_rename": true, "allow_add": true } })).await;

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
        ("slack", "/settings/slack".to_owned()),
        ("slack-app", "/admin/slack".to_owned()),
        ("password", "/settings/password".to_owned()),
        ("users", "/admin/users".to_owned()),
        ("audit", "/admin/audit".to_owned()),
        ("widget-page", format!("/widgets/{waiting}")),
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
    plain.sign_in(url, "alice").await;
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
    chrome.sign_in(url, "alice").await;
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
    crate::helpers::chrome::wait_for("the live reply with its time", || async {
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
    chrome.sign_in(url, "alice").await;

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

#[tokio::test]
async fn the_session_list_updates_live_and_a_reload_creates_nothing() {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let host = app.token(&alice, "sessions").await;
    let (first, _) = titled_session(&app, &host, "First").await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome.open(&format!("{}/", app.url)).await;
    chrome.mark_document().await;

    // A new session and a waiting widget show up without a reload, and the
    // tab counts what waits.
    let (second, agent) = titled_session(&app, &host, "Second").await;
    chrome.wait_css(&format!("#s-{second}")).await;
    app.pending_widget(&agent, &second, &["LIVE_KEY"]).await;
    chrome.wait_css(&format!("#s-{second} .pill.pending")).await;
    assert!(chrome.same_document().await, "the page was reloaded");
    let order = chrome
        .js("return [...document.querySelectorAll('.sessions li')].map(li => li.id);")
        .await;
    assert_eq!(order, json!([format!("s-{second}"), format!("s-{first}")]));
    assert!(chrome.title().await.unwrap().starts_with("(1) "));

    // Created in the browser: the answer is a redirect, so a reload
    // shows the page again and creates nothing.
    chrome
        .css("#title")
        .await
        .send_keys("From the browser")
        .await
        .unwrap();
    chrome
        .css("form[action='/sessions'] button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    crate::helpers::chrome::wait_for("the settings panel", || async {
        chrome
            .current_url()
            .await
            .unwrap()
            .path()
            .ends_with("/settings")
    })
    .await;
    chrome.refresh().await.unwrap();
    chrome.back().await.unwrap();
    chrome.refresh().await.unwrap();
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, 3);
    chrome.close().await;
}

#[tokio::test]
async fn the_transcript_reads_as_a_conversation() {
    let tour = tour().await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&tour.app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", tour.app.url, tour.session))
        .await;
    // Who speaks, in order: the agent's lines and requests, the person's
    // answers (by name) and reply.
    let turns = chrome
        .js("return [...document.querySelectorAll('#transcript .speaker')].map(p => p.querySelector('strong').textContent + ' ' + p.textContent.split(' ').slice(1).join(' ').replace(/\\s+/g, ' ').trim());")
        .await;
    let turns: Vec<String> = turns
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().split(" · ").next().unwrap().to_owned())
        .collect();
    let who: Vec<&str> = turns.iter().map(|t| t.split(' ').next().unwrap()).collect();
    assert_eq!(
        who,
        [
            "Agent", "Agent", "alice", // the first line; the key asked, alice answered
            "Agent", "Agent", "alice", // a line; the ask, dismissed
            "Agent", "alice", // the question, answered
            "Agent", "alice", // the approval, approved
            "Agent", "alice", // the clarification, dismissed
            "alice", // her reply
            "Agent", "Agent", "Agent", "Agent", "Agent", "Agent", "Agent", "Agent", "Agent",
            "Agent", // a line and nine waiting requests
        ],
        "{turns:#?}"
    );
    let answers = chrome
        .js("return [...document.querySelectorAll('#transcript .answer-line')].map(p => p.textContent.replace(/\\s+/g, ' ').trim());")
        .await;
    let answers: Vec<String> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let verbs: Vec<&str> = answers
        .iter()
        .map(|a| a.split(' ').nth(1).unwrap())
        .collect();
    assert_eq!(
        verbs,
        ["answered", "dismissed", "answered", "approved", "dismissed"],
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .all(|a| a.starts_with("alice ") && a.ends_with("just now")),
        "{answers:?}"
    );
    chrome.close().await;
}

/// axe-core, pinned: fetched from the npm registry by name with `npm pack`
/// the first time and kept in `target/`. No npm, no registry: the audit
/// fails, it is never skipped.
const AXE_VERSION: &str = "4.10.2";

fn axe_source() -> String {
    use std::process::Command;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(format!("axe-core-{AXE_VERSION}"));
    let script = root.join("package/axe.min.js");
    if !script.is_file() {
        std::fs::create_dir_all(&root).unwrap();
        let package = format!("axe-core@{AXE_VERSION}");
        let packed = Command::new("npm")
            .args(["pack", &package, "--pack-destination"])
            .arg(&root)
            .current_dir(&root)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "the accessibility audit needs {package} from the npm registry, \
                     and `npm` could not run ({e}): install node and npm"
                )
            });
        assert!(
            packed.status.success(),
            "`npm pack {package}` failed; the accessibility audit cannot run without it:\n{}",
            String::from_utf8_lossy(&packed.stderr)
        );
        let tgz = root.join(format!("axe-core-{AXE_VERSION}.tgz"));
        let unpacked = Command::new("tar")
            .arg("-xzf")
            .arg(&tgz)
            .arg("-C")
            .arg(&root)
            .arg("package/axe.min.js")
            .status()
            .unwrap();
        assert!(
            unpacked.success() && script.is_file(),
            "{} holds no package/axe.min.js",
            tgz.display()
        );
    }
    let source = std::fs::read_to_string(&script).unwrap();
    assert!(
        source.contains("axe"),
        "{} is not axe-core",
        script.display()
    );
    source
}

/// Runs axe-core on the open page (WCAG 2.1 A and AA, and best practices);
/// returns the violations as (impact, rule, where).
async fn axe(chrome: &Chrome, source: &str) -> Vec<(String, String, Value)> {
    chrome
        .js(&format!("{source}\n;return typeof window.axe;"))
        .await;
    let script = r#"
        const done = arguments[arguments.length - 1];
        axe.run(document, { runOnly: { type: 'tag',
            values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
          .then(r => done(r.violations.map(v => [v.impact, v.id,
              v.nodes.slice(0, 4).map(n => n.target.join(' ') + ': ' + n.failureSummary)])))
          .catch(e => done([['error', String(e), []]]));
    "#;
    let found = chrome
        .execute_async(script, vec![])
        .await
        .unwrap_or_else(|e| panic!("axe.run failed: {e}"));
    found
        .as_array()
        .unwrap_or_else(|| panic!("axe answered {found}"))
        .iter()
        .map(|v| {
            (
                v[0].as_str().unwrap_or("none").to_owned(),
                v[1].as_str().unwrap_or_default().to_owned(),
                v[2].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_page_passes_an_accessibility_audit() {
    let source = axe_source();
    let tour = tour().await;
    let url = &tour.app.url;
    let chrome = Chrome::launch().await;
    let mut pages = vec![("login", "/login".to_owned())];
    pages.extend(tour.pages.iter().cloned());
    let mut serious = Vec::new();
    let mut audits = 0;
    for (n, (name, path)) in pages.iter().enumerate() {
        if n == 1 {
            chrome.sign_in(url, "alice").await;
        }
        for (scheme, width) in [("light", 1280), ("dark", 1280), ("light", 390)] {
            chrome.color_scheme(scheme).await;
            chrome.viewport(width, 900, width < 600).await;
            chrome.open(&format!("{url}{path}")).await;
            for (impact, rule, nodes) in axe(&chrome, &source).await {
                let line = format!("{name} ({scheme}, {width} px): {impact} {rule} {nodes}");
                if impact == "serious" || impact == "critical" || impact == "error" {
                    serious.push(line);
                } else {
                    println!("axe, minor: {line}");
                }
            }
            audits += 1;
        }
    }
    chrome.close().await;
    println!(
        "axe-core {AXE_VERSION}: {audits} audits of {} pages",
        pages.len()
    );
    assert!(
        serious.is_empty(),
        "serious or critical violations:\n{}",
        serious.join("\n")
    );
}
