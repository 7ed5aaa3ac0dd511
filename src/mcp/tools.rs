//! The MCP server every `/mcp` request gets: its tools, combined from one
//! router per family (`questions.rs`: the questions; `requests.rs`: env
//! vars and approvals; `life.rs`: a widget's status, cancelling it, the
//! pending ones), and rmcp's `ServerHandler` over them (with MCP Apps'
//! resources from `apps.rs`).

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool_handler};

use super::agent::{AgentTools, caller};

/// The tool router, built once: `#[tool_handler]` would otherwise build it
/// (every tool's description and schema) again for each `tools/list`,
/// each tool lookup and each call.
static ROUTER: std::sync::LazyLock<ToolRouter<AgentTools>> = std::sync::LazyLock::new(|| {
    AgentTools::question_tools() + AgentTools::request_tools() + AgentTools::life_tools()
});

/// What `initialize` says of the server (see [`super::apps::server_info`]).
static INFO: std::sync::LazyLock<rmcp::model::ServerConfig> =
    std::sync::LazyLock::new(|| super::apps::server_info(super::INSTRUCTIONS));

fn router() -> &'static ToolRouter<AgentTools> {
    &ROUTER
}

impl AgentTools {
    /// A call of a tool that does not exist is the protocol error the MCP
    /// specification (2025-11-25, "Tools", "Error Handling") shows:
    /// `-32602` naming the unknown tool.
    async fn call(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if let Some(result) = super::apps::call(self, &request, &context).await {
            return Ok(result.into());
        }
        let router = router();
        let mut request = request;
        let name = super::life::canonical(&request.name).to_owned();
        request.name = name.into();
        if router.get(&request.name).is_none() {
            return Err(rmcp::ErrorData::invalid_params(
                super::scrub::unknown_tool(&request.name),
                None,
            ));
        }
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        router.call(call).await
    }
}

#[tool_handler(router = router())]
impl ServerHandler for AgentTools {
    /// rmcp runs the call in a task of its own, outside the `/mcp`
    /// request's arrival (`ops.rs`); it runs under it again, so the tool's
    /// auth checks share the request's epoch read (on PostgreSQL, one round
    /// trip fewer for each) instead of starting reads of their own.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        match caller(&context).map(|caller| caller.arrival) {
            Ok(arrival) => {
                let cache = &self.state.auth_cache;
                cache.as_arrived(arrival, self.call(request, context)).await
            }
            Err(_) => self.call(request, context).await,
        }
    }

    /// rmcp asks for this on every stateless request, not only at
    /// `initialize`: made once, handed out as copies.
    fn get_info(&self) -> rmcp::model::ServerConfig {
        INFO.clone()
    }

    /// The tools, with MCP Apps' `_meta.ui` for a host that declared the
    /// extension (see `super::apps`).
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        Ok(super::apps::list_tools(router().list_all(), &context))
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
        super::apps::list_resources(&context)
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        super::apps::read_resource(&request.uri, &context)
    }
}

#[cfg(test)]
mod tests {
    /// Every family's router is in the one the server uses, and no tool
    /// is in two of them (a duplicate would silently replace the other).
    #[test]
    fn the_router_holds_every_family() {
        let names: Vec<String> = super::router()
            .list_all()
            .into_iter()
            .map(|tool| tool.name.to_string())
            .collect();
        let families = [
            super::AgentTools::question_tools().list_all().len(),
            super::AgentTools::request_tools().list_all().len(),
            super::AgentTools::life_tools().list_all().len(),
        ];
        assert_eq!(families.iter().sum::<usize>(), names.len(), "{names:?}");
        assert_eq!(
            names,
            [
                "ask",
                "ask_fields",
                "ask_user",
                "cancel_widget",
                "get_widget_status",
                "list_pending_widgets",
                "request_approval",
                "request_clarification",
                "request_env_vars",
            ]
        );
    }
}
