//! Claude Code, the real CLI, with the files `widgetd connect claude-code`
//! writes: its MCP client asks for keys through widgetd's tools, its hooks
//! bring Bash calls to the browser, and `widgetd host` runs its turns.

use std::process::{Output, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::process::Child;

use super::fake_model::{FakeModel, Step};
use super::harness::{Workspace, cli};
use super::{docs, transcript, widget_of};
use crate::helpers::{Browser, Scene, TestApp, canary, scene, spawn_app, widgetd};

/// A daemon, a session, its person logged in, the fake model, and a
/// project with the files `widgetd connect claude-code` (as the doc runs
/// it) wrote, the permission hook's wait cut to `wait` seconds.
struct Setup {
    app: TestApp,
    s: Scene,
    browser: Browser,
    model: FakeModel,
    ws: Workspace,
}

async fn setup(wait: Option<u64>) -> Setup {
    cli("claude");
    let app = spawn_app().await;
    let s = scene(&app, "alice").await;
    let browser = app.login("alice").await;
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    // The doc's own line, run in the project as a person runs it.
    let connect = docs::command("claude-connect", &s.session);
    assert_eq!(connect[..2], ["widgetd", "connect"], "{connect:?}");
    let mut command = widgetd(&app.data_dir());
    command
        .args(&connect[1..])
        .current_dir(&ws.project)
        .env("HOME", &ws.home)
        .env("WIDGETD_URL", &app.url)
        .env("WIDGETD_AGENT_TOKEN", &s.agent);
    let out = crate::helpers::output_async_within(command, crate::helpers::COMMAND_LIMIT).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = ws.project.join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(ws.project.join(".mcp.json").is_file());
    if let Some(wait) = wait {
        let text = text.replace("?wait=280", &format!("?wait={wait}"));
        std::fs::write(&settings, text).unwrap();
    }
    Setup {
        app,
        s,
        browser,
        model,
        ws,
    }
}

impl Setup {
    /// `claude -p PROMPT` as the doc's host recipe runs it, as the
    /// session's agent.
    fn claude(&self, prompt: &str) -> Child {
        let recipe = docs::command("claude-host", &self.s.session);
        let at = recipe.iter().position(|w| w == "--").unwrap() + 1;
        let args: Vec<String> = recipe[at + 1..]
            .iter()
            .map(|w| w.replace("{prompt}", prompt))
            .collect();
        assert_eq!(recipe[at], "claude", "{recipe:?}");
        let mut command = self.ws.command(cli("claude"), &self.model.url);
        command
            .args(args)
            .env("WIDGETD_AGENT_TOKEN", &self.s.agent)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        tokio::process::Command::from(command)
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }

    /// The person answers the pending approval card in the browser.
    async fn answer_card(&self, child: &mut Child, fields: &[(&str, &str)]) -> String {
        let id = widget_of(
            &self.app,
            &self.s.session,
            "approval",
            "pending",
            || match child.try_wait().unwrap() {
                Some(status) => Err(format!("claude exited ({status}) before asking")),
                None => Ok(()),
            },
        )
        .await;
        let r = self
            .app
            .post_form(&self.browser, &format!("/widgets/{id}/submit"), fields)
            .await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
        id
    }

    async fn approvals(&self) -> i64 {
        self.app
            .count("SELECT COUNT(*) FROM widgets WHERE kind = 'approval'")
            .await
    }
}

/// Waits at most two minutes for `child`; its output.
async fn finished(child: Child) -> Output {
    tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("claude did not finish within 120 s")
        .unwrap()
}

fn bash(command: &str, description: &str) -> Step {
    Step::tool(
        "Bash",
        json!({ "command": command, "description": description }),
    )
}

#[tokio::test]
async fn bash_calls_wait_for_the_person_in_the_browser() {
    let t = setup(Some(2)).await;
    // Allow once: the command runs.
    t.model.script([
        bash("/bin/echo allowed-once", "say it"),
        Step::SayLastResult,
    ]);
    let mut child = t.claude("Say it");
    t.answer_card(&mut child, &[("decision", "once")]).await;
    let out = finished(child).await;
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("The tool said: allowed-once"), "{said}");

    // Deny: the person's reason is what the model reads.
    t.model
        .script([bash("/bin/echo denied", "say it"), Step::SayLastResult]);
    let mut child = t.claude("Say it again");
    let deny = [("decision", "deny"), ("reason", "not on Fridays")];
    t.answer_card(&mut child, &deny).await;
    let out = finished(child).await;
    let result = t.model.tool_results().pop().unwrap();
    assert!(result.contains("not on Fridays"), "{result}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("The tool said: denied\n"));

    // Nobody answers: denied when widgetd's wait ends, and the card ends.
    t.model
        .script([bash("/bin/echo unanswered", "say it"), Step::SayLastResult]);
    let child = t.claude("Say it once more");
    let out = finished(child).await;
    assert!(out.status.success());
    let result = t.model.tool_results().pop().unwrap();
    assert!(
        result.contains("No decision in widgetd within 2 seconds"),
        "{result}"
    );
    let expired = t
        .app
        .count("SELECT COUNT(*) FROM widgets WHERE kind = 'approval' AND status = 'expired'")
        .await;
    assert_eq!(expired, 1);
    assert_eq!(t.approvals().await, 3);
    // Every answer went back to the hook: no turn is queued for any of them.
    assert!(t.app.prompts(&t.s.host, &t.s.session, 0).await.is_empty());
    assert_eq!(t.model.left(), 0);
}

#[tokio::test]
async fn always_covers_the_same_command_with_another_description() {
    let t = setup(Some(5)).await;
    t.model
        .script([bash("/bin/echo always", "first words"), Step::SayLastResult]);
    let mut child = t.claude("Say it");
    t.answer_card(&mut child, &[("decision", "always")]).await;
    assert!(finished(child).await.status.success());
    t.model
        .script([bash("/bin/echo always", "other words"), Step::SayLastResult]);
    let out = finished(t.claude("Say it again")).await;
    assert_eq!(t.approvals().await, 1, "the second call made a card");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("The tool said: always"), "{said}");
}

