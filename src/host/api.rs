//! The REST calls the host loop makes, as the session's host (API token).

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;

use crate::exec;

/// The daemon, as reached with an API token.
pub struct Api {
    client: reqwest::Client,
    base: String,
    token: SecretString,
}

/// The session the loop hosts.
pub struct HostedSession {
    pub id: String,
    pub agent_token: SecretString,
    pub mcp_url: String,
}

#[derive(Deserialize)]
struct Created {
    session_id: String,
    agent_token: SecretString,
    mcp_url: String,
}

/// A resume prompt not yet acknowledged.
#[derive(Deserialize)]
pub struct Prompt {
    pub prompt_id: i64,
    pub text: String,
}

#[derive(Deserialize)]
struct Prompts {
    prompts: Vec<Prompt>,
}

impl Api {
    pub fn new(base: &str, token: SecretString) -> anyhow::Result<Self> {
        Ok(Self {
            client: exec::http_client()?,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    /// The daemon's URL, without a trailing `/`.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn send(
        &self,
        what: &str,
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<reqwest::Response> {
        let response = request
            .bearer_auth(self.token.expose_secret())
            .send()
            .await
            .with_context(|| {
                format!(
                    "cannot reach widgetd at {} to {what}; is `widgetd serve` running there?",
                    self.base
                )
            })?;
        if !response.status().is_success() {
            bail!(
                "widgetd refused to {what}: {}",
                exec::refusal(response).await
            );
        }
        Ok(response)
    }

    pub async fn create_session(&self, title: Option<&str>) -> anyhow::Result<HostedSession> {
        let url = format!("{}/api/v1/sessions", self.base);
        let body = title.map_or_else(|| json!({}), |t| json!({ "title": t }));
        let request = self.client.post(url).json(&body);
        let created: Created = self
            .send("create a session", request)
            .await?
            .json()
            .await
            .context("widgetd's answer to creating a session is not valid JSON")?;
        Ok(HostedSession {
            id: created.session_id,
            agent_token: created.agent_token,
            mcp_url: created.mcp_url,
        })
    }

    /// Whether `agent_token` still works for `session`.
    pub async fn agent_token_works(
        &self,
        session: &str,
        agent_token: &SecretString,
    ) -> anyhow::Result<bool> {
        let url = format!("{}/api/v1/sessions/{session}/hooks/claude-code", self.base);
        let response = self
            .client
            .get(url)
            .bearer_auth(agent_token.expose_secret())
            .send()
            .await
            .with_context(|| format!("cannot reach widgetd at {}", self.base))?;
        Ok(response.status().is_success())
    }

    /// Issues `session` a new agent token (the previous one stops working);
    /// the daemon audits it as this API token's user.
    pub async fn reissue_agent_token(&self, session: &str) -> anyhow::Result<HostedSession> {
        let url = format!("{}/api/v1/sessions/{session}/agent-token", self.base);
        let request = self.client.post(url);
        let what = format!("issue session {session} a new agent token");
        let created: Created = self
            .send(&what, request)
            .await?
            .json()
            .await
            .context("widgetd's answer to issuing an agent token is not valid JSON")?;
        Ok(HostedSession {
            id: created.session_id,
            agent_token: created.agent_token,
            mcp_url: created.mcp_url,
        })
    }

    /// Adds `text` to the transcript as `role`.
    pub async fn post_message(&self, session: &str, role: &str, text: &str) -> anyhow::Result<()> {
        let url = format!("{}/api/v1/sessions/{session}/messages", self.base);
        let request = self
            .client
            .post(url)
            .json(&json!({ "role": role, "text": text }));
        self.send("add to the transcript", request).await?;
        Ok(())
    }

    /// Long-polls for resume prompts, oldest first.
    pub async fn prompts(&self, session: &str, wait: u64) -> anyhow::Result<Vec<Prompt>> {
        let url = format!(
            "{}/api/v1/sessions/{session}/prompts?wait={wait}",
            self.base
        );
        let prompts: Prompts = self
            .send("hand out resume prompts", self.client.get(url))
            .await?
            .json()
            .await
            .context("widgetd's resume prompts are not valid JSON")?;
        Ok(prompts.prompts)
    }

    pub async fn ack(&self, session: &str, prompt_id: i64) -> anyhow::Result<()> {
        let url = format!(
            "{}/api/v1/sessions/{session}/prompts/{prompt_id}/ack",
            self.base
        );
        self.send("acknowledge a prompt", self.client.post(url))
            .await?;
        Ok(())
    }

    /// The session's effective env, as `exec` fetches it.
    pub async fn env(&self, session: &str) -> anyhow::Result<BTreeMap<String, SecretString>> {
        exec::fetch_env(&self.client, &self.base, &self.token, session, false).await
    }
}
