//! Widget bodies (and an image) that tests of one kind in both binaries
//! ask with: a kind's API tests in `tests/api` and its Chromium tests in
//! `tests/slow`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

// Ask and ask_user (widgets/ask.rs).

/// The prompt [`two_questions`] leaves answered SQLite, and EU and APAC.
pub const ANSWERED: &str =
    r#"[Agor] User answered: {"Regions?":["EU","APAC"],"Which database?":"SQLite"}"#;

/// One question with `labels` as options.
pub fn question(text: &str, header: &str, labels: &[&str]) -> Value {
    let options: Vec<Value> = labels.iter().map(|l| json!({ "label": l })).collect();
    json!({ "question": text, "header": header, "options": options })
}

/// The two questions most tests ask: a single-select with descriptions and
/// previews, and a multi-select.
pub fn two_questions() -> Value {
    json!({
        "questions": [
            {
                "question": "Which database?",
                "header": "Database",
                "options": [
                    {
                        "label": "Postgres",
                        "description": "A server; best with many writers",
                        "preview_markdown": "Needs **DATABASE_URL**",
                    },
                    {
                        "label": "SQLite",
                        "description": "One file next to the app",
                        "preview_markdown": "Stored in *data/app.db*",
                    },
                ],
            },
            {
                "question": "Regions?",
                "header": "Regions",
                "multi_select": true,
                "options": [{ "label": "EU" }, { "label": "US" }, { "label": "APAC" }],
            },
        ],
    })
}

// An `ask` widget (widgets/life.rs).

/// An `ask` widget: `text`, a radio between EU and US.
pub fn radio(text: &str) -> Value {
    json!({ "question": text, "widget": "radio", "options": ["EU", "US"] })
}

// Typed fields (widgets/fields.rs).

/// The question most tests ask: one field of every type.
pub fn staging() -> Value {
    json!({
        "question": "Where is staging?",
        "fields": [
            { "name": "url", "label": "Staging URL", "type": "url",
              "description": "Where the app answers" },
            { "name": "port", "label": "Port", "type": "integer", "min": 1, "max": 65535,
              "default": 8080 },
            { "name": "ratio", "label": "Canary share", "type": "number", "min": 0, "max": 1,
              "required": false },
            { "name": "tag", "label": "Release tag", "pattern": "v[0-9]+\\.[0-9]+", "max": 20 },
            { "name": "notes", "label": "Notes", "type": "multiline", "required": false },
            { "name": "owner", "label": "Owner's email", "type": "email" },
            { "name": "day", "label": "Go-live date", "type": "date" },
            { "name": "migrate", "label": "Run migrations", "type": "boolean", "default": true },
        ],
    })
}

// An approval (widgets/approval_edit.rs).

/// An approval of `rm -rf build` (the person may edit it if `allow_edit`).
pub fn rm_build(allow_edit: bool) -> Value {
    json!({ "tool": "Bash", "input": { "command": "rm -rf build", "timeout": 5 },
            "reason": "clean the build", "allow_edit": allow_edit })
}

// One of every kind (widgets/dismiss.rs).

/// A pending widget of each kind: (REST path, body, its dismissal prompt
/// without a note).
pub fn one_of_each() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "env-vars",
            json!({ "names": ["SLACK_TOKEN"], "reason": "to post" }),
            "[Agor] User dismissed the request for SLACK_TOKEN. Do not re-request immediately — ask whether to proceed without, or move on to other work.",
        ),
        (
            "ask-user",
            json!({ "questions": [{ "question": "Which?", "header": "Pick",
                "options": [{ "label": "a" }, { "label": "b" }] }] }),
            "[Agor] User dismissed your question without answering. Do not ask again immediately — decide how to proceed, or move on to other work.",
        ),
        (
            "ask",
            json!({ "question": "Deploy now?" }),
            "[Agor] User dismissed your question without answering. Do not ask again immediately — decide how to proceed, or move on to other work.",
        ),
        (
            "approval",
            json!({ "tool": "Bash", "input": { "command": "ls" } }),
            "[Agor] User dismissed the request to run Bash; it was not approved. Do not run it; ask the user how to proceed.",
        ),
    ]
}

// Clarifications, by type (widgets/clarification/).

