//! The security invariant, end to end on the real binary: a unique value set
//! through the API reaches the executor path and nothing else: not the
//! database file or its WAL in any common encoding, not a log line at TRACE,
//! not a response an agent token can get.

use std::path::Path;
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::helpers::{
    Browser, COMMAND_LIMIT, Daemon, OutputWithin, PASSWORD, STOP_LIMIT, canary, client, login_at,
    stderr, stdout, widgetd,
};

/// Text forms the value could take if it leaked: as is, hex, and base64 at
/// each of the three alignments it could have inside a longer encoding.
fn leak_forms(value: &str) -> Vec<Vec<u8>> {
    let bytes = value.as_bytes();
    let mut forms = vec![
        bytes.to_vec(),
        hex(bytes).into_bytes(),
        hex(bytes).to_uppercase().into_bytes(),
    ];
    for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
        for offset in 0..3 {
            let mut padded = vec![b'x'; offset];
            padded.extend_from_slice(bytes);
            let encoded = engine.encode(&padded);
            let skip = (offset * 4).div_ceil(3);
            forms.push(encoded.as_bytes()[skip..encoded.len() - 4].to_vec());
        }
    }
    forms
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn assert_absent(what: &str, haystack: &[u8], value: &str) {
    for form in leak_forms(value) {
        assert!(
            !haystack.windows(form.len()).any(|w| w == form.as_slice()),
            "{what} contains the canary (as {:?})",
            String::from_utf8_lossy(&form)
        );
    }
}

