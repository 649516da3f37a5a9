// A minimal MCP Apps host for the tests, built on the extension's own host side:
// `AppBridge` and `PostMessageTransport` from @modelcontextprotocol/ext-apps/app-bridge,
// with the TypeScript MCP SDK's `Client` (the one the bridge is built on) speaking
// Streamable HTTP to a real MetaCortex server. It does what a chat host does when a
// model calls a linked tool: read the tool's ui:// resource, render it in a sandboxed
// iframe (an opaque origin, as hosts' sandboxes are), answer the view's ui/initialize
// with a host context (theme, variables), send tool-input, run the tool, send
// tool-result (or, for a call cancelled, tool-cancelled), forward the view's own
// tools/call and resources/read to the server, follow the view's size-changed, and
// switch the theme on request.
//
// Query: ?server=<MetaCortex origin>&path=<endpoint path>&token=<bearer>[&openai=1].
// With openai=1 the frame also has a `window.openai`, as ChatGPT gives both: its
// callTool only notes the call (in the frame's `openaiCalls`) and never answers.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const query = new URLSearchParams(location.search);
const INFO = { name: "metacortex-test-host", version: "1.0.0" };
const UI = "io.modelcontextprotocol/ui";
// Host theme variables (a subset of the spec's keys), legible in each theme.
const THEMES = {
  light: {
    "--color-background-primary": "#ffffff",
    "--color-background-secondary": "#f1f1f3",
    "--color-text-primary": "#111113",
    "--color-text-secondary": "#4b4b55",
    "--color-border-primary": "#8b8b95",
    "--font-sans": "system-ui, sans-serif",
  },
  dark: {
    "--color-background-primary": "#111113",
    "--color-background-secondary": "#24242a",
    "--color-text-primary": "#f3f3f5",
    "--color-text-secondary": "#c0c0c8",
    "--color-border-primary": "#7a7a85",
    "--font-sans": "system-ui, sans-serif",
  },
};

const host = { sizes: [], events: [], client: null, bridge: null, tool: null, resource: null };
window.host = host;

async function client() {
  if (host.client) return host.client;
  const made = new Client(INFO, {
    capabilities: { extensions: { [UI]: { mimeTypes: ["text/html;profile=mcp-app"] } } },
  });
  const url = new URL(query.get("path"), query.get("server"));
  const headers = { Authorization: "Bearer " + query.get("token") };
  await made.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  host.client = made;
  return made;
}

function openaiBeside(theme, args) {
  const globals = JSON.stringify({ theme, toolInput: args, toolOutput: null }).replace(/</g, "\\u003c");
  return `<script>window.openai = Object.assign(${globals}, {
    callTool: (name) => { (window.openaiCalls = window.openaiCalls || []).push(name); return new Promise(() => {}); },
  });</script>`;
}

// What a host does when the model calls `name` with `args`, up to the view having the
// tool's input: the view rendered and initialized.
async function render(name, args, theme) {
  const mcp = await client();
  const { tools } = await mcp.listTools();
  const tool = tools.find((t) => t.name === name);
  const uri = tool._meta.ui.resourceUri;
  const read = await mcp.readResource({ uri });
  const resource = read.contents[0];
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-forms");
  frame.title = tool.title;
  document.getElementById("stage").replaceChildren(frame);
  document.body.className = theme;
  const bridge = new AppBridge(mcp, INFO, { openLinks: {}, serverTools: {}, serverResources: {}, logging: {} }, {
    hostContext: {
      theme,
      styles: { variables: THEMES[theme] },
      displayMode: "inline",
      availableDisplayModes: ["inline"],
      platform: "web",
      toolInfo: { tool },
    },
  });
  bridge.onsizechange = ({ height }) => {
    host.sizes.push(height);
    if (height) frame.style.height = height + "px";
  };
  const initialized = new Promise((resolve) => (bridge.oninitialized = resolve));
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = query.get("openai") === "1"
    ? resource.text.replace("<head>", () => "<head>" + openaiBeside(theme, args))
    : resource.text;
  await initialized;
  host.events.push({ event: "initialized", view: bridge.getAppVersion() });
  await bridge.sendToolInput({ arguments: args });
  Object.assign(host, { bridge, tool, resource });
  return { uri, mimeType: resource.mimeType, resourceMeta: resource._meta, toolMeta: tool._meta };
}

// The model's call run: resolves when the view has had the tool's result.
host.open = async (name, args, theme) => {
  const shown = await render(name, args, theme);
  const result = (await client()).callTool({ name, arguments: args });
  await host.bridge.sendToolResult(await result);
  host.events.push({ event: "result-sent", tool: name });
  return shown;
};

// The call cancelled before it ran (the person declined it, or the host stopped it):
// the host says so to the view, as the specification requires, and sends no result.
host.cancel = async (name, args, theme, reason) => {
  const shown = await render(name, args, theme);
  await host.bridge.sendToolCancelled(reason === null ? {} : { reason });
  host.events.push({ event: "cancel-sent", tool: name });
  return shown;
};

host.theme = (theme) => {
  document.body.className = theme;
  host.bridge.setHostContext({ theme, styles: { variables: THEMES[theme] } });
};

host.ready = true;
