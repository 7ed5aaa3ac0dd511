//! Slack: a loopback fake of Slack's Web API records `chat.postMessage` and
//! `chat.update`; interaction and slash-command requests are signed as Slack
//! signs them (`v0`, HMAC-SHA256 over `v0:{timestamp}:{body}`). A valid
//! click answers as the linked person through the same transition as the
//! transcript; a stale, badly signed, unlinked, unauthorised or second one
//! changes nothing; a link is made only with a code from widgetd's settings.
//! A message over Slack's limits goes as a link; one Slack refuses as
//! invalid is not delivered after that one call, and counted so.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::slack::{
    Call, SIGNING_SECRET, TEAM, form, link, link_code, now, send_link, signed, slack_app,
};
use crate::helpers::{Scene, TestApp, eventually, new_widget, scene};

/// The interaction payload of a click on `action_id` / `value` of
/// `widget`'s message by `slack_user`.
fn click(slack_user: &str, widget: &str, action_id: &str, value: &str) -> String {
    let payload = json!({
        "type": "block_actions",
        "user": { "id": slack_user, "team_id": TEAM },
        "team": { "id": TEAM },
        "actions": [{ "action_id": action_id, "block_id": format!("widgetd:{widget}"),
                      "value": value, "type": "button" }],
    });
    form(&[("payload", &payload.to_string())])
}

async fn error_code(r: Response) -> String {
    let body: Value = r.json().await.unwrap();
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn status_of(app: &TestApp, host: &str, widget: &str) -> Value {
    app.get(&format!("/api/v1/widgets/{widget}"), host)
        .await
        .json()
        .await
        .unwrap()
}

async fn submits(app: &TestApp, widget: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) FROM audit_log WHERE action = 'widget.submit' AND widget_id = '{widget}'"
    ))
    .await
}

fn text_of(call: &Call) -> String {
    call.body["blocks"].to_string()
}

