//! `curation`: created over MCP, curated in Chromium by typing in the
//! search box, ticking items and whole groups, answered again with
//! JavaScript off through the check boxes; its limits and bad answers
//! refused with stable codes, and agent-written labels, metadata and group
//! names inert against the XSS corpus.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{malformed_on_both, open_transcript, refused_on_both, unchanged};
use crate::helpers::chrome::enabled;
use crate::helpers::chrome::texts;
use crate::helpers::chrome::{Chrome, wait_for};
use crate::helpers::mcp::clarify_over_mcp;
use crate::helpers::mcp::{call, connect, structured};
use crate::helpers::{Scene, assert_error, scene, spawn_app};
use crate::helpers::{ask, created_alone, prompt_of, submit_json, widget};
use crate::web::browser::{XSS, assert_inert};

/// Six test files in two suites, all kept to start with.
fn files(default_state: &str) -> Value {
    let item = |id: &str, suite: &str, size: u32| json!({ "id": id, "label": format!("tests/{id}.rs"), "metadata": { "suite": suite, "size": size } });
    json!({
        "question": "Which tests should stay in the quick run?",
        "widget": {
            "type": "curation",
            "items": [
                item("auth", "unit", 12),
                item("billing", "integration", 340),
                item("cache", "unit", 8),
                item("checkout", "integration", 510),
                item("search", "unit", 30),
                item("signup", "integration", 95),
            ],
            "columns": ["size"],
            "group_by": "suite",
            "default_state": default_state,
            "searchable": true,
        },
    })
}

/// The labels of the items of `card` shown (not filtered out).
async fn visible(chrome: &Chrome, card: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('{card} tr.curation-item')].filter(r => !r.hidden).map(r => r.querySelector('label').textContent);"
        ))
        .await
}

/// Which boxes of `card` are ticked, in order.
async fn ticked(chrome: &Chrome, card: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('{card} input[name=keep]')].map(b => b.checked);"
        ))
        .await
}

