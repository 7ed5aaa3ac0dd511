//! `annotation`: an image (a real PNG made here) created over MCP, served
//! by the daemon with its checked type only to people who may see the
//! session, drawn on in Chromium with the mouse (a rectangle, by pointer
//! actions), answered again with JavaScript off (the image and words), its
//! limits and bad answers refused with stable codes, and the agent's view
//! of the widget without the image's bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use fantoccini::actions::{InputSource, MOUSE_BUTTON_LEFT, MouseActions, PointerAction};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{open_transcript, refused_on_both, unchanged};
use crate::helpers::chrome::Chrome;
use crate::helpers::chrome::click;
use crate::helpers::chrome::texts;
use crate::helpers::mcp::clarify_over_mcp;
use crate::helpers::mcp::{call, connect, structured};
use crate::helpers::{ask, created_alone, prompt_of, submit_json, widget};
use crate::helpers::{assert_error, canary, scene, spawn_app};
use crate::web::browser::{XSS, assert_inert};

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(png: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    png.extend((data.len() as u32).to_be_bytes());
    let mut body = kind.to_vec();
    body.extend(data);
    png.extend(&body);
    png.extend(crc32(&body).to_be_bytes());
}

/// A real `w`×`h` RGB PNG (a gradient), its pixels in stored deflate blocks.
pub fn png(w: u32, h: u32) -> Vec<u8> {
    let mut raw = Vec::new();
    for y in 0..h {
        raw.push(0);
        for x in 0..w {
            raw.extend([(x % 256) as u8, (y % 256) as u8, 160]);
        }
    }
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        z.extend(len.to_le_bytes());
        z.extend((!len).to_le_bytes());
        z.extend(*block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    z.extend(((b << 16) | a).to_be_bytes());
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &z);
    chunk(&mut png, b"IEND", &[]);
    png
}