fn read_if_exists(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// What the database holds: the SQLite file's bytes, or on PostgreSQL the
/// text of every row of every table (blobs as hex).
fn stored_data(dir: &Path) -> Vec<u8> {
    match crate::helpers::backend::postgres_url(dir) {
        Some(url) => crate::helpers::backend::dump_rows(&url),
        None => read_if_exists(&dir.join("widgetd.db")),
    }
}

#[tokio::test]
async fn a_canary_reaches_only_the_executor_path() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    let daemon = Daemon::start(&dir, tmp.path(), "serve");
    let url = daemon.url.clone();
    let mut cli_output = Vec::new();

    let minted = widgetd(&dir)
        .args([
            "token",
            "create",
            "--user",
            "admin",
            "--scope",
            "sessions,env:read,env:write",
            "--json",
        ])
        .env("RUST_LOG", "trace")
        .output_within(COMMAND_LIMIT);
    cli_output.extend_from_slice(&minted.stderr);
    let token: Value = serde_json::from_slice(&minted.stdout).unwrap();
    let token = token["token"].as_str().unwrap().to_owned();

    let client = client();
    let session: Value = client
        .post(format!("{url}/api/v1/sessions"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (session_id, agent) = (
        session["session_id"].as_str().unwrap(),
        session["agent_token"].as_str().unwrap(),
    );
    let mut agent_side = Vec::new();

    // One value typed into the widget form, one set through the API.
    let (typed, scoped, second) = (canary("typed"), canary("session"), canary("second-user"));
    let widget = client
        .post(format!("{url}/api/v1/sessions/{session_id}/widgets/env-vars"))
        .bearer_auth(agent)
        .json(&json!({ "names": ["TYPED_KEY"], "reason": "to call the API", "default_scope": "global" }))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    agent_side.extend_from_slice(&widget);
    let widget: Value = serde_json::from_slice(&widget).unwrap();
    let widget_id = widget["widget_id"].as_str().unwrap();
    let Browser { cookie, csrf } = login_at(&client, &url, "admin").await;
    let r = client
        .post(format!("{url}/widgets/{widget_id}/submit"))
        .header("cookie", &cookie)
        .header("origin", &url)
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("value.TYPED_KEY", &typed),
            ("scope", "global"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);

    // A second person, allowed to answer the admin's session, types a value
    // too: it lands in the admin's store and nowhere else.
    let added = crate::helpers::run_with_stdin(
        widgetd(&dir)
            .args(["user", "add", "bob", "--password-stdin"])
            .env("RUST_LOG", "trace"),
        &format!("{PASSWORD}\n"),
    );
    assert!(added.status.success(), "{}", stderr(&added));
    cli_output.extend_from_slice(&added.stdout);
    cli_output.extend_from_slice(&added.stderr);
    let share = json!({ "grants": { "bob": "prompt" } });
    let r = client
        .put(format!("{url}/api/v1/sessions/{session_id}/sharing"))
        .bearer_auth(&token)
        .json(&share)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let second_widget: Value = client
        .post(format!(
            "{url}/api/v1/sessions/{session_id}/widgets/env-vars"
        ))
        .bearer_auth(agent)
        .json(&json!({ "names": ["SECOND_KEY"], "reason": "a second key" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let Browser {
        cookie: bob_cookie,
        csrf: bob_csrf,
    } = login_at(&client, &url, "bob").await;
    let r = client
        .post(format!(
            "{url}/widgets/{}/submit",
            second_widget["widget_id"].as_str().unwrap()
        ))
        .header("cookie", &bob_cookie)
        .header("origin", &url)
        .form(&[
            ("csrf_token", bob_csrf.as_str()),
            ("value.SECOND_KEY", &second),
            ("scope", "session"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    // Free text the person types for the agent (a dismissal's note, a
    // clarification's free-text answer) that
    // holds a stored value is refused, and the refusal does not repeat it.
    let noted: Value = client
        .post(format!(
            "{url}/api/v1/sessions/{session_id}/widgets/env-vars"
        ))
        .bearer_auth(agent)
        .json(&json!({ "names": ["NOTED_KEY"], "reason": "a third key" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let noted = noted["widget_id"].as_str().unwrap().to_owned();
    let mut refusals = Vec::new();
    for note in [format!("it is {typed}"), format!("{second} (bob's)")] {
        let r = client
            .post(format!("{url}/widgets/{noted}/dismiss"))
            .header("cookie", &cookie)
            .header("origin", &url)
            .form(&[("csrf_token", csrf.as_str()), ("note", &note)])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 422);
        refusals.extend_from_slice(&r.bytes().await.unwrap());
    }
    assert!(String::from_utf8_lossy(&refusals).contains("answer_contains_secret"));
    let r = client
        .post(format!("{url}/widgets/{noted}/dismiss"))
        .header("cookie", &cookie)
        .header("origin", &url)
        .form(&[("csrf_token", csrf.as_str()), ("note", "later, please")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    // The same for a clarification's free-text answer, as a form and as JSON.
    let clarification: Value = client
        .post(format!(
            "{url}/api/v1/sessions/{session_id}/widgets/clarification"
        ))
        .bearer_auth(agent)
        .json(
            &json!({ "question": "Which one?", "widget": { "type": "choice",
            "options": [{ "label": "a" }, { "label": "b" }] } }),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let clarification = clarification["widget_id"].as_str().unwrap().to_owned();
    let submit = format!("{url}/widgets/{clarification}/submit");
    let r = client
        .post(&submit)
        .header("cookie", &cookie)
        .header("origin", &url)
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("selected", "a"),
            ("freeform", &typed),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    refusals.extend_from_slice(&r.bytes().await.unwrap());
    let r = client
        .post(&submit)
        .header("cookie", &cookie)
        .header("x-csrf-token", &csrf)
        .json(&json!({ "freeform": format!("like {second}") }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    refusals.extend_from_slice(&r.bytes().await.unwrap());
    let r = client
        .post(&submit)
        .header("cookie", &cookie)
        .header("origin", &url)
        .form(&[("csrf_token", csrf.as_str()), ("freeform", "the usual one")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let body = json!({ "value": scoped, "scope": "session", "session_id": session_id });
    let r = client
        .put(format!("{url}/api/v1/env/SESSION_KEY"))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);

    // The executor path is the one place the values come out.
    let env: Value = client
        .get(format!("{url}/api/v1/sessions/{session_id}/env"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        env["env"],
        json!({ "TYPED_KEY": typed, "SESSION_KEY": scoped, "SECOND_KEY": second })
    );

    // Everything an agent token or the agent host's queue can show.
    for (method, path) in [
        ("GET", format!("/api/v1/sessions/{session_id}/env")),
        ("GET", "/api/v1/env".to_owned()),
        ("PUT", "/api/v1/env/TYPED_KEY".to_owned()),
        ("GET", format!("/api/v1/widgets/{widget_id}")),
        ("GET", format!("/api/v1/sessions/{session_id}/prompts")),
    ] {
        let request = client
            .request(method.parse().unwrap(), format!("{url}{path}"))
            .bearer_auth(agent);
        agent_side.extend_from_slice(
            &request
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap(),
        );
    }
    for path in [
        format!("/api/v1/sessions/{session_id}/prompts"),
        "/api/v1/env".to_owned(),
    ] {
        let r = client
            .get(format!("{url}{path}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        agent_side.extend_from_slice(&r.bytes().await.unwrap());
    }
    let prompts = String::from_utf8_lossy(&agent_side).into_owned();
    assert!(
        prompts.contains("[Agor] User submitted TYPED_KEY (scope: global)."),
        "{prompts}"
    );
    let mut events = client
        .get(format!("{url}/api/v1/sessions/{session_id}/events"))
        .bearer_auth(agent)
        .send()
        .await
        .unwrap();
    while !String::from_utf8_lossy(&agent_side).contains("widget:resolved") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), events.chunk())
            .await
            .unwrap()
            .unwrap();
        agent_side.extend_from_slice(&chunk.unwrap());
    }
    drop(events);

    let mut exec = Command::new(env!("CARGO_BIN_EXE_widgetd"));
    exec.args([
        "exec",
        "--session",
        session_id,
        "--url",
        &url,
        "--",
        "sh",
        "-c",
        r#"echo "$TYPED_KEY $SESSION_KEY""#,
    ])
    .env("WIDGETD_TOKEN", &token)
    .env("RUST_LOG", "trace");
    let exec = tokio::task::spawn_blocking(move || exec.output_within(COMMAND_LIMIT))
        .await
        .unwrap();
    assert_eq!(
        stdout(&exec),
        "<concealed by widgetd> <concealed by widgetd>\n",
        "{}",
        stderr(&exec)
    );
    cli_output.extend_from_slice(&exec.stdout);
    cli_output.extend_from_slice(&exec.stderr);

    // `widgetd host` runs a turn with the values: its output and the
    // transcript show them masked.
    let (out, err) = host_turn(&url, &token, session_id, agent);
    assert!(
        out.contains("<concealed by widgetd> <concealed by widgetd>"),
        "{out}"
    );
    cli_output.extend_from_slice(out.as_bytes());
    cli_output.extend_from_slice(err.as_bytes());
    let page = client
        .get(format!("{url}/sessions/{session_id}"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("concealed by widgetd"), "{page}");
    let mut transcript = page.into_bytes();

    // Claude Code's hooks: answers and refusals, even of a body that
    // carries a value, never give one back.
    let hook = format!("{url}/api/v1/sessions/{session_id}/hooks/claude-code");
    for body in [
        json!({ "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": { "command": "env" } }),
        json!({ "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": { "command": "env" } }),
        json!({ "hook_event_name": "Notification", "message": "Claude needs your permission" }),
        json!({ "hook_event_name": typed, "tool_input": scoped }),
    ] {
        let r = client
            .post(&hook)
            .bearer_auth(agent)
            .json(&body)
            .send()
            .await
            .unwrap();
        agent_side.extend_from_slice(&r.bytes().await.unwrap());
    }
    let r = client
        .post(&hook)
        .bearer_auth(agent)
        .header("content-type", "application/json")
        .body(format!("{{\"hook_event_name\": \"{typed}"))
        .send()
        .await
        .unwrap();
    agent_side.extend_from_slice(&r.bytes().await.unwrap());
    transcript.extend_from_slice(
        &client
            .get(format!("{url}/sessions/{session_id}"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap(),
    );

    // The reply box: a reply holding a stored value is refused without
    // echoing it, whoever types it; an ordinary one reaches the agent.
    for (who_cookie, who_csrf, text) in [
        (&cookie, &csrf, format!("here it is: {typed}")),
        (&bob_cookie, &bob_csrf, format!("{second}\nthat one")),
        (&cookie, &csrf, "use the staging database".to_owned()),
    ] {
        let r = client
            .post(format!("{url}/sessions/{session_id}/reply"))
            .header("cookie", who_cookie)
            .header("origin", &url)
            .form(&[("csrf_token", who_csrf.as_str()), ("text", &text)])
            .send()
            .await
            .unwrap();
        let refused = r.status() == 422;
        assert_eq!(
            refused,
            text != "use the staging database",
            "{}",
            r.status()
        );
        transcript.extend_from_slice(&r.bytes().await.unwrap());
    }
    let r = client
        .get(format!("{url}/api/v1/sessions/{session_id}/prompts"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let queued = r.bytes().await.unwrap();
    assert!(
        String::from_utf8_lossy(&queued).contains("wrote: use the staging database"),
        "{}",
        String::from_utf8_lossy(&queued)
    );
    agent_side.extend_from_slice(&queued);

    let live_db = stored_data(&dir);
    let live_wal = read_if_exists(&dir.join("widgetd.db-wal"));
    assert!(
        crate::helpers::backend::postgres_url(&dir).is_some() || !live_wal.is_empty(),
        "the WAL should hold the recent writes while the daemon runs"
    );
    let (out_log, err_log) = (daemon.out_log.clone(), daemon.err_log.clone());
    daemon.stop();
    let closed_db = stored_data(&dir);
    // The scan reads the real store: the names are there, the values not.
    assert!(String::from_utf8_lossy(&closed_db).contains("TYPED_KEY"));
    let logs = [read_if_exists(&out_log), read_if_exists(&err_log)].concat();
    assert!(
        String::from_utf8_lossy(&logs).contains("TRACE"),
        "the daemon did not log at TRACE"
    );
    assert!(String::from_utf8_lossy(&logs).contains("shutting down"));

    let audit = String::from_utf8_lossy(
        &widgetd(&dir)
            .args(["audit", "list", "--json"])
            .output_within(COMMAND_LIMIT)
            .stdout,
    )
    .into_owned();
    assert!(audit.contains("widget.submit"), "{audit}");
    for value in [&typed, &scoped, &second] {
        assert_absent("the audit log", audit.as_bytes(), value);
        assert_absent("the database file while running", &live_db, value);
        assert_absent("the WAL", &live_wal, value);
        assert_absent("the database file after shutdown", &closed_db, value);
        assert_absent("the daemon's output at TRACE", &logs, value);
        assert_absent("the CLI's output at TRACE", &cli_output, value);
        assert_absent("the transcript page", &transcript, value);
        assert_absent("a refused answer's page", &refusals, value);
        assert_absent(
            "a response to an agent token, a prompt or an event",
            &agent_side,
            value,
        );
    }
}

/// One turn of `widgetd host` that prints two values, then Ctrl-C; returns
/// its stdout and stderr.
fn host_turn(url: &str, token: &str, session: &str, agent: &str) -> (String, String) {
    use std::io::{BufRead, BufReader, Read};
    use std::time::Duration;
    let mut host = Command::new(env!("CARGO_BIN_EXE_widgetd"))
        .args(["host", "--url", url, "--session", session])
        .args(["--prompt", "show the keys", "--", "sh", "-c"])
        .arg(r#"echo "$TYPED_KEY $SESSION_KEY""#)
        .env("WIDGETD_TOKEN", token)
        .env("WIDGETD_AGENT_TOKEN", agent)
        .env("RUST_LOG", "trace")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let watchdog = crate::helpers::kill_after(
        host.id(),
        Duration::from_secs(60),
        "widgetd host: one turn and its output",
    );
    let mut stdout = BufReader::new(host.stdout.take().unwrap());
    let mut out = String::new();
    while !out.contains("concealed") {
        assert!(stdout.read_line(&mut out).unwrap() > 0, "{out}");
    }
    // The host says when the turn is over and its output in the transcript.
    let mut err = BufReader::new(host.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("turn done") {
        assert!(err.read_line(&mut said).unwrap() > 0, "{said}");
    }
    Command::new("kill")
        .args(["-INT", &host.id().to_string()])
        .status()
        .unwrap();
    stdout.read_to_string(&mut out).unwrap();
    err.read_to_string(&mut said).unwrap();
    drop(watchdog);
    let status = crate::helpers::wait_within(&mut host, STOP_LIMIT, "widgetd host on SIGINT");
    assert!(status.success(), "{said}");
    assert!(said.contains("widgetd host: stopped"), "{said}");
    (out, said)
}

#[tokio::test]
async fn a_pending_widget_survives_a_killed_daemon() {
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    let mut daemon = Daemon::start(&dir, tmp.path(), "first");
    let token = widgetd(&dir)
        .args([
            "token",
            "create",
            "--user",
            "admin",
            "--scope",
            "sessions,env:read",
        ])
        .output_within(COMMAND_LIMIT);
    let token = stdout(&token).trim().to_owned();
    let client = client();
    let session: Value = client
        .post(format!("{}/api/v1/sessions", daemon.url))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (session_id, agent) = (
        session["session_id"].as_str().unwrap(),
        session["agent_token"].as_str().unwrap(),
    );
    let widget: Value = client
        .post(format!(
            "{}/api/v1/sessions/{session_id}/widgets/env-vars",
            daemon.url
        ))
        .bearer_auth(agent)
        .json(&json!({ "names": ["SURVIVOR"], "reason": "r" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let widget_id = widget["widget_id"].as_str().unwrap();

    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    let daemon = Daemon::start(&dir, tmp.path(), "second");
    let url = daemon.url.clone();
    let state: Value = client
        .get(format!("{url}/api/v1/widgets/{widget_id}"))
        .bearer_auth(agent)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(state["status"], "pending");
    let Browser { cookie, csrf } = login_at(&client, &url, "admin").await;
    let r = client
        .post(format!("{url}/widgets/{widget_id}/submit"))
        .header("cookie", &cookie)
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("value.SURVIVOR", "after-restart"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let env: Value = client
        .get(format!("{url}/api/v1/sessions/{session_id}/env"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(env["env"]["SURVIVOR"], "after-restart");
    daemon.stop();
}

/// One 2026-07-28 `tools/call` as a client sends it, its every byte kept.
async fn raw_tool_call(
    app: &crate::helpers::TestApp,
    agent: &str,
    id: u64,
    tool: &str,
    mut params: Value,
    exchanged: &mut Vec<u8>,
) -> Value {
    params["name"] = json!(tool);
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "url": {}, "form": {} } },
    });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    exchanged.extend_from_slice(body.to_string().as_bytes());
    let r = app
        .client
        .post(format!("{}/mcp", app.url))
        .bearer_auth(agent)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .unwrap();
    for (name, value) in r.headers() {
        exchanged.extend_from_slice(name.as_str().as_bytes());
        exchanged.extend_from_slice(value.as_bytes());
    }
    let text = r.bytes().await.unwrap();
    exchanged.extend_from_slice(&text);
    let reply: Value = serde_json::from_slice(&text)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&text)));
    reply["result"].clone()
}

/// URL-mode elicitation: the agent's MCP client is sent to the widget's own
/// page, the person types the value there, and no MCP message (request,
/// response or header, of the first call, its retry and a status read)
/// carries it, in any of its encodings.
#[tokio::test]
async fn a_value_typed_on_the_page_an_mcp_client_opened_never_reaches_mcp() {
    let app = crate::helpers::spawn_app().await;
    let alice = crate::helpers::scene(&app, "alice").await;
    let secret = canary("url-elicitation");
    let mut exchanged = Vec::new();
    let args = json!({ "arguments": { "names": ["CANARY_KEY"], "reason": "to test" } });
    let first = raw_tool_call(
        &app,
        &alice.agent,
        1,
        "request_env_vars",
        args.clone(),
        &mut exchanged,
    )
    .await;
    assert_eq!(first["resultType"], "input_required", "{first}");
    let request = &first["inputRequests"]["person"];
    assert_eq!(request["method"], "elicitation/create", "{first}");
    assert_eq!(request["params"]["mode"], "url", "{first}");
    let page = request["params"]["url"].as_str().unwrap().to_owned();
    let state = first["requestState"].as_str().unwrap().to_owned();
    let widget = request["params"]["elicitationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(page, format!("{}/widgets/{widget}", app.url));
    assert!(!state.contains(&widget), "the state is not the widget's id");
    assert!(!page.contains(&alice.agent) && !page.contains(&alice.host));

    // The person opens the page, logs in and types the value there.
    let browser = app.login("alice").await;
    let path = page.strip_prefix(&app.url).unwrap();
    assert!(app.page(&browser, path).await.contains("CANARY_KEY"));
    let r = app
        .post_form(
            &browser,
            &format!("{path}/submit"),
            &[
                ("value.CANARY_KEY", secret.as_str()),
                ("scope", "session"),
                ("return_to", "page"),
            ],
        )
        .await;
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);

    // The client retries once the person is back; then the agent reads it.
    let mut retry = args.clone();
    retry["inputResponses"] = json!({ "person": { "action": "accept" } });
    retry["requestState"] = json!(state);
    let done = raw_tool_call(
        &app,
        &alice.agent,
        2,
        "request_env_vars",
        retry,
        &mut exchanged,
    )
    .await;
    let done = &done["structuredContent"];
    assert_eq!(done["status"], "submitted", "{done}");
    assert_eq!(done["result"]["names"], json!(["CANARY_KEY"]), "{done}");
    let status = raw_tool_call(
        &app,
        &alice.agent,
        3,
        "get_widget_status",
        json!({ "arguments": { "widget_id": widget } }),
        &mut exchanged,
    )
    .await;
    assert_eq!(status["structuredContent"]["status"], "submitted");
    assert_absent("the MCP messages", &exchanged, &secret);
    assert_eq!(
        app.env_of(&alice.session, &alice.host).await,
        json!({ "CANARY_KEY": secret }),
        "the value reached the vault"
    );
}

/// An SSE response of `/mcp`, read message by message; every byte read is
/// kept in `exchanged`.
struct EventStream {
    response: reqwest::Response,
    pending: Vec<u8>,
}

impl EventStream {
    /// The next JSON-RPC message, or `None` when the stream ends.
    async fn next(&mut self, exchanged: &std::sync::Mutex<Vec<u8>>) -> Option<Value> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                let data = line.strip_prefix(b"data:").map(<[u8]>::trim_ascii);
                match data {
                    Some(data) if !data.is_empty() => {
                        return Some(serde_json::from_slice(data).unwrap());
                    }
                    _ => continue,
                }
            }
            let chunk = self.response.chunk().await.unwrap()?;
            exchanged.lock().unwrap().extend_from_slice(&chunk);
            self.pending.extend_from_slice(&chunk);
        }
    }
}

/// One POST to `/mcp` in the MCP session `mcp_session` (none for
/// `initialize`), recorded in `exchanged`.
async fn session_post(
    app: &crate::helpers::TestApp,
    agent: &str,
    mcp_session: Option<&str>,
    body: Value,
    exchanged: &std::sync::Mutex<Vec<u8>>,
) -> reqwest::Response {
    exchanged
        .lock()
        .unwrap()
        .extend_from_slice(body.to_string().as_bytes());
    let mut request = app
        .client
        .post(format!("{}/mcp", app.url))
        .bearer_auth(agent)
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(id) = mcp_session {
        request = request.header("mcp-session-id", id);
    }
    let r = request.send().await.unwrap();
    let mut exchanged = exchanged.lock().unwrap();
    for (name, value) in r.headers() {
        exchanged.extend_from_slice(name.as_str().as_bytes());
        exchanged.extend_from_slice(value.as_bytes());
    }
    r
}

/// The same over a 2025-11-25 MCP session: the client is asked with
/// `elicitation/create` on the tool call's stream, agrees to open the page,
/// and hears `notifications/elicitation/complete` on its standalone stream
/// once the value is in; no message of the session carries the value.
#[tokio::test]
async fn a_value_typed_on_the_page_a_session_client_opened_never_reaches_mcp() {
    let app = crate::helpers::spawn_app().await;
    let alice = crate::helpers::scene(&app, "alice").await;
    let secret = canary("session-elicitation");
    let exchanged = std::sync::Mutex::new(Vec::new());
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": { "elicitation": { "url": {} } },
        "clientInfo": { "name": "raw", "version": "0" } } });
    let r = session_post(&app, &alice.agent, None, initialize, &exchanged).await;
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    let mcp_session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let mut stream = EventStream {
        response: r,
        pending: Vec::new(),
    };
    let init = stream.next(&exchanged).await.unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let r = session_post(
        &app,
        &alice.agent,
        Some(&mcp_session),
        initialized,
        &exchanged,
    )
    .await;
    assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);

    // The standalone stream, where the completion arrives.
    let standalone = app
        .client
        .get(format!("{}/mcp", app.url))
        .bearer_auth(&alice.agent)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &mcp_session)
        .send()
        .await
        .unwrap();
    assert_eq!(standalone.status(), reqwest::StatusCode::OK);
    let mut standalone = EventStream {
        response: standalone,
        pending: Vec::new(),
    };

    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "request_env_vars",
        "arguments": { "names": ["CANARY_KEY"], "reason": "to test" } } });
    let r = session_post(&app, &alice.agent, Some(&mcp_session), call, &exchanged).await;
    let mut call = EventStream {
        response: r,
        pending: Vec::new(),
    };
    let asked = call.next(&exchanged).await.unwrap();
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["mode"], "url", "{asked}");
    let page = asked["params"]["url"].as_str().unwrap().to_owned();
    let widget = asked["params"]["elicitationId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(page, format!("{}/widgets/{widget}", app.url));
    let opened = json!({ "jsonrpc": "2.0", "id": asked["id"], "result": { "action": "accept" } });
    let r = session_post(&app, &alice.agent, Some(&mcp_session), opened, &exchanged).await;
    assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);
    let result = call.next(&exchanged).await.unwrap();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["structuredContent"]["status"], "pending",
        "{result}"
    );
    // The call's stream ends with its result (an answer in it is
    // acknowledged only once its body went out whole).
    assert_eq!(call.next(&exchanged).await, None);

    // The person types the value on the page.
    let browser = app.login("alice").await;
    let path = page.strip_prefix(&app.url).unwrap();
    let r = app
        .post_form(
            &browser,
            &format!("{path}/submit"),
            &[
                ("value.CANARY_KEY", secret.as_str()),
                ("scope", "session"),
                ("return_to", "page"),
            ],
        )
        .await;
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);
    let complete = tokio::time::timeout(std::time::Duration::from_secs(90), async {
        loop {
            let message = standalone.next(&exchanged).await.expect("the stream ended");
            if message["method"] == "notifications/elicitation/complete" {
                return message;
            }
        }
    })
    .await
    .expect("no notifications/elicitation/complete");
    assert_eq!(complete["params"]["elicitationId"], widget.as_str());

    let status = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "get_widget_status", "arguments": { "widget_id": widget } } });
    let r = session_post(&app, &alice.agent, Some(&mcp_session), status, &exchanged).await;
    let mut read = EventStream {
        response: r,
        pending: Vec::new(),
    };
    let status = read.next(&exchanged).await.unwrap();
    assert_eq!(
        status["result"]["structuredContent"]["status"], "submitted",
        "{status}"
    );
    assert_absent(
        "the MCP session's messages",
        &exchanged.lock().unwrap(),
        &secret,
    );
    assert_eq!(
        app.env_of(&alice.session, &alice.host).await,
        json!({ "CANARY_KEY": secret }),
        "the value reached the vault"
    );
}

/// One 2026-07-28 request of `method` from a host that declares MCP Apps
/// (`io.modelcontextprotocol/ui`), its every byte kept.
async fn raw_app_request(
    app: &crate::helpers::TestApp,
    agent: &str,
    id: u64,
    method: &str,
    name: &str,
    mut params: Value,
    exchanged: &mut Vec<u8>,
) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw-host", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html;profile=mcp-app"] } },
        },
    });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    exchanged.extend_from_slice(body.to_string().as_bytes());
    let r = app
        .client
        .post(format!("{}/mcp", app.url))
        .bearer_auth(agent)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .json(&body)
        .send()
        .await
        .unwrap();
    for (name, value) in r.headers() {
        exchanged.extend_from_slice(name.as_str().as_bytes());
        exchanged.extend_from_slice(value.as_bytes());
    }
    let text = r.bytes().await.unwrap();
    exchanged.extend_from_slice(&text);
    let reply: Value = serde_json::from_slice(&text)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&text)));
    reply["result"].clone()
}

