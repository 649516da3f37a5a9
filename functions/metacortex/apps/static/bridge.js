"use strict";
// The view's side of the host, in either of two contracts.
// MCP Apps (specification 2026-01-26): JSON-RPC 2.0 over postMessage with the host
// window. ui/initialize then ui/notifications/initialized; the host sends tool-input,
// tool-result, tool-cancelled and host-context-changed; the view asks the host for
// tools/call and resources/read, and says its height (size-changed).
// ChatGPT's Apps SDK (window.openai, when the host gives one): toolInput, toolOutput
// (the result's structuredContent), toolResponseMetadata (its _meta) and theme, read
// at start and again on each openai:set_globals event; callTool until an MCP Apps host
// answers ui/initialize (ChatGPT gives both); the height through notifyIntrinsicHeight.
const bridge = (() => {
  const PROTOCOL = "2026-01-26";
  const openai = window.openai || null;
  const waiting = new Map();
  const on = {};
  let next = 1;
  let connected = false; // an MCP Apps host answered ui/initialize
  const post = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (event.source !== window.parent || !m || m.jsonrpc !== "2.0") return;
    if (m.method === undefined) {
      const pending = waiting.get(m.id);
      if (!pending) return;
      waiting.delete(m.id);
      if (m.error) pending.reject(new Error(m.error.message || "the host refused the request"));
      else pending.resolve(m.result);
    } else if (m.id !== undefined) {
      post({ id: m.id, result: {} }); // ping, ui/resource-teardown: nothing to keep
    } else if (on[m.method]) {
      on[m.method](m.params || {});
    }
  });
  const request = (method, params) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      post({ id, method, params });
    });
  const prefersDark = window.matchMedia("(prefers-color-scheme: dark)");
  let theme = null;
  function applyContext(context) {
    if (context.theme) theme = context.theme;
    document.documentElement.dataset.theme = theme || (prefersDark.matches ? "dark" : "light");
    const variables = (context.styles && context.styles.variables) || {};
    for (const [name, value] of Object.entries(variables)) {
      if (name.startsWith("--") && typeof value === "string") {
        document.documentElement.style.setProperty(name, value);
      }
    }
  }
  let watching = false;
  function watchSize() {
    if (watching) return;
    watching = true;
    let last = 0;
    const say = () => {
      const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (height === last) return;
      last = height;
      if (connected) post({ method: "ui/notifications/size-changed", params: { height } });
      else if (openai && openai.notifyIntrinsicHeight) openai.notifyIntrinsicHeight(height);
    };
    new ResizeObserver(say).observe(document.documentElement);
    say();
  }
  // The cancel as the person reads it, in the view's status line, unless the view
  // shows it itself: a cancelled call never sends its result.
  function cancelled(params) {
    const status = document.getElementById("status");
    const reason = typeof params.reason === "string" ? params.reason.trim().slice(0, 200) : "";
    if (status) say(status, "Cancelled" + (reason ? ": " + reason : "") + ". Nothing came back.", "error");
  }
  // ChatGPT's Apps SDK: the result is there at start or arrives with openai:set_globals.
  function fromOpenai(handlers) {
    let shown = null;
    const sync = () => {
      if (openai.theme) applyContext({ theme: openai.theme });
      const output = openai.toolOutput;
      if (!output || output === shown || !handlers.result) return;
      shown = output;
      handlers.result({ structuredContent: output, content: [{ type: "text", text: JSON.stringify(output) }],
        _meta: openai.toolResponseMetadata || undefined });
    };
    if (openai.toolInput && handlers.input) handlers.input(openai.toolInput);
    sync();
    window.addEventListener("openai:set_globals", sync);
    watchSize();
  }
  async function start(name, handlers) {
    applyContext({});
    on["ui/notifications/tool-input"] = (p) => handlers.input && handlers.input(p.arguments || {});
    on["ui/notifications/tool-result"] = (p) => handlers.result && handlers.result(p);
    on["ui/notifications/tool-cancelled"] = (p) => (handlers.cancelled || cancelled)(p);
    on["ui/notifications/host-context-changed"] = applyContext;
    if (openai) fromOpenai(handlers);
    // A host of the Apps SDK alone never answers: the view then stays on window.openai.
    const answer = await request("ui/initialize", {
      appInfo: { name: "metacortex-" + name, version: "1" },
      appCapabilities: { availableDisplayModes: ["inline"] },
      protocolVersion: PROTOCOL,
    });
    connected = true;
    applyContext((answer && answer.hostContext) || {});
    post({ method: "ui/notifications/initialized", params: {} });
    watchSize();
  }
  // callTool's answer as a tool result: the result itself, or (OpenAI's older typings)
  // { result } holding the tool's text, which for MetaCortex is its structuredContent's JSON.
  function asResult(answer) {
    if (!answer || typeof answer.result !== "string") return answer;
    let data = null;
    try {
      data = JSON.parse(answer.result);
    } catch (_) { /* not JSON: text alone */ }
    const content = [{ type: "text", text: answer.result }];
    if (data && data.error && Object.keys(data).length === 1) return { isError: true, content };
    return { structuredContent: data, content };
  }
  // A tool's result, or an Error carrying the tool's own message ({"error": {...}}).
  async function call(name, args) {
    const result = !connected && openai && openai.callTool
      ? asResult(await openai.callTool(name, args))
      : await request("tools/call", { name, arguments: args });
    if (result && result.isError) {
      let message = "the tool failed";
      try {
        message = JSON.parse(result.content[0].text).error.message || message;
      } catch (_) { /* not our error shape: keep the generic message */ }
      throw new Error(message);
    }
    return result;
  }
  const read = (uri) => request("resources/read", { uri });
  // resources/read goes through an MCP Apps host only (the Apps SDK has no such call).
  const reads = () => connected || !openai;
  return { start, call, read, reads };
})();