#[tokio::test]
async fn a_signed_click_of_a_linked_person_answers_once_and_nothing_else_does() {
    let (app, slack) = slack_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    app.user("carol", Role::Member).await;
    let share = |carol: &str| json!({ "others_can": "none", "grants": { "carol": carol } });
    let path = format!("/api/v1/sessions/{session}/sharing");
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&host);
    assert!(
        r.json(&share("prompt"))
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
    link(&app, "alice", "UALICE").await;
    link(&app, "carol", "UCAROL").await;

    let id = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "Deploy <prod> & tell?" }),
    )
    .await;
    let posted = slack
        .wait_for("chat.postMessage", |c| c.body["channel"] == "UALICE")
        .await;
    assert_eq!(posted.auth, "Bearer xoxb-test-bot-token");
    let blocks = text_of(&posted);
    assert!(
        blocks.contains("Deploy &lt;prod&gt; &amp; tell?"),
        "{blocks}"
    );
    assert!(
        blocks.contains(&format!("widgetd:{id}")) && blocks.contains("option.1"),
        "{blocks}"
    );
    assert!(
        blocks.contains(&format!("{}/widgets/{id}", app.url)),
        "{blocks}"
    );
    slack
        .wait_for("chat.postMessage", |c| c.body["channel"] == "UCAROL")
        .await;
    // Carol may no longer answer once her grant is only `view`.
    let r = app
        .client
        .put(format!("{}{path}", app.url))
        .bearer_auth(&host);
    assert!(
        r.json(&share("view"))
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );

    let yes = click("UALICE", &id, "option.0", "0");
    let refusals = [
        (
            "stale",
            yes.clone(),
            SIGNING_SECRET,
            now() - 301,
            StatusCode::UNAUTHORIZED,
            "slack_request_stale",
        ),
        (
            "another secret",
            yes.clone(),
            "another-secret",
            now(),
            StatusCode::UNAUTHORIZED,
            "slack_signature_invalid",
        ),
        (
            "unlinked",
            click("UNOBODY", &id, "option.0", "0"),
            SIGNING_SECRET,
            now(),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "view only",
            click("UCAROL", &id, "option.0", "0"),
            SIGNING_SECRET,
            now(),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
    ];
    for (what, body, secret, at, status, code) in refusals {
        let r = signed(&app, "/slack/interactions", body, secret, at).await;
        assert_eq!(r.status(), status, "{what}");
        assert_eq!(error_code(r).await, code, "{what}");
        assert_eq!(
            status_of(&app, &host, &id).await["status"],
            "pending",
            "{what}"
        );
        assert_eq!(submits(&app, &id).await, 0, "{what}");
    }

    let r = signed(&app, "/slack/interactions", yes, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::OK);
    let view = status_of(&app, &host, &id).await;
    assert_eq!(view["status"], "submitted");
    assert_eq!(view["result"]["answered_by"], "alice");
    assert_eq!(view["result"]["answers"]["Deploy <prod> & tell?"], "Yes");

    let second = click("UALICE", &id, "option.1", "1");
    let r = signed(&app, "/slack/interactions", second, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    assert_eq!(status_of(&app, &host, &id).await["result"], view["result"]);
    assert_eq!(submits(&app, &id).await, 1);
    let (actor, client): (String, String) = sqlx::query_as(
        "SELECT actor, client_addr FROM audit_log WHERE action = 'widget.submit' AND widget_id = $1",
    )
    .bind(&id)
    .fetch_one(&app.state.db.read)
    .await
    .unwrap();
    assert!(actor.starts_with("user:"), "{actor}");
    assert!(client.starts_with("slack"), "{client}");
    let prompts = app.prompts(&host, &session, 0).await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");

    for person in ["UALICE", "UCAROL"] {
        let update = slack
            .wait_for("chat.update", |c| c.body["channel"] == format!("D{person}"))
            .await;
        let blocks = text_of(&update);
        assert!(blocks.contains("Answered by alice"), "{blocks}");
        assert!(!blocks.contains("option.0"), "{blocks}");
    }
}

#[tokio::test]
async fn an_approval_shows_its_exact_command_and_ends_in_slack_when_answered_in_widgetd() {
    let (app, slack) = slack_app().await;
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    link(&app, "alice", "UALICE").await;
    let command = "rm -rf build && echo \"<b>\" > out";
    let id = new_widget(
        &app,
        &agent,
        &session,
        "approval",
        &json!({ "tool": "Bash", "input": { "command": command } }),
    )
    .await;
    let posted = slack.wait_for("chat.postMessage", |_| true).await;
    // The title's section, then what is asked.
    let text = posted.body["blocks"][1]["text"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("```rm -rf build &amp;&amp; echo \"&lt;b&gt;\" &gt; out```"),
        "{text}"
    );
    let blocks = text_of(&posted);
    assert!(
        blocks.contains("decision.deny") && blocks.contains("decision.once"),
        "{blocks}"
    );
    assert!(!blocks.contains("always"), "{blocks}");

    // Answered in the transcript first: the message ends, a click is late.
    let alice = app.login("alice").await;
    let r = app
        .post_form(
            &alice,
            &format!("/widgets/{id}/submit"),
            &[("decision", "deny")],
        )
        .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let update = slack.wait_for("chat.update", |_| true).await;
    assert!(
        !text_of(&update).contains("decision.once"),
        "{}",
        text_of(&update)
    );
    let once = click("UALICE", &id, "decision.once", "once");
    let r = signed(&app, "/slack/interactions", once, SIGNING_SECRET, now()).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let view = status_of(&app, &host, &id).await;
    assert_eq!(view["result"]["decision"], "deny");
    assert_eq!(submits(&app, &id).await, 1);
}

#[tokio::test]
async fn a_link_is_made_only_with_a_code_from_widgetds_settings() {
    let (app, _slack) = slack_app().await;
    app.user("alice", Role::Member).await;
    let links = "SELECT count(*) FROM slack_links";
    // From Slack alone: no code, a made-up code.
    let answer = send_link(&app, "UMALLORY", "").await;
    assert!(
        !answer["text"].as_str().unwrap().starts_with("Linked"),
        "{answer}"
    );
    let answer = send_link(&app, "UMALLORY", "ABCDEFGHJK").await;
    assert!(
        answer["text"].as_str().unwrap().contains("unknown"),
        "{answer}"
    );
    assert_eq!(app.count(links).await, 0);

    // A real code, but not signed by Slack: refused, and not spent.
    let alice = app.login("alice").await;
    let code = link_code(&app, &alice).await;
    let body = form(&[
        ("team_id", TEAM),
        ("user_id", "UMALLORY"),
        ("text", &format!("link {code}")),
    ]);
    let r = signed(&app, "/slack/commands", body, "not-the-secret", now()).await;
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.count(links).await, 0);

    let answer = send_link(&app, "UALICE", &code).await;
    assert_eq!(
        answer["text"], "Linked to the widgetd user alice: widgetd will ask you here.",
        "the reply names whom the Slack user is now linked to"
    );
    // Used once: another Slack user cannot reuse it.
    let answer = send_link(&app, "UMALLORY", &code).await;
    assert!(
        answer["text"].as_str().unwrap().contains("unknown"),
        "{answer}"
    );
    let linked: Vec<String> = sqlx::query_scalar("SELECT slack_user_id FROM slack_links")
        .fetch_all(&app.state.db.read)
        .await
        .unwrap();
    assert_eq!(linked, ["UALICE"]);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'slack.link'")
            .await,
        1
    );
}

