//! `widgetd exec` against a live daemon: env injection, exit codes, masking.

use std::process::Output;

use serde_json::json;
use widgetd_domain::auth::Role;

use crate::helpers::{COMMAND_LIMIT, OutputWithin};
use crate::helpers::{TestApp, spawn_app, stderr, stdout, widgetd};

struct Fixture {
    app: TestApp,
    token: String,
    session: String,
}

async fn fixture(values: &[(&str, &str)]) -> Fixture {
    let app = spawn_app().await;
    let alice = app.user("alice", Role::Member).await;
    let token = app.token(&alice, "sessions,env:read,env:write").await;
    let (session, _) = app.session(&token).await;
    for (name, value) in values {
        let r = app
            .put_env(
                &token,
                name,
                &json!({ "value": value, "scope": "session", "session_id": session }),
            )
            .await;
        assert_eq!(r.status(), 204);
    }
    Fixture {
        app,
        token,
        session,
    }
}

impl Fixture {
    /// Runs `sh -c script` under `widgetd exec` (off the async runtime).
    async fn exec(&self, extra: &[&str], script: &str) -> Output {
        let mut command = widgetd(&self.app.data_dir());
        command
            .args(["exec", "--session", &self.session, "--url", &self.app.url])
            .args(extra)
            .args(["--", "sh", "-c", script])
            .env("WIDGETD_TOKEN", &self.token)
            .env("WIDGETD_URL", &self.app.url);
        tokio::task::spawn_blocking(move || command.output_within(COMMAND_LIMIT))
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn exec_injects_the_env_and_passes_the_exit_code_through() {
    let f = fixture(&[("API_KEY", "k-123 with spaces")]).await;
    let out = f
        .exec(&[], r#"test "$API_KEY" = "k-123 with spaces" && exit 42"#)
        .await;
    assert_eq!(out.status.code(), Some(42), "{}", stderr(&out));
    // The child never sees the token that fetched its env.
    let out = f
        .exec(&[], r#"test -z "$WIDGETD_TOKEN" && test -z "$WIDGETD_URL""#)
        .await;
    assert_eq!(out.status.code(), Some(0));
    let out = f.exec(&[], "kill -TERM $$").await;
    assert_eq!(out.status.code(), Some(128 + 15));
}

#[tokio::test]
async fn exec_masks_values_in_stdout_and_stderr_unless_told_not_to() {
    let pem = "-----BEGIN KEY-----\nMIIEpAIBAAKCAQEAxyz\n-----END KEY-----\n";
    let f = fixture(&[("API_KEY", "sk-live-abcdef"), ("PEM", pem)]).await;
    let script = r#"echo "key=$API_KEY"; printf '%s' "$PEM" >&2; echo "line: MIIEpAIBAAKCAQEAxyz""#;
    let out = f.exec(&[], script).await;
    assert!(out.status.success());
    assert_eq!(
        stdout(&out),
        "key=<concealed by widgetd>\nline: <concealed by widgetd>\n"
    );
    assert_eq!(stderr(&out), "<concealed by widgetd>");

    let out = f.exec(&["--no-masking"], script).await;
    assert_eq!(
        stdout(&out),
        "key=sk-live-abcdef\nline: MIIEpAIBAAKCAQEAxyz\n"
    );
    assert_eq!(stderr(&out), pem);
}

#[tokio::test]
async fn exec_explains_refusals() {
    let f = fixture(&[("API_KEY", "v")]).await;
    let mut command = widgetd(&f.app.data_dir());
    command
        .args([
            "exec",
            "--session",
            &f.session,
            "--url",
            &f.app.url,
            "--",
            "true",
        ])
        .env("WIDGETD_TOKEN", "wdt_revoked-or-bogus");
    let out = tokio::task::spawn_blocking(move || command.output_within(COMMAND_LIMIT))
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("widgetd refused to hand out the env"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("(invalid_token)"));

    let mut command = widgetd(&f.app.data_dir());
    command
        .args([
            "exec",
            "--session",
            &f.session,
            "--url",
            "http://127.0.0.1:9",
            "--",
            "true",
        ])
        .env("WIDGETD_TOKEN", &f.token);
    let out = tokio::task::spawn_blocking(move || command.output_within(COMMAND_LIMIT))
        .await
        .unwrap();
    assert!(
        stderr(&out).contains("cannot reach widgetd"),
        "{}",
        stderr(&out)
    );
}

/// One value that no longer decrypts (here: its ciphertext was altered on
/// disk) is named with its reason and audited; the env is refused unless the
/// caller asks for the rest explicitly, over the API and `exec` alike.
#[tokio::test]
async fn an_unreadable_value_is_named_and_the_rest_served_only_on_request() {
    let good = crate::helpers::canary("good");
    let f = fixture(&[("GOOD_KEY", &good), ("BROKEN_KEY", "will-be-altered")]).await;
    // Another nonce: the ciphertext no longer authenticates.
    sqlx::query("UPDATE env_vars SET nonce = $1 WHERE name = 'BROKEN_KEY'")
        .bind(vec![0u8; 12])
        .execute(&f.app.state.db.write)
        .await
        .unwrap();

    let path = format!("/api/v1/sessions/{}/env", f.session);
    let r = f.app.get(&path, &f.token).await;
    assert_eq!(r.status(), 409);
    let body = r.text().await.unwrap();
    assert!(!body.contains(&good), "a refusal carried a value: {body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["code"], "env_unreadable");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("BROKEN_KEY (session scope)") && message.contains("failed authentication"),
        "{message}"
    );
    assert!(!message.contains("GOOD_KEY"), "{message}");

    let r = f.app.get(&format!("{path}?partial=true"), &f.token).await;
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["env"], json!({ "GOOD_KEY": good }));
    assert_eq!(body["unreadable"][0]["name"], "BROKEN_KEY");
    assert_eq!(body["unreadable"][0]["scope"], "session");

    // The session is a UUID the daemon made: safe to write into the SQL.
    let audited = f
        .app
        .count(&format!(
            "SELECT count(*) FROM audit_log WHERE action = 'env.unreadable' \
             AND names = 'BROKEN_KEY' AND session_id = '{}'",
            f.session
        ))
        .await;
    assert_eq!(
        audited, 2,
        "each refused or partial read is audited, with its session"
    );
    let detail: String = sqlx::query_scalar(
        "SELECT detail FROM audit_log WHERE action = 'env.unreadable' ORDER BY id LIMIT 1",
    )
    .fetch_one(&f.app.state.db.read)
    .await
    .unwrap();
    assert!(
        detail.starts_with("BROKEN_KEY (session): ") && !detail.contains(&good),
        "{detail}"
    );

    let out = f.exec(&[], "exit 0").await;
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("BROKEN_KEY"), "{}", stderr(&out));
    let script = format!(r#"test "$GOOD_KEY" = "{good}" && test -z "${{BROKEN_KEY+set}}""#);
    let out = f.exec(&["--partial"], &script).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("running without BROKEN_KEY"),
        "{}",
        stderr(&out)
    );
}
