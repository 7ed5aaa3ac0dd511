//! The command line on a real data dir: first start, keys, tokens, backup,
//! and refusing a wrong master key without touching anything.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use secrecy::ExposeSecret;
use serde_json::Value;
use widgetd_domain::auth;
use widgetd_domain::crypto::MasterKey;
use widgetd_domain::secrets;

use crate::helpers::{COMMAND_LIMIT, OutputWithin, REFUSAL_LIMIT};
use crate::helpers::{run_with_stdin, stderr, stdout, widgetd};

/// Every file in the data dir with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn ok(command: &mut std::process::Command) -> String {
    let output = command.output_within(COMMAND_LIMIT);
    assert!(
        output.status.success(),
        "failed: {}{}",
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// A data dir with one global value set through the CLI.
fn seeded(dir: &Path) {
    crate::helpers::new_data_dir(dir);
    ok(widgetd(dir).args(["user", "add", "alice"]));
    let out = run_with_stdin(
        widgetd(dir).args(["env", "set", "API_KEY", "--user", "alice"]),
        "value-before\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

async fn global_value(dir: &Path, name: &str) -> String {
    let data = crate::helpers::open_data(dir).await;
    let mut conn = data.db.read.acquire().await.unwrap();
    let alice = auth::find_user(&mut conn, "alice").await.unwrap();
    let session = widgetd_domain::sessions::create_session(&mut conn, &alice.id, "t".into())
        .await
        .unwrap();
    let env = secrets::effective_env(&mut conn, &data.keyring, &alice.id, &session.session.id)
        .await
        .unwrap();
    let value = env.values[name].expose_secret().to_owned();
    drop(conn);
    data.db.close().await;
    value
}

#[tokio::test]
async fn first_use_creates_private_files_and_values_keep_their_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    seeded(&dir);
    for (file, mode) in [("", 0o700), ("master.key", 0o600), ("widgetd.db", 0o600)] {
        let actual = std::fs::metadata(dir.join(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(actual, mode, "{file}");
    }
    // `env set` keeps stdin byte for byte, trailing newline included.
    assert_eq!(global_value(&dir, "API_KEY").await, "value-before\n");
    let listed: Value = serde_json::from_str(&ok(
        widgetd(&dir).args(["env", "list", "--user", "alice", "--json"])
    ))
    .unwrap();
    assert_eq!(listed[0]["name"], "API_KEY");
    assert!(!listed.to_string().contains("value-before"));
}

#[tokio::test]
async fn a_wrong_or_malformed_master_key_refuses_to_start_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    seeded(&dir);
    let before = snapshot(&dir);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        ["master.key", "widgetd.db", "widgetd.lock"]
    );

    let wrong = MasterKey::generate().to_base64();
    let out = widgetd(&dir)
        .args(["user", "list"])
        .env("WIDGETD_MASTER_KEY", wrong.as_str())
        .output_within(COMMAND_LIMIT);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("does not match this data dir"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("nothing was changed"));
    assert_eq!(snapshot(&dir), before);

    let out = widgetd(&dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("WIDGETD_MASTER_KEY", "short")
        .output_within(REFUSAL_LIMIT);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(
        "WIDGETD_MASTER_KEY is not valid: expected the base64 encoding of exactly 32 bytes"
    ));
    assert_eq!(snapshot(&dir), before);

    std::fs::set_permissions(
        dir.join("master.key"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = widgetd(&dir)
        .args(["user", "list"])
        .output_within(COMMAND_LIMIT);
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
    std::fs::set_permissions(
        dir.join("master.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();

    std::fs::rename(dir.join("master.key"), tmp.path().join("moved.key")).unwrap();
    let out = widgetd(&dir)
        .args(["user", "list"])
        .output_within(COMMAND_LIMIT);
    assert!(
        stderr(&out).contains("there is no master key"),
        "{}",
        stderr(&out)
    );
    assert!(
        !dir.join("master.key").exists(),
        "a new key was generated over existing data"
    );
    std::fs::rename(tmp.path().join("moved.key"), dir.join("master.key")).unwrap();
    ok(widgetd(&dir).args(["user", "list"]));
}

#[tokio::test]
async fn rotate_then_reencrypt_keeps_values_and_moves_them_to_the_new_key() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    seeded(&dir);
    assert!(ok(widgetd(&dir).args(["keys", "rotate"])).contains("created data key 2"));
    let out = run_with_stdin(
        widgetd(&dir).args(["env", "set", "NEW_KEY", "--user", "alice"]),
        "after",
    );
    assert!(out.status.success());
    let status: Value =
        serde_json::from_str(&ok(widgetd(&dir).args(["keys", "status", "--json"]))).unwrap();
    assert_eq!(status[0]["env_vars"], 1);
    assert_eq!(status[1]["env_vars"], 1);
    assert_eq!(status[1]["newest"], true);
    assert_eq!(global_value(&dir, "API_KEY").await, "value-before\n");

    let out = widgetd(&dir)
        .args(["keys", "reencrypt"])
        .output_within(COMMAND_LIMIT);
    assert!(
        stderr(&out).contains("re-encrypted 1/1"),
        "progress is shown: {}",
        stderr(&out)
    );
    let status: Value =
        serde_json::from_str(&ok(widgetd(&dir).args(["keys", "status", "--json"]))).unwrap();
    assert_eq!(
        (
            status[0]["env_vars"].as_i64(),
            status[1]["env_vars"].as_i64()
        ),
        (Some(0), Some(2))
    );
    assert_eq!(global_value(&dir, "API_KEY").await, "value-before\n");
    assert_eq!(global_value(&dir, "NEW_KEY").await, "after");
}

#[tokio::test]
async fn rekey_replaces_the_master_and_an_interrupted_rekey_completes_at_start() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    seeded(&dir);
    let old_key = std::fs::read(dir.join("master.key")).unwrap();
    ok(widgetd(&dir).args(["keys", "rekey"]));
    let new_key = std::fs::read(dir.join("master.key")).unwrap();
    assert_ne!(old_key, new_key);
    assert!(!dir.join("master.key.new").exists());
    assert_eq!(global_value(&dir, "API_KEY").await, "value-before\n");
    let out = widgetd(&dir)
        .args(["user", "list"])
        .env(
            "WIDGETD_MASTER_KEY",
            String::from_utf8(old_key.clone()).unwrap().trim(),
        )
        .output_within(COMMAND_LIMIT);
    assert!(
        stderr(&out).contains("does not match"),
        "the old master still works"
    );

    // As if the process died between the commit and the rename.
    std::fs::rename(dir.join("master.key"), dir.join("master.key.new")).unwrap();
    std::fs::write(dir.join("master.key"), &old_key).unwrap();
    std::fs::set_permissions(
        dir.join("master.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    ok(widgetd(&dir).args(["user", "list"]));
    assert_eq!(std::fs::read(dir.join("master.key")).unwrap(), new_key);
    assert!(!dir.join("master.key.new").exists());

    // With the key in the environment, the new key comes from stdin.
    let next = MasterKey::generate();
    let out = run_with_stdin(
        widgetd(&dir)
            .args(["keys", "rekey", "--new-key-stdin"])
            .env(
                "WIDGETD_MASTER_KEY",
                String::from_utf8(new_key).unwrap().trim(),
            ),
        next.to_base64().as_str(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("Set WIDGETD_MASTER_KEY"));
    assert!(
        !stdout(&out).contains(next.to_base64().as_str()),
        "a key given on stdin is echoed"
    );
    let out = widgetd(&dir)
        .args(["user", "list"])
        .env("WIDGETD_MASTER_KEY", next.to_base64().as_str())
        .output_within(COMMAND_LIMIT);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test]
async fn tokens_users_and_backups_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    seeded(&dir);
    let minted: Value = serde_json::from_str(&ok(widgetd(&dir).args([
        "token",
        "create",
        "--user",
        "alice",
        "--scope",
        "env:read,sessions",
        "--json",
    ])))
    .unwrap();
    let token = minted["token"].as_str().unwrap();
    assert!(token.starts_with("wdt_") && token.len() >= 4 + 43);
    let listed = ok(widgetd(&dir).args(["token", "list", "--json"]));
    assert!(listed.contains(minted["id"].as_str().unwrap()) && !listed.contains(token));
    ok(widgetd(&dir).args(["token", "revoke", minted["id"].as_str().unwrap()]));
    let out = widgetd(&dir)
        .args(["token", "revoke", minted["id"].as_str().unwrap()])
        .output_within(COMMAND_LIMIT);
    assert!(!out.status.success() && stderr(&out).contains("live token not found"));
    let out = widgetd(&dir)
        .args(["token", "create", "--user", "alice", "--scope", "root"])
        .output_within(COMMAND_LIMIT);
    assert!(
        stderr(&out).contains("unknown token scope `root`"),
        "{}",
        stderr(&out)
    );

    let out = run_with_stdin(
        widgetd(&dir).args(["user", "add", "bob", "--password-stdin"]),
        "short\n",
    );
    assert!(!out.status.success() && stderr(&out).contains("at least 12 characters"));
    let out = run_with_stdin(
        widgetd(&dir).args(["user", "add", "bob", "--role", "admin", "--password-stdin"]),
        "long enough password\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let users: Value =
        serde_json::from_str(&ok(widgetd(&dir).args(["user", "list", "--json"]))).unwrap();
    assert_eq!(users.as_array().unwrap().len(), 2);
    assert_eq!(users[1]["role"], "admin");

    let copy = tmp.path().join("copy.db");
    ok(widgetd(&dir).arg("backup").arg(&copy));
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let out = widgetd(&dir)
        .arg("backup")
        .arg(&copy)
        .output_within(COMMAND_LIMIT);
    assert!(stderr(&out).contains("already exists"));
    // The copy is a working data dir once the master key is beside it.
    let restored = tmp.path().join("restored");
    std::fs::create_dir(&restored).unwrap();
    std::fs::copy(&copy, restored.join("widgetd.db")).unwrap();
    std::fs::copy(dir.join("master.key"), restored.join("master.key")).unwrap();
    assert_eq!(global_value(&restored, "API_KEY").await, "value-before\n");
}

#[tokio::test]
async fn audit_verify_names_the_first_edited_deleted_or_reordered_row() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let app = crate::helpers::spawn_sqlite_app().await;
    let scene = crate::helpers::scene(&app, "alice").await;
    for name in ["A_KEY", "B_KEY", "C_KEY"] {
        app.pending_widget(&scene.agent, &scene.session, &[name])
            .await;
    }
    app.state.db.close().await;
    copy_dir(&app.data_dir(), &dir);
    assert!(ok(widgetd(&dir).args(["audit", "verify"])).contains("4 row(s), chain intact"));
    let listed: Value =
        serde_json::from_str(&ok(widgetd(&dir).args(["audit", "list", "--json"]))).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert_eq!(listed[2]["names"], "B_KEY");
    // The same RFC 3339 times as the API, not Unix milliseconds.
    let at = listed[2]["at"].as_str().expect("`at` is text");
    time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
        .expect("`at` is RFC 3339");

    let tampers = [
        (
            "UPDATE audit_log SET names = 'Z_KEY' WHERE id = 2",
            "audit row 2 was altered",
        ),
        (
            "UPDATE audit_log SET at = at + 1 WHERE id = 3",
            "audit row 3 was altered",
        ),
        (
            "DELETE FROM audit_log WHERE id = 2",
            "audit row 2 is missing",
        ),
        (
            "UPDATE audit_log SET id = id + 10 WHERE id = 1",
            "audit row 1 is missing",
        ),
    ];
    for (tamper, expected) in tampers {
        let copy = tmp
            .path()
            .join(format!("copy-{}", expected.replace(' ', "-")));
        copy_dir(&dir, &copy);
        let pool =
            sqlx::SqlitePool::connect(&format!("sqlite://{}", copy.join("widgetd.db").display()))
                .await
                .unwrap();
        for sql in [
            "DROP TRIGGER audit_log_no_update",
            "DROP TRIGGER audit_log_no_delete",
            tamper,
        ] {
            sqlx::query(sql).execute(&pool).await.unwrap();
        }
        pool.close().await;
        let out = widgetd(&copy)
            .args(["audit", "verify"])
            .output_within(COMMAND_LIMIT);
        assert!(!out.status.success(), "{tamper}");
        assert!(
            stderr(&out).contains(expected),
            "{tamper}: {}",
            stderr(&out)
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Without `--data-dir`, the per-user data dir is the default, not
/// whatever directory (a source checkout) widgetd was started from; a
/// `widgetd-data` left there by an earlier version is still used. Only
/// `serve` creates one: any other command refuses a data dir without a
/// database, naming the flag and the variable, and creates nothing.
#[test]
fn only_serve_creates_a_data_dir_and_the_default_is_per_user() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_widgetd"));
        command
            .args(args)
            .current_dir(cwd.path())
            .env("HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("WIDGETD_DATA_DIR")
            .env_remove("WIDGETD_DATABASE_URL")
            .env_remove("WIDGETD_MASTER_KEY")
            .stdin(std::process::Stdio::null());
        command.output_within(COMMAND_LIMIT)
    };
    let default = home.path().join(".local/share/widgetd");
    for args in [
        &["user", "list"][..],
        &["user", "add", "alice"],
        &["keys", "status"],
        &["check"],
        &["backup", "copy.db"],
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} ran without a data dir");
        let err = stderr(&out);
        assert!(
            err.contains("--data-dir") && err.contains("WIDGETD_DATA_DIR"),
            "{args:?}: {err}"
        );
        assert!(err.contains(&default.display().to_string()), "{err}");
    }
    assert!(!default.exists(), "a data dir was created");
    assert_eq!(
        std::fs::read_dir(cwd.path()).unwrap().count(),
        0,
        "nothing lands in the working directory"
    );

    crate::helpers::new_data_dir(&default);
    ok(&mut {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_widgetd"));
        c.args(["user", "list", "--json"])
            .current_dir(cwd.path())
            .env("HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("WIDGETD_DATA_DIR")
            .env_remove("WIDGETD_DATABASE_URL")
            .env_remove("WIDGETD_MASTER_KEY");
        c
    });
    let legacy = cwd.path().join("widgetd-data");
    crate::helpers::new_data_dir(&legacy);
    let out = run(&["keys", "status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut used = snapshot(&legacy);
    used.remove("widgetd.db-wal");
    used.remove("widgetd.db-shm");
    assert!(
        used.contains_key("widgetd.db"),
        "an existing ./widgetd-data is kept"
    );
}

/// The first start's hints are commands README.md gives, word for word.
#[test]
fn the_first_start_banner_agrees_with_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = crate::helpers::Daemon::start(&dir.path().join("data"), dir.path(), "banner");
    let banner = std::fs::read_to_string(&daemon.out_log).unwrap();
    daemon.stop();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let hint = banner
        .lines()
        .find(|l| l.contains("token create"))
        .expect("the banner says how to mint a token")
        .trim();
    assert!(
        readme.contains(hint),
        "README.md lacks the banner's `{hint}`"
    );
    let data_line = banner.lines().find(|l| l.contains("data dir:")).unwrap();
    let canonical = std::fs::canonicalize(dir.path().join("data")).unwrap();
    // Run as printed, the hints reach this data dir, not a new one.
    assert!(
        banner.contains(&format!("export WIDGETD_DATA_DIR={}", canonical.display())),
        "{banner}"
    );
    assert!(
        data_line.contains(&canonical.display().to_string()),
        "{data_line}"
    );
}
