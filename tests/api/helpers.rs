//! Spawning the app and the binary, and the small steps tests share.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::{Client, Response, StatusCode};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use widgetd::{AppState, Settings};
use widgetd_domain::auth::{self, Role, User, tokens::TokenScopes};
use widgetd_domain::db::DatabaseUrl;
use widgetd_domain::startup;

pub use crate::backend::{TestDir, test_dir};

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

/// [`spawn_app`] on a SQLite file whatever the tests run on, for tests
/// that look at or alter the file itself.
pub async fn spawn_sqlite_app() -> TestApp {
    spawn_app_in(Arc::new(crate::backend::sqlite_dir()), |_| {}).await
}

/// [`spawn_app`] on PostgreSQL whatever the tests run on, for tests of
/// several daemons on one database ([`TestApp::spawn_peer`]).
pub async fn spawn_postgres_app() -> TestApp {
    spawn_app_in(Arc::new(crate::backend::postgres_dir()), |_| {}).await
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
    serve_data_dir(dir, Some(database), |_| {}).await
}

async fn spawn_app_in(dir: Arc<TestDir>, change: impl FnOnce(&mut Settings)) -> TestApp {
    let database = dir.database(&dir.path().join("data"));
    serve_data_dir(dir, database, change).await
}

async fn serve_data_dir(
    dir: Arc<TestDir>,
    database: Option<DatabaseUrl>,
    change: impl FnOnce(&mut Settings),
) -> TestApp {
    let data_dir = dir.path().join("data");
    let data = startup::open(&data_dir, database.as_ref()).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
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

/// Opens the data dir `dir` as the binary would: on its test database if
/// the tests run on PostgreSQL.
pub async fn open_data(dir: &Path) -> startup::DataDir {
    let database = crate::backend::database_for(dir).map(|url| DatabaseUrl::parse(&url).unwrap());
    startup::open(dir, database.as_ref()).await.unwrap()
}

/// The `widgetd` binary, with a clean environment for widgetd's variables;
/// on the database of `data_dir`'s [`TestDir`] if it has one.
pub fn widgetd(data_dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_widgetd"));
    match crate::backend::database_for(data_dir) {
        Some(url) => command.env("WIDGETD_DATABASE_URL", url),
        None => command.env_remove("WIDGETD_DATABASE_URL"),
    };
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

/// A data dir as the first `widgetd serve` leaves it (database, key, first
/// data key), for tests that go on with the CLI: no other command creates
/// one.
pub fn new_data_dir(dir: &Path) {
    let dir = dir.to_owned();
    let database = crate::backend::database_for(&dir).map(|u| DatabaseUrl::parse(&u).unwrap());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let data = startup::open(&dir, database.as_ref()).await.unwrap();
            data.db.close().await;
        });
    })
    .join()
    .unwrap();
}

/// Runs the binary with `stdin` piped in; returns its output. Bounded by
/// [`COMMAND_LIMIT`].
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
    collect_within(command, child, COMMAND_LIMIT)
}

/// How long a command of the binary that exits by itself (`user add`,
/// `check`, `backup`, …) may run before its test fails. Each takes well
/// under a second alone, a few on a loaded two-core machine.
pub const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// How long `widgetd serve` may take to refuse a data dir it must not use
/// (it opens the database and stops, in well under a second): a daemon
/// that serves instead fails the test this soon, not at the harness's limit.
pub const REFUSAL_LIMIT: Duration = Duration::from_secs(15);

/// How long a daemon may take to exit after SIGTERM or SIGINT.
pub const STOP_LIMIT: Duration = Duration::from_secs(20);

/// `Command::output` with a time limit: a process that should exit by
/// itself and does not fails its test with a message instead of hanging it.
pub trait OutputWithin {
    /// Runs the command to its end and returns what it printed; if it has
    /// not exited within `limit`, kills it and fails the test, showing what
    /// it printed so far.
    fn output_within(&mut self, limit: Duration) -> Output;
}

impl OutputWithin for Command {
    fn output_within(&mut self, limit: Duration) -> Output {
        let child = self
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", describe(self)));
        collect_within(self, child, limit)
    }
}

/// The program and its arguments, for a failure message (not its
/// environment, which may hold tokens).
fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads a pipe to its end on a thread; the bytes so far stay readable
/// through the returned buffer even while a grandchild holds the pipe open.
fn drain(
    mut pipe: impl std::io::Read + Send + 'static,
    done: std::sync::mpsc::Sender<()>,
) -> Arc<std::sync::Mutex<Vec<u8>>> {
    let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = buffer.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n @ 1..) = pipe.read(&mut chunk) {
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
        let _ = done.send(());
    });
    buffer
}

