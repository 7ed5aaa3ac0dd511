//! `ranking`: created over MCP, ordered in Chromium by dragging and by the
//! keyboard, placed in tiers the same ways, answered again through the
//! position and tier selects with JavaScript off; its limits and bad
//! answers refused with stable codes, and agent-written labels inert
//! against the XSS corpus.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/ranking.rs`.

use std::time::Duration;

use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use fantoccini::elements::Element;
use serde_json::{Value, json};

use crate::helpers::chrome::{
    Chrome, XSS, assert_inert, enabled, open_transcript, texts, wait_for,
};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::features;
use crate::helpers::{Scene, ask, created_alone, prompt_of, scene, spawn_app, widget};

const UP: &str = "\u{E013}";

const DOWN: &str = "\u{E015}";

const LEFT: &str = "\u{E012}";

const RIGHT: &str = "\u{E014}";

const HOME: &str = "\u{E011}";

/// Presses the mouse on `from`, moves it in steps onto `to` (`dy` pixels
/// from its centre) and lets go: a real drag, as a person does it.
pub(crate) async fn drag(chrome: &Chrome, from: Element, to: Element, dy: f64) {
    let steps = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement {
            element: from,
            duration: None,
            x: 0.0,
            y: 0.0,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::MoveBy {
            duration: Some(Duration::from_millis(100)),
            x: 0.0,
            y: 5.0,
        })
        .then(PointerAction::MoveToElement {
            element: to.clone(),
            duration: Some(Duration::from_millis(300)),
            x: 0.0,
            y: dy / 2.0,
        })
        .then(PointerAction::MoveToElement {
            element: to,
            duration: Some(Duration::from_millis(300)),
            x: 0.0,
            y: dy,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    chrome.perform_actions(steps).await.unwrap();
}

/// The labels of `card`'s items, in the order shown.
pub(crate) async fn shown(chrome: &Chrome, card: &str) -> Value {
    texts(chrome, &format!("{card} li.rank-item .rank-text strong")).await
}

/// The handle of the item labelled `label` in `card`.
pub(crate) async fn handle(chrome: &Chrome, card: &str, label: &str) -> Element {
    let at = chrome
        .js(&format!(
            "return [...document.querySelectorAll('{card} li.rank-item')].findIndex(li => li.querySelector('strong').textContent === {});",
            json!(label)
        ))
        .await;
    let at = at.as_u64().expect("the item is shown");
    chrome
        .find_all(fantoccini::Locator::Css(&format!("{card} .rank-handle")))
        .await
        .unwrap()
        .swap_remove(usize::try_from(at).unwrap())
}

#[tokio::test]
async fn a_ranking_asked_over_mcp_is_ordered_by_dragging_and_by_keyboard() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    let id = clarify_over_mcp(&client, features(None)).await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!(
            "{card} form.clarification.type-ranking .rank-handle"
        ))
        .await;
    assert!(chrome.same_document().await, "the card came by a reload");
    assert_eq!(
        shown(&chrome, &card).await,
        json!(["Single sign-on", "CSV export", "Dark mode", "Public API"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .rank-text .hint")).await,
        json!(["asked for by three customers"])
    );
    // The selects are hidden behind the handles, which say where they are.
    assert!(
        !chrome
            .css(&format!("#w-{id}-i0"))
            .await
            .is_displayed()
            .await
            .unwrap()
    );
    assert_eq!(
        handle(&chrome, &card, "Dark mode")
            .await
            .attr("aria-label")
            .await
            .unwrap()
            .as_deref(),
        Some("Move Dark mode, position 3 of 4")
    );
    let send = format!("{card} form.clarification button.primary");
    assert!(!enabled(&chrome, &send).await, "nothing moved or typed");

    // Drag "Public API" onto the top half of the first item.
    let first = chrome.css(&format!("{card} li.rank-item")).await;
    drag(
        &chrome,
        handle(&chrome, &card, "Public API").await,
        first,
        -8.0,
    )
    .await;
    assert_eq!(
        shown(&chrome, &card).await,
        json!(["Public API", "Single sign-on", "CSV export", "Dark mode"])
    );
    assert!(enabled(&chrome, &send).await);
    assert_eq!(
        texts(&chrome, &format!("{card} .rank-live")).await,
        json!(["Public API: position 1 of 4"])
    );

    // The keyboard: "Dark mode" up twice, "CSV export" to the top and back
    // down once; the focus stays on the handle moved.
    handle(&chrome, &card, "Dark mode")
        .await
        .send_keys(&format!("{UP}{UP}"))
        .await
        .unwrap();
    assert_eq!(
        shown(&chrome, &card).await,
        json!(["Public API", "Dark mode", "Single sign-on", "CSV export"])
    );
    assert_eq!(
        chrome
            .js("return document.activeElement.getAttribute('aria-label');")
            .await,
        "Move Dark mode, position 2 of 4"
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .rank-live")).await,
        json!(["Dark mode: position 2 of 4"])
    );
    handle(&chrome, &card, "CSV export")
        .await
        .send_keys(HOME)
        .await
        .unwrap();
    chrome
        .active_element()
        .await
        .unwrap()
        .send_keys(DOWN)
        .await
        .unwrap();
    assert_eq!(
        shown(&chrome, &card).await,
        json!(["Public API", "CSV export", "Dark mode", "Single sign-on"])
    );
    chrome
        .css(&format!("#w-{id}-freeform"))
        .await
        .send_keys("SSO can wait")
        .await
        .unwrap();
    chrome.screenshot_to("clarification-ranking.png").await;
    chrome.css(&send).await.click().await.unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} ol.ranked li")).await,
        json!(["Public API", "CSV export", "Dark mode", "Single sign-on"])
    );
    let ranked = json!({ "ranked": ["api", "csv", "dark", "sso"] });
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        format!(
            r#"[Agor] User answered your question "What should we build first?": {{"structured":{ranked},"freeform":"SSO can wait"}}"#
        )
    );
    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    assert_eq!(
        state["result"],
        json!({ "structured": ranked, "freeform": "SSO can wait", "answered_by": "alice" })
    );
    chrome.close().await;
}

