//! The daemon served in-process ([`TestApp`]), its users, tokens and
//! sessions, and the HTTP calls tests make to it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use reqwest::{Client, Response, StatusCode};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use widgetd::{AppState, Settings};
use widgetd_domain::auth::{self, Role, User, tokens::TokenScopes};
use widgetd_domain::db::DatabaseUrl;
use widgetd_domain::startup;

use super::backend::{self, TestDir, test_dir};
use super::login::PASSWORD;

/// The daemon served in-process on 127.0.0.1:0 over a fresh data dir (and,
/// when the tests run on PostgreSQL, a fresh database).
pub struct TestApp {
    pub url: String,
    pub state: AppState,
    pub client: Client,
    pub dir: Arc<TestDir>,
    _shutdown: oneshot::Sender<()>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Same as [`spawn_app`], with settings changed first.
pub async fn spawn_app_with(change: impl FnOnce(&mut Settings)) -> TestApp {
    spawn_app_in(Arc::new(test_dir()), change).await
}

/// Same as [`spawn_app_with`], listening on `bind` (`[::1]:0` for a
/// daemon reached over IPv6).
pub async fn spawn_app_at(bind: &str, change: impl FnOnce(&mut Settings)) -> TestApp {
    let dir = Arc::new(test_dir());
    let database = dir.database(&dir.path().join("data"));
    serve_data_dir(dir, database, bind, change).await
}

/// [`spawn_app`] on a SQLite file whatever the tests run on, for tests
/// that look at or alter the file itself.
pub async fn spawn_sqlite_app() -> TestApp {
    spawn_app_in(Arc::new(backend::sqlite_dir()), |_| {}).await
}

/// [`spawn_app`] on PostgreSQL whatever the tests run on, for tests of
/// several daemons on one database ([`TestApp::spawn_peer`]).
pub async fn spawn_postgres_app() -> TestApp {
    spawn_app_in(Arc::new(backend::postgres_dir()), |_| {}).await
}

impl TestApp {
    /// A second daemon on the same data dir and database: another process
    /// of the same deployment, as behind a load balancer.
    pub async fn spawn_peer(&self) -> TestApp {
        spawn_app_in(self.dir.clone(), |_| {}).await
    }
}

/// A daemon on the data dir (and master key) of `dir` with the database
/// `url`, for tests that move data between databases.
pub async fn spawn_app_on(dir: Arc<TestDir>, url: &str) -> TestApp {
    let database = DatabaseUrl::parse(url).unwrap();
    serve_data_dir(dir, Some(database), "127.0.0.1:0", |_| {}).await
}

async fn spawn_app_in(dir: Arc<TestDir>, change: impl FnOnce(&mut Settings)) -> TestApp {
    let database = dir.database(&dir.path().join("data"));
    serve_data_dir(dir, database, "127.0.0.1:0", change).await
}

async fn serve_data_dir(
    dir: Arc<TestDir>,
    database: Option<DatabaseUrl>,
    bind: &str,
    change: impl FnOnce(&mut Settings),
) -> TestApp {
    let data_dir = dir.path().join("data");
    let data = startup::open(&data_dir, database.as_ref()).await.unwrap();
    let listener = TcpListener::bind(bind).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut settings = Settings::new(url.clone());
    change(&mut settings);
    let state = AppState::new(data.db, data.keyring, settings);
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(widgetd::serve(listener, state.clone(), async {
        let _ = rx.await;
    }));
    TestApp {
        url,
        state,
        client: client(),
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
        auth::create_user(&mut conn, name, role, PASSWORD.to_owned().into())
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
        titled_session(self, token, "test").await
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

/// Opens the data dir `dir` as the binary would: on its test database if
/// the tests run on PostgreSQL.
pub async fn open_data(dir: &Path) -> startup::DataDir {
    let database = backend::database_for(dir).map(|url| DatabaseUrl::parse(&url).unwrap());
    startup::open(dir, database.as_ref()).await.unwrap()
}

/// A value no test would produce by accident.
pub fn canary(label: &str) -> String {
    format!("canary-{label}-{}", uuid::Uuid::new_v4().simple())
}

/// An HTTP client that shows redirects instead of following them.
pub fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

impl TestApp {
    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(&self.state.db.read)
            .await
            .unwrap()
    }
}

/// A user with a host token (sessions, env:read, env:write) and a session.
pub struct Scene {
    pub host: String,
    pub session: String,
    pub agent: String,
}

pub async fn scene(app: &TestApp, user: &str) -> Scene {
    let alice = app.user(user, Role::Member).await;
    let host = app.token(&alice, "sessions,env:read,env:write").await;
    let (session, agent) = app.session(&host).await;
    Scene {
        host,
        session,
        agent,
    }
}

/// Opens the event stream of `session` on the daemon at `url`.
pub async fn event_stream(
    http: &reqwest::Client,
    url: &str,
    session: &str,
    host: &str,
) -> reqwest::Response {
    let stream = http
        .get(format!("{url}/api/v1/sessions/{session}/events"))
        .bearer_auth(host)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), reqwest::StatusCode::OK);
    stream
}

/// `PUT /api/v1/sessions/{session}/sharing` as `host` (asserting `200`);
/// the sharing it answers.
pub async fn share(app: &TestApp, host: &str, session: &str, body: Value) -> Value {
    let r = app
        .client
        .put(format!("{}/api/v1/sessions/{session}/sharing", app.url))
        .bearer_auth(host)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// A session titled `title`, created through the API with `host`'s token;
/// returns (session_id, agent_token).
pub async fn titled_session(app: &TestApp, host: &str, title: &str) -> (String, String) {
    let r = app
        .post_json("/api/v1/sessions", host, &json!({ "title": title }))
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.unwrap();
    (
        body["session_id"].as_str().unwrap().to_owned(),
        body["agent_token"].as_str().unwrap().to_owned(),
    )
}

pub async fn add_webhook(
    app: &crate::helpers::TestApp,
    token: &str,
    url: &str,
    format: &str,
) -> Value {
    let r = app
        .post_json(
            "/api/v1/webhooks",
            token,
            &json!({ "url": url, "format": format }),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}
