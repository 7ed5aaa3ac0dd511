//! A real headless Chromium for the browser tests, driven over WebDriver with
//! fantoccini: each [`Chrome`] has its own chromedriver on a free port and a
//! fresh profile, and both end when it is dropped (even when a test panics).

use std::fmt::Display;
use std::future::Future;
use std::io::{Read, Write};
use std::ops::Deref;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::{PASSWORD, TestApp, free_port};

/// How long any wait in a browser test may take.
pub const WAIT: Duration = Duration::from_secs(10);

const MISSING: &str = "The browser tests need Chromium and chromedriver: install the Debian \
     packages `chromium` and `chromium-driver` (apt-get install chromium chromium-driver; \
     .ci/run does this), or set CHROME_BIN and CHROMEDRIVER to the binaries.";

/// `$env`, else the first of `names` found on `PATH` (or as an absolute path).
fn program(env: &str, names: &[&str]) -> PathBuf {
    if let Some(path) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "{env}={} does not exist. {MISSING}",
            path.display()
        );
        return path;
    }
    let dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    names
        .iter()
        .flat_map(|name| {
            let name = Path::new(name);
            if name.is_absolute() {
                vec![name.to_path_buf()]
            } else {
                dirs.iter().map(|d| d.join(name)).collect()
            }
        })
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{} not found. {MISSING}", names.join(" / ")))
}

/// Polls `check` every 100 ms until it holds; panics after [`WAIT`].
pub async fn wait_for<F, Fut>(what: impl Display, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    crate::helpers::eventually_every(what, WAIT, Duration::from_millis(100), check).await;
}

/// Where screenshots go: `target/browser-artifacts/`.
pub fn artifacts_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/browser-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One headless Chromium with its own chromedriver and profile.
pub struct Chrome {
    client: Client,
    driver: Child,
    port: u16,
    session: Option<String>,
    _profile: TempDir,
}

impl Deref for Chrome {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Chrome {
    /// Starts chromedriver on a free port and opens a session in a fresh,
    /// headless Chromium.
    pub async fn launch() -> Chrome {
        Self::launch_with(true).await
    }

    /// [`Chrome::launch`] with JavaScript switched off for every page (the
    /// browser's content setting), as a person with scripts blocked sees
    /// widgetd. WebDriver still drives the page.
    pub async fn launch_without_javascript() -> Chrome {
        Self::launch_with(false).await
    }

    async fn launch_with(javascript: bool) -> Chrome {
        let chrome = program("CHROME_BIN", &["/usr/bin/chromium", "chromium"]);
        let chromedriver = program("CHROMEDRIVER", &["chromedriver", "/usr/bin/chromedriver"]);
        let profile = tempfile::tempdir().unwrap();
        let log_path = profile.path().join("chromedriver.log");
        let (mut driver, port) = start_driver(&chromedriver, &log_path).await;
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1200,1000",
            &format!(
                "--user-data-dir={}",
                profile.path().join("chrome").display()
            ),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("chrome"));
        let mut options = json!({ "binary": chrome, "args": args });
        if !javascript {
            options["prefs"] = json!({ "profile.managed_default_content_settings.javascript": 2 });
        }
        caps.insert("goog:chromeOptions".into(), options);
        let connected = ClientBuilder::native()
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await;
        let client = match connected {
            Ok(client) => client,
            Err(e) => {
                kill_group(&mut driver);
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                panic!(
                    "chromedriver could not start {}: {e}\n{log}\n{MISSING}",
                    chrome.display()
                );
            }
        };
        let session = client.session_id().await.ok().flatten();
        Chrome {
            client,
            driver,
            port,
            session,
            _profile: profile,
        }
    }

    /// Ends the browser session cleanly (Drop does it too, less gently).
    pub async fn close(mut self) {
        if self.client.clone().close().await.is_ok() {
            self.session = None;
        }
    }

    pub async fn open(&self, url: &str) {
        self.goto(url).await.unwrap();
    }

