//! A data dir damaged on purpose, against the real binary: a bit flipped in
//! the database file, a ciphertext moved to another row, a keyring row
//! deleted, a write-ahead log cut short. Start-up or the first read says
//! what is wrong and serves no wrong data; `widgetd check` names each.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::{Connection, SqliteConnection};

use crate::helpers::{
    COMMAND_LIMIT, Daemon, OutputWithin, REFUSAL_LIMIT, client, stderr, stdout, widgetd,
};

/// A data dir with two users' values, a webhook, widgets and audit rows,
/// made through the real daemon and stopped cleanly.
pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    /// (name, value) of every stored value; values are canaries.
    pub values: Vec<(String, String)>,
    pub session: String,
    /// One of the session's pending widgets.
    pub widget: String,
    pub token: String,
}

impl Fixture {
    pub async fn make() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        // The webhook points at loopback, which only an operator may allow.
        let allow = ["--webhooks-allow-private"];
        let daemon = Daemon::start_with(&dir, tmp.path(), "fixture", &allow);
        let token = api_token(&dir);
        let http = client();
        let mut values = Vec::new();
        for n in 0..6 {
            let (name, value) = (format!("KEY_{n}"), crate::helpers::canary("fixture"));
            let r = http
                .put(format!("{}/api/v1/env/{name}", daemon.url))
                .bearer_auth(&token)
                .json(&json!({ "value": value, "scope": "global" }))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::NO_CONTENT);
            values.push((name, value));
        }
        let body: Value = http
            .post(format!("{}/api/v1/sessions", daemon.url))
            .bearer_auth(&token)
            .json(&json!({ "title": "fixture" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = body["session_id"].as_str().unwrap().to_owned();
        let agent = body["agent_token"].as_str().unwrap().to_owned();
        let mut widgets = Vec::new();
        for n in 0..3 {
            let r = http
                .post(format!(
                    "{}/api/v1/sessions/{session}/widgets/env-vars",
                    daemon.url
                ))
                .bearer_auth(&agent)
                .json(&json!({ "names": [format!("WANTED_{n}")], "reason": "fixture" }))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::CREATED);
            let body: Value = r.json().await.unwrap();
            widgets.push(body["widget_id"].as_str().unwrap().to_owned());
        }
        let r = http
            .post(format!("{}/api/v1/webhooks", daemon.url))
            .bearer_auth(&token)
            .json(&json!({ "url": "http://127.0.0.1:9/hook" }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
        daemon.stop();
        Fixture {
            _tmp: tmp,
            dir,
            values,
            session,
            widget: widgets.remove(0),
            token,
        }
    }

    /// A copy of the data dir to damage.
    pub fn copy(&self, label: &str) -> PathBuf {
        let to = self.dir.with_file_name(label);
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&self.dir).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
        to
    }

    /// Asserts that `text` holds none of the stored values.
    pub fn assert_no_value_in(&self, text: &str) {
        for (name, value) in &self.values {
            assert!(
                !text.contains(value.as_str()),
                "the value of {name} was shown"
            );
        }
    }
}

/// An admin API token with every scope, minted by the CLI.
pub fn api_token(dir: &Path) -> String {
    let out = widgetd(dir)
        .args(["token", "create", "--user", "admin"])
        .args(["--scope", "sessions,env:read,env:write"])
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).trim().to_owned()
}

/// `widgetd check --json`: (exit code, report, everything it printed).
pub fn check(dir: &Path) -> (i32, Value, String) {
    let out = widgetd(dir)
        .args(["check", "--json"])
        .output_within(COMMAND_LIMIT);
    let printed = format!("{}{}", stdout(&out), stderr(&out));
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("check printed no JSON report ({e}): {printed}"));
    (out.status.code().unwrap_or(-1), report, printed)
}

