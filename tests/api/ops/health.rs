//! `/healthz`, `/readyz` and `/metrics` as operators' tools call them.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::{COMMAND_LIMIT, OutputWithin, canary, scene, spawn_app};

#[tokio::test]
async fn readiness_and_metrics_for_operators() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let admin = app.user("root", Role::Admin).await;
    let admin_token = app.token(&admin, "sessions").await;

    let r = app
        .client
        .get(format!("{}/readyz", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({ "ready": true }));

    // One widget answered with a value, one left waiting.
    let value = canary("metrics");
    let answered = app.pending_widget(&s.agent, &s.session, &["A_KEY"]).await;
    app.pending_widget(&s.agent, &s.session, &["B_KEY"]).await;
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{answered}/submit"),
            &[("value.A_KEY", &value)],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    let metrics = |token: Option<String>| {
        let mut request = app.client.get(format!("{}/metrics", app.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    assert_eq!(
        metrics(None).await.unwrap().status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        metrics(Some(s.host.clone())).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        metrics(Some(s.agent.clone())).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    let r = metrics(Some(admin_token)).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = r.text().await.unwrap();
    for line in [
        "widgetd_widgets{kind=\"env_vars\",status=\"pending\"} 1",
        "widgetd_widgets{kind=\"env_vars\",status=\"submitted\"} 1",
        "widgetd_prompts_queued 1",
        "widgetd_webhooks_pending 0",
        "# TYPE widgetd_http_request_duration_seconds histogram",
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }
    let ok_count: u64 = text
        .lines()
        .filter(|l| {
            l.starts_with("widgetd_http_request_duration_seconds_count{")
                && l.contains("class=\"2xx\"")
        })
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(ok_count >= 3, "{text}");
    assert!(!text.contains(&value), "metrics carried a value");
}

/// The text format, parsed: every sample belongs to a family with a
/// `# TYPE`, names follow Prometheus' rules, counters end in `_total`, and
/// every histogram's buckets only grow and end at its count.
fn parse_metrics(text: &str) -> std::collections::BTreeMap<String, f64> {
    use std::collections::{BTreeMap, HashMap};
    let valid = |name: &str| {
        !name.is_empty()
            && name.chars().enumerate().all(|(i, c)| {
                c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
            })
    };
    let mut types: HashMap<String, String> = HashMap::new();
    let mut samples = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(valid(name), "{line}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            if kind == "counter" {
                assert!(name.ends_with("_total"), "a counter without _total: {line}");
            }
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "{line}"
            );
            continue;
        }
        if line.starts_with("# HELP ") || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        let name = series.split('{').next().unwrap();
        assert!(valid(name), "{line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert!(types.contains_key(family), "no # TYPE for {line}");
        let labels = &series[name.len()..];
        assert!(
            labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
            "{line}"
        );
        assert!(
            samples.insert(series.to_owned(), value).is_none(),
            "twice: {line}"
        );
    }
    // Histograms: cumulative buckets, +Inf equal to the count.
    let mut buckets: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    for (series, value) in &samples {
        let name = series.split('{').next().unwrap();
        let Some(family) = name.strip_suffix("_bucket") else {
            continue;
        };
        let inner = &series[name.len() + 1..series.len() - 1];
        let mut others = Vec::new();
        let mut le = None;
        for pair in inner.split("\",") {
            let (key, val) = pair.split_once("=\"").unwrap();
            let val = val.trim_end_matches('"');
            if key == "le" {
                le = Some(if val == "+Inf" {
                    f64::INFINITY
                } else {
                    val.parse().unwrap()
                });
            } else {
                others.push(format!("{key}=\"{val}\""));
            }
        }
        buckets
            .entry((family.to_owned(), others.join(",")))
            .or_default()
            .push((le.expect("a bucket has le"), *value));
    }
    assert!(!buckets.is_empty());
    for ((family, labels), mut list) in buckets {
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(
            list.windows(2).all(|w| w[0].1 <= w[1].1),
            "{family}{{{labels}}} not cumulative"
        );
        let (le, inf) = *list.last().unwrap();
        assert!(le.is_infinite(), "{family}{{{labels}}} lacks +Inf");
        let count = if labels.is_empty() {
            format!("{family}_count")
        } else {
            format!("{family}_count{{{labels}}}")
        };
        assert_eq!(samples.get(&count), Some(&inf), "{count}");
    }
    samples
}

#[tokio::test]
async fn metrics_parse_and_cover_what_operators_watch() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let admin = app.user("root", Role::Admin).await;
    let admin_token = app.token(&admin, "sessions").await;
    app.pending_widget(&s.agent, &s.session, &["A_KEY"]).await;
    // On SQLite the writer now remembers the agent's bucket and the audit
    // chain's head: the second creation's writes are a script left to the
    // writer's task.
    app.pending_widget(&s.agent, &s.session, &["B_KEY"]).await;
    // A long-poll that waits (2 s), a refusal with a code, failed logins
    // up to the name's rate limit.
    assert!(app.prompts(&s.host, &s.session, 2).await.is_empty());
    let r = app.get("/api/v1/widgets/wgt_nope", &s.agent).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    for _ in 0..6 {
        assert!(
            app.login_with("alice", "wrong password!", None)
                .await
                .is_none()
        );
    }
    let text = app
        .get("/metrics", &admin_token)
        .await
        .text()
        .await
        .unwrap();
    let samples = parse_metrics(&text);
    let get = |series: &str| {
        *samples
            .get(series)
            .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
    };
    assert_eq!(
        get(&format!(
            "widgetd_build_info{{version=\"{}\"}}",
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    assert!(get("process_resident_memory_bytes") > 1e6);
    assert!(get("process_open_fds") > 0.0);
    assert!(get("process_start_time_seconds") > 1.7e9);
    assert!(get("widgetd_db_commits_total") >= 1.0);
    // The requests above used tokens: the auth cache read the epoch.
    assert!(get("widgetd_auth_epoch_reads_total") >= 1.0);
    assert!(get("widgetd_db_committed_transactions_total") >= get("widgetd_db_commits_total"));
    assert_eq!(get("widgetd_widgets_pending"), 2.0);
    let (scripts, hops) = (
        get("widgetd_db_scripts_total"),
        get("widgetd_db_script_hops_total"),
    );
    assert!(get("widgetd_db_scripts_superseded_total") >= 0.0);
    if app.state.db.backend() == widgetd_domain::db::Backend::Sqlite {
        assert!(scripts >= 1.0 && hops >= 1.0, "{scripts} {hops}");
    }
    assert_eq!(get("widgetd_webhooks_failed"), 0.0);
    // Five attempts per name at once, then one per 12 s: the sixth is
    // refused unless a slow machine took 12 s over the first five.
    let (failed, limited) = (
        get("widgetd_login_failures_total"),
        get("widgetd_rate_limit_refusals_total"),
    );
    assert!(
        failed >= 5.0 && failed + limited == 6.0,
        "{failed} {limited}"
    );
    assert_eq!(
        get("widgetd_http_refusals_total{status=\"404\",code=\"not_found\"}"),
        1.0
    );
    let prompts = "route=\"/api/v1/sessions/{id}/prompts\"";
    // The long-poll is counted apart from calls that answer at once.
    assert_eq!(
        get(&format!(
            "widgetd_http_wait_duration_seconds_count{{{prompts}}}"
        )),
        1.0
    );
    assert_eq!(
        get(&format!(
            "widgetd_http_wait_duration_seconds_bucket{{{prompts},le=\"1\"}}"
        )),
        0.0
    );
    assert!(!samples.contains_key(&format!(
        "widgetd_http_request_duration_seconds_count{{{prompts},class=\"2xx\"}}"
    )));
    // Latency by route, with buckets past 5 s.
    let widgets = "route=\"/api/v1/sessions/{id}/widgets/env-vars\",class=\"2xx\"";
    assert_eq!(
        get(&format!(
            "widgetd_http_request_duration_seconds_bucket{{{widgets},le=\"30\"}}"
        )),
        2.0
    );
    assert!(!text.contains(&s.session), "a session id in a label");
}

/// `Host` is compared by name: a proxy's `Host: $host` without the port
/// passes, whatever port the public URL has; `/healthz` and `/readyz`
/// answer probes that use the backend's address.
#[tokio::test]
async fn host_names_are_compared_without_ports_and_probes_pass() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.domain.public_url = "https://widgetd.example:18443".into();
        s.mcp_allowed_hosts.push("widgetd.example:18443".into());
        s.mcp_allowed_hosts.push("proxy.internal:8080".into());
    })
    .await;
    let s = scene(&app, "alice").await;
    let get = |path: &'static str, host: &'static str| {
        app.client
            .get(format!("{}{path}", app.url))
            .header("host", host)
            .send()
    };
    for host in [
        "widgetd.example",
        "widgetd.example:18443",
        "WIDGETD.example:443",
        "proxy.internal",
    ] {
        let r = get("/api/v1/me", host).await.unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{host}");
    }
    let r = get("/api/v1/me", "other.example:18443").await.unwrap();
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    for path in ["/healthz", "/readyz"] {
        for host in ["10.0.0.5:7700", "other.example"] {
            let r = get(path, host).await.unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{path} {host}");
        }
    }
    // rmcp's own check of /mcp agrees (an initialize through the proxy).
    let r = app
        .client
        .post(format!("{}/mcp", app.url))
        .header("host", "widgetd.example")
        .bearer_auth(&s.agent)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "probe", "version": "1" } } }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().await.unwrap());
}

/// What a person meets in the first minute: `/sessions` typed by hand goes
/// to the list, the tab icon exists, and a one-second wait says "second".
#[tokio::test]
async fn first_minute_rough_edges_are_gone() {
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let r = app
        .client
        .get(format!("{}/sessions", app.url))
        .header("cookie", &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/");
    let r = app
        .client
        .get(format!("{}/favicon.ico", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    let r = app
        .post_json(
            &format!("/api/v1/sessions/{}/widgets/ask", s.session),
            &s.agent,
            &json!({ "question": "Deploy now?", "wait_seconds": 1 }),
        )
        .await;
    let body: Value = r.json().await.unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with("No answer within 1 second. "),
        "{message}"
    );

    // `host` with an agent command that does not exist makes no session.
    let before = app.count("SELECT count(*) FROM sessions").await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_widgetd"))
        .args(["host", "--prompt", "hello", "--url", &app.url])
        .args(["--", "no-such-agent-cli-here"])
        .env("WIDGETD_TOKEN", &s.host)
        .stdin(std::process::Stdio::null())
        .output_within(COMMAND_LIMIT);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`no-such-agent-cli-here` was not found"),
        "{err}"
    );
    assert_eq!(app.count("SELECT count(*) FROM sessions").await, before);
}
