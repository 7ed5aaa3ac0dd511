//! The question tools: `ask_user`, `ask`, `ask_fields` and
//! `request_clarification`, each one call of the generic creating tool
//! (`create.rs`).

use rmcp::handler::server::tool::{InputResponses as Responses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, JsonObject};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};

use super::agent::AgentTools;
use super::create::{Retry, input_schema, reply};
use widgetd_domain::widgets::{Ask, AskUser, Clarification};

#[tool_router(router = question_tools, vis = "pub(super)")]
impl AgentTools {
    /// Ask the user 1 to 4 multiple-choice questions, shown as a form in the
    /// transcript. Each question has a short header chip, 2 to 4 options
    /// (label, description, optional markdown preview) and may allow several
    /// choices; the user can always type an "Other" answer instead. Answers
    /// come back as an object keyed by question text: a string for a
    /// one-choice question, an array of strings for a `multi_select` one
    /// (the choices, then any typed answer).
    /// By default this returns `{widget_id, status: "pending"}` at once,
    /// whether or not anyone has the transcript open (the form waits there
    /// until the person comes back): END YOUR TURN and the answers arrive as
    /// your next message. With
    /// `wait_seconds` (at most 300) it waits and returns the answers; if the
    /// time runs out it returns `pending` and the answers still arrive as a
    /// message later. There is never a default answer on timeout.
    #[tool(input_schema = input_schema::<AskUser>())]
    async fn ask_user(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<AskUser>(&ctx, args, retry).await)
    }

    /// Ask the user one simple question: `confirm` (Yes / No by default),
    /// `buttons`, `select`, `radio` or `checkbox` (several choices: its
    /// answer is an array of strings), with an optional preselected
    /// `default`. Returns and waits exactly like `ask_user`.
    #[tool(input_schema = input_schema::<Ask>())]
    async fn ask(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<Ask>(&ctx, args, retry).await)
    }

    /// Ask the user something they answer by typing, with no options to
    /// pick from: "What's the staging URL?". 1 to 10 `fields`, each with a
    /// `name` (the answer's key) and a `type`: `text` (one line, the
    /// default), `multiline`, `number`, `integer`, `boolean`, `email`, `url`
    /// or `date` (YYYY-MM-DD); optional `min`/`max` (a value, or a text's
    /// length), `pattern`, `required` (default true) and `default` (only
    /// prefills the input). The answers come back keyed by `name`, typed
    /// (numbers as numbers, booleans as booleans). Never ask for secrets
    /// here: use `request_env_vars`. Returns and waits exactly like
    /// `ask_user`.
    #[tool(input_schema = input_schema::<widgetd_domain::widgets::Fields>())]
    async fn ask_fields(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(
            self.create::<widgetd_domain::widgets::Fields>(&ctx, args, retry)
                .await,
        )
    }

    /// Ask the user a clarifying question when a request is ambiguous, with
    /// a widget that fits the ambiguity: `question` says why you ask (1 to
    /// 1000 characters), `widget` how the user answers. Widget types:
    /// `choice` (pick one of 2 to 10 options `{label, description?,
    /// markdown?}`, or several with `multi_select`);
    /// `mapping` (connect each of `left` to one of `right`, 1 to 200 items
    /// `{id, label, group?}` a side; `allow_unmapped`, `allow_many_to_one`);
    /// `tree` (1 to 500 nodes `{id, label, parent_id?, metadata?}`; the user
    /// moves, renames, deletes or adds as `allow_reparent`, `allow_rename`,
    /// `allow_delete`, `allow_add` say);
    /// `annotation` (`image`: the file as base64, PNG, JPEG or WebP of at
    /// most 2 MiB, never a path or URL; `tools` ⊆ rectangle, circle, arrow,
    /// text: the user draws on it).
    /// The user can always
    /// answer in their own words, beside the widget or instead of it, or
    /// dismiss the question (maybe with a note). The answer is
    /// `{structured, freeform}`: `structured` is, for `choice`,
    /// `{"selected": [label…]}` (empty when the user only typed);
    /// for `mapping`, `{"mappings": [{"left", "right"}…]}` (ids);
    /// for `tree`, `{"nodes": [...]}` with the edits applied (new nodes'
    /// ids start `new-`); for `annotation`, `{"annotations": [{"tool",
    /// "coords", "text"?}…]}` in image pixels;
    /// `freeform` is the typed text ("" when none).
    /// Returns `{widget_id, status: "pending"}` at once, whether or not
    /// anyone has the transcript open (the question waits there):
    /// END YOUR TURN and the answer arrives as your next message. With
    /// `wait_seconds` (at most 300) it waits and returns the answer in
    /// `result`; if the time runs out it returns `pending` and the answer
    /// still arrives as a message later. There is never a default answer.
    #[tool(input_schema = input_schema::<Clarification>())]
    async fn request_clarification(
        &self,
        Parameters(args): Parameters<JsonObject>,
        RequestState(state): RequestState,
        Responses(responses): Responses,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let retry = Retry { state, responses };
        reply(self.create::<Clarification>(&ctx, args, retry).await)
    }
}