/// The problems `check` found in one section.
pub fn problems(report: &Value, section: &str) -> Vec<String> {
    report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == section)
        .map(|s| {
            s["problems"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Sections of the report that found something.
fn failing(report: &Value) -> Vec<String> {
    report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["problems"].as_array().unwrap().is_empty())
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A connection to a copy's database that does not enforce foreign keys,
/// as someone editing the file by hand would have.
async fn raw(dir: &Path) -> SqliteConnection {
    let options = sqlx::sqlite::SqliteConnectOptions::from_str("sqlite://")
        .unwrap()
        .filename(dir.join(widgetd_domain::db::DB_FILE))
        .foreign_keys(false);
    SqliteConnection::connect_with(&options).await.unwrap()
}

/// Flips bit `bit` of the byte at `offset` of the database file.
fn flip(dir: &Path, offset: usize, bit: u8) {
    let path = dir.join(widgetd_domain::db::DB_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[offset] ^= 1 << bit;
    std::fs::write(&path, bytes).unwrap();
}

/// Where `needle` first occurs in the database file.
fn find(dir: &Path, needle: &[u8]) -> usize {
    let bytes = std::fs::read(dir.join(widgetd_domain::db::DB_FILE)).unwrap();
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the bytes are in the file")
}

#[tokio::test]
async fn check_passes_a_sound_data_dir_and_shows_no_value() {
    let fixture = Fixture::make().await;
    let (code, report, printed) = check(&fixture.dir);
    assert_eq!(code, 0, "{printed}");
    assert_eq!(report["ok"], true);
    let checked = |name: &str| {
        report["sections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["checked"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(checked("env_values"), 6);
    assert_eq!(checked("webhook_secrets"), 1);
    assert_eq!(checked("keyring"), 1);
    assert!(checked("audit_chain") >= 9, "{printed}");
    fixture.assert_no_value_in(&printed);

    // The report for people: a line per check, a summary, exit 0.
    let out = widgetd(&fixture.dir)
        .arg("check")
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("All 8 checks passed."), "{text}");
    assert!(
        stderr(&out).contains("env values: 6/6 (100%)"),
        "progress lines when not on a terminal: {}",
        stderr(&out)
    );
}

#[tokio::test]
async fn a_ciphertext_moved_to_another_row_fails_authentication_and_is_named() {
    let fixture = Fixture::make().await;
    let dir = fixture.copy("swapped");
    let mut conn = raw(&dir).await;
    // KEY_0's sealed value goes onto KEY_1's row: same owner, same key, a
    // well-formed ciphertext — only the AAD (the row's name) differs.
    sqlx::query(
        "UPDATE env_vars SET nonce = (SELECT nonce FROM env_vars WHERE name = 'KEY_0'),
         ciphertext = (SELECT ciphertext FROM env_vars WHERE name = 'KEY_0') WHERE name = 'KEY_1'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let (code, report, printed) = check(&dir);
    assert_eq!(code, 1, "{printed}");
    assert_eq!(failing(&report), ["env_values"], "{printed}");
    let found = problems(&report, "env_values");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("KEY_1 (global, of admin")
            && found[0].contains("failed authentication"),
        "{found:?}"
    );
    fixture.assert_no_value_in(&printed);

    // The first read refuses the env and names the value; nothing of
    // KEY_0's value is handed out as KEY_1's.
    let logs = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir, logs.path(), "swapped");
    let r = client()
        .get(format!(
            "{}/api/v1/sessions/{}/env",
            daemon.url, fixture.session
        ))
        .bearer_auth(&fixture.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("env_unreadable") && text.contains("KEY_1"),
        "{text}"
    );
    fixture.assert_no_value_in(&text);
    let r = client()
        .get(format!(
            "{}/api/v1/sessions/{}/env?partial=true",
            daemon.url, fixture.session
        ))
        .bearer_auth(&fixture.token)
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert!(body["env"].get("KEY_1").is_none(), "{body}");
    assert_eq!(body["env"]["KEY_0"], fixture.values[0].1.as_str());
    daemon.stop();
}

#[tokio::test]
async fn a_deleted_keyring_row_stops_start_up_and_is_named() {
    let fixture = Fixture::make().await;
    let dir = fixture.copy("keyless");
    let mut conn = raw(&dir).await;
    sqlx::query("DELETE FROM keyring")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let before = std::fs::read(dir.join(widgetd_domain::db::DB_FILE)).unwrap();

    // Start-up refuses (a fresh key in its place would only hide the loss)
    // and changes nothing.
    let out = widgetd(&dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .output_within(REFUSAL_LIMIT);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("lacks data key 1 (7 stored secret(s) use it)")
            && said.contains("widgetd restore"),
        "{said}"
    );
    assert_eq!(
        std::fs::read(dir.join(widgetd_domain::db::DB_FILE)).unwrap(),
        before,
        "start-up wrote to the data dir"
    );

    let (code, report, printed) = check(&dir);
    assert_eq!(code, 1);
    assert_eq!(
        failing(&report),
        ["foreign_keys", "keyring", "env_values", "webhook_secrets"],
        "{printed}"
    );
    assert_eq!(
        problems(&report, "keyring"),
        ["data key 1 is missing, and 7 stored secret(s) are encrypted under it"]
    );
    assert_eq!(problems(&report, "env_values").len(), 6);
    fixture.assert_no_value_in(&printed);
}

#[tokio::test]
async fn a_flipped_bit_is_found_where_it_matters_and_never_served() {
    let fixture = Fixture::make().await;

    // In a ciphertext: that value, and only it, fails authentication.
    let dir = fixture.copy("flip-value");
    let mut conn = raw(&dir).await;
    let sealed: Vec<u8> =
        sqlx::query_scalar("SELECT ciphertext FROM env_vars WHERE name = 'KEY_2'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    flip(&dir, find(&dir, &sealed) + 5, 0);
    let (_, report, _) = check(&dir);
    assert_eq!(failing(&report), ["env_values"]);
    assert!(problems(&report, "env_values")[0].starts_with("KEY_2 "));

    // In a webhook's signing secret.
    let dir = fixture.copy("flip-webhook");
    let mut conn = raw(&dir).await;
    let sealed: Vec<u8> = sqlx::query_scalar("SELECT secret FROM webhook_endpoints")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    flip(&dir, find(&dir, &sealed) + 3, 7);
    let (_, report, _) = check(&dir);
    assert_eq!(failing(&report), ["webhook_secrets"]);

    // In an audit row: the chain names the row.
    let dir = fixture.copy("flip-audit");
    flip(&dir, find(&dir, b"token.create") + 2, 1);
    let (_, report, _) = check(&dir);
    assert_eq!(failing(&report), ["audit_chain"]);
    assert!(
        problems(&report, "audit_chain")[0].contains("was altered"),
        "{report}"
    );

    // In the structure of the widgets table: check says the file is
    // damaged, and the daemon's first read of it answers a stable error
    // instead of what it might make of the page.
    let dir = fixture.copy("flip-page");
    let mut conn = raw(&dir).await;
    let root: i64 = sqlx::query_scalar("SELECT rootpage FROM sqlite_master WHERE name = 'widgets'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    // The page's type byte: a table leaf (13) becomes an index leaf (10).
    flip(&dir, (root as usize - 1) * 4096, 0);
    flip(&dir, (root as usize - 1) * 4096, 1);
    flip(&dir, (root as usize - 1) * 4096, 2);
    let (code, report, printed) = check(&dir);
    assert_eq!(code, 1);
    assert_eq!(failing(&report), ["database"], "{printed}");
    assert!(printed.contains("widgetd restore"), "{printed}");
    let logs = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&dir, logs.path(), "flip-page");
    let r = client()
        .get(format!("{}/api/v1/widgets/{}", daemon.url, fixture.widget))
        .bearer_auth(&fixture.token)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let text = r.text().await.unwrap();
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{text}");
    assert!(
        text.contains("database_corrupt") && text.contains("widgetd check"),
        "{text}"
    );
    drop(daemon);

    // The file's header: nothing opens it, and each command says why.
    let dir = fixture.copy("flip-header");
    flip(&dir, 3, 4);
    let out = widgetd(&dir)
        .args(["user", "list"])
        .output_within(COMMAND_LIMIT);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is damaged and was not used"),
        "{}",
        stderr(&out)
    );
    let (code, report, _) = check(&dir);
    assert_eq!((code, failing(&report)), (1, vec!["database".to_owned()]));
}

/// Flips single bits at seeded random places and tallies what `check`
/// reports. SQLite keeps no checksum of its pages, so a flip in plain text
/// (a title, a name) or in free space goes unseen; a flip in a ciphertext,
/// an audit row or the file's structure must not.
#[tokio::test]
async fn random_bit_flips_never_crash_check_nor_show_a_value() {
    let fixture = Fixture::make().await;
    let size = std::fs::metadata(fixture.dir.join(widgetd_domain::db::DB_FILE))
        .unwrap()
        .len() as usize;
    let mut seed: u64 = 0x005e_ed0f_f11b;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut found, mut tried) = (0, 0);
    for n in 0..200 {
        let dir = fixture.copy(&format!("random-{n}"));
        let offset = (next() % size as u64) as usize;
        flip(&dir, offset, (next() % 8) as u8);
        let (code, report, printed) = check(&dir);
        assert!(code == 0 || code == 1, "{printed}");
        assert_eq!(report["ok"], code == 0);
        fixture.assert_no_value_in(&printed);
        tried += 1;
        found += usize::from(code == 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    println!("random bit flips: {tried} tried, {found} reported by check");
}

/// The audit rows of a data dir: (id, hash), in order.
async fn audit_rows(dir: &Path) -> Vec<(i64, Vec<u8>)> {
    let mut conn = raw(dir).await;
    let rows = sqlx::query_as("SELECT id, hash FROM audit_log ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    rows
}

#[tokio::test]
async fn a_write_ahead_log_cut_short_keeps_a_whole_prefix_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // The token first, so that the daemon's log starts empty and holds
    // only what it writes below.
    crate::helpers::new_data_dir(&dir);
    let added = crate::helpers::run_with_stdin(
        widgetd(&dir).args(["user", "add", "bob", "--password-stdin"]),
        crate::helpers::PASSWORD,
    );
    assert!(added.status.success(), "{}", stderr(&added));
    let token = {
        let out = widgetd(&dir)
            .args(["token", "create", "--user", "bob", "--scope", "env:write"])
            .output_within(COMMAND_LIMIT);
        stdout(&out).trim().to_owned()
    };
    let mut daemon = Daemon::start(&dir, tmp.path(), "wal");
    for n in 0..40 {
        let r = client()
            .put(format!("{}/api/v1/env/WAL_{n}", daemon.url))
            .bearer_auth(&token)
            .json(&json!({ "value": format!("value-{n}"), "scope": "global" }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }
    // kill -9: the log is left as it is, not folded into the database.
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    let wal = dir.join(format!("{}-wal", widgetd_domain::db::DB_FILE));
    let bytes = std::fs::read(&wal).unwrap();
    let page = u32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let frame = 24 + page;
    let frames = (bytes.len() - 32) / frame;
    assert!(frames > 40, "every write is in the log: {frames} frames");
    let reference = tmp.path().join("reference");
    std::fs::create_dir(&reference).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), reference.join(entry.file_name())).unwrap();
    }
    // Cut in the middle of a frame halfway through.
    let cut = 32 + (frames / 2) * frame + frame / 2;
    std::fs::write(&wal, &bytes[..cut]).unwrap();
    let served = tmp.path().join("served");
    std::fs::create_dir(&served).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), served.join(entry.file_name())).unwrap();
    }

    // check names the cut, and finds everything before it whole: values
    // decrypt, foreign keys hold, the chain verifies.
    let (code, report, printed) = check(&dir);
    assert_eq!(code, 1, "{printed}");
    assert_eq!(failing(&report), ["wal"], "{printed}");
    assert!(
        problems(&report, "wal")[0].contains(&format!("ends {} bytes into a frame", frame / 2)),
        "{printed}"
    );
    // What survived is a prefix of what was written: no row of the chain
    // differs, later rows are missing, nothing is half there.
    let (code, _, printed) = check(&reference);
    assert_eq!(code, 0, "{printed}");
    let (kept, all) = (audit_rows(&dir).await, audit_rows(&reference).await);
    assert!(kept.len() < all.len(), "the cut lost the last transactions");
    assert_eq!(
        kept[..],
        all[..kept.len()],
        "the kept rows are the first ones"
    );
    // Once check has folded what survived into the database, the data dir
    // checks clean.
    let (code, _, printed) = check(&dir);
    assert_eq!(code, 0, "{printed}");

    // Start-up on the same damage says so before serving.
    let daemon = Daemon::start(&served, tmp.path(), "served");
    let log = std::fs::read_to_string(&daemon.err_log).unwrap();
    assert!(
        log.contains("bytes into a frame") && log.contains("widgetd check"),
        "{log}"
    );
    daemon.stop();
}
