//! MCP Apps with the real host side: @modelcontextprotocol/ext-apps's
//! AppBridge and the MCP client it forwards to, pinned in
//! `tests/apps-host/package-lock.json` (installed with `npm ci` on first
//! use), in a minimal host page this test serves on loopback, in headless
//! Chromium. The page connects to widgetd's `/mcp` (through the test's
//! loopback proxy, as a web host's backend would), calls the tool, reads its
//! `ui://` document and renders it in a sandboxed iframe; the person answers
//! in the iframe, and the agent reads the answer.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::agents::harness::wait_bounded;
use crate::helpers::TestApp;
use crate::helpers::chrome::{Chrome, wait_for};
use crate::helpers::mcp::{actors, call, connect, form_app, opted_in, structured};

/// `tests/apps-host`, where the host packages are pinned.
fn host_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/apps-host")
}

/// `npm ci` of the pinned host packages, once per process and only when
/// the installed set is not the lockfile's; bounded.
fn install() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = host_dir();
        let wanted = std::fs::read(dir.join("package-lock.json")).unwrap();
        let stamp = dir.join("node_modules/.widgetd-installed-lock.json");
        if std::fs::read(&stamp).ok().as_deref() == Some(&wanted[..]) {
            return;
        }
        let mut child = Command::new("npm")
            .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "the MCP Apps host test needs @modelcontextprotocol/ext-apps from npm, and \
                     `npm` could not run ({e}): install node (20 or later) and npm"
                )
            });
        let status = wait_bounded(&mut child, Duration::from_secs(300), "npm ci (apps-host)");
        assert!(
            status.success(),
            "`npm ci` in {} failed ({status})",
            dir.display()
        );
        std::fs::write(&stamp, &wanted).unwrap();
    });
}

/// The import map of the host's modules, computed by Node's own resolver.
fn import_map() -> String {
    let dir = host_dir();
    let mut child = Command::new("node")
        .args([
            "--experimental-import-meta-resolve",
            "--conditions=browser",
            "importmap.mjs",
        ])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`node` could not run ({e}): install node 20 or later"));
    let status = wait_bounded(&mut child, Duration::from_secs(60), "importmap.mjs");
    assert!(status.success(), "importmap.mjs failed ({status})");
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let map: Value = serde_json::from_str(&out).unwrap();
    assert!(
        map["imports"]["@modelcontextprotocol/ext-apps/app-bridge"].is_string(),
        "{map}"
    );
    out
}

#[derive(Clone)]
struct Host {
    page: String,
    daemon: String,
    client: reqwest::Client,
}

/// Serves the host page, its modules, and `/mcp` proxied to the daemon.
async fn serve_host(app: &TestApp, config: Value) -> String {
    let page = std::fs::read_to_string(host_dir().join("host.html"))
        .unwrap()
        .replace(
            "<!-- importmap -->",
            &format!("<script type=\"importmap\">{}</script>", import_map()),
        )
        .replace(
            "<!-- config -->",
            &format!(
                "<script id=\"config\" type=\"application/json\">{}</script>",
                config.to_string().replace('<', "\\u003c")
            ),
        );
    let host = Host {
        page,
        daemon: app.url.clone(),
        client: reqwest::Client::new(),
    };
    let router = axum::Router::new()
        .route(
            "/",
            axum::routing::get(|State(h): State<Host>| async move {
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], h.page)
            }),
        )
        .route("/host.mjs", axum::routing::get(|| file("host.mjs".into())))
        .route(
            "/node_modules/{*path}",
            axum::routing::get(|UrlPath(path): UrlPath<String>| {
                file(format!("node_modules/{path}"))
            }),
        )
        .route("/mcp", axum::routing::any(proxy))
        .with_state(host);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    url
}