#[tokio::test]
async fn tiers_are_filled_by_dragging_and_by_keyboard() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    let id = clarify_over_mcp(&client, features(Some(&["Must", "Later"]))).await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    let card = format!("#w-{id}");
    chrome
        .wait_css(&format!("{card} .tier-lane .rank-handle"))
        .await;
    assert_eq!(
        texts(&chrome, &format!("{card} .tier-lane h3")).await,
        json!(["Not placed", "Must", "Later"])
    );
    let lane = |n: usize| format!("{card} .tier-lane:nth-child({n}) li strong");
    assert_eq!(texts(&chrome, &lane(1)).await.as_array().unwrap().len(), 4);

    // "Public API" dragged into the empty "Must" lane; "Dark mode" moved
    // right twice, into "Later", by keyboard.
    let must = chrome.css(&format!("{card} .tier-lane:nth-child(2)")).await;
    drag(
        &chrome,
        handle(&chrome, &card, "Public API").await,
        must,
        0.0,
    )
    .await;
    assert_eq!(texts(&chrome, &lane(2)).await, json!(["Public API"]));
    handle(&chrome, &card, "Dark mode")
        .await
        .send_keys(&format!("{RIGHT}{RIGHT}{RIGHT}"))
        .await
        .unwrap();
    assert_eq!(texts(&chrome, &lane(3)).await, json!(["Dark mode"]));
    assert_eq!(
        chrome
            .js("return document.activeElement.getAttribute('aria-label');")
            .await,
        "Move Dark mode, now in Later"
    );
    // "CSV export" right and back left: not placed.
    handle(&chrome, &card, "CSV export")
        .await
        .send_keys(&format!("{RIGHT}{LEFT}"))
        .await
        .unwrap();
    assert_eq!(
        texts(&chrome, &lane(1)).await,
        json!(["Single sign-on", "CSV export"])
    );
    assert_eq!(
        texts(&chrome, &format!("{card} .rank-live")).await,
        json!(["CSV export: Not placed"])
    );
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_eq!(
        texts(&chrome, &format!("{card} dl.answers dd")).await,
        json!(["Public API", "Dark mode", "Single sign-on, CSV export"])
    );
    let expected =
        json!({ "tiers": { "Later": ["dark"], "Must": ["api"] }, "unassigned": ["sso", "csv"] });
    assert_eq!(
        widget(&app, &s.agent, &id).await["result"]["structured"],
        expected
    );
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        format!(
            r#"[Agor] User answered your question "What should we build first?": {{"structured":{expected},"freeform":""}}"#
        )
    );
    chrome.close().await;
}

