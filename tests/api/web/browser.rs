//! The web app in a real headless Chromium (and, where no browser is needed,
//! over plain HTTP as a browser would send it): answering widgets live, XSS
//! staying inert, CSRF, the session cookie, and no value on any page.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::helpers::chrome::{Chrome, wait_for};
use crate::helpers::widget_status;
use crate::helpers::{
    Browser, PASSWORD, Scene, TestApp, assert_error, canary, scene, session_cookie, spawn_app,
    spawn_app_with,
};

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

/// Markup that, if it ran, sets `window.__xss` or the title. Each fits the
/// shortest field it goes into (placeholders: 120 characters).
pub const XSS: &[&str] = &[
    "<script>window.__xss=1</script>",
    "<img src=x onerror=\"window.__xss=1\">",
    "<svg onload=\"window.__xss=1\"><circle r=\"9\"/></svg>",
    "[link](javascript:window.__xss=1)",
    "[upper](JaVaScRiPt:window.__xss=1)",
    "[entity](&#106;avascript:window.__xss=1)",
    "<javascript:window.__xss=1>",
    "&lt;script&gt;window.__xss=1&lt;/script&gt;",
    "<a href=\"javascript:window.__xss=1\">x</a>",
    "<a href=\"jav&#x09;ascript:window.__xss=1\">tab</a>",
    "<iframe src=\"javascript:window.__xss=1\"></iframe>",
    "\"><script>document.title='pwned'</script>",
    "'><img src=x onerror=document.title='pwned'>",
    "![img](x\" onerror=\"window.__xss=1)",
    "[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==)",
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=1>",
    "<details open ontoggle=\"window.__xss=1\">d</details>",
    "<body onload=window.__xss=1><base href=\"javascript:/\">",
];