/// MCP Apps: the app document, and every tool result the app reads of an
/// env vars widget (its card before and after the person typed the value
/// on widgetd's page, its status), in a session whose host opted in to
/// in-client answers, never carry the value in any of its encodings.
#[tokio::test]
async fn a_value_typed_for_an_mcp_app_never_reaches_the_app() {
    let app = crate::helpers::mcp::form_app().await;
    let alice = crate::helpers::mcp::opted_in(&app, "alice").await;
    let secret = canary("mcp-app");
    let mut exchanged = Vec::new();
    let uri = "ui://widgetd/widget.html";
    let read = raw_app_request(
        &app,
        &alice.agent,
        1,
        "resources/read",
        uri,
        json!({ "uri": uri }),
        &mut exchanged,
    )
    .await;
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    let call = |id, tool: &'static str, arguments: Value| {
        let params = json!({ "name": tool, "arguments": arguments });
        (id, tool, params)
    };
    let (id, tool, params) = call(
        2,
        "request_env_vars",
        json!({ "names": ["CANARY_KEY"], "reason": "to test" }),
    );
    let made = raw_app_request(
        &app,
        &alice.agent,
        id,
        "tools/call",
        tool,
        params,
        &mut exchanged,
    )
    .await;
    let widget = made["structuredContent"]["widget_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{made}"))
        .to_owned();
    let (id, tool, params) = call(3, "app_widget_view", json!({ "widget_id": widget }));
    let view = raw_app_request(
        &app,
        &alice.agent,
        id,
        "tools/call",
        tool,
        params,
        &mut exchanged,
    )
    .await;
    let page = view["structuredContent"]["page_url"].as_str().unwrap();
    let path = page.strip_prefix(&app.url).unwrap().to_owned();

    // The person types the value on widgetd's own page.
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("{path}/submit"),
            &[
                ("value.CANARY_KEY", secret.as_str()),
                ("scope", "session"),
                ("return_to", "page"),
            ],
        )
        .await;
    assert_eq!(r.status(), reqwest::StatusCode::SEE_OTHER);

    let (id, tool, params) = call(4, "get_widget_status", json!({ "widget_id": widget }));
    let status = raw_app_request(
        &app,
        &alice.agent,
        id,
        "tools/call",
        tool,
        params,
        &mut exchanged,
    )
    .await;
    assert_eq!(
        status["structuredContent"]["status"], "submitted",
        "{status}"
    );
    let (id, tool, params) = call(5, "app_widget_view", json!({ "widget_id": widget }));
    let ended = raw_app_request(
        &app,
        &alice.agent,
        id,
        "tools/call",
        tool,
        params,
        &mut exchanged,
    )
    .await;
    assert_eq!(ended["structuredContent"]["status"], "submitted", "{ended}");
    assert_absent("the MCP App's messages", &exchanged, &secret);
    assert_eq!(
        app.env_of(&alice.session, &alice.host).await,
        json!({ "CANARY_KEY": secret }),
        "the value reached the vault"
    );
}

