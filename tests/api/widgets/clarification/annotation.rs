//! `annotation`: an image (a real PNG made here) created over MCP, served
//! by the daemon with its checked type only to people who may see the
//! session, drawn on in Chromium with the mouse (a rectangle, by pointer
//! actions), answered again with JavaScript off (the image and words), its
//! limits and bad answers refused with stable codes, and the agent's view
//! of the widget without the image's bytes.
//!
//! The tests that drive Chromium are in
//! `tests/slow/widgets/clarification/annotation.rs`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::mcp::connect;
use crate::helpers::samples::{choice, chunk, png, screen};
use crate::helpers::{ask, created_alone, refused_on_both, scene, spawn_app, widget};

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
            &json!({ "question": "Q?", "widget": choice(&["a", "b"], false) }),
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
