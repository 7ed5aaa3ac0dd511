//! What comes of an elicitation a widget tool sent (see `super::elicit`):
//! a 2026-07-28 retry, resumed only for the widget its own call offered
//! (`super::offers`), or a 2025-11-25 `elicitation/create` over the
//! client's MCP session; and then the answer of the agent's MCP client,
//! recorded as that client's, never the person's.

use rmcp::RoleServer;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, CustomNotification, ElicitRequest, ElicitResult,
    ElicitationAction, InputResponses, ServerNotification, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use serde_json::{Value, json};

use super::agent::{AgentTools, caller, gone};
use super::elicit;
use super::inflight::CallKey;
use widgetd_domain::widgets::{
    self, AnswerBody, Answerer, Created, Request, WidgetId, WidgetStatus,
};
use widgetd_domain::{Error, Result};

/// Longest an `elicitation/create` stays open in the client before it is
/// withdrawn (the question stays open in the transcript).
const ELICITATION_SECS: u64 = 10 * 60;

/// The notification that a URL elicitation's interaction ended (2025-11-25).
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

impl AgentTools {
    /// A retry (2026-07-28): the client showed the elicitation this call
    /// offered and sends what came of it, with the `requestState` it got.
    /// Any other state (a widget id, another call's, one already used or
    /// lapsed) is refused with one fixed message, whatever it names.
    pub(super) async fn resume<R: Request>(
        &self,
        ctx: &RequestContext<RoleServer>,
        handle: &str,
        responses: Option<InputResponses>,
        wait: u64,
    ) -> Result<Value> {
        let agent = caller(ctx)?;
        let id = self
            .offers
            .take(&agent.session_id, R::NAME, handle)
            .ok_or_else(|| Error::BadRequest {
                code: "invalid_request_state",
                message: "`requestState` is not one this server offered to this call; call \
                          the tool again without it"
                    .into(),
            })?;
        let row = widgets::get_widget(&mut *self.state.db.read.acquire().await?, &id).await?;
        let response = responses
            .as_ref()
            .and_then(|r| r.get(elicit::INPUT_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        self.conclude(ctx, row, response, wait).await
    }

    /// What came of an elicitation, in either generation. An accepted
    /// form is the answer of the agent's MCP client, never of the person:
    /// it is recorded as such (`answered_by: "mcp-client"`, audit actor
    /// `mcp-client:SESSION`), only for a question kind, only where the
    /// session opted in to form mode, and checked as a transcript answer
    /// is; a transcript answer that came first wins and this call gets the
    /// terminal state. Anything else (declined, cancelled, refused, a URL
    /// opened, no response) leaves the widget as it is, answered in the
    /// transcript or the page, and the call returns its state as a first
    /// call would.
    async fn conclude(
        &self,
        ctx: &RequestContext<RoleServer>,
        row: widgets::WidgetRow,
        response: Option<ElicitResult>,
        wait: u64,
    ) -> Result<Value> {
        let agent = caller(ctx)?;
        let id = row.id.clone();
        let mut refused = None;
        let mut ended = row.status != WidgetStatus::Pending;
        if let Some(ElicitResult {
            action: ElicitationAction::Accept,
            content: Some(content),
            ..
        }) = response
            && row.status == WidgetStatus::Pending
            && elicit::has_form(&row.kind)
            && self.modes(ctx).await?.form()
            && let Some(body) = elicit::answer_body(&row, &content)
        {
            let bytes = serde_json::to_vec(&body).map_err(anyhow::Error::from)?;
            let answer = AnswerBody::Json(bytes.into());
            let by = Answerer::AgentClient(&agent.session_id);
            match widgets::submit(&self.state, &row, by, answer, &agent.client).await {
                // Answered here, or in the transcript first: either way the
                // widget ended, and its state is what this call returns.
                Ok(_) | Err(Error::WidgetNotPending(_)) => ended = true,
                Err(err @ (Error::Invalid { .. } | Error::BadRequest { .. })) => {
                    refused = Some(err)
                }
                Err(err) => return Err(err),
            }
        }
        let pending = Created {
            widget_id: id,
            status: WidgetStatus::Pending,
        };
        if ended {
            // The widget ended: the wait returns as soon as its end can be
            // read (a transcript answer that won may still be committing).
            return self.wait(ctx, pending, widgets::MAX_WAIT_SECS).await;
        }
        let mut body = self.wait(ctx, pending, wait).await?;
        if let Some(err) = refused {
            body["elicitation"] = json!({
                "refused": err.code(),
                "message": "the answer given in the client was refused; the question stays open in the transcript",
            });
        }
        Ok(body)
    }

    /// 2025-11-25, over an MCP session: sends the client `elicitation/create`
    /// on this call's response stream and waits for what comes of it, while
    /// the widget stays open in the transcript. Whichever answer comes first
    /// ends the widget; a client still showing its form then has the
    /// request cancelled. A URL the person agreed to open is followed by
    /// `notifications/elicitation/complete` once the widget ends.
    pub(super) async fn ask_in_session(
        &self,
        ctx: &RequestContext<RoleServer>,
        created: Created,
        request: rmcp::model::ElicitRequestParams,
        wait: u64,
    ) -> Result<Value> {
        let agent = caller(ctx)?;
        let url = matches!(
            request,
            rmcp::model::ElicitRequestParams::UrlElicitationParams { .. }
        );
        let key = CallKey::new(
            &agent.session_id,
            &serde_json::to_value(&ctx.id).map_err(anyhow::Error::from)?,
        );
        let cancelled = agent.inflight.token(&key).unwrap_or_default();
        let sent = ctx
            .peer
            .send_request_with_option(
                ServerRequest::ElicitRequest(ElicitRequest::new(request)),
                PeerRequestOptions::no_options(),
            )
            .await;
        let response = match sent {
            // The client cannot be asked after all: the transcript remains.
            Err(err) => {
                tracing::debug!(error = %err, "elicitation/create could not be sent");
                None
            }
            Ok(mut handle) => {
                // Sent from this call, so it travels on the call's own
                // stream (ahead of its result) while that is open.
                let peer = handle.peer.clone();
                let id = handle.id.clone();
                let withdraw = |reason: &str| {
                    let param = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
                    async move {
                        if let Err(err) = peer.notify_cancelled(param).await {
                            tracing::debug!(error = %err, "withdrawing an elicitation");
                        }
                    }
                };
                tokio::select! {
                    answer = &mut handle.rx => match answer {
                        Ok(Ok(ClientResult::ElicitResult(result))) => Some(result),
                        _ => None,
                    },
                    waited = widgets::wait_for_answer(&self.state, &created.widget_id, ELICITATION_SECS) => {
                        let reason = match waited.map(|view| view.status) {
                            Ok(WidgetStatus::Pending) => "no answer in time; the question stays open in widgetd",
                            _ => "answered in widgetd",
                        };
                        withdraw(reason).await;
                        None
                    }
                    () = ctx.ct.cancelled() => {
                        withdraw("the tool call was cancelled").await;
                        return Err(gone());
                    }
                    () = cancelled.cancelled() => {
                        withdraw("the tool call was cancelled").await;
                        return Err(gone());
                    }
                }
            }
        };
        let row = widgets::get_widget(
            &mut *self.state.db.read.acquire().await?,
            &created.widget_id,
        )
        .await?;
        if url
            && row.status == WidgetStatus::Pending
            && response
                .as_ref()
                .is_some_and(|r| r.action == ElicitationAction::Accept)
        {
            self.complete_when_ended(ctx.peer.clone(), created.widget_id.clone());
        }
        self.conclude(ctx, row, response, wait).await
    }

    /// Sends `notifications/elicitation/complete` for a URL elicitation
    /// once its widget ends, for as long as the MCP session lives (an idle
    /// session is closed after `super::sessions::IDLE`).
    fn complete_when_ended(&self, peer: rmcp::Peer<RoleServer>, widget: WidgetId) {
        let state = self.state.clone();
        tokio::spawn(async move {
            while !peer.is_transport_closed() {
                match widgets::wait_for_answer(&state, &widget, 60).await {
                    Ok(view) if view.status == WidgetStatus::Pending => continue,
                    Ok(_) => {
                        let params = json!({ "elicitationId": widget.as_str() });
                        let done = CustomNotification::new(ELICITATION_COMPLETE, Some(params));
                        let _ = peer
                            .send_notification(ServerNotification::CustomNotification(done))
                            .await;
                        return;
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "watching a URL elicitation's widget");
                        return;
                    }
                }
            }
        });
    }
}