/// Slack never gets a value: an env-var request's message only links to
/// widgetd's page, and neither it nor its update (after the value is typed
/// there) nor any other call to Slack's API carries a stored or typed value.
#[tokio::test]
async fn a_value_never_reaches_a_slack_message_or_update() {
    let (app, slack) = crate::helpers::slack::slack_app().await;
    let scene = crate::helpers::scene(&app, "alice").await;
    crate::helpers::slack::link(&app, "alice", "UALICE").await;
    let (stored, typed) = (canary("slack-stored"), canary("slack-typed"));
    let r = app
        .put_env(&scene.host, "STORED_KEY", &json!({ "value": stored }))
        .await;
    assert!(r.status().is_success());
    let id = app
        .pending_widget(&scene.agent, &scene.session, &["TYPED_KEY"])
        .await;
    let posted = slack.wait_for("chat.postMessage", |_| true).await;
    let blocks = posted.body["blocks"].to_string();
    assert!(
        !blocks.contains("widgetd:"),
        "an env-var request has no answer buttons: {blocks}"
    );
    assert!(blocks.contains(&format!("/widgets/{id}")), "{blocks}");
    let browser = app.login("alice").await;
    let r = app
        .post_form(
            &browser,
            &format!("/widgets/{id}/submit"),
            &[("value.TYPED_KEY", &typed), ("scope", "global")],
        )
        .await;
    assert_eq!(r.status(), 303);
    slack.wait_for("chat.update", |_| true).await;
    let sent: Vec<u8> = slack
        .calls()
        .iter()
        .flat_map(|c| c.body.to_string().into_bytes())
        .collect();
    for value in [&stored, &typed] {
        assert_absent("what Slack got", &sent, value);
    }
}