fn screen(tools: Value) -> Value {
    json!({
        "question": "Where on the sign-up page is the broken layout?",
        "widget": { "type": "annotation", "image": STANDARD.encode(png(400, 300)), "tools": tools },
    })
}

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
async fn the_image_is_served_with_its_type_only_to_people_who_may_see_it() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let id = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &screen(json!(["text"])),
        )
        .await,
    )
    .await;
    let alice = app.login("alice").await;
    let path = format!("/widgets/{id}/image");
    let r = app
        .client
        .get(format!("{}{path}", app.url))
        .header("cookie", &alice.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/png");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    // What is served is the daemon's own encoding of the same pixels,
    // never the agent's file.
    let served = r.bytes().await.unwrap().to_vec();
    assert_ne!(served, png(400, 300));
    let pixels = |bytes: &[u8]| image::load_from_memory(bytes).unwrap().to_rgb8();
    assert_eq!(pixels(&served), pixels(&png(400, 300)));

    // Someone else, nobody, the agent's token: not theirs.
    app.user("mallory", widgetd_domain::auth::Role::Member)
        .await;
    let mallory = app.login("mallory").await;
    let r = app
        .client
        .get(format!("{}{path}", app.url))
        .header("cookie", &mallory.cookie)
        .send()
        .await
        .unwrap();
    assert!(
        matches!(r.status(), StatusCode::NOT_FOUND | StatusCode::FORBIDDEN),
        "{}",
        r.status()
    );
    let r = app
        .client
        .get(format!("{}{path}", app.url))
        .send()
        .await
        .unwrap();
    assert!(!r.status().is_success(), "{}", r.status());
    let r = app
        .client
        .get(format!("{}{path}", app.url))
        .bearer_auth(&s.agent)
        .send()
        .await
        .unwrap();
    assert!(!r.status().is_success(), "{}", r.status());
    // A widget without an image has none.
    let choice = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &json!({ "question": "Q?", "widget": super::choice(&["a", "b"], false) }),
        )
        .await,
    )
    .await;
    let r = app
        .client
        .get(format!("{}/widgets/{choice}/image", app.url))
        .header("cookie", &alice.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    // The REST view leaves the bytes out too.
    let state = widget(&app, &s.agent, &id).await;
    assert!(
        state["params"]["widget"]["image"].get("data").is_none(),
        "{state}"
    );
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

/// Writes a deflate stream bit by bit (least significant bit first; a
/// Huffman code most significant bit first).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn code(&mut self, code: u32, len: u32) {
        self.put(code.reverse_bits() >> (32 - len), len);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// A real decompression bomb: a `side`×`side` one-bit grey PNG whose
/// pixel data (all zero) is there, deflated with back-references of 258
/// bytes: a small file that decodes to hundreds of megabytes.
fn bomb(side: u32) -> Vec<u8> {
    let n = u64::from(side) * (1 + u64::from(side.div_ceil(8)));
    let mut bits = Bits::default();
    bits.put(1, 1); // the last block
    bits.put(1, 2); // fixed Huffman codes
    bits.code(0x30, 8); // literal 0
    let copies = (n - 1) / 258;
    for _ in 0..copies {
        bits.code(0xC5, 8); // length 258
        bits.code(0, 5); // distance 1
    }
    for _ in 0..(n - 1) % 258 {
        bits.code(0x30, 8);
    }
    bits.code(0, 7); // end of block
    let mut z = vec![0x78, 0x01];
    z.extend(bits.finish());
    z.extend((((n % 65_521) as u32) << 16 | 1).to_be_bytes());
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = side.to_be_bytes().to_vec();
    ihdr.extend(side.to_be_bytes());
    ihdr.extend([1, 0, 0, 0, 0]);
    chunk(&mut png, b"IHDR", &ihdr);
    chunk(&mut png, b"IDAT", &z);
    chunk(&mut png, b"IEND", &[]);
    png
}

/// An image that would exhaust the person's browser is refused when the
/// agent makes the widget, with a stable code, quickly, and nothing is
/// stored: a 33-byte header declaring 16384×16384 pixels, a real bomb of
/// that size, one of 8192×8192 (within each side's limit, past 16
/// megapixels), and a header whose pixel data is not there.
#[tokio::test]
async fn images_that_would_exhaust_a_browser_are_refused_at_creation() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let client = connect(&app, Some(&s.agent)).await.unwrap();
    let with_image = |bytes: &[u8]| json!({ "question": "Q?", "widget": { "type": "annotation", "image": STANDARD.encode(bytes), "tools": ["text"] } });
    let header = |side: u32| {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = side.to_be_bytes().to_vec();
        ihdr.extend(side.to_be_bytes());
        ihdr.extend([8, 6, 0, 0, 0]);
        chunk(&mut png, b"IHDR", &ihdr);
        png
    };
    assert_eq!(header(16_384).len(), 33);
    let big_bomb = bomb(16_384);
    assert!(big_bomb.len() < 2 * 1024 * 1024, "{}", big_bomb.len());
    let mut lying = header(1_000);
    chunk(&mut lying, b"IEND", &[]);
    for (what, bytes, code) in [
        ("header 16384x16384", header(16_384), "image_dimensions"),
        ("bomb 16384x16384", big_bomb, "image_dimensions"),
        ("bomb 8192x8192", bomb(8_192), "image_dimensions"),
        ("header 1000x1000, no pixels", lying, "invalid_image"),
        (
            "bomb 1000x1000 cut",
            bomb(1_000)[..200].to_vec(),
            "invalid_image",
        ),
    ] {
        let started = std::time::Instant::now();
        refused_on_both(&app, (&s, &client), &with_image(&bytes), code, None).await;
        eprintln!(
            "{what} ({} bytes): {code} over REST and MCP in {:?}",
            bytes.len(),
            started.elapsed()
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{code} took {:?}",
            started.elapsed()
        );
    }
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, 0);
    // A real image of 4 megapixels, highly compressible, is taken.
    let started = std::time::Instant::now();
    let id = created_alone(
        ask(
            &app,
            &s.agent,
            &s.session,
            "clarification",
            &with_image(&bomb(2_048)),
        )
        .await,
    )
    .await;
    eprintln!("bomb 2048x2048 taken in {:?}", started.elapsed());
    assert!(!id.is_empty());
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
