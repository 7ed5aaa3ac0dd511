// A minimal MCP Apps host, as a web host is made with the extension's own
// host SDK: an MCP client connected to widgetd's `/mcp` (declaring
// `io.modelcontextprotocol/ui`), and @modelcontextprotocol/ext-apps's
// AppBridge between it and the tool's app, rendered in a sandboxed iframe
// (scripts only, an opaque origin). The test serves this page on loopback
// and proxies `/mcp` to the daemon; the page states its progress in
// `document.body.dataset.state` for the test to wait on, the last link the
// app asked it to open in `dataset.opened`, and every height the app
// reported in `dataset.heights`.
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
} from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const config = JSON.parse(document.getElementById("config").textContent);
const state = (name) => { document.body.dataset.state = name; };
const info = { name: "widgetd-test-host", version: "1.0.0" };

async function main() {
  const client = new Client(info, {
    capabilities: {
      extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } },
    },
  });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", location.href), {
    requestInit: { headers: { Authorization: `Bearer ${config.token}` } },
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === config.tool);
  const uri = tool && getToolUiResourceUri(tool);
  if (!uri) {
    state("no-ui");
    return;
  }
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`not an app: ${content.mimeType}`);
  const result = await client.callTool({ name: config.tool, arguments: config.arguments });
  document.getElementById("result").textContent = JSON.stringify(result.structuredContent);

  const iframe = document.createElement("iframe");
  iframe.id = "app";
  iframe.title = "widgetd app";
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.width = "100%";
  iframe.style.height = "600px";
  iframe.style.border = "1px solid #888";
  document.getElementById("chat").append(iframe);
  const bridge = new AppBridge(client, info, { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} }, {
    hostContext: { theme: "light", displayMode: "inline", platform: "web" },
  });
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: config.arguments });
    await bridge.sendToolResult(result);
    state("shown");
  };
  const heights = [];
  bridge.onsizechange = ({ height }) => {
    if (!height) return;
    heights.push(height);
    document.body.dataset.heights = heights.join(" ");
    iframe.style.height = `${Math.min(height, 2000)}px`;
  };
  // `refuseLinks`: the host refuses to open links, as a host may by policy
  // (a result with `isError`, not a JSON-RPC error).
  bridge.onopenlink = async ({ url }) => {
    document.body.dataset.opened = url;
    return config.refuseLinks ? { isError: true } : {};
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = content.text;
}

main().catch((err) => {
  document.getElementById("log").textContent = String(err && err.stack || err);
  state("error");
});