#[tokio::test]
async fn a_curation_asked_over_mcp_is_searched_ticked_and_sent_in_chromium() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    let id = clarify_over_mcp(&client, files("all_selected")).await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!(
            "{card} form.clarification.type-curation input.group-all"
        ))
        .await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        texts(&chrome, &format!("{card} .group-name")).await,
        json!(["unit", "integration"])
    );
    assert_eq!(
        visible(&chrome, &card).await,
        json!([
            "tests/auth.rs",
            "tests/cache.rs",
            "tests/search.rs",
            "tests/billing.rs",
            "tests/checkout.rs",
            "tests/signup.rs"
        ])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .curation-count")).await,
        json!(["6 kept, 0 removed"])
    );
    let send = format!("{card} form.clarification button.primary");
    assert!(!enabled(&chrome, &send).await, "nothing changed or typed");
    let groups = format!("{card} tr.group-head input.group-all");
    assert_eq!(
        chrome
            .css(&groups)
            .await
            .attr("aria-label")
            .await
            .unwrap()
            .as_deref(),
        Some("Keep all shown in unit")
    );

    // Untick the whole integration group with its box, then search for
    // "check" and tick checkout back: the filter hides the others.
    let integration = format!("{card} tbody:nth-of-type(2) input.group-all");
    chrome.css(&integration).await.click().await.unwrap();
    assert_eq!(
        texts(&chrome, &format!("{card} .curation-count")).await,
        json!(["3 kept, 3 removed"])
    );
    assert!(enabled(&chrome, &send).await);
    let search = format!("#w-{id}-search");
    chrome.css(&search).await.send_keys("check").await.unwrap();
    assert_eq!(visible(&chrome, &card).await, json!(["tests/checkout.rs"]));
    assert_eq!(
        texts(&chrome, &format!("#w-{id}-shown")).await,
        json!(["1 of 6 shown"])
    );
    assert_eq!(
        chrome
            .js(&format!(
                "return document.querySelector('{card} tbody:nth-of-type(1) tr.group-head').hidden;"
            ))
            .await,
        true,
        "a group with nothing shown hides its heading"
    );
    chrome
        .css(&format!("#w-{id}-k3"))
        .await
        .click()
        .await
        .unwrap();
    // Search "a": three unit files; the unit group's box unticks them.
    let field = chrome.css(&search).await;
    field.clear().await.unwrap();
    field.send_keys("a").await.unwrap();
    assert_eq!(
        visible(&chrome, &card).await,
        json!(["tests/auth.rs", "tests/cache.rs", "tests/search.rs"])
    );
    let unit = format!("{card} tbody:nth-of-type(1) input.group-all");
    chrome.css(&unit).await.click().await.unwrap();
    assert_eq!(
        ticked(&chrome, &card).await,
        json!([false, false, false, false, true, false]),
        "in page order: the unit files, then the integration files"
    );
    assert_eq!(
        chrome
            .js(&format!(
                "return document.querySelector('{integration}').indeterminate;"
            ))
            .await,
        false
    );
    // Cleared: everything is shown again, and the integration box is mixed.
    chrome.css(&search).await.clear().await.unwrap();
    chrome.css(&search).await.send_keys(" ").await.unwrap();
    assert_eq!(visible(&chrome, &card).await.as_array().unwrap().len(), 6);
    assert_eq!(
        chrome
            .js(&format!(
                "return document.querySelector('{integration}').indeterminate;"
            ))
            .await,
        true
    );
    // The search box never sends the form.
    chrome
        .css(&search)
        .await
        .send_keys("\u{E007}")
        .await
        .unwrap();
    assert_eq!(widget(&app, &s.agent, &id).await["status"], "pending");
    chrome
        .css(&format!("#w-{id}-freeform"))
        .await
        .send_keys("checkout is flaky but important")
        .await
        .unwrap();
    chrome.screenshot_to("clarification-curation.png").await;
    chrome.css(&send).await.click().await.unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} dl.answers dt")).await,
        json!(["Kept (1)", "Removed (5)", "In their words"])
    );
    let expected = json!({ "kept": ["checkout"], "removed": ["auth", "billing", "cache", "search", "signup"] });
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        r#"[Agor] User answered your question "Which tests should stay in the quick run?": {"structured":{"kept":["checkout"],"kept_count":1,"removed_count":5},"freeform":"checkout is flaky but important"}"#
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(
        state["result"],
        json!({ "structured": expected, "freeform": "checkout is flaky but important", "answered_by": "alice" })
    );
    chrome.close().await;
}

#[tokio::test]
async fn a_curation_is_answered_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let picked = clarify_over_mcp(&client, files("none_selected")).await;
    let typed = clarify_over_mcp(&client, files("none_selected")).await;
    let nothing = clarify_over_mcp(&client, files("all_selected")).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{picked} form")).await;
    assert_eq!(chrome.count("input.group-all").await, 0, "no script ran");
    assert!(
        !chrome
            .css(&format!("#w-{picked}-search"))
            .await
            .is_displayed()
            .await
            .unwrap(),
        "the search needs the script"
    );
    let send = |id: &str| format!("#w-{id} form.clarification button.primary");
    assert!(enabled(&chrome, &send(&picked)).await);

    // Nothing ticked to start with: tick two by their labels.
    for k in ["k0", "k5"] {
        chrome
            .css(&format!("label[for=w-{picked}-{k}]"))
            .await
            .click()
            .await
            .unwrap();
    }
    chrome.css(&send(&picked)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{picked} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &picked).await["result"]["structured"],
        json!({ "kept": ["auth", "signup"], "removed": ["billing", "cache", "checkout", "search"] })
    );
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &picked).await,
        r#"[Agor] User answered your question "Which tests should stay in the quick run?": {"structured":{"kept":["auth","signup"],"kept_count":2,"removed_count":4},"freeform":""}"#
    );

    // Only words: the list as it started is kept beside them.
    chrome
        .css(&format!("#w-{typed}-freeform"))
        .await
        .send_keys("Only the fast ones")
        .await
        .unwrap();
    chrome.css(&send(&typed)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{typed} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &typed).await["result"]["structured"]["kept"],
        json!([])
    );

    // Everything left as it started, and no words: the reason beside it.
    chrome.css(&send(&nothing)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{nothing} .alert[data-code=answer_required]"))
        .await;
    assert_eq!(widget(&app, &s.agent, &nothing).await["status"], "pending");
    chrome.close().await;
}

