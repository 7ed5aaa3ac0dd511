//! Asking widgets as the agent, reading them back, and the prompts their
//! answers leave for the agent host.

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use super::app::TestApp;

impl TestApp {
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
}
