//! Spawning the app and the binary, and the small steps tests share.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use reqwest::{Client, Response, StatusCode};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use widgetd::auth::{self, Role, User, tokens::TokenScopes};
use widgetd::startup::open_data_dir;
use widgetd::{AppState, Settings};

/// The daemon served in-process on 127.0.0.1:0 over a fresh data dir.
pub struct TestApp {
    pub url: String,
    pub state: AppState,
    pub client: Client,
    pub dir: TempDir,
    _shutdown: oneshot::Sender<()>,
}

pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let data = open_data_dir(&dir.path().join("data")).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let state = AppState::new(data.db, data.keyring, Settings::new(url.clone()));
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(widgetd::serve(listener, state.clone(), async {
        let _ = rx.await;
    }));
    TestApp {
        url,
        state,
        client: Client::new(),
        dir,
        _shutdown: tx,
    }
}

impl TestApp {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub async fn user(&self, name: &str, role: Role) -> User {
        let mut conn = self.state.db.write.acquire().await.unwrap();
        auth::create_user(
            &mut conn,
            name,
            role,
            "a long test password".to_owned().into(),
        )
        .await
        .unwrap()
    }

    pub async fn token(&self, user: &User, scopes: &str) -> String {
        let mut conn = self.state.db.write.acquire().await.unwrap();
        let scopes = TokenScopes::parse(scopes).unwrap();
        let (_, token) = auth::create_api_token(&mut conn, &user.id, &scopes)
            .await
            .unwrap();
        token.expose_secret().to_owned()
    }

    /// A session created through the API; returns (session_id, agent_token).
    pub async fn session(&self, token: &str) -> (String, String) {
        let response = self
            .post_json("/api/v1/sessions", token, &json!({ "title": "test" }))
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        (
            body["session_id"].as_str().unwrap().to_owned(),
            body["agent_token"].as_str().unwrap().to_owned(),
        )
    }

    pub async fn get(&self, path: &str, token: &str) -> Response {
        self.client
            .get(format!("{}{path}", self.url))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
    }

    pub async fn post_json(&self, path: &str, token: &str, body: &Value) -> Response {
        self.client
            .post(format!("{}{path}", self.url))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn put_env(&self, token: &str, name: &str, body: &Value) -> Response {
        self.client
            .put(format!("{}/api/v1/env/{name}", self.url))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// The decrypted effective env, as the executor path sees it.
    pub async fn env_of(&self, session: &str, token: &str) -> Value {
        let response = self
            .get(&format!("/api/v1/sessions/{session}/env"), token)
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<Value>().await.unwrap()["env"].clone()
    }
}

/// Asserts an error response: status, stable code, and (optionally) that the
/// body does not contain `secret`. Returns the message.
pub async fn assert_error(
    response: Response,
    status: StatusCode,
    code: &str,
    secret: Option<&str>,
) -> String {
    assert_eq!(response.status(), status);
    let text = response.text().await.unwrap();
    if let Some(secret) = secret {
        assert!(
            !text.contains(secret),
            "the error body echoes the value: {text}"
        );
    }
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], code, "{text}");
    body["error"]["message"].as_str().unwrap().to_owned()
}

/// The `widgetd` binary, with a clean environment for widgetd's variables.
pub fn widgetd(data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_widgetd"));
    command
        .arg("--data-dir")
        .arg(data_dir)
        .env_remove("WIDGETD_MASTER_KEY")
        .env_remove("WIDGETD_TOKEN")
        .env_remove("WIDGETD_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    command
}

/// Runs the binary with `stdin` piped in; returns its output.
pub fn run_with_stdin(command: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A value no test would produce by accident.
pub fn canary(label: &str) -> String {
    format!("canary-{label}-{}", uuid::Uuid::new_v4().simple())
}