    /// Signs `user` in by typing into the login page as a person does (the
    /// test password), and waits to leave it; [`TestApp::login`] is the same
    /// over plain HTTP.
    ///
    /// [`TestApp::login`]: crate::helpers::TestApp::login
    pub async fn sign_in(&self, app_url: &str, user: &str) {
        self.open(&format!("{app_url}/login")).await;
        self.css("#username").await.send_keys(user).await.unwrap();
        self.css("#password")
            .await
            .send_keys(PASSWORD)
            .await
            .unwrap();
        self.css("form[action='/login'] button[type=submit]")
            .await
            .click()
            .await
            .unwrap();
        let deadline = Instant::now() + WAIT;
        while self.current_url().await.unwrap().path() == "/login" {
            if Instant::now() > deadline {
                let page = self.source().await.unwrap_or_default();
                panic!("the login form did not log {user} in:\n{page}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The first element matching `css`; panics if there is none.
    pub async fn css(&self, css: &str) -> Element {
        self.find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no element matches {css}: {e}"))
    }

    pub async fn count(&self, css: &str) -> usize {
        self.find_all(Locator::Css(css)).await.unwrap().len()
    }

    /// Waits until an element matches `css`; returns the first.
    pub async fn wait_css(&self, css: &str) -> Element {
        wait_for(format_args!("{css} to appear"), || async {
            self.count(css).await > 0
        })
        .await;
        self.css(css).await
    }

    /// Runs `script` (a function body that may `return`) in the page.
    pub async fn js(&self, script: &str) -> Value {
        self.execute(script, vec![])
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Marks the current document, so [`Chrome::same_document`] can tell
    /// that it was never reloaded.
    pub async fn mark_document(&self) {
        self.js("window.__testMark = 'still-here'; return true;")
            .await;
    }

    pub async fn same_document(&self) -> bool {
        self.js("return window.__testMark === 'still-here';").await == json!(true)
    }

    /// Runs a Chrome DevTools Protocol command through chromedriver.
    pub async fn cdp(&self, cmd: &'static str, params: Value) -> Value {
        self.client
            .issue_cmd(Cdp { cmd, params })
            .await
            .unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    /// Lays pages out as on a screen `width` CSS pixels wide (a phone is
    /// about 390, with `mobile` true).
    pub async fn viewport(&self, width: u32, height: u32, mobile: bool) {
        let params =
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile });
        self.cdp("Emulation.setDeviceMetricsOverride", params).await;
    }

    /// Sets `prefers-color-scheme` as a system in dark (or light) mode does.
    pub async fn color_scheme(&self, scheme: &str) {
        let features = json!([{ "name": "prefers-color-scheme", "value": scheme }]);
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": features }),
        )
        .await;
    }

    /// Saves a PNG of the viewport as `target/screenshots/{name}`.
    pub async fn screenshot_as(&self, name: &str) -> PathBuf {
        let png = self.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, png).unwrap();
        path
    }

    /// Saves a PNG of the viewport as `target/browser-artifacts/{name}`.
    pub async fn screenshot_to(&self, name: &str) -> PathBuf {
        let png = self.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
        let path = artifacts_dir().join(name);
        std::fs::write(&path, png).unwrap();
        path
    }
}

/// `POST /session/{id}/goog/cdp/execute`: chromedriver's door to the
/// DevTools protocol.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}

async fn start_driver(chromedriver: &Path, log_path: &Path) -> (Child, u16) {
    let mut last_log = String::new();
    // A port found free can be taken before chromedriver binds it: retry.
    for _ in 0..3 {
        let port = free_port();
        let log = std::fs::File::create(log_path).unwrap();
        let mut driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            // Its own process group, so Chromium and its helpers can be
            // ended with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}. {MISSING}", chromedriver.display()));
        let status = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{port}/status");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = match status.get(&url).send().await {
                Ok(r) => r
                    .json::<Value>()
                    .await
                    .ok()
                    .map(|v| v["value"]["ready"] == true),
                Err(_) => None,
            };
            if ready == Some(true) {
                return (driver, port);
            }
            if driver.try_wait().unwrap().is_some() || Instant::now() > deadline {
                kill_group(&mut driver);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        last_log = std::fs::read_to_string(log_path).unwrap_or_default();
    }
    panic!(
        "chromedriver ({}) did not become ready: {last_log}",
        chromedriver.display()
    );
}

/// Ends chromedriver and everything in its process group.
fn kill_group(driver: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", driver.id())])
        .stderr(Stdio::null())
        .status();
    let _ = driver.kill();
    let _ = driver.wait();
}

/// `DELETE /session/{id}` without an async runtime, so Chromium can quit
/// and remove its profile before the process group is killed.
fn delete_session(port: u16, session: &str) {
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "DELETE /session/{session} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_ok() {
        let _ = stream.read_to_end(&mut Vec::new());
    }
}

impl Drop for Chrome {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            delete_session(self.port, &session);
        }
        kill_group(&mut self.driver);
    }
}

/// Whether the first element matching `css` is enabled.
pub async fn enabled(chrome: &Chrome, css: &str) -> bool {
    chrome.css(css).await.is_enabled().await.unwrap()
}

/// Clicks the first element matching `css`.
pub async fn click(chrome: &Chrome, css: &str) {
    chrome.css(css).await.click().await.unwrap();
}