/// `widgetd slack connect|status|disconnect` on the real binary: the
/// credentials come from the environment, are stored sealed, and are never
/// printed again; a bot token of the wrong shape is refused.
#[test]
fn the_cli_connects_shows_and_disconnects_without_printing_a_credential() {
    use crate::helpers::{COMMAND_LIMIT, OutputWithin, stderr, stdout, widgetd};
    let tmp = crate::helpers::test_dir();
    let dir = tmp.path().join("data");
    crate::helpers::new_data_dir(&dir);
    let token = format!("xoxb-{}", uuid::Uuid::new_v4().simple());
    let wrong = widgetd(&dir)
        .args(["slack", "connect"])
        .env("WIDGETD_SLACK_BOT_TOKEN", "xoxp-a-user-token")
        .env("WIDGETD_SLACK_SIGNING_SECRET", SIGNING_SECRET)
        .output_within(COMMAND_LIMIT);
    assert!(!wrong.status.success());
    assert!(stderr(&wrong).contains("xoxb-"), "{}", stderr(&wrong));
    assert!(
        !stderr(&wrong).contains("xoxp-a-user-token"),
        "{}",
        stderr(&wrong)
    );

    let connect = widgetd(&dir)
        .args(["slack", "connect"])
        .env("WIDGETD_SLACK_BOT_TOKEN", &token)
        .env("WIDGETD_SLACK_SIGNING_SECRET", SIGNING_SECRET)
        .output_within(COMMAND_LIMIT);
    assert!(connect.status.success(), "{}", stderr(&connect));
    let status = widgetd(&dir)
        .args(["slack", "status", "--json"])
        .output_within(COMMAND_LIMIT);
    assert!(status.status.success(), "{}", stderr(&status));
    let shown: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(shown["connected"], true, "{shown}");
    for out in [&connect, &status] {
        let all = format!("{}{}", stdout(out), stderr(out));
        assert!(
            !all.contains(&token) && !all.contains(SIGNING_SECRET),
            "{all}"
        );
    }

    let check = widgetd(&dir)
        .args(["check", "--json"])
        .output_within(COMMAND_LIMIT);
    assert!(check.status.success(), "{}", stderr(&check));
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    let slack = report["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "slack_secrets")
        .unwrap_or_else(|| panic!("no slack_secrets in {report}"));
    assert_eq!(slack["checked"], 2, "{slack}");
    assert_eq!(slack["problems"], json!([]), "{slack}");
    let printed = format!("{}{}", stdout(&check), stderr(&check));
    assert!(!printed.contains(&token) && !printed.contains(SIGNING_SECRET));

    let disconnect = widgetd(&dir)
        .args(["slack", "disconnect"])
        .output_within(COMMAND_LIMIT);
    assert!(disconnect.status.success(), "{}", stderr(&disconnect));
    let status = widgetd(&dir)
        .args(["slack", "status", "--json"])
        .output_within(COMMAND_LIMIT);
    let shown: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(shown["connected"], false, "{shown}");
}

#[tokio::test]
async fn a_person_linked_after_a_widget_was_asked_gets_the_next_one_in_slack() {
    let (app, _slack) = slack_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    let messages =
        |widget: &str| format!("SELECT count(*) FROM slack_messages WHERE widget_id = '{widget}'");
    // Nobody is linked yet: the daemon notes that there is no one to tell.
    let before = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "One?" }),
    )
    .await;
    assert_eq!(app.count(&messages(&before)).await, 0);
    // The link moves the auth epoch, so that note is not trusted after it.
    link(&app, "alice", "UALICE").await;
    let after = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "Two?" }),
    )
    .await;
    assert_eq!(app.count(&messages(&after)).await, 1);
}