/// A file of `tests/apps-host`, never outside it.
async fn file(path: String) -> Response {
    if path.split('/').any(|part| part == ".." || part.is_empty()) {
        return StatusCode::NOT_FOUND.into_response();
    }
    let Ok(body) = tokio::fs::read(host_dir().join(&path)).await else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mime = match Path::new(&path).extension().and_then(|e| e.to_str()) {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    };
    ([(header::CONTENT_TYPE, mime)], body).into_response()
}

/// `/mcp` as the host's backend would send it: the same request to the
/// daemon, without the browser's `Origin`, streamed back.
async fn proxy(State(h): State<Host>, method: Method, headers: HeaderMap, body: Bytes) -> Response {
    let mut request = h.client.request(method, format!("{}/mcp", h.daemon));
    for name in [
        "authorization",
        "accept",
        "content-type",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value);
        }
    }
    let response = match request.body(body).send().await {
        Ok(response) => response,
        Err(_) => return StatusCode::BAD_GATEWAY.into_response(),
    };
    let mut out = Response::builder().status(response.status().as_u16());
    for name in ["content-type", "mcp-session-id", "mcp-protocol-version"] {
        if let Some(value) = response.headers().get(name) {
            out = out.header(name, value.as_bytes());
        }
    }
    let chunks = futures_util::stream::unfold(response, |mut r| async move {
        match r.chunk().await {
            Ok(Some(bytes)) => Some((Ok::<_, std::io::Error>(bytes), r)),
            _ => None,
        }
    });
    out.body(Body::from_stream(chunks)).unwrap()
}

/// Waits until the host page reached `state`; fails with its log on error.
async fn host_state(chrome: &Chrome, state: &str) {
    wait_for(format!("the host page to reach `{state}`"), || async {
        let now = chrome.js("return document.body.dataset.state;").await;
        if now == "error" {
            let log = chrome
                .js("return document.getElementById('log').textContent;")
                .await;
            panic!("the host page failed: {log}");
        }
        now == state
    })
    .await;
}

/// Chromium on a host page that called the tool of `config` and shows its
/// app; the id of the widget the call made.
async fn shown(app: &TestApp, config: Value) -> (Chrome, String) {
    let host = serve_host(app, config).await;
    let chrome = Chrome::launch().await;
    chrome.open(&format!("{host}/")).await;
    host_state(&chrome, "shown").await;
    let result = chrome
        .js("return document.getElementById('result').textContent;")
        .await;
    let made: Value = serde_json::from_str(result.as_str().unwrap())
        .unwrap_or_else(|_| panic!("the tool call gave no structured result: {result}"));
    let id = made["widget_id"].as_str().unwrap().to_owned();
    assert_eq!(made["status"], "pending", "{made}");
    (chrome, id)
}

/// What the host page recorded in `document.body.dataset[key]`.
async fn recorded(chrome: &Chrome, key: &str) -> String {
    let value = chrome
        .js(&format!("return document.body.dataset.{key} || '';"))
        .await;
    value.as_str().unwrap().to_owned()
}

/// Every height the app sent the host, in order.
async fn heights(chrome: &Chrome) -> Vec<u32> {
    recorded(chrome, "heights")
        .await
        .split_whitespace()
        .map(|h| h.parse().unwrap())
        .collect()
}