#[tokio::test]
async fn curation_limits_have_stable_codes_and_create_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = files("all_selected");
        change(&mut body["widget"]);
        body
    };
    let items = |n: usize| {
        json!(
            (0..n)
                .map(|i| json!({ "id": format!("i{i}"), "label": format!("Item {i}") }))
                .collect::<Vec<_>>()
        )
    };
    let cases = [
        (with(&|w| w["items"] = json!([])), "items_count"),
        (with(&|w| w["items"] = items(501)), "items_count"),
        (
            with(&|w| w["items"][1]["id"] = json!("auth")),
            "duplicate_id",
        ),
        (with(&|w| w["items"][1]["id"] = json!(" ")), "empty_id"),
        (with(&|w| w["items"][1]["id"] = json!("a\tb")), "invalid_id"),
        (with(&|w| w["items"][1]["label"] = json!("")), "empty_label"),
        (
            with(&|w| w["items"][1]["label"] = json!("l".repeat(201))),
            "label_too_long",
        ),
        (
            with(&|w| w["items"][1]["label"] = json!("a\u{7}")),
            "invalid_label",
        ),
        (
            with(&|w| w["items"][1]["metadata"]["suite"] = json!(["a"])),
            "invalid_metadata",
        ),
        (
            with(&|w| w["items"][1]["metadata"]["suite"] = json!("s".repeat(201))),
            "invalid_metadata",
        ),
        (
            with(&|w| w["columns"] = json!(["a", "b", "c", "d", "e", "f", "g", "h", "i"])),
            "columns_count",
        ),
        (
            with(&|w| w["columns"] = json!(["size", "size"])),
            "duplicate_column",
        ),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    for (body, at) in [
        (with(&|w| w["sort"] = json!("asc")), "(at `widget`)"),
        (
            with(&|w| w["items"][0]["selected"] = json!(true)),
            "(at `widget.items.0`)",
        ),
        (
            with(&|w| w["default_state"] = json!("some_selected")),
            "(at `widget.default_state`)",
        ),
    ] {
        malformed_on_both(&app, (&s, &client), &body, at, None).await;
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    let body = with(&|w| w["items"] = items(500));
    let id = created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    // 500 kept ids do not fit a prompt whole; the compact form carries the
    // shorter list.
    let browser = app.login("alice").await;
    let removed: Vec<String> = (0..3).map(|i| format!("i{i}")).collect();
    let kept: Vec<String> = (3..500).map(|i| format!("i{i}")).collect();
    let sent = json!({ "structured": { "kept": kept, "removed": removed } });
    assert_eq!(
        submit_json(&app, &browser, &id, &sent).await.status(),
        StatusCode::OK
    );
    assert!(
        prompt_of(&app, &s.host, &s.session, &id)
            .await
            .contains(r#"{"structured":{"kept_count":497,"removed":["i0","i1","i2"],"removed_count":3},"freeform":""}"#)
    );
}

#[tokio::test]
async fn bad_curation_answers_are_refused_with_stable_codes_changing_nothing() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let id = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &files("all_selected"),
        )
        .await,
    )
    .await;
    let all = ["auth", "billing", "cache", "checkout", "search"];
    let cases = [
        (
            json!({ "structured": { "kept": all, "removed": [] } }),
            "missing_item",
        ),
        (
            json!({ "structured": { "kept": all, "removed": ["signup", "auth"] } }),
            "duplicate_item",
        ),
        (
            json!({ "structured": { "kept": all, "removed": ["signup", "Mars"] } }),
            "unknown_item",
        ),
        (
            json!({ "structured": { "kept": ["auth", "billing", "cache", "checkout", "search", "signup"], "removed": [] } }),
            "answer_required",
        ),
    ];
    for (body, code) in &cases {
        let r = submit_json(&app, &browser, &id, body).await;
        let message = assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some("Mars")).await;
        assert!(!message.contains("Mars"), "{message}");
    }
    for body in [
        json!({ "structured": { "kept": all } }),
        json!({ "structured": { "kept": all, "removed": [], "selected": [] } }),
        json!({ "structured": { "kept": "auth", "removed": [] } }),
    ] {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    }
    for fields in [
        vec![("keep_sent", "1"), ("keep", "6")],
        vec![("keep_sent", "1"), ("keep", "Mars")],
    ] {
        let r = app
            .post_form(&browser, &format!("/widgets/{id}/submit"), &fields)
            .await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let page = r.text().await.unwrap();
        assert!(page.contains(r#"data-code="unknown_item""#));
    }
    unchanged(&app, &s, &id).await;
}

#[tokio::test]
async fn agent_written_labels_metadata_and_groups_are_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = open_transcript(&app, "alice", &session).await;

    // The corpus as ids, labels, metadata keys and values (shown as a
    // column and as the groups), arriving while the page is open.
    let items: Vec<Value> = XSS
        .iter()
        .map(|p| json!({ "id": p, "label": p, "metadata": { XSS[0]: p, "group": p } }))
        .collect();
    let body = json!({
        "question": XSS[6],
        "widget": { "type": "curation", "items": items, "columns": [XSS[0]], "group_by": "group" },
    });
    let id = created_alone(ask(&app, &agent, &session, "clarification", &body).await).await;
    let card = format!("#w-{id}");
    wait_for("the card to arrive live", || async {
        chrome.count(&format!("{card} input.group-all")).await == XSS.len()
    })
    .await;
    assert!(chrome.same_document().await);
    assert_inert(&chrome, "test · widgetd").await;
    let corpus = json!(XSS);
    assert_eq!(texts(&chrome, &format!("{card} .group-name")).await, corpus);
    assert_eq!(visible(&chrome, &card).await, corpus);
    let cells = format!(
        "return [...document.querySelectorAll('{card} tr.curation-item td:nth-child(3)')].map(e => e.textContent);"
    );
    assert_eq!(chrome.js(&cells).await, corpus);
    let labels = format!(
        "return [...document.querySelectorAll('{card} tr.group-head input.group-all')].map(e => e.getAttribute('aria-label'));"
    );
    let expected: Vec<String> = XSS
        .iter()
        .map(|p| format!("Keep all shown in {p}"))
        .collect();
    assert_eq!(chrome.js(&labels).await, json!(expected));

    // Searched with a payload, unticked by its group box, sent.
    chrome
        .css(&format!("#w-{id}-search"))
        .await
        .send_keys(XSS[0])
        .await
        .unwrap();
    assert_eq!(visible(&chrome, &card).await, json!([XSS[0]]));
    chrome
        .css(&format!("{card} tbody:nth-of-type(1) input.group-all"))
        .await
        .click()
        .await
        .unwrap();
    assert_inert(&chrome, "test · widgetd").await;
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    let result = widget(&app, &agent, &id).await["result"]["structured"].clone();
    assert_eq!(result["removed"], json!([XSS[0]]));
    let prompt = prompt_of(&app, &host, &session, &id).await;
    assert!(prompt.contains(&json!([XSS[0]]).to_string()), "{prompt}");
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}
