//! widgetd behind a real nginx (Debian's package) terminating TLS with a
//! certificate made here by `openssl`: the example config in
//! `contrib/nginx/widgetd.conf`, and a plain `proxy_pass` that buffers,
//! both pass live updates at once; the proxied `Host` (no port) and the
//! forwarded client address are taken, also from a proxy reached over
//! IPv6; a `Forwarded` header the client wrote changes neither its login
//! bucket nor its audit address. Without `nginx` on the machine the tests
//! say so and pass, except under `CI`, where they must run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::json;
use widgetd::forwarded::{ForwardedHeader, IpRange};
use widgetd_domain::auth::Role;

use crate::helpers::{
    PASSWORD, TestApp, free_port, post_login, spawn_app_at, spawn_app_with, test_dir,
};

/// The name the certificate is made for; the client resolves it to loopback.
const NAME: &str = "widgetd.test";

/// The nginx binary, or `None` (with a message) when it may be skipped.
fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nginx is not installed, and under CI the proxy tests must run (apt-get install nginx)"
        );
        eprintln!(
            "SKIPPED: nginx is not installed (apt-get install nginx); the proxy tests did not run"
        );
    }
    found
}

fn run(command: &mut Command) {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a certificate for [`NAME`] signed by it; returns the CA's PEM.
fn make_certificate(dir: &Path) -> Vec<u8> {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(Command::new("openssl")
        .current_dir(dir)
        .args(["req", "-x509"])
        .args(ec)
        .args(["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"])
        .args(["-subj", "/CN=widgetd test CA"]));
    run(Command::new("openssl")
        .current_dir(dir)
        .arg("req")
        .args(ec)
        .args(["-keyout", "key.pem", "-out", "leaf.csr"])
        .args(["-subj", &format!("/CN={NAME}")]));
    std::fs::write(
        dir.join("leaf.ext"),
        format!("subjectAltName=DNS:{NAME}\nbasicConstraints=CA:FALSE\n"),
    )
    .unwrap();
    run(Command::new("openssl").current_dir(dir).args([
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "cert.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]));
    std::fs::read(dir.join("ca.pem")).unwrap()
}

/// `contrib/nginx/widgetd.conf` with only its addresses and paths changed:
/// on `port`, in front of the daemon at `upstream` (`http://ADDR:PORT`).
fn contrib_server(port: u16, upstream: &str, dir: &Path) -> String {
    let text = std::fs::read_to_string("contrib/nginx/widgetd.conf").unwrap();
    let swaps = [
        ("listen 443 ssl;", format!("listen 127.0.0.1:{port} ssl;")),
        ("listen [::]:443 ssl;", String::new()),
        (
            "server_name widgetd.example.org;",
            format!("server_name {NAME};"),
        ),
        (
            "/etc/ssl/widgetd/fullchain.pem",
            dir.join("cert.pem").display().to_string(),
        ),
        (
            "/etc/ssl/widgetd/privkey.pem",
            dir.join("key.pem").display().to_string(),
        ),
        (
            "proxy_pass http://127.0.0.1:7700;",
            format!("proxy_pass {upstream};"),
        ),
    ];
    swaps.iter().fold(text, |text, (from, to)| {
        assert!(
            text.contains(from),
            "contrib/nginx/widgetd.conf lost `{from}`"
        );
        text.replace(from, to)
    })
}

/// The least an operator writes: `proxy_pass`, nginx's buffering left on.
fn plain_server(port: u16, upstream: u16, dir: &Path) -> String {
    format!(
        "server {{ listen 127.0.0.1:{port} ssl; server_name {NAME};
           ssl_certificate {cert}; ssl_certificate_key {key};
           location / {{ proxy_pass http://127.0.0.1:{upstream}; }} }}",
        cert = dir.join("cert.pem").display(),
        key = dir.join("key.pem").display(),
    )
}

/// nginx in the foreground with `servers`, killed when dropped.
struct Nginx(Child);

impl Nginx {
    fn start(binary: &Path, dir: &Path, servers: &[String], ports: &[u16]) -> Nginx {
        let temp = dir.join("temp");
        std::fs::create_dir_all(&temp).unwrap();
        let conf = format!(
            "daemon off; master_process off; pid {pid}; error_log {err} warn;
             events {{ worker_connections 256; }}
             http {{ access_log off; client_body_temp_path {t}/body; proxy_temp_path {t}/proxy;
                    fastcgi_temp_path {t}/fastcgi; uwsgi_temp_path {t}/uwsgi; scgi_temp_path {t}/scgi;
                    {servers} }}",
            pid = dir.join("nginx.pid").display(),
            err = dir.join("error.log").display(),
            t = temp.display(),
            servers = servers.join("\n"),
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(binary)
            .args(["-p", &dir.display().to_string(), "-c"])
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut nginx = Nginx(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        for port in ports {
            while std::net::TcpStream::connect(("127.0.0.1", *port)).is_err() {
                if let Ok(Some(status)) = nginx.0.try_wait() {
                    let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
                    panic!("nginx exited ({status}): {log}");
                }
                assert!(Instant::now() < deadline, "nginx did not listen on {port}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        nginx
    }
}

impl Drop for Nginx {
    /// One process (`master_process off`), so killing it leaves no worker.
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A browser-like client that trusts the test CA, reaches [`NAME`] on
/// loopback and connects from `from` (another loopback address than the
/// proxy's own, so the forwarded address is told apart).
fn client(ca: &[u8], ports: &[u16], from: &str) -> Client {
    let mut builder = Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca).unwrap())
        .local_address(from.parse::<std::net::IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30));
    for port in ports {
        builder = builder.resolve(NAME, SocketAddr::from(([127, 0, 0, 1], *port)));
    }
    builder.build().unwrap()
}

/// Opens the session's event stream at `base` and checks that a widget
/// created afterwards reaches it within `within`.
async fn widget_event_arrives(
    client: &Client,
    base: &str,
    direct: &crate::helpers::TestApp,
    host_token: &str,
    agent: &str,
    session: &str,
    within: Duration,
) {
    let mut stream = client
        .get(format!("{base}/api/v1/sessions/{session}/events"))
        .bearer_auth(host_token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK, "{base}: the stream opens");
    assert_eq!(
        stream.headers()["content-type"],
        "text/event-stream",
        "{base}"
    );
    let name = format!("PROXIED_{}", base.len() + within.as_millis() as usize);
    let created = direct
        .request_env_vars(
            agent,
            session,
            &json!({ "names": [name], "reason": "proxy" }),
        )
        .await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let started = Instant::now();
    let mut seen = String::new();
    while !seen.contains("widget:created") {
        let chunk = tokio::time::timeout_at((started + within).into(), stream.chunk())
            .await
            .unwrap_or_else(|_| {
                panic!("{base}: no widget:created within {within:?} through nginx; got {seen:?}")
            })
            .unwrap()
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn live_updates_host_names_and_client_addresses_pass_nginx() {
    let Some(binary) = nginx() else { return };
    let dir = test_dir();
    let dir = dir.path().to_owned();
    let ca = make_certificate(&dir);
    let (port, plain_port) = (free_port(), free_port());
    let app = spawn_app_with(|s| {
        s.domain.public_url = format!("https://{NAME}:{port}");
        s.mcp_allowed_hosts.push(format!("{NAME}:{port}"));
        s.trusted_proxies = vec![IpRange::parse("127.0.0.1").unwrap()];
    })
    .await;
    let upstream: u16 = app.url.rsplit(':').next().unwrap().parse().unwrap();
    let _nginx = Nginx::start(
        &binary,
        &dir,
        &[
            contrib_server(port, &app.url, &dir),
            plain_server(plain_port, upstream, &dir),
        ],
        &[port, plain_port],
    );
    let browser = client(&ca, &[port, plain_port], "127.0.0.2");
    let base = format!("https://{NAME}:{port}");

    // nginx's `Host: $host` drops the port: still this daemon's name. The
    // proxy sends HSTS.
    let r = browser.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.headers().contains_key("strict-transport-security"));
    let user = app.user("alice", Role::Member).await;
    let host_token = app.token(&user, "sessions").await;
    let (session, agent) = app.session(&host_token).await;
    let r = browser
        .get(format!("{base}/api/v1/sessions/{session}/prompts"))
        .bearer_auth(&host_token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "an API call through the proxy");

    // Live updates: through the example config, and through a bare
    // `proxy_pass` whose buffering only widgetd's header turns off.
    let within = Duration::from_secs(5);
    widget_event_arrives(&browser, &base, &app, &host_token, &agent, &session, within).await;
    let plain = format!("https://{NAME}:{plain_port}");
    widget_event_arrives(
        &browser,
        &plain,
        &app,
        &host_token,
        &agent,
        &session,
        within,
    )
    .await;

    // The audit log and the login limiter see the person's address (the
    // proxy's peer, 127.0.0.2), not the proxy's, nor what the client
    // claims in its own X-Forwarded-For.
    let r = browser
        .post(format!("{base}/login"))
        .header("origin", &base)
        .header("x-forwarded-for", "203.0.113.9")
        .form(&[("username", "alice"), ("password", "not the password")])
        .send()
        .await
        .unwrap();
    assert_ne!(r.status(), StatusCode::SEE_OTHER, "a wrong password");
    let mut conn = app.state.db.read.acquire().await.unwrap();
    let addr: Option<String> = sqlx::query_scalar(
        "SELECT client_addr FROM audit_log WHERE action = 'login.failure' ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    assert_eq!(addr.as_deref(), Some("127.0.0.2"));
    let r = browser
        .post(format!("{base}/login"))
        .header("origin", &base)
        .form(&[("username", "alice"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "alice logs in through the proxy"
    );
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.starts_with("__Host-"), "{cookie}");
}

/// A daemon listening on `bind`, public as [`NAME`] on `port` (the shipped
/// config's port), believing `trusted`'s `header`.
async fn proxied_app(port: u16, bind: &str, trusted: &str, header: ForwardedHeader) -> TestApp {
    spawn_app_at(bind, |s| {
        s.domain.public_url = format!("https://{NAME}:{port}");
        s.mcp_allowed_hosts.push(format!("{NAME}:{port}"));
        s.trusted_proxies = vec![IpRange::parse(trusted).unwrap()];
        s.forwarded_header = header;
    })
    .await
}

/// Failed logins through `base` from `browser`, each with the header
/// `spoof(n)`, until one is refused with `429`; returns how many were
/// answered. Honestly counted that is the address's burst (20) plus what it
/// regains meanwhile (one per 3 s): well under twice the burst.
async fn failed_logins_until_limited(
    browser: &Client,
    base: &str,
    spoof: impl Fn(usize) -> (&'static str, String),
) -> usize {
    let burst = widgetd_domain::limits::PER_ADDRESS.burst as usize;
    for n in 0..2 * burst {
        let (header, value) = spoof(n);
        let name = format!("nobody{n}");
        let headers = [("origin", base), (header, value.as_str())];
        let status = post_login(browser, base, &name, "wrong password", &headers)
            .await
            .status();
        if status == StatusCode::TOO_MANY_REQUESTS {
            assert!(n >= burst, "limited after {n}");
            return n;
        }
        assert_eq!(status, StatusCode::UNAUTHORIZED, "attempt {n}");
    }
    panic!(
        "{base}: {} failed logins, each claiming another address, were never limited",
        2 * burst
    )
}

#[tokio::test]
async fn a_spoofed_forwarded_header_is_ignored() {
    let Some(binary) = nginx() else { return };
    let dir = test_dir();
    let dir = dir.path().to_owned();
    let ca = make_certificate(&dir);
    let (port, reader_port) = (free_port(), free_port());
    let app = proxied_app(
        port,
        "127.0.0.1:0",
        "127.0.0.1",
        ForwardedHeader::XForwardedFor,
    )
    .await;
    // A daemon told to read `Forwarded`: the shipped config clears the
    // client's, so it sees none and takes the proxy's own address.
    let reader = proxied_app(
        reader_port,
        "127.0.0.1:0",
        "127.0.0.1",
        ForwardedHeader::Forwarded,
    )
    .await;
    let _nginx = Nginx::start(
        &binary,
        &dir,
        &[
            contrib_server(port, &app.url, &dir),
            contrib_server(reader_port, &reader.url, &dir),
        ],
        &[port, reader_port],
    );
    let browser = client(&ca, &[port, reader_port], "127.0.0.2");

    // A new `Forwarded: for=` each attempt: one bucket all the same, and
    // every audit row names the address nginx saw.
    let base = format!("https://{NAME}:{port}");
    let failed = failed_logins_until_limited(&browser, &base, |n| {
        ("forwarded", format!("for=198.51.100.{n};proto=https"))
    })
    .await;
    let addresses = app.failed_login_addresses().await;
    assert_eq!(addresses.len(), failed);
    assert!(
        addresses.iter().all(|a| a.as_deref() == Some("127.0.0.2")),
        "{addresses:?}"
    );

    let base = format!("https://{NAME}:{reader_port}");
    let headers = [("origin", base.as_str()), ("forwarded", "for=198.51.100.7")];
    let r = post_login(&browser, &base, "nobody", "wrong password", &headers).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        reader.failed_login_addresses().await,
        [Some("127.0.0.1".to_owned())],
        "nginx passed the client's Forwarded header on"
    );
}

/// `--trusted-proxies ::1`: nginx reaches widgetd over IPv6 and is
/// believed; a hop in another IPv6 range is not.
#[tokio::test]
async fn a_proxy_reached_over_ipv6_is_believed_by_its_range() {
    let Some(binary) = nginx() else { return };
    let dir = test_dir();
    let dir = dir.path().to_owned();
    let ca = make_certificate(&dir);
    let port = free_port();
    let app = proxied_app(port, "[::1]:0", "::1", ForwardedHeader::XForwardedFor).await;
    let _nginx = Nginx::start(
        &binary,
        &dir,
        &[contrib_server(port, &app.url, &dir)],
        &[port],
    );
    let browser = client(&ca, &[port], "127.0.0.2");
    let base = format!("https://{NAME}:{port}");
    let headers = [
        ("origin", base.as_str()),
        ("x-forwarded-for", "2001:db8::66"),
    ];
    let r = post_login(&browser, &base, "nobody", "wrong password", &headers).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Straight from ::1, as a proxy that saw the client at 2001:db8::66,
    // which claimed to be 2001:db8::1: ::1 is trusted, the rest of the
    // IPv6 space is not, so the walk stops at 2001:db8::66.
    let direct = [("x-forwarded-for", "2001:db8::1, 2001:db8::66")];
    let r = post_login(&app.client, &app.url, "nobody", "wrong password", &direct).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        app.failed_login_addresses().await,
        [
            Some("127.0.0.2".to_owned()),
            Some("2001:db8::66".to_owned())
        ]
    );
}

/// The figure the docs and the example proxy config state is above every
/// wait widgetd holds a request for.
#[test]
fn the_proxy_timeout_outlasts_every_wait() {
    let conf = std::fs::read_to_string("contrib/nginx/widgetd.conf").unwrap();
    let timeout: u64 = conf
        .lines()
        .find_map(|l| l.trim().strip_prefix("proxy_read_timeout "))
        .and_then(|v| v.trim_end_matches(';').trim_end_matches('s').parse().ok())
        .expect("contrib/nginx/widgetd.conf sets proxy_read_timeout in seconds");
    let longest = widgetd_domain::widgets::MAX_WAIT_SECS.max(widgetd::api::prompts::MAX_WAIT_SECS);
    assert!(
        timeout > longest + 10,
        "{timeout} s vs the longest wait, {longest} s"
    );
    let docs = std::fs::read_to_string("docs/operations.md").unwrap();
    assert!(
        docs.contains(&format!("proxy_read_timeout {timeout}s")),
        "docs/operations.md states the same proxy timeout ({timeout} s)"
    );
}
