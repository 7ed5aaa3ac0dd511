//! `/healthz`, `/readyz` and `/metrics` as operators' tools call them.

use reqwest::StatusCode;
use serde_json::{Value, json};
use widgetd::auth::Role;

use crate::helpers::{canary, scene, spawn_app};

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
        .find_map(|l| l.strip_prefix("widgetd_http_request_duration_seconds_count{class=\"2xx\"} "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(ok_count >= 3, "{text}");
    assert!(!text.contains(&value), "metrics carried a value");
}