/// A `choice` widget offering `labels`.
pub fn choice(labels: &[&str], multi: bool) -> Value {
    let options: Vec<Value> = labels.iter().map(|l| json!({ "label": l })).collect();
    json!({ "type": "choice", "options": options, "multi_select": multi })
}

/// A region question with a description and markdown on its options.
pub fn regions(multi: bool) -> Value {
    json!({
        "question": "Which region should the database live in?",
        "widget": {
            "type": "choice",
            "multi_select": multi,
            "options": [
                { "label": "EU", "description": "Frankfurt" },
                { "label": "US", "markdown": "Needs **US_REGION** set" },
                { "label": "APAC" },
            ],
        },
    })
}

/// Six test files in two suites, all kept to start with.
pub fn files(default_state: &str) -> Value {
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

/// CSV columns to map onto a contact's fields.
pub fn columns(unmapped: bool, many: bool) -> Value {
    json!({
        "question": "Which field does each column of contacts.csv fill?",
        "widget": {
            "type": "mapping",
            "left": [
                { "id": "email", "label": "E-mail address" },
                { "id": "full_name", "label": "Full name" },
                { "id": "signup", "label": "Signed up", "group": "Dates" },
            ],
            "right": [
                { "id": "contact.email", "label": "Email" },
                { "id": "contact.name", "label": "Name" },
                { "id": "contact.created", "label": "Created at", "group": "Timestamps" },
                { "id": "skip", "label": "Do not import" },
            ],
            "allow_unmapped": unmapped,
            "allow_many_to_one": many,
        },
    })
}

/// Four features to order, the second with a description.
pub fn features(tiers: Option<&[&str]>) -> Value {
    let mut body = json!({
        "question": "What should we build first?",
        "widget": {
            "type": "ranking",
            "items": [
                { "id": "sso", "label": "Single sign-on" },
                { "id": "csv", "label": "CSV export", "description": "asked for by three customers" },
                { "id": "dark", "label": "Dark mode" },
                { "id": "api", "label": "Public API" },
            ],
        },
    });
    if let Some(tiers) = tiers {
        body["widget"]["tiers"] = json!(tiers);
    }
    body
}

/// Services and their owners: the name read-only, the owner text, on-call
/// a check box, the tier a select.
pub fn owners() -> Value {
    json!({
        "question": "Who owns these services?",
        "widget": {
            "type": "table",
            "columns": [
                { "key": "name", "label": "Service" },
                { "key": "owner", "label": "Owner", "editable": true },
                { "key": "on_call", "label": "On call", "editable": true, "type": "boolean" },
                { "key": "tier", "label": "Tier", "editable": true, "type": "select", "options": ["gold", "silver"] },
            ],
            "rows": [
                { "name": "api", "owner": "alice", "tier": "gold" },
                { "name": "web", "on_call": true },
            ],
        },
    })
}

/// The rows of [`owners`] as stored.
pub fn rows() -> Value {
    json!([
        { "name": "api", "owner": "alice", "on_call": false, "tier": "gold" },
        { "name": "web", "owner": "", "on_call": true, "tier": null },
    ])
}

/// A docs site's sections: guide ─ install, guide ─ usage, reference ─ api.
pub fn sections(all: bool) -> Value {
    json!({
        "question": "How should the docs be organised?",
        "widget": {
            "type": "tree",
            "nodes": [
                { "id": "guide", "label": "Guide" },
                { "id": "install", "label": "Install", "parent_id": "guide", "metadata": { "pages": 3 } },
                { "id": "usage", "label": "Usage", "parent_id": "guide" },
                { "id": "reference", "label": "Reference" },
                { "id": "api", "label": "API", "parent_id": "reference", "metadata": { "owner": "bob" } },
            ],
            "allow_reparent": all,
            "allow_delete": all,
            "allow_rename": all,
            "allow_add": all,
        },
    })
}

/// An `annotation` of a 400×300 [`png`] with `tools`.
pub fn screen(tools: Value) -> Value {
    json!({
        "question": "Where on the sign-up page is the broken layout?",
        "widget": { "type": "annotation", "image": STANDARD.encode(png(400, 300)), "tools": tools },
    })
}

// A real PNG (widgets/clarification/annotation.rs, mcp/apps.rs).

/// PNG's CRC-32.
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

/// Appends a PNG chunk of `kind` with `data` and its CRC.
pub fn chunk(png: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
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