/// Waits for `child` (its stdout and stderr piped) and its output, at most
/// `limit`; kills it and fails the test past that.
fn collect_within(command: &Command, mut child: std::process::Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    let (done, finished) = std::sync::mpsc::channel();
    let out = drain(child.stdout.take().unwrap(), done.clone());
    let err = drain(child.stderr.take().unwrap(), done);
    let status = wait_until(&mut child, deadline);
    // Both pipes reach their end once the process (and any child of its
    // that kept them) has exited.
    let closed = status.is_some()
        && (0..2).all(|_| {
            finished
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .is_ok()
        });
    let (stdout, stderr) = (out.lock().unwrap().clone(), err.lock().unwrap().clone());
    match status {
        Some(status) if closed => Output {
            status,
            stdout,
            stderr,
        },
        _ => panic!(
            "`{}` did not finish within {limit:?}; it printed:\n{}\n{}",
            describe(command),
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        ),
    }
}

/// The exit status of `child` if it exits before `deadline`; otherwise
/// kills it and returns `None`.
fn wait_until(child: &mut std::process::Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills process `pid` with SIGKILL if the returned guard is still alive
/// after `limit`, saying `what` it failed to do: the test's reads of the
/// process's output then reach their end and its assertions fail, instead
/// of waiting for ever. Drop the guard before the process is reaped.
#[must_use = "the process is killed only while the guard lives"]
pub fn kill_after(pid: u32, limit: Duration, what: &str) -> Watchdog {
    let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
    let what = what.to_owned();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(limit) {
            eprintln!("{what}: not done after {limit:?}; killing process {pid}");
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    });
    Watchdog { _cancel: cancel }
}

/// See [`kill_after`]; dropping it lets the process live.
pub struct Watchdog {
    _cancel: std::sync::mpsc::Sender<()>,
}

/// Waits for `child` to exit, at most `limit`; past that kills it and
/// fails the test with `what` (what the process was expected to do).
pub fn wait_within(child: &mut std::process::Child, limit: Duration, what: &str) -> ExitStatus {
    wait_until(child, Instant::now() + limit)
        .unwrap_or_else(|| panic!("{what}: the process had not exited after {limit:?}"))
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

/// An HTTP client that shows redirects instead of following them.
pub fn client() -> Client {
    Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The password `TestApp::user` gives everyone.
pub const PASSWORD: &str = "a long test password";

/// A signed-in browser: its session cookie and form token.
pub struct Browser {
    pub cookie: String,
    pub csrf: String,
}

/// The `name=value` part of the session cookie in a response, if any.
pub fn session_cookie(response: &Response) -> Option<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("widgetd="))
        .map(|v| v.split(';').next().unwrap().to_owned())
}

impl TestApp {
    /// Logs `name` in with the test password.
    pub async fn login(&self, name: &str) -> Browser {
        self.login_with(name, PASSWORD, None)
            .await
            .expect("login succeeds")
    }

    /// Posts the login form (optionally with an existing cookie).
    pub async fn login_with(
        &self,
        name: &str,
        password: &str,
        cookie: Option<&str>,
    ) -> Option<Browser> {
        let mut request = self
            .client
            .post(format!("{}/login", self.url))
            .form(&[("username", name), ("password", password)]);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        if response.status() != StatusCode::SEE_OTHER {
            return None;
        }
        let cookie = session_cookie(&response).expect("login sets the session cookie");
        let me: Value = self
            .client
            .get(format!("{}/api/v1/me", self.url))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        Some(Browser {
            cookie,
            csrf: me["csrf_token"].as_str().unwrap().to_owned(),
        })
    }

    /// A same-origin form post from `browser`, as a browser sends it.
    pub async fn post_form(
        &self,
        browser: &Browser,
        path: &str,
        fields: &[(&str, &str)],
    ) -> Response {
        let mut all: Vec<(&str, &str)> = vec![("csrf_token", &browser.csrf)];
        all.extend_from_slice(fields);
        self.client
            .post(format!("{}{path}", self.url))
            .header("cookie", &browser.cookie)
            .header("origin", &self.url)
            .header("sec-fetch-site", "same-origin")
            .form(&all)
            .send()
            .await
            .unwrap()
    }

