//! `curation`: created over MCP, curated in Chromium by typing in the
//! search box, ticking items and whole groups, answered again with
//! JavaScript off through the check boxes; its limits and bad answers
//! refused with stable codes, and agent-written labels, metadata and group
//! names inert against the XSS corpus.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/curation.rs`.

use serde_json::{Value, json};

use crate::helpers::chrome::{
    Chrome, XSS, assert_inert, enabled, open_transcript, texts, wait_for,
};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::files;
use crate::helpers::{Scene, ask, created_alone, prompt_of, scene, spawn_app, widget};

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
