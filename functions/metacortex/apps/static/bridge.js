"use strict";
// The view's side of the MCP Apps bridge (specification 2026-01-26): JSON-RPC 2.0 over
// postMessage with the host window. ui/initialize then ui/notifications/initialized;
// the host sends tool-input, tool-result and host-context-changed; the view asks the
// host for tools/call and resources/read, and says its height (size-changed).
const bridge = (() => {
  const PROTOCOL = "2026-01-26";
  const waiting = new Map();
  const on = {};
  let next = 1;
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
  function watchSize() {
    let last = 0;
    const say = () => {
      const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
      if (height !== last) {
        last = height;
        post({ method: "ui/notifications/size-changed", params: { height } });
      }
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
  async function start(name, handlers) {
    applyContext({});
    on["ui/notifications/tool-input"] = (p) => handlers.input && handlers.input(p.arguments || {});
    on["ui/notifications/tool-result"] = (p) => handlers.result && handlers.result(p);
    on["ui/notifications/tool-cancelled"] = (p) => (handlers.cancelled || cancelled)(p);
    on["ui/notifications/host-context-changed"] = applyContext;
    const answer = await request("ui/initialize", {
      appInfo: { name: "metacortex-" + name, version: "1" },
      appCapabilities: { availableDisplayModes: ["inline"] },
      protocolVersion: PROTOCOL,
    });
    applyContext((answer && answer.hostContext) || {});
    post({ method: "ui/notifications/initialized", params: {} });
    watchSize();
  }
  // A tool's result, or an Error carrying the tool's own message ({"error": {...}}).
  async function call(name, args) {
    const result = await request("tools/call", { name, arguments: args });
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
  return { start, call, read };
})();
