// A host of ChatGPT's older Apps SDK contract for the tests: `window.openai` in the
// view's frame, and no MCP Apps bridge (it never answers ui/initialize). OpenAI
// publishes no host to test against, so this one does what OpenAI's Apps SDK
// documentation says ChatGPT does, and nothing more:
// - the tool's `_meta["openai/outputTemplate"]` names the template, read with
//   resources/read and rendered in a sandboxed iframe (an opaque origin);
// - before the template's own scripts run, the frame has `window.openai` with the
//   globals `theme`, `locale`, `displayMode`, `maxHeight`, `toolInput` (the call's
//   arguments), `toolOutput` (the result's structuredContent: null while the call
//   runs) and `toolResponseMetadata` (the result's `_meta`);
// - a change of globals (the result arriving, the theme switched) is assigned to
//   `window.openai` and announced with a `openai:set_globals` CustomEvent on the
//   frame's window, `detail: { globals }`;
// - `window.openai.callTool(name, args)` runs a tool the server marked
//   `_meta["openai/widgetAccessible"]: true` (others are refused) and resolves with
//   its result: the CallToolResult itself, or with `?answer=text` `{ result }`
//   holding its text, as OpenAI's older example typings declare;
// - `window.openai.notifyIntrinsicHeight(height)` sizes the frame.
// The frame's window.openai talks to this page over postMessage, as ChatGPT's
// injected bridge does with its own page.
//
// Query: ?server=<MetaCortex origin>&path=<endpoint path>&token=<bearer>[&answer=text].
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const query = new URLSearchParams(location.search);
const INFO = { name: "metacortex-test-openai-host", version: "1.0.0" };
const WIDGET_ACCESSIBLE = "openai/widgetAccessible";

const host = { sizes: [], events: [], client: null, frame: null, tools: [] };
window.host = host;

// What the frame runs before the template: window.openai, bridged to this page.
const PRELUDE = `<script>
(() => {
  const waiting = new Map();
  let next = 1;
  const ask = (message) => new Promise((resolve, reject) => {
    const id = next++;
    waiting.set(id, { resolve, reject });
    window.parent.postMessage({ openaiTest: true, id, ...message }, "*");
  });
  window.openai = Object.assign(GLOBALS, {
    callTool: (name, args) => ask({ kind: "callTool", name, args }),
    notifyIntrinsicHeight: (height) => { ask({ kind: "height", height }); },
  });
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (event.source !== window.parent || !m || !m.openaiTest) return;
    if (m.kind === "globals") {
      Object.assign(window.openai, m.globals);
      window.dispatchEvent(new CustomEvent("openai:set_globals", { detail: { globals: m.globals } }));
    } else if (waiting.has(m.id)) {
      const pending = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error) pending.reject(new Error(m.error));
      else pending.resolve(m.result);
    }
  });
})();
</script>`;

async function client() {
  if (host.client) return host.client;
  const made = new Client(INFO, { capabilities: {} }); // no MCP Apps extension announced
  const url = new URL(query.get("path"), query.get("server"));
  const headers = { Authorization: "Bearer " + query.get("token") };
  await made.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  host.client = made;
  return made;
}

const send = (message) => host.frame.contentWindow.postMessage({ openaiTest: true, ...message }, "*");

async function answer(m) {
  if (m.kind === "height") {
    host.sizes.push(m.height);
    if (m.height) host.frame.style.height = m.height + "px";
    return send({ id: m.id, result: null });
  }
  if (m.kind !== "callTool") return;
  host.events.push({ event: "callTool", tool: m.name });
  const tool = host.tools.find((t) => t.name === m.name);
  if (!tool || !(tool._meta && tool._meta[WIDGET_ACCESSIBLE] === true)) {
    return send({ id: m.id, error: m.name + " is not marked " + WIDGET_ACCESSIBLE });
  }
  const result = await host.client.callTool({ name: m.name, arguments: m.args });
  const text = result.content && result.content[0] ? result.content[0].text : "";
  send({ id: m.id, result: query.get("answer") === "text" ? { result: text } : result });
}

window.addEventListener("message", (event) => {
  if (!host.frame || event.source !== host.frame.contentWindow) return;
  const m = event.data;
  if (m && m.openaiTest) answer(m);
  else if (m && m.jsonrpc === "2.0") host.events.push({ event: "mcp-apps", method: m.method });
});

// What ChatGPT does when the model calls `name` with `args`: the template rendered with
// the call's input while it runs, then its output; resolves once the output is sent.
host.open = async (name, args, theme) => {
  const mcp = await client();
  host.tools = (await mcp.listTools()).tools;
  const tool = host.tools.find((t) => t.name === name);
  const uri = tool._meta["openai/outputTemplate"];
  const resource = (await mcp.readResource({ uri })).contents[0];
  const globals = {
    theme, locale: "en-US", displayMode: "inline", maxHeight: 2000,
    toolInput: args, toolOutput: null, toolResponseMetadata: null,
  };
  const json = JSON.stringify(globals).replace(/</g, "\\u003c"); // inside a <script>
  const prelude = PRELUDE.replace("GLOBALS", () => json);
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-forms");
  frame.title = tool.title;
  document.getElementById("stage").replaceChildren(frame);
  document.body.className = theme;
  host.frame = frame;
  const loaded = new Promise((resolve) => frame.addEventListener("load", resolve, { once: true }));
  frame.srcdoc = resource.text.replace("<head>", () => "<head>" + prelude);
  await loaded;
  const result = await mcp.callTool({ name, arguments: args });
  send({ kind: "globals", globals: { toolOutput: result.structuredContent ?? null,
    toolResponseMetadata: result._meta ?? null } });
  host.events.push({ event: "output-sent", tool: name });
  return { uri, mimeType: resource.mimeType, toolMeta: tool._meta };
};

host.theme = (theme) => {
  document.body.className = theme;
  send({ kind: "globals", globals: { theme } });
};

host.ready = true;