#[tokio::test]
async fn a_message_over_slacks_limits_goes_with_its_buttons_or_as_a_link() {
    let (app, slack) = slack_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    link(&app, "alice", "UALICE").await;
    // The issue's: a 2,950-character command under a title was a section
    // of 3,073 characters, which Slack refuses.
    let command = "x".repeat(2950);
    let id = new_widget(
        &app,
        &agent,
        &session,
        "approval",
        &json!({ "tool": "Bash", "input": { "command": command } }),
    )
    .await;
    let posted = slack
        .wait_for("chat.postMessage", |c| text_of(c).contains(&id))
        .await;
    let longest = posted.body["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"]["text"].as_str())
        .map(|t| t.encode_utf16().count())
        .max()
        .unwrap();
    assert!(longest <= 3000, "a section of {longest}");
    assert!(text_of(&posted).contains("decision.once"));
    // 600 `&` in a command: 3,000 characters once escaped, with the rest
    // over the limit. The person gets the link, not a refused message.
    let amps = "&".repeat(600);
    let id = new_widget(
        &app,
        &agent,
        &session,
        "approval",
        &json!({ "tool": "Bash", "input": { "command": amps } }),
    )
    .await;
    let posted = slack
        .wait_for("chat.postMessage", |c| text_of(c).contains(&id))
        .await;
    let blocks = text_of(&posted);
    assert!(!blocks.contains("decision.once"), "{blocks}");
    assert!(blocks.contains(&format!("/widgets/{id}")), "{blocks}");
}

#[tokio::test]
async fn a_message_slack_refuses_as_invalid_is_not_delivered_after_one_call() {
    let (app, slack) = slack_app().await;
    let Scene { session, agent, .. } = scene(&app, "alice").await;
    link(&app, "alice", "UALICE").await;
    slack.refuse_next("invalid_blocks");
    let id = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "Ship it?" }),
    )
    .await;
    let failed = format!(
        "SELECT count(*) FROM slack_messages WHERE widget_id = '{id}' AND failed_at IS NOT NULL"
    );
    eventually(
        "the refused message to be marked not delivered",
        std::time::Duration::from_secs(10),
        || async { app.count(&failed).await == 1 },
    )
    .await;
    let attempts = format!("SELECT attempts FROM slack_messages WHERE widget_id = '{id}'");
    assert_eq!(app.count(&attempts).await, 1);
    let posts = |slack: &crate::helpers::slack::FakeSlack| {
        slack
            .calls()
            .into_iter()
            .filter(|c| c.method == "chat.postMessage")
            .count()
    };
    assert_eq!(posts(&slack), 1);
    let mut conn = app.state.db.read.acquire().await.unwrap();
    let status = widgetd_notify::slack::status(&mut conn).await.unwrap();
    assert_eq!(status.messages_not_delivered, 1);
    drop(conn);
    // The sender goes on: the next widget's message is posted, and the
    // refused one is not sent again.
    let next = new_widget(
        &app,
        &agent,
        &session,
        "ask",
        &json!({ "question": "And this?" }),
    )
    .await;
    slack
        .wait_for("chat.postMessage", |c| text_of(c).contains(&next))
        .await;
    assert_eq!(posts(&slack), 2);
}

#[tokio::test]
async fn unlinking_in_the_settings_removes_the_link_and_is_audited_once() {
    let (app, _slack) = slack_app().await;
    app.user("alice", Role::Member).await;
    link(&app, "alice", "UALICE").await;
    let alice = app.login("alice").await;
    // The second unlink has nothing to remove: nothing to audit either.
    for _ in 0..2 {
        let r = app.post_form(&alice, "/settings/slack/unlink", &[]).await;
        assert_eq!(r.status(), StatusCode::SEE_OTHER);
    }
    assert_eq!(app.count("SELECT count(*) FROM slack_links").await, 0);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_log WHERE action = 'slack.unlink'")
            .await,
        1
    );
    let page = app.page(&alice, "/settings/slack").await;
    assert!(!page.contains("UALICE"), "{page}");
    // A click from the Slack user unlinked answers nothing.
    let Scene { session, agent, .. } = scene(&app, "bob").await;
    let id = new_widget(&app, &agent, &session, "ask", &json!({ "question": "Go?" })).await;
    let r = signed(
        &app,
        "/slack/interactions",
        click("UALICE", &id, "option.0", "0"),
        SIGNING_SECRET,
        now(),
    )
    .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}
