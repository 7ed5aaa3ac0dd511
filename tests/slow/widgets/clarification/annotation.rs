//! `annotation`: an image (a real PNG made here) created over MCP, served
//! by the daemon with its checked type only to people who may see the
//! session, drawn on in Chromium with the mouse (a rectangle, by pointer
//! actions), answered again with JavaScript off (the image and words), its
//! limits and bad answers refused with stable codes, and the agent's view
//! of the widget without the image's bytes.
//!
//! These are the tests that drive Chromium; the others are in
//! `tests/api/widgets/clarification/annotation.rs`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::chrome::{Chrome, XSS, assert_inert, click, open_transcript, texts};
use crate::helpers::mcp::{call, clarify_over_mcp, connect, structured};
use crate::helpers::samples::{png, screen};
use crate::helpers::{
    ask, assert_error, canary, created_alone, prompt_of, refused_on_both, scene, spawn_app,
    submit_json, unchanged,
};

/// Drags on the canvas of widget `id` from `(x1, y1)` to `(x2, y2)`,
/// offsets from the canvas's centre in CSS pixels.
async fn drag(chrome: &Chrome, id: &str, from: (f64, f64), to: (f64, f64)) {
    let canvas = chrome.css(&format!("#w-{id}-annotation-canvas")).await;
    let mouse = MouseActions::new("mouse".into())
        .then(PointerAction::MoveToElement {
            element: canvas.clone(),
            duration: None,
            x: from.0,
            y: from.1,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::MoveToElement {
            element: canvas.clone(),
            duration: Some(std::time::Duration::from_millis(200)),
            x: (from.0 + to.0) / 2.0,
            y: (from.1 + to.1) / 2.0,
        })
        .then(PointerAction::MoveToElement {
            element: canvas,
            duration: Some(std::time::Duration::from_millis(200)),
            x: to.0,
            y: to.1,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    chrome.perform_actions(mouse).await.unwrap();
    chrome.release_actions().await.unwrap();
}

fn drawn(state: &Value) -> Vec<Value> {
    state["result"]["structured"]["annotations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn an_image_asked_over_mcp_is_drawn_on_in_chromium() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;

    let id = clarify_over_mcp(&client, screen(json!(["rectangle", "arrow", "text"]))).await;
    chrome
        .wait_css(&format!("#w-{id} figure.annotation.live"))
        .await;
    assert!(chrome.same_document().await, "the card came by a reload");
    // The image loaded from the daemon, at its own size.
    let loaded = format!("return document.getElementById('w-{id}-image').complete;");
    crate::helpers::chrome::wait_for("the image to load", || async {
        chrome.js(&loaded).await == json!(true)
    })
    .await;
    let natural = chrome
        .js(&format!(
            "const i = document.getElementById('w-{id}-image'); return [i.complete, i.naturalWidth, i.naturalHeight, i.clientWidth];"
        ))
        .await;
    assert_eq!(natural, json!([true, 400, 300, 400]), "{natural}");
    assert_eq!(
        texts(&chrome, &format!("#w-{id} button.annotation-tool")).await,
        json!(["Rectangle", "Arrow", "Text"])
    );

    // A rectangle, dragged from 100,100 to 250,190 (the canvas's centre is
    // 200,150), then an arrow, undone, then a text placed by a click.
    drag(&chrome, &id, (-100.0, -50.0), (50.0, 40.0)).await;
    click(&chrome, &format!("#w-{id}-annotation-tool-arrow")).await;
    drag(&chrome, &id, (0.0, 0.0), (60.0, 60.0)).await;
    assert_eq!(
        chrome
            .count(&format!("#w-{id} ol.annotation-list li"))
            .await,
        2
    );
    click(&chrome, &format!("#w-{id}-annotation-undo")).await;
    click(&chrome, &format!("#w-{id}-annotation-tool-text")).await;
    chrome
        .css(&format!("#w-{id}-annotation-text"))
        .await
        .send_keys("too wide")
        .await
        .unwrap();
    drag(&chrome, &id, (-150.0, 100.0), (-150.0, 100.0)).await;
    chrome
        .css(&format!("#w-{id}-freeform"))
        .await
        .send_keys("The form overflows")
        .await
        .unwrap();
    chrome.screenshot_to("clarification-annotation.png").await;
    click(
        &chrome,
        &format!("#w-{id} form.clarification button.primary"),
    )
    .await;
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;

    let state = structured(call(&client, "get_widget_status", json!({ "widget_id": id })).await);
    let drawings = drawn(&state);
    assert_eq!(drawings.len(), 2, "{state}");
    assert_eq!(drawings[0]["tool"], "rectangle");
    let expected = [100.0, 100.0, 150.0, 90.0];
    for (got, want) in drawings[0]["coords"]
        .as_array()
        .unwrap()
        .iter()
        .zip(expected)
    {
        assert!((got.as_f64().unwrap() - want).abs() <= 2.0, "{drawings:?}");
    }
    assert_eq!(drawings[1]["tool"], "text");
    assert_eq!(drawings[1]["text"], "too wide");
    assert_eq!(state["result"]["freeform"], "The form overflows");
    // The agent's view has the image's type and size, never its bytes.
    let image = &state["params"]["widget"]["image"];
    assert!(image["bytes"].as_u64().is_some_and(|n| n > 0), "{image}");
    assert_eq!(
        image,
        &json!({ "content_type": "image/png", "width": 400, "height": 300, "bytes": image["bytes"] })
    );
    let prompt = prompt_of(&app, &s.host, &s.session, &id).await;
    assert!(
        prompt.starts_with(r#"[Agor] User answered your question "Where on the sign-up page is the broken layout?": {"structured":{"annotations":[{"coords":["#),
        "{prompt}"
    );
    assert!(
        prompt.ends_with(r#""freeform":"The form overflows"}"#),
        "{prompt}"
    );
    assert_eq!(
        chrome.count(&format!("#w-{id} .annotation-drawn li")).await,
        2
    );
    chrome.close().await;
}

#[tokio::test]
async fn an_image_is_answered_in_words_with_javascript_off() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let id = clarify_over_mcp(&client, screen(json!(["circle"]))).await;
    let chrome = Chrome::launch_without_javascript().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css(&format!("#w-{id} form")).await;
    assert_eq!(chrome.count(&format!("#w-{id} canvas")).await, 0);
    let natural = chrome
        .js(&format!(
            "const i = document.getElementById('w-{id}-image'); return [i.complete, i.naturalWidth];"
        ))
        .await;
    assert_eq!(natural, json!([true, 400]));
    chrome
        .css(&format!("#w-{id}-freeform"))
        .await
        .send_keys("Top left, the logo")
        .await
        .unwrap();
    click(
        &chrome,
        &format!("#w-{id} form.clarification button.primary"),
    )
    .await;
    chrome.wait_css(&format!("#w-{id} .badge-submitted")).await;
    assert_eq!(
        prompt_of(&app, &s.host, &s.session, &id).await,
        r#"[Agor] User answered your question "Where on the sign-up page is the broken layout?": {"structured":{"annotations":[]},"freeform":"Top left, the logo"}"#
    );
    chrome.close().await;
}

#[tokio::test]
async fn annotation_limits_and_bad_answers_have_stable_codes() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with_image = |image: String| json!({ "question": "Q?", "widget": { "type": "annotation", "image": image } });
    let mut big = png(16, 16);
    big.resize(2 * 1024 * 1024 + 1, 0);
    let cases = [
        (
            with_image("/home/me/screenshot.png".into()),
            "invalid_image",
        ),
        (
            with_image("https://example.com/x.png".into()),
            "invalid_image",
        ),
        (
            with_image(STANDARD.encode(b"GIF89a\x01\0\x01\0\0\0")),
            "unsupported_image",
        ),
        (with_image(STANDARD.encode(XSS[2])), "unsupported_image"),
        (with_image(STANDARD.encode(big)), "image_too_large"),
        (
            with_image(STANDARD.encode(&png(16, 16)[..20])),
            "invalid_image",
        ),
        (screen(json!([])), "invalid_tools"),
        (screen(json!(["text", "text"])), "invalid_tools"),
    ];
    for (body, code) in &cases {
        refused_on_both(&app, (&s, &client), body, code, None).await;
    }
    let r = ask(
        &app,
        &s.agent,
        &s.session,
        "clarification",
        &screen(json!(["pen"])),
    )
    .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);

    let secret = canary("annotation");
    let r = app
        .put_env(
            &s.host,
            "PAYMENT_KEY",
            &json!({ "value": secret, "scope": "global" }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let browser = app.login("alice").await;
    let id = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &screen(json!(["rectangle", "text"])),
        )
        .await,
    )
    .await;
    let one = |d: Value| json!({ "structured": { "annotations": [d] } });
    for (body, code) in [
        (
            one(json!({ "tool": "circle", "coords": [10, 10, 5] })),
            "tool_not_allowed",
        ),
        (
            one(json!({ "tool": "rectangle", "coords": [300, 200, 101, 10] })),
            "coords_outside_image",
        ),
        (
            one(json!({ "tool": "rectangle", "coords": [-1, 0, 10, 10] })),
            "coords_outside_image",
        ),
        (
            one(json!({ "tool": "text", "coords": [10, 301], "text": "x" })),
            "coords_outside_image",
        ),
        (
            one(json!({ "tool": "rectangle", "coords": [1, 2, 3] })),
            "invalid_coords",
        ),
        (
            one(json!({ "tool": "text", "coords": [1, 2] })),
            "invalid_text",
        ),
        (
            one(json!({ "tool": "text", "coords": [1, 2], "text": format!("it is {secret}") })),
            "answer_contains_secret",
        ),
        (
            json!({ "structured": { "annotations": vec![json!({ "tool": "text", "coords": [1, 2], "text": "x" }); 101] } }),
            "too_many_annotations",
        ),
        (
            json!({ "structured": { "annotations": [] } }),
            "answer_required",
        ),
    ] {
        let r = submit_json(&app, &browser, &id, &body).await;
        assert_error(r, StatusCode::UNPROCESSABLE_ENTITY, code, Some(&secret)).await;
    }
    let r = submit_json(
        &app,
        &browser,
        &id,
        &one(json!({ "tool": "rectangle", "coords": [1, 2, 3, 4], "colour": "red" })),
    )
    .await;
    assert_error(r, StatusCode::BAD_REQUEST, "invalid_body", None).await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("annotations", "[{\"tool\":")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains(r#"data-code="invalid_annotations""#)
    );
    unchanged(&app, &s, &id).await;

    // The question is inert on the page, beside the served image.
    let body = json!({ "question": XSS[1], "widget": { "type": "annotation", "image": STANDARD.encode(png(40, 30)) } });
    created_alone(ask(&app, &s.agent, &s.session, "clarification", &body).await).await;
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, "alice").await;
    chrome
        .open(&format!("{}/sessions/{}", app.url, s.session))
        .await;
    chrome.wait_css("figure.annotation.live").await;
    assert_inert(&chrome, "test · widgetd").await;
    chrome.close().await;
}

/// The drawing canvas of a large image is as large as the image is shown
/// (times the pixel ratio), not as large as the image: 4000×3000 pixels
/// shown in a transcript column get a canvas of that column's width, and
/// a drawing still lands in image pixels.
#[tokio::test]
async fn the_canvas_of_a_large_image_is_sized_to_the_image_as_shown() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let chrome = open_transcript(&app, "alice", &s.session).await;
    // A large image is 1-bit grey here: small to send, 12 megapixels to draw.
    let large = {
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageLuma8(image::GrayImage::from_pixel(
            4_000,
            3_000,
            image::Luma([200]),
        ))
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
        out.into_inner()
    };
    let body = json!({
        "question": "Where?",
        "widget": { "type": "annotation", "image": STANDARD.encode(large), "tools": ["rectangle"] },
    });
    let id = clarify_over_mcp(&client, body).await;
    chrome
        .wait_css(&format!("#w-{id} figure.annotation.live"))
        .await;
    let sizes = chrome
        .js(&format!(
            "const c = document.getElementById('w-{id}-annotation-canvas'); const r = c.getBoundingClientRect(); \
             return [c.width, c.height, r.width, window.devicePixelRatio];"
        ))
        .await;
    let [cw, ch, shown, ratio] = [0, 1, 2, 3].map(|i| sizes[i].as_f64().unwrap());
    eprintln!("4000x3000 image shown {shown} px wide: canvas {cw}x{ch} at pixel ratio {ratio}");
    assert!(shown > 0.0 && shown < 4_000.0, "{sizes}");
    assert!(cw <= (shown * ratio).ceil() + 1.0, "{sizes}");
    assert!((ch - cw * 0.75).abs() <= 1.0, "{sizes}");
    drag(&chrome, &id, (-40.0, -30.0), (40.0, 30.0)).await;
    let drawn = chrome
        .js(&format!(
            "return document.getElementById('w-{id}-annotations').value;"
        ))
        .await;
    let drawn: Value = serde_json::from_str(drawn.as_str().unwrap()).unwrap();
    let coords = drawn[0]["coords"].as_array().unwrap();
    // 80 CSS pixels wide, in image pixels: 80 × 4000 / shown.
    let want = 80.0 * 4_000.0 / shown;
    let got = coords[2].as_f64().unwrap();
    assert!(
        (got - want).abs() <= want * 0.1,
        "{coords:?}, want about {want}"
    );
    chrome.close().await;
}