    /// A JSON post from `browser`, its form token in `X-CSRF-Token`, as the
    /// page's script sends it.
    pub async fn post_json_as(&self, browser: &Browser, path: &str, body: &Value) -> Response {
        self.client
            .post(format!("{}{path}", self.url))
            .header("cookie", &browser.cookie)
            .header("x-csrf-token", &browser.csrf)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// The HTML of page `path` as `browser` sees it (asserting `200`).
    pub async fn page(&self, browser: &Browser, path: &str) -> String {
        let r = self
            .client
            .get(format!("{}{path}", self.url))
            .header("cookie", &browser.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        r.text().await.unwrap()
    }

    /// `POST /api/v1/sessions/{session}/widgets/env-vars` as the agent.
    pub async fn request_env_vars(&self, agent: &str, session: &str, body: &Value) -> Response {
        self.post_json(
            &format!("/api/v1/sessions/{session}/widgets/env-vars"),
            agent,
            body,
        )
        .await
    }

    /// A widget request whose answer the caller inspects.
    pub async fn pending_widget_response(&self, agent: &str, session: &str) -> Response {
        self.request_env_vars(
            agent,
            session,
            &json!({ "names": ["ANY_KEY"], "reason": "to call the API" }),
        )
        .await
    }

    /// Creates a pending widget for `names`; returns its id.
    pub async fn pending_widget(&self, agent: &str, session: &str, names: &[&str]) -> String {
        let response = self
            .request_env_vars(
                agent,
                session,
                &json!({ "names": names, "reason": "to call the API" }),
            )
            .await;
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], "pending");
        body["widget_id"].as_str().unwrap().to_owned()
    }

    /// Undelivered prompts of a session, waiting up to `wait` seconds.
    pub async fn prompts(&self, host: &str, session: &str, wait: u64) -> Vec<Value> {
        let response = self
            .get(
                &format!("/api/v1/sessions/{session}/prompts?wait={wait}"),
                host,
            )
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json::<Value>().await.unwrap()["prompts"]
            .as_array()
            .unwrap()
            .clone()
    }

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

/// Logs `user` (password [`PASSWORD`]) in to the daemon at `url` through
/// the form, as a browser does; for daemons that are not a [`TestApp`].
pub async fn login_at(client: &Client, url: &str, user: &str) -> Browser {
    let r = client
        .post(format!("{url}/login"))
        .form(&[("username", user), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER, "{user} logs in");
    let cookie = session_cookie(&r).unwrap();
    let me: Value = client
        .get(format!("{url}/api/v1/me"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    Browser {
        cookie,
        csrf: me["csrf_token"].as_str().unwrap().to_owned(),
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

/// The real `widgetd serve` as a child process on 127.0.0.1:0, logging to files.
pub struct Daemon {
    pub child: std::process::Child,
    pub url: String,
    pub out_log: PathBuf,
    pub err_log: PathBuf,
}

impl Daemon {
    /// Starts the daemon on `data_dir` with `RUST_LOG=trace` and the admin
    /// password `PASSWORD`; waits until it listens.
    pub fn start(data_dir: &Path, logs: &Path, label: &str) -> Daemon {
        Self::start_with(data_dir, logs, label, &[])
    }

    /// [`Daemon::start`] with more `serve` arguments.
    pub fn start_with(data_dir: &Path, logs: &Path, label: &str, extra: &[&str]) -> Daemon {
        let (out_log, err_log) = (
            logs.join(format!("{label}.out")),
            logs.join(format!("{label}.err")),
        );
        let mut child = widgetd(data_dir)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(extra)
            .env("RUST_LOG", "trace")
            .env("WIDGETD_ADMIN_PASSWORD", PASSWORD)
            .stdout(std::fs::File::create(&out_log).unwrap())
            .stderr(std::fs::File::create(&err_log).unwrap())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let url = loop {
            let text = std::fs::read_to_string(&out_log).unwrap_or_default();
            if let Some(rest) = text.split("listening on ").nth(1) {
                break rest.lines().next().unwrap().trim().to_owned();
            }
            if child.try_wait().unwrap().is_some() {
                let err = std::fs::read_to_string(&err_log).unwrap_or_default();
                panic!("the daemon exited: {text}\n{err}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the daemon did not start: {text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        Daemon {
            child,
            url,
            out_log,
            err_log,
        }
    }

    /// Sends SIGTERM and waits (at most [`STOP_LIMIT`]); asserts a clean exit.
    pub fn stop(mut self) {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        let status = wait_within(
            &mut self.child,
            STOP_LIMIT,
            "the daemon did not shut down on SIGTERM",
        );
        assert!(
            status.success(),
            "the daemon did not shut down cleanly on SIGTERM: {status}"
        );
    }
}

impl Drop for Daemon {
    /// A test that failed before `stop` leaves no daemon running.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// [`OutputWithin`] for a test on the tokio runtime (the command talks to
/// the in-process app): the command is killed and the test fails if it has
/// not exited within `limit`.
pub async fn output_async_within(command: Command, limit: Duration) -> Output {
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    tokio::time::timeout(limit, command.output())
        .await
        .unwrap_or_else(|_| panic!("{command:?} did not finish within {limit:?}"))
        .unwrap()
}