/// The person answers a ranking by dragging in the app, in the host's
/// sandboxed iframe; the agent's next `get_widget_status` has the
/// structured answer, recorded as the agent's client (MCP App).
#[tokio::test]
async fn a_ranking_is_answered_by_dragging_in_the_hosts_app() {
    install();
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let arguments = json!({
        "question": "What should we build first?",
        "widget": { "type": "ranking", "items": [
            { "id": "sso", "label": "Single sign-on" },
            { "id": "csv", "label": "CSV export" },
            { "id": "dark", "label": "Dark mode" },
        ] },
    });
    let config = json!({
        "token": alice.agent,
        "tool": "request_clarification",
        "arguments": arguments,
    });
    let (chrome, id) = shown(&app, config).await;
    chrome.css("iframe#app").await.enter_frame().await.unwrap();
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!(
            "{card} form.clarification.type-ranking .rank-handle"
        ))
        .await;
    let first = chrome.css(&format!("{card} li.rank-item")).await;
    let handle = crate::widgets::clarification::ranking::handle(&chrome, &card, "Dark mode").await;
    crate::widgets::clarification::ranking::drag(&chrome, handle, first, -8.0).await;
    assert_eq!(
        crate::widgets::clarification::ranking::shown(&chrome, &card).await,
        json!(["Dark mode", "Single sign-on", "CSV export"])
    );
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    let done = format!("{card}[data-status=submitted]");
    wait_for("the app to show the answered card", || async {
        let error = chrome
            .js("const e = document.querySelector('.app-error'); return e ? e.textContent : null;")
            .await;
        assert!(error.is_null(), "the app refused the answer: {error}");
        chrome.count(&done).await == 1
    })
    .await;
    chrome.enter_parent_frame().await.unwrap();

    let agent = connect(&app, Some(&alice.agent)).await.unwrap();
    let status = structured(call(&agent, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(status["status"], "submitted", "{status}");
    assert_eq!(
        status["result"]["structured"],
        json!({ "ranked": ["dark", "sso", "csv"] }),
        "{status}"
    );
    assert_eq!(status["result"]["answered_by"], "mcp-app", "{status}");
    assert_eq!(
        actors(&app, "widget.submit", &id).await,
        vec![format!("mcp-app:{}", alice.session)]
    );
    chrome.close().await;
}

/// An approval's app shows what is asked and opens widgetd's own page for
/// it through the host; nothing is answered in the app, and once the person
/// answered on that page the app shows the end by itself.
#[tokio::test]
async fn an_approval_in_the_hosts_app_opens_widgetds_page() {
    install();
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let config = json!({
        "token": alice.agent,
        "tool": "request_approval",
        "arguments": { "tool": "Bash", "input": { "command": "rm -rf build" } },
    });
    let (chrome, id) = shown(&app, config).await;
    chrome.css("iframe#app").await.enter_frame().await.unwrap();
    chrome
        .wait_css("button.open-in-widgetd")
        .await
        .click()
        .await
        .unwrap();
    assert_eq!(chrome.count("form").await, 0, "no form in the app");
    chrome.enter_parent_frame().await.unwrap();
    wait_for("the host to be asked to open widgetd's page", || async {
        recorded(&chrome, "opened").await == format!("{}/widgets/{id}", app.url)
    })
    .await;

    // The person allows it there, logged in; the app shows the end.
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("decision", "once"), ("return_to", "page")],
        )
        .await;
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);
    chrome.css("iframe#app").await.enter_frame().await.unwrap();
    chrome
        .wait_css(&format!("#w-{id}[data-status=submitted]"))
        .await;
    assert_eq!(chrome.count("button.open-in-widgetd").await, 0);
    chrome.enter_parent_frame().await.unwrap();
    chrome.close().await;
}

