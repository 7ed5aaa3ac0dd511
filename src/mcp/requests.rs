//! The tools that ask for what the agent may not take by itself:
//! `request_env_vars` (secrets the person types, never shown to the agent)
//! and `request_approval` (a tool call the person allows or denies).

use rmcp::handler::server::tool::{InputResponses as Responses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::agent::AgentTools;
use super::create::{Retry, input_schema, reply};
use widgetd_domain::widgets::{Approval, EnvVars};

#[tool_router(router = request_tools, vis = "pub(super)")]
impl AgentTools {
    /// Ask the user for environment variables you need (API keys, tokens,
    /// other credentials or settings). The user types the values into a
    /// secure form shown in the conversation transcript. The values go to an
    /// encrypted store and are injected into your environment on your next
    /// turn; you never see them.
    /// Returns at once with `{widget_id, status}`.
    /// Status `pending`: END YOUR TURN now; you are resumed with a message
    /// once the user answers or dismisses the form.
    /// This holds whether or not anyone has the transcript open right now:
    /// the form waits there (for days) until the person comes back, so do
    /// not retry or poll.
    /// Status `already_present`: every name is already configured, so you
    /// can proceed now.
    /// NEVER ask the user to paste secret values into the chat.
    #[tool(input_schema = input_schema::<EnvVars>())]
    async fn request_env_vars(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<EnvVars>(&ctx, args, retry).await)
    }

    /// Ask the user before running a tool: they see the tool and its input
    /// (a shell command as a command, a path as a path, else JSON) and
    /// answer Deny (maybe with a reason), Once, or Always. "Always" approves
    /// later identical requests at once (`already_present`) until the user
    /// revokes it. Returns and waits like `ask_user`; without waiting, END
    /// YOUR TURN and do not run the tool until the answer arrives.
    #[tool(input_schema = input_schema::<Approval>())]
    async fn request_approval(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<Approval>(&ctx, args, retry).await)
    }
}