/// `textContent` of every element matching `css`.
pub async fn texts(chrome: &Chrome, css: &str) -> Value {
    chrome
        .js(&format!(
            "return [...document.querySelectorAll('{css}')].map(e => e.textContent.trim());"
        ))
        .await
}

/// Markup that, if it ran, sets `window.__xss` or the title. Each fits the
/// shortest field it goes into (placeholders: 120 characters).
pub const XSS: &[&str] = &[
    "<script>window.__xss=1</script>",
    "<img src=x onerror=\"window.__xss=1\">",
    "<svg onload=\"window.__xss=1\"><circle r=\"9\"/></svg>",
    "[link](javascript:window.__xss=1)",
    "[upper](JaVaScRiPt:window.__xss=1)",
    "[entity](&#106;avascript:window.__xss=1)",
    "<javascript:window.__xss=1>",
    "&lt;script&gt;window.__xss=1&lt;/script&gt;",
    "<a href=\"javascript:window.__xss=1\">x</a>",
    "<a href=\"jav&#x09;ascript:window.__xss=1\">tab</a>",
    "<iframe src=\"javascript:window.__xss=1\"></iframe>",
    "\"><script>document.title='pwned'</script>",
    "'><img src=x onerror=document.title='pwned'>",
    "![img](x\" onerror=\"window.__xss=1)",
    "[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==)",
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=1>",
    "<details open ontoggle=\"window.__xss=1\">d</details>",
    "<body onload=window.__xss=1><base href=\"javascript:/\">",
];

/// Everything in the page that could run script or load something, plus
/// what a test checks about it (agent-written markdown, in `.instructions`
/// and `.markdown`, holds only the allowed tags). Fails the test with what
/// it found.
pub async fn assert_inert(chrome: &Chrome, title: &str) {
    let found = chrome
        .js(r#"
            const html = (e) => e.outerHTML.slice(0, 160);
            const allowed = ['P', 'BR', 'A', 'EM', 'STRONG', 'CODE', 'UL', 'OL', 'LI'];
            return {
              xss: typeof window.__xss,
              title: document.title,
              forbidden: [...document.querySelectorAll(
                'script:not([src]), iframe, frame, object, embed, math, img:not(.annotation-image), style, base, ' +
                '[onerror], [onload], [srcdoc], a[href^="javascript"], ' +
                // The page's own icons only: in a badge or a speaker line,
                // drawn with plain shapes.
                'svg:not(.badge > svg.icon):not(.speaker > svg.icon):not(.rank-handle > svg.icon), ' +
                'svg.icon *:not(circle, line, polyline, path, rect)')].map(html),
              handlers: [...document.querySelectorAll('*')]
                .filter(e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on')))
                .map(html),
              links: [...document.querySelectorAll('a[href], area[href]')]
                .filter(a => !['http:', 'https:'].includes(a.protocol)).map(html),
              scripts: [...document.scripts].map(s => s.getAttribute('src')),
              // An annotation's image is the daemon's own, and nothing else.
              images: [...document.querySelectorAll('img.annotation-image')]
                .filter(i => !/^\/widgets\/[A-Za-z0-9_-]+\/image$/.test(i.getAttribute('src'))).map(html),
              instructions: [...document.querySelectorAll('.instructions *, .markdown *')]
                .filter(e => !allowed.includes(e.tagName)
                  || [...e.attributes].some(a => !['href', 'rel'].includes(a.name)))
                .map(html),
            };
            "#)
        .await;
    assert_eq!(found["xss"], "undefined", "injected script ran: {found:#}");
    // The page prefixes the count of waiting requests: "(3) title".
    let shown = found["title"].as_str().unwrap_or_default();
    let shown = shown
        .strip_prefix('(')
        .and_then(|rest| rest.split_once(") "))
        .filter(|(n, _)| n.parse::<u32>().is_ok())
        .map_or(shown, |(_, rest)| rest);
    assert_eq!(shown, title, "{found:#}");
    for key in ["forbidden", "handlers", "links", "instructions", "images"] {
        assert_eq!(found[key], json!([]), "{key} reached the DOM: {found:#}");
    }
    assert_eq!(found["scripts"], json!(["/static/app.js"]), "{found:#}");
}

/// Chromium signed in as `user` on `session`'s transcript, the document
/// marked so a test can tell that cards arrived without a reload.
pub async fn open_transcript(app: &TestApp, user: &str, session: &str) -> Chrome {
    let chrome = Chrome::launch().await;
    chrome.sign_in(&app.url, user).await;
    chrome
        .open(&format!("{}/sessions/{session}", app.url))
        .await;
    chrome.wait_css("#transcript").await;
    chrome.mark_document().await;
    chrome
}