/// A link the agent wrote (here a clarification option's markdown) opens
/// through the host, `ui/open-link` with its URL, and never in the app's
/// own frame, which keeps widgetd's card (issue 61): in a host, the frame
/// would otherwise show the outside page where the card was, a convincing
/// "sign in again". Where the host refuses, the address is shown as text
/// beside the link, for the person to copy.
#[tokio::test]
async fn a_link_in_the_app_opens_through_the_host_never_in_its_frame() {
    install();
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let url = "https://login.example/reauth?next=chat";
    let arguments = json!({
        "question": "Which account should deploy?",
        "widget": { "type": "choice", "options": [
            { "label": "Production", "markdown": format!("Your session expired: [sign in again]({url})") },
            { "label": "Staging" },
        ] },
    });
    for refused in [false, true] {
        let config = json!({
            "token": alice.agent,
            "tool": "request_clarification",
            "arguments": arguments,
            "refuseLinks": refused,
        });
        let (chrome, id) = shown(&app, config).await;
        let card = format!("#w-{id}");
        chrome.css("iframe#app").await.enter_frame().await.unwrap();
        chrome
            .wait_css(&format!("{card} .markdown a[href]"))
            .await
            .click()
            .await
            .unwrap();
        chrome.enter_parent_frame().await.unwrap();
        wait_for("the host to be asked to open the link", || async {
            recorded(&chrome, "opened").await == url
        })
        .await;
        chrome.css("iframe#app").await.enter_frame().await.unwrap();
        assert_eq!(chrome.js("return location.href;").await, "about:srcdoc");
        let options = format!("{card} fieldset.choice");
        assert_eq!(chrome.count(&options).await, 1, "the card stays");
        if refused {
            let fallback = chrome.wait_css(&format!("{card} .link-fallback")).await;
            assert!(fallback.text().await.unwrap().contains(url));
            assert_eq!(
                chrome.count(".link-fallback a").await,
                0,
                "text, not a link"
            );
        } else {
            assert_eq!(chrome.count(".link-fallback").await, 0);
        }
        chrome.enter_parent_frame().await.unwrap();
        chrome.close().await;
    }
}

/// A host that refuses to open widgetd's page (a result with `isError`)
/// leaves no dead "Open in widgetd" button: the page's address is shown as
/// text to copy (issue 61).
#[tokio::test]
async fn a_refused_open_in_widgetd_shows_the_address() {
    install();
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let config = json!({
        "token": alice.agent,
        "tool": "request_approval",
        "arguments": { "tool": "Bash", "input": { "command": "rm -rf build" } },
        "refuseLinks": true,
    });
    let (chrome, id) = shown(&app, config).await;
    let page = format!("{}/widgets/{id}", app.url);
    chrome.css("iframe#app").await.enter_frame().await.unwrap();
    chrome
        .wait_css("button.open-in-widgetd")
        .await
        .click()
        .await
        .unwrap();
    let fallback = chrome.wait_css(".open-page .link-fallback").await;
    assert!(fallback.text().await.unwrap().contains(&page));
    chrome.enter_parent_frame().await.unwrap();
    assert_eq!(recorded(&chrome, "opened").await, page);
    chrome.close().await;
}

/// The frame follows the card down as well as up (issue 61): the app
/// measures as the extension's app SDK does, so once a long pending card
/// is replaced by its short ended one the host is sent a smaller height.
#[tokio::test]
async fn the_frame_shrinks_when_the_card_does() {
    install();
    let app = form_app().await;
    let alice = opted_in(&app, "alice").await;
    let about = "Close to most of the customers, with two zones, a staging copy and \
                 the on-call team's own dashboards and runbooks already in place.";
    let options: Vec<Value> = (1..=10)
        .map(|n| json!({ "label": format!("Region {n}"), "description": about }))
        .collect();
    let config = json!({
        "token": alice.agent,
        "tool": "request_clarification",
        "arguments": { "question": "Which region?", "widget": { "type": "choice", "options": options } },
    });
    let (chrome, id) = shown(&app, config).await;
    wait_for("the app to report the long card's height", || async {
        heights(&chrome).await.last().is_some_and(|h| *h > 600)
    })
    .await;
    let long = *heights(&chrome).await.last().unwrap();

    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("selected", "Region 3"), ("return_to", "page")],
        )
        .await;
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);
    chrome.css("iframe#app").await.enter_frame().await.unwrap();
    chrome
        .wait_css(&format!("#w-{id}[data-status=submitted]"))
        .await;
    chrome.enter_parent_frame().await.unwrap();
    wait_for("the host to be sent a smaller height", || async {
        heights(&chrome).await.last().is_some_and(|h| *h < long / 2)
    })
    .await;
    chrome.close().await;
}