/// What a child has written so far, read as it comes.
type Written = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// Reads `pipe` to its end in the background into the buffer returned.
fn drain(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
) -> (Written, tokio::task::JoinHandle<()>) {
    let written = Written::default();
    let into = written.clone();
    let task = tokio::spawn(async move {
        let mut chunk = [0u8; 8192];
        loop {
            match tokio::io::AsyncReadExt::read(&mut pipe, &mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => into.lock().unwrap().extend_from_slice(&chunk[..n]),
            }
        }
    });
    (written, task)
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn text_of(written: &Written) -> String {
    String::from_utf8_lossy(&written.lock().unwrap()).into_owned()
}

#[tokio::test]
async fn the_documented_host_recipe_asks_for_a_key_and_runs_the_next_turn_with_it() {
    let t = setup(None).await;
    let value = canary("claude");
    let ask = json!({ "names": ["DEMO_KEY"], "reason": "to call the demo API" });
    t.model.script([
        Step::tool("mcp__widgetd__request_env_vars", ask),
        Step::Say("I asked for DEMO_KEY in widgetd; ending my turn.".into()),
        bash("printenv DEMO_KEY", "show the key"),
        Step::SayLastResult,
    ]);
    let recipe = docs::command("claude-host", &t.s.session);
    let debug_log = t.ws.home.join("claude-debug.log");
    let mut command = t.ws.command(env!("CARGO_BIN_EXE_widgetd"), &t.model.url);
    // As a person runs it: the API token and URL exported, the agent token
    // never shown (the host issues one).
    command
        .args(&recipe[1..])
        .env("WIDGETD_URL", &t.app.url)
        .env("WIDGETD_TOKEN", &t.s.host)
        // Claude Code's own debug log, for a failure message: each turn
        // writes it afresh.
        .env("DEBUG", "1")
        .env("CLAUDE_CODE_DEBUG_LOGS_DIR", &debug_log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut host = tokio::process::Command::from(command)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Read as it comes, as a terminal would: a pipe nobody reads fills up
    // (64 KiB) and stops the host mid-turn.
    let (stdout, stderr) = (
        drain(host.stdout.take().unwrap()),
        drain(host.stderr.take().unwrap()),
    );
    let widget = widget_of(&t.app, &t.s.session, "env_vars", "pending", || {
        match host.try_wait().unwrap() {
            Some(status) => Err(format!("the host exited ({status})")),
            None => Ok(()),
        }
    })
    .await;
    let r = t
        .app
        .post_form(
            &t.browser,
            &format!("/widgets/{widget}/submit"),
            &[("value.DEMO_KEY", &value), ("scope", "session")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    // The next turn's Bash call asks in the browser too.
    // (Cut short before `widget_of` gives up, to say what the host and
    // the fake model saw.)
    let answered = tokio::time::timeout(
        Duration::from_secs(110),
        t.answer_card(&mut host, &[("decision", "once")]),
    )
    .await;
    if answered.is_err() {
        panic!(
            "no approval card within 110 s of the key's submission.\n{}\nthe host's stdout:\n{}\n\
             the host's stderr:\n{}\n{}\nthe end of Claude Code's debug log:\n{}",
            t.model.describe(),
            text_of(&stdout.0),
            text_of(&stderr.0),
            super::what_the_session_holds(&t.app, &t.s.session).await,
            tail(
                &std::fs::read_to_string(&debug_log).unwrap_or_default(),
                120
            ),
        );
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let text = loop {
        let text = transcript(&t.app, &t.s.session).await;
        if text.contains("The tool said:") {
            break text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no second turn: {text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    crate::helpers::interrupt(&host);
    let status = tokio::time::timeout(Duration::from_secs(60), host.wait())
        .await
        .expect("the host did not stop on Ctrl-C")
        .unwrap();
    let _ = (stdout.1.await, stderr.1.await);
    let (stdout, stderr) = (text_of(&stdout.0), text_of(&stderr.0));
    assert!(status.success(), "{stderr}");
    // The value was in the turn's environment, and masked on its way out.
    assert!(t.model.tool_results().iter().any(|r| r.contains(&value)));
    assert!(
        text.contains("The tool said: <concealed by widgetd>"),
        "{text}"
    );
    assert!(stdout.contains("<concealed by widgetd>"), "{stdout}");
    // The Stop hook fires under `-p` too: a line from the agent's tool.
    assert!(
        text.contains("agent: Claude Code finished its turn."),
        "{text}"
    );
    assert!(!text.contains(&value) && !stdout.contains(&value) && !stderr.contains(&value));
    // The second turn went on with the first one's conversation.
    let second: &Value = &t.model.requests()[2];
    assert!(second.to_string().contains("request_env_vars"), "{second}");
    // widgetd's own tools never make a card; the Bash call made one, and
    // its answer started no third turn.
    assert_eq!(t.approvals().await, 1);
    assert!(t.app.prompts(&t.s.host, &t.s.session, 0).await.is_empty());
    assert_eq!(t.model.left(), 0);
}
