//! Several approvers approve the same thing (issue 61, third security
//! pass): with `approvers` above one, an edit is refused in either order
//! and the card offers none, so the input run is the input every approver
//! saw; each approver's comment reaches the agent; a vote stops counting
//! once its voter may no longer answer the session. And the agent
//! withdraws or replaces only the widgets it asked itself, never the
//! host's. On SQLite and PostgreSQL.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd_domain::auth::Role;

use crate::helpers::samples::radio;
use crate::helpers::{
    Scene, TestApp, ask, assert_error, created, prompt_texts, scene, share, spawn_app,
    spawn_postgres_app, submit_form, widget,
};

fn plan() -> Value {
    json!({
        "tool": "Bash",
        "input": { "command": "terraform plan" },
        "allow_edit": true,
        "approvers": 2,
    })
}

const APPLY: &str = r#"{"command": "terraform apply -auto-approve"}"#;

#[tokio::test]
async fn every_approver_approves_the_same_input() {
    same_input_on(spawn_app().await).await;
}

#[tokio::test]
async fn every_approver_approves_the_same_input_on_postgres() {
    same_input_on(spawn_postgres_app().await).await;
}

async fn same_input_on(app: TestApp) {
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    app.user("bob", Role::Member).await;
    share(
        &app,
        &host,
        &session,
        json!({ "grants": { "bob": "prompt" } }),
    )
    .await;
    let (alice, bob) = (app.login("alice").await, app.login("bob").await);

    // Bob approves plan; alice's edit to apply is refused, and his vote
    // stands alone.
    let id = created(ask(&app, &agent, &session, "approval", &plan()).await).await;
    let page = app.page(&bob, &format!("/sessions/{session}")).await;
    assert!(
        !page.contains("name=\"edited_input\""),
        "no edit box while several approvers are needed"
    );
    let r = submit_form(
        &app,
        &bob,
        &id,
        &[("decision", "once"), ("comment", "plan only")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let r = app
        .post_json_as(
            &alice,
            &format!("/widgets/{id}/submit"),
            &json!({ "decision": "once", "edited_input": APPLY }),
        )
        .await;
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "edit_needs_one_approver",
        Some("auto-approve"),
    )
    .await;
    let half = widget(&app, &agent, &id).await;
    assert_eq!(half["status"], "pending", "{half}");
    assert_eq!(half["result"]["approvals"].as_array().unwrap().len(), 1);

    // Alice approves it as asked: plan runs, and both comments reach the
    // agent, each with its author.
    let r = submit_form(
        &app,
        &alice,
        &id,
        &[("decision", "once"), ("comment", "ok by me")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(done["status"], "submitted");
    assert_eq!(done["result"]["approvers"], json!(["bob", "alice"]));
    assert!(done["result"].get("edited_input").is_none(), "{done}");
    assert_eq!(
        done["result"]["comments"],
        json!([
            { "by": "bob", "comment": "plan only" },
            { "by": "alice", "comment": "ok by me" },
        ])
    );
    assert_eq!(
        prompt_texts(&app, &host, &session).await,
        [
            "[Agor] User approved Bash once. You can run it now. Approvers' comments: \
             \"bob: plan only; alice: ok by me\""
        ]
    );

    // The other way round: the first approver's edit is refused too, and
    // casts no vote.
    let id = created(ask(&app, &agent, &session, "approval", &plan()).await).await;
    let r = app
        .post_json_as(
            &bob,
            &format!("/widgets/{id}/submit"),
            &json!({ "decision": "once", "edited_input": APPLY }),
        )
        .await;
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "edit_needs_one_approver",
        Some("auto-approve"),
    )
    .await;
    let untouched = widget(&app, &agent, &id).await;
    assert_eq!(untouched["status"], "pending");
    assert!(untouched["result"].is_null(), "{untouched}");
}

#[tokio::test]
async fn a_vote_stops_counting_when_its_voter_loses_access() {
    lost_access_on(spawn_app().await).await;
}

#[tokio::test]
async fn a_vote_stops_counting_when_its_voter_loses_access_on_postgres() {
    lost_access_on(spawn_postgres_app().await).await;
}

async fn lost_access_on(app: TestApp) {
    let Scene {
        host,
        session,
        agent,
    } = scene(&app, "alice").await;
    app.user("bob", Role::Member).await;
    app.user("carol", Role::Member).await;
    share(
        &app,
        &host,
        &session,
        json!({ "grants": { "bob": "prompt" } }),
    )
    .await;
    let deploy = json!({ "tool": "deploy", "input": { "env": "prod" }, "approvers": 2 });
    let id = created(ask(&app, &agent, &session, "approval", &deploy).await).await;
    let (alice, bob) = (app.login("alice").await, app.login("bob").await);
    let r = submit_form(&app, &bob, &id, &[("decision", "once")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    // Bob's access ends; carol may answer now. Alice's approval does not
    // complete it on bob's vote.
    share(
        &app,
        &host,
        &session,
        json!({ "grants": { "bob": "none", "carol": "prompt" } }),
    )
    .await;
    let r = submit_form(&app, &alice, &id, &[("decision", "once")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let half = widget(&app, &agent, &id).await;
    assert_eq!(half["status"], "pending", "{half}");
    let voters: Vec<&str> = half["result"]["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["by"].as_str().unwrap())
        .collect();
    assert_eq!(voters, ["alice"]);
    let carol = app.login("carol").await;
    let r = submit_form(&app, &carol, &id, &[("decision", "once")]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let done = widget(&app, &agent, &id).await;
    assert_eq!(done["status"], "submitted");
    assert_eq!(done["result"]["approvers"], json!(["alice", "carol"]));
}

#[tokio::test]
async fn the_agent_withdraws_and_replaces_only_what_it_asked() {
    agent_owns_on(spawn_app().await).await;
}

#[tokio::test]
async fn the_agent_withdraws_and_replaces_only_what_it_asked_on_postgres() {
    agent_owns_on(spawn_postgres_app().await).await;
}

async fn agent_owns_on(app: TestApp) {
    let s = scene(&app, "alice").await;
    // The host (an API token) asks in the agent's session.
    let hosts = created(ask(&app, &s.host, &s.session, "ask", &radio("Deploy?")).await).await;
    let r = app
        .post_json(
            &format!("/api/v1/widgets/{hosts}/cancel"),
            &s.agent,
            &json!({}),
        )
        .await;
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "not_asked_by_agent",
        None,
    )
    .await;
    let before = app.count("SELECT count(*) FROM widgets").await;
    let mut amended = radio("Deploy to staging?");
    amended["replaces"] = json!({ "widget_id": hosts });
    let r = ask(&app, &s.agent, &s.session, "ask", &amended).await;
    assert_error(
        r,
        StatusCode::UNPROCESSABLE_ENTITY,
        "not_asked_by_agent",
        None,
    )
    .await;
    assert_eq!(app.count("SELECT count(*) FROM widgets").await, before);
    assert_eq!(widget(&app, &s.agent, &hosts).await["status"], "pending");
    assert!(
        prompt_texts(&app, &s.host, &s.session).await.is_empty(),
        "nothing was delivered in the host's name"
    );

    // Its own it withdraws and replaces as before.
    let own = created(ask(&app, &s.agent, &s.session, "ask", &radio("Which region?")).await).await;
    let mut amended = radio("Which region, EU or US?");
    amended["replaces"] = json!({ "widget_id": own });
    let new = created(ask(&app, &s.agent, &s.session, "ask", &amended).await).await;
    assert_eq!(widget(&app, &s.agent, &own).await["status"], "cancelled");
    let r = app
        .post_json(
            &format!("/api/v1/widgets/{new}/cancel"),
            &s.agent,
            &json!({}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::OK);
}