/// Everything in the page that could run script or load something, plus
/// what a test checks about it (agent-written markdown, in `.instructions`
/// and `.markdown`, holds only the allowed tags). Fails the test with what
/// it found.
pub async fn assert_inert(chrome: &Chrome, title: &str) {
    let found = chrome
        .js(r#"
            const html = (e) => e.outerHTML.slice(0, 160);
            const allowed = ['P', 'BR', 'A', 'EM', 'STRONG', 'CODE', 'UL', 'OL', 'LI'];
            return {
              xss: typeof window.__xss,
              title: document.title,
              forbidden: [...document.querySelectorAll(
                'script:not([src]), iframe, frame, object, embed, math, img:not(.annotation-image), style, base, ' +
                '[onerror], [onload], [srcdoc], a[href^="javascript"], ' +
                // The page's own icons only: in a badge or a speaker line,
                // drawn with plain shapes.
                'svg:not(.badge > svg.icon):not(.speaker > svg.icon):not(.rank-handle > svg.icon), ' +
                'svg.icon *:not(circle, line, polyline, path, rect)')].map(html),
              handlers: [...document.querySelectorAll('*')]
                .filter(e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on')))
                .map(html),
              links: [...document.querySelectorAll('a[href], area[href]')]
                .filter(a => !['http:', 'https:'].includes(a.protocol)).map(html),
              scripts: [...document.scripts].map(s => s.getAttribute('src')),
              // An annotation's image is the daemon's own, and nothing else.
              images: [...document.querySelectorAll('img.annotation-image')]
                .filter(i => !/^\/widgets\/[A-Za-z0-9_-]+\/image$/.test(i.getAttribute('src'))).map(html),
              instructions: [...document.querySelectorAll('.instructions *, .markdown *')]
                .filter(e => !allowed.includes(e.tagName)
                  || [...e.attributes].some(a => !['href', 'rel'].includes(a.name)))
                .map(html),
            };
            "#)
        .await;
    assert_eq!(found["xss"], "undefined", "injected script ran: {found:#}");
    // The page prefixes the count of waiting requests: "(3) title".
    let shown = found["title"].as_str().unwrap_or_default();
    let shown = shown
        .strip_prefix('(')
        .and_then(|rest| rest.split_once(") "))
        .filter(|(n, _)| n.parse::<u32>().is_ok())
        .map_or(shown, |(_, rest)| rest);
    assert_eq!(shown, title, "{found:#}");
    for key in ["forbidden", "handlers", "links", "instructions", "images"] {
        assert_eq!(found[key], json!([]), "{key} reached the DOM: {found:#}");
    }
    assert_eq!(found["scripts"], json!(["/static/app.js"]), "{found:#}");
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

/// A 403 refusal with `code`: JSON for the API-style handlers, an error
/// page (with the same message) for the page handlers.
async fn assert_refused(r: Response, code: &str, what: &str) {
    assert_eq!(r.status(), StatusCode::FORBIDDEN, "{what}");
    let json = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap().starts_with("application/json"));
    let text = r.text().await.unwrap();
    if json {
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["error"]["code"], code, "{what}: {text}");
    } else {
        let message = match code {
            "csrf_origin" => "the request&#39;s Origin is not this site",
            "csrf_cross_site" => "cross-site requests cannot change anything here",
            _ => "the form is stale or was not sent from this site",
        };
        assert!(text.contains(message), "{what}: expected {code}: {text}");
    }
}

async fn counts(app: &TestApp) -> Vec<(&'static str, i64)> {
    let mut all = Vec::new();
    for table in [
        "widgets",
        "env_vars",
        "prompts",
        "sessions",
        "messages",
        "events",
        "audit_log",
        "web_sessions",
    ] {
        all.push((
            table,
            app.count(&format!("SELECT count(*) FROM {table}")).await,
        ));
    }
    all
}

#[tokio::test]
async fn cross_site_posts_and_gets_change_nothing() {
    let app = spawn_app().await;
    let Scene {
        host: _,
        session,
        agent,
    } = scene(&app, "alice").await;
    let id = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY"])
        .await;
    let browser = app.login("alice").await;
    let secret = canary("csrf");
    let before = counts(&app).await;

    let forms: Vec<(String, Vec<(&str, &str)>)> = vec![
        (
            format!("/widgets/{id}/submit"),
            vec![("value.HUBSPOT_API_KEY", &secret), ("scope", "global")],
        ),
        (format!("/widgets/{id}/dismiss"), vec![]),
        ("/sessions".into(), vec![("title", "planted")]),
        (
            "/settings/env".into(),
            vec![("name", "PLANTED_KEY"), ("value", &secret)],
        ),
        ("/settings/env/delete".into(), vec![("name", "PLANTED_KEY")]),
        ("/logout".into(), vec![]),
    ];
    let csrf = browser.csrf.as_str();
    let url = |path: &str| format!("{}{path}", app.url);
    for (path, fields) in &forms {
        let with_token: Vec<(&str, &str)> = [("csrf_token", csrf)]
            .into_iter()
            .chain(fields.iter().copied())
            .collect();
        let post = || app.client.post(url(path)).header("cookie", &browser.cookie);
        // (a) another site's Origin, even with the right token.
        for origin in ["https://evil.example", "null", "http://127.0.0.1:1"] {
            let r = post()
                .header("origin", origin)
                .form(&with_token)
                .send()
                .await
                .unwrap();
            assert_refused(r, "csrf_origin", &format!("{path} from {origin}")).await;
        }
        // (b) the browser says the request comes from another site.
        for site in ["cross-site", "same-site"] {
            let r = post()
                .header("sec-fetch-site", site)
                .form(&with_token)
                .send()
                .await
                .unwrap();
            assert_refused(r, "csrf_cross_site", &format!("{path} {site}")).await;
        }
        // (c) same origin, but no token or a wrong one.
        let wrong: Vec<(&str, &str)> = [("csrf_token", "forged")]
            .into_iter()
            .chain(fields.iter().copied())
            .collect();
        for body in [fields, &wrong] {
            let r = post()
                .header("origin", &app.url)
                .header("sec-fetch-site", "same-origin")
                .form(body)
                .send()
                .await
                .unwrap();
            assert_refused(r, "csrf_token", &format!("{path} without its token")).await;
        }
    }
    // The login form too: no session may be created from another site.
    for (header, value) in [
        ("origin", "https://evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let r = app
            .client
            .post(url("/login"))
            .header(header, value)
            .form(&[("username", "alice"), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "login with {header}");
        assert!(session_cookie(&r).is_none(), "a refused login set a cookie");
    }

    // GETs, even cross-site ones, only read; a GET to a form's action does nothing.
    let pages = [
        ("/".to_owned(), StatusCode::OK),
        (format!("/sessions/{session}"), StatusCode::OK),
        ("/settings/env".to_owned(), StatusCode::OK),
        (format!("/sessions/{session}/widgets/{id}"), StatusCode::OK),
        ("/login".to_owned(), StatusCode::SEE_OTHER),
        ("/api/v1/me".to_owned(), StatusCode::OK),
        (
            format!("/widgets/{id}/submit?csrf_token={csrf}&value.HUBSPOT_API_KEY={secret}"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            format!("/widgets/{id}/dismiss?csrf_token={csrf}"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            format!("/logout?csrf_token={csrf}"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            format!("/settings/env/delete?csrf_token={csrf}&name=X"),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
    ];
    for site in [None, Some("cross-site")] {
        for (path, status) in &pages {
            let mut request = app.client.get(url(path)).header("cookie", &browser.cookie);
            if let Some(site) = site {
                request = request.header("sec-fetch-site", site);
            }
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), *status, "GET {path} ({site:?})");
            assert!(!r.text().await.unwrap().contains(&secret), "GET {path}");
        }
    }

    assert_eq!(
        counts(&app).await,
        before,
        "a refused request changed something"
    );
    assert_eq!(widget_status(&app, &agent, &id).await, "pending");
    let r = app
        .client
        .get(url("/api/v1/me"))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "the refused logouts logged out");

    // What Chromium really sends for a same-origin form post from a page
    // served with `Referrer-Policy: no-referrer`: `Origin: null`, with
    // `Sec-Fetch-Site: same-origin`. That must be accepted.
    let r = app
        .client
        .post(url("/sessions"))
        .header("cookie", &browser.cookie)
        .header("origin", "null")
        .header("sec-fetch-site", "same-origin")
        .form(&[("csrf_token", csrf), ("title", "from the browser")])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "a same-origin form post as Chromium sends it was refused"
    );
    let r = app
        .client
        .post(url("/login"))
        .header("origin", "null")
        .header("sec-fetch-site", "same-origin")
        .form(&[("username", "alice"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "a login as Chromium sends it was refused"
    );
}

/// The `Set-Cookie` line for the session cookie `name`.
fn set_cookie(r: &Response, name: &str) -> String {
    r.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie in {:?}", r.headers()))
        .to_owned()
}

/// Attribute names (lowercase) and values of a `Set-Cookie` line.
fn cookie_attributes(line: &str) -> Vec<(String, String)> {
    line.split(';')
        .skip(1)
        .map(|a| {
            let (k, v) = a.trim().split_once('=').unwrap_or((a.trim(), ""));
            (k.to_ascii_lowercase(), v.to_owned())
        })
        .collect()
}

async fn me(app: &TestApp, cookie: &str) -> StatusCode {
    app.client
        .get(format!("{}/api/v1/me", app.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
}

async fn post_login(app: &TestApp, user: &str, password: &str) -> Response {
    app.client
        .post(format!("{}/login", app.url))
        .form(&[("username", user), ("password", password)])
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn session_cookies_follow_the_contract() {
    let app = spawn_app().await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;

    let r = post_login(&app, "alice", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let line = set_cookie(&r, "widgetd");
    let attributes = cookie_attributes(&line);
    let names: Vec<&str> = attributes.iter().map(|(k, _)| k.as_str()).collect();
    assert!(names.contains(&"httponly"), "{line}");
    assert!(
        attributes.contains(&("samesite".into(), "Strict".into())),
        "{line}"
    );
    assert!(attributes.contains(&("path".into(), "/".into())), "{line}");
    assert!(!names.contains(&"secure"), "Secure on plain HTTP: {line}");
    assert!(
        !names.contains(&"domain"),
        "a host-only cookie has no Domain: {line}"
    );
    for name in &names {
        assert!(
            ["httponly", "samesite", "path", "max-age", "expires"].contains(name),
            "unexpected attribute {name}: {line}"
        );
    }
    if let Some((_, age)) = attributes.iter().find(|(k, _)| k == "max-age") {
        let age: i64 = age.parse().unwrap();
        assert!(0 < age && age <= 2 * 3600, "idle timeout: {line}");
    }
    let first = session_cookie(&r).unwrap();
    assert_eq!(me(&app, &first).await, StatusCode::OK);

    // Logging in again with that cookie cycles the id: the old one is dead.
    let second = app
        .login_with("alice", PASSWORD, Some(&first))
        .await
        .unwrap();
    assert_ne!(second.cookie, first);
    assert_eq!(me(&app, &first).await, StatusCode::UNAUTHORIZED);
    assert_eq!(me(&app, &second.cookie).await, StatusCode::OK);
    // So is an id planted before login.
    let planted = "widgetd=AAAAAAAAAAAAAAAAAAAAAA";
    let third = app
        .login_with("alice", PASSWORD, Some(planted))
        .await
        .unwrap();
    assert_ne!(third.cookie, planted);
    assert_eq!(me(&app, planted).await, StatusCode::UNAUTHORIZED);
    assert_eq!(me(&app, &third.cookie).await, StatusCode::OK);
    let sessions = app.count("SELECT count(*) FROM web_sessions").await;
    assert_eq!(sessions, 2, "the cycled-out session is deleted server-side");

    // Logout removes the session server-side and the cookie client-side.
    let r = app.post_form(&second, "/logout", &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/login");
    let removal = set_cookie(&r, "widgetd");
    let removal_attrs = cookie_attributes(&removal);
    assert!(
        removal_attrs.contains(&("max-age".into(), "0".into()))
            || removal_attrs
                .iter()
                .any(|(k, v)| k == "expires" && v.contains("1970")),
        "logout leaves the cookie alive: {removal}"
    );
    assert_eq!(me(&app, &second.cookie).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.count("SELECT count(*) FROM web_sessions").await,
        sessions - 1
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'logout'")
            .await,
        1,
        "logging out is audited"
    );
    assert_eq!(
        me(&app, &third.cookie).await,
        StatusCode::OK,
        "other logins stay"
    );

    // A wrong password or an unknown user: the same generic page, no session.
    for (user, password) in [("alice", "wrong password"), ("nobody", "wrong password")] {
        let r = post_login(&app, user, password).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(session_cookie(&r).is_none());
        let page = r.text().await.unwrap();
        assert!(
            page.contains("The user name or password is wrong."),
            "{page}"
        );
        assert!(!page.contains(password), "the page echoes the password");
    }
    assert_eq!(
        app.count("SELECT count(*) FROM web_sessions").await,
        sessions - 1
    );

    // Rapid guesses are slowed down (a fresh daemon, so the counts above don't matter).
    let app = spawn_app().await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;
    for attempt in 1..=5 {
        let r = post_login(&app, "alice", "guess").await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    for password in ["guess", PASSWORD] {
        let r = post_login(&app, "alice", password).await;
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        let retry: u64 = r.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(retry >= 1, "Retry-After: {retry}");
        assert!(session_cookie(&r).is_none(), "a limited login got in");
    }

    // Under TLS the cookie is `__Host-` prefixed and Secure.
    let app = spawn_app_with(|s| s.domain.public_url = "https://widgetd.example".into()).await;
    app.user("alice", widgetd_domain::auth::Role::Member).await;
    let r = post_login(&app, "alice", PASSWORD).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let line = set_cookie(&r, "__Host-widgetd");
    let attributes = cookie_attributes(&line);
    for wanted in ["secure", "httponly"] {
        assert!(attributes.iter().any(|(k, _)| k == wanted), "{line}");
    }
    assert!(attributes.contains(&("path".into(), "/".into())), "{line}");
    assert!(!attributes.iter().any(|(k, _)| k == "domain"), "{line}");
}

#[tokio::test]
async fn no_page_shows_a_stored_value() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let browser: Browser = app.login("alice").await;
    let from_widget = canary("widget-form");
    let from_settings = canary("settings-form");

    let id = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY"])
        .await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.HUBSPOT_API_KEY", &from_widget), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .post_form(
            &browser,
            "/settings/env",
            &[
                ("name", "SETTINGS_KEY"),
                ("value", &from_settings),
                ("session_id", &session),
            ],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    // A new request for a saved name offers the saved value, without showing it.
    let again = app
        .pending_widget(&agent, &session, &["HUBSPOT_API_KEY", "NEW_KEY"])
        .await;
    assert_eq!(
        app.env_of(&session, &host).await,
        json!({ "HUBSPOT_API_KEY": from_widget, "SETTINGS_KEY": from_settings }),
        "both values were stored"
    );

    let mut seen = Vec::new();
    let cookie_pages = [
        "/".to_owned(),
        format!("/sessions/{session}"),
        "/settings/env".to_owned(),
        format!("/sessions/{session}/widgets/{id}"),
        format!("/sessions/{session}/widgets/{again}"),
        "/api/v1/me".to_owned(),
        "/login".to_owned(),
        "/static/app.js".to_owned(),
    ];
    for path in &cookie_pages {
        let r = app
            .client
            .get(format!("{}{path}", app.url))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success() || r.status().is_redirection(),
            "{path}"
        );
        seen.push((
            path.clone(),
            format!("{:?}", r.headers()),
            r.text().await.unwrap(),
        ));
    }
    let api = [
        (format!("/api/v1/widgets/{id}"), &agent),
        (format!("/api/v1/widgets/{again}"), &agent),
        (format!("/api/v1/widgets/{id}"), &host),
        ("/api/v1/env".to_owned(), &host),
        (format!("/api/v1/sessions/{session}/prompts"), &host),
    ];
    for (path, token) in &api {
        let r = app.get(path, token).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        seen.push((
            path.clone(),
            format!("{:?}", r.headers()),
            r.text().await.unwrap(),
        ));
    }
    // The event stream, read until the answer's event has been sent.
    let mut events = app
        .get(&format!("/api/v1/sessions/{session}/events"), &agent)
        .await;
    let mut stream = String::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while let Some(chunk) = events.chunk().await.unwrap() {
            stream.push_str(&String::from_utf8_lossy(&chunk));
            if stream.matches("event: widget:created").count() == 2 {
                return;
            }
        }
    })
    .await;
    assert!(stream.contains("event: widget:resolved"), "{stream}");
    seen.push(("events".into(), String::new(), stream));
    let fragment = &seen[4].2;
    assert!(
        fragment.contains("name=\"use_saved.HUBSPOT_API_KEY\""),
        "the saved value is offered: {fragment}"
    );

    for (path, headers, body) in &seen {
        for value in [&from_widget, &from_settings] {
            assert!(
                !body.contains(value.as_str()),
                "{path} shows a stored value"
            );
            assert!(
                !headers.contains(value.as_str()),
                "{path}'s headers carry a stored value"
            );
        }
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