#[tokio::test]
async fn a_ranking_is_answered_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let ordered = clarify_over_mcp(&client, features(None)).await;
    let tiered = clarify_over_mcp(&client, features(Some(&["Must", "Later"]))).await;
    let typed = clarify_over_mcp(&client, features(None)).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{ordered} form")).await;
    assert_eq!(chrome.count(".rank-handle").await, 0, "no script ran");
    let send = |id: &str| format!("#w-{id} form.clarification button.primary");

    // Position selects: "Public API" to 1, "Single sign-on" to 3; the
    // others keep their order around them.
    chrome
        .css(&format!("#w-{ordered}-i3"))
        .await
        .select_by_value("1")
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{ordered}-i0"))
        .await
        .select_by_value("3")
        .await
        .unwrap();
    chrome.css(&send(&ordered)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{ordered} .badge-submitted"))
        .await;
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &ordered).await,
        r#"[Agor] User answered your question "What should we build first?": {"structured":{"ranked":["api","csv","sso","dark"]},"freeform":""}"#
    );

    // Tier selects.
    chrome
        .css(&format!("#w-{tiered}-i1"))
        .await
        .select_by_value("Must")
        .await
        .unwrap();
    chrome
        .css(&format!("#w-{tiered}-i2"))
        .await
        .select_by_value("Later")
        .await
        .unwrap();
    chrome.css(&send(&tiered)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{tiered} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &tiered).await["result"]["structured"],
        json!({ "tiers": { "Must": ["csv"], "Later": ["dark"] }, "unassigned": ["sso", "api"] })
    );

    // Only words: the order as given is kept beside them.
    chrome
        .css(&format!("#w-{typed}-freeform"))
        .await
        .send_keys("Whatever sales says")
        .await
        .unwrap();
    chrome.css(&send(&typed)).await.click().await.unwrap();
    chrome
        .wait_css(&format!("#w-{typed} .badge-submitted"))
        .await;
    assert_eq!(
        widget(&app, &s.agent, &typed).await["result"]["structured"],
        json!({ "ranked": ["sso", "csv", "dark", "api"] })
    );
    chrome.close().await;
}

#[tokio::test]
async fn agent_written_items_and_tiers_are_inert() {
    let app = spawn_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    let chrome = open_transcript(&app, "alice", &session).await;

    // The corpus as labels, descriptions and ids of a ranking, and as the
    // tiers of another, arriving while the page is open.
    let items: Vec<Value> = XSS
        .iter()
        .map(|p| json!({ "id": p, "label": p, "description": p }))
        .collect();
    let ordered = json!({ "question": XSS[0], "widget": { "type": "ranking", "items": items } });
    let ordered = created_alone(ask(&app, &agent, &session, "clarification", &ordered).await).await;
    let tiered = json!({ "question": XSS[1], "widget": { "type": "ranking", "items": items, "tiers": XSS[..10] } });
    let tiered = created_alone(ask(&app, &agent, &session, "clarification", &tiered).await).await;
    wait_for("both cards to arrive live", || async {
        chrome.count(".rank-handle").await == 2 * XSS.len()
    })
    .await;
    assert!(chrome.same_document().await);
    assert_inert(&chrome, "test · widgetd").await;
    let corpus = json!(XSS);
    assert_eq!(shown(&chrome, &format!("#w-{ordered}")).await, corpus);
    assert_eq!(
        texts(&chrome, &format!("#w-{tiered} .tier-lane h3"))
            .await
            .as_array()
            .unwrap()[1..],
        json!(XSS[..10]).as_array().unwrap()[..]
    );

    // Moved and sent, then shown answered.
    let card = format!("#w-{ordered}");
    handle(&chrome, &card, XSS[2])
        .await
        .send_keys(HOME)
        .await
        .unwrap();
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    let card = format!("#w-{tiered}");
    handle(&chrome, &card, XSS[3])
        .await
        .send_keys(RIGHT)
        .await
        .unwrap();
    chrome
        .css(&format!("{card} form.clarification button.primary"))
        .await
        .click()
        .await
        .unwrap();
    chrome.wait_css(&format!("{card} .badge-submitted")).await;
    assert_inert(&chrome, "test · widgetd").await;
    let result = widget(&app, &agent, &ordered).await["result"]["structured"].clone();
    assert_eq!(result["ranked"][0], XSS[2]);
    assert!(
        prompt_of(&app, &host, &session, &ordered)
            .await
            .contains(&json!(XSS[2]).to_string())
    );
    let result = widget(&app, &agent, &tiered).await["result"]["structured"].clone();
    assert_eq!(result["tiers"][XSS[0]], json!([XSS[3]]));
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome
        .wait_css(&format!("#w-{tiered} .badge-submitted"))
        .await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}
