"use strict";
// Rendering shared by the views: DOM built with textContent only (never innerHTML),
// a memory's card and its full view, and what the caller may do.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
function show(root, ...nodes) {
  root.replaceChildren(...nodes.flat().filter(Boolean));
}
function say(node, text, kind) {
  node.className = "status" + (kind ? " " + kind : "");
  node.textContent = text;
}
// What the caller may do, from the linked result's _meta (tools, level per space).
const caller = { tools: [], spaces: {}, default_space: null, may_write_lifecycle: false };
function learnCaller(result) {
  const known = result && result._meta && result._meta["metacortex/caller"];
  if (known) Object.assign(caller, known);
}
const holds = (tool) => caller.tools.includes(tool);
const writes = (space) => caller.spaces[space] === "write";
const writableSpaces = () => Object.keys(caller.spaces).filter(writes);
// Shows a form whose select#space lists the writable spaces, if the caller may use the tool.
function offerSpaces(form, tool) {
  const spaces = writableSpaces();
  if (!holds(tool) || !spaces.length) return;
  const select = form.querySelector("select#space");
  const chosen = select.value || caller.default_space;
  show(select, spaces.map((key) => el("option", { value: key, selected: key === chosen }, key)));
  form.hidden = false;
}
function author(who) {
  if (!who) return null;
  return who.name + (who.client ? " via " + who.client : "");
}
function when(iso) {
  return iso ? iso.slice(0, 16).replace("T", " ") + " UTC" : "";
}
function docLine(meta) {
  const d = meta && meta.document;
  if (!d) return null;
  const page = d.page ? ", page " + d.page : d.pages ? ", pages " + d.pages.join("-") : "";
  return "From " + (d.title || "a document") + (d.section ? " (" + d.section + ")" : "") + page;
}
function metaLine(meta) {
  return el("p", { class: "meta" },
    el("span", { class: "tag" }, meta.topic),
    el("span", {}, "space " + meta.space),
    meta.branch_state !== "active" ? el("span", {}, meta.branch_state) : null,
    author(meta.created_by) ? el("span", {}, "by " + author(meta.created_by)) : null,
    el("span", {}, when(meta.created_at)));
}
function relatedList(related, open) {
  if (!related || !related.length) return null;
  return el("ul", { class: "links", "aria-label": "Linked memories" },
    related.map((r) => el("li", {},
      el("span", { class: "muted" }, (r.direction === "incoming" ? "← " : "→ ") + r.type + ": "),
      open
        ? el("button", { type: "button", class: "link", onclick: () => open(r.id) }, r.summary)
        : r.summary)));
}
// The full view of one memory (fetch_context's item), with the actions the caller holds.
function memoryView(item, open, changed) {
  const meta = item.metadata;
  const status = el("p", { class: "status", role: "status" });
  const lineage = [];
  if (meta.superseded_by) {
    lineage.push(el("li", {}, "Replaced (" + (meta.supersession_reason || "superseded") + ") by ",
      open ? el("button", { type: "button", class: "link", onclick: () => open(meta.superseded_by) }, meta.superseded_by) : meta.superseded_by));
  }
  for (const source of (meta.provenance && meta.provenance.derived_from) || []) {
    lineage.push(el("li", {}, "Merged from ",
      open ? el("button", { type: "button", class: "link", onclick: () => open(source) }, source) : source));
  }
  const card = el("article", { class: "card", "aria-labelledby": "memory-" + item.id },
    el("h2", { id: "memory-" + item.id }, "Memory " + item.id),
    metaLine(meta),
    docLine(meta) ? el("p", { class: "muted" }, docLine(meta)) : null,
    el("p", { class: "text" }, item.content || item.summary || ""),
    meta.changed_by ? el("p", { class: "muted" }, "Last changed by " + author(meta.changed_by)) : null,
    lineage.length ? el("ul", { class: "links", "aria-label": "Lineage" }, lineage) : null,
    relatedList(item.related, open),
    actions(item, status, changed),
    status);
  return card;
}
function actions(item, status, changed) {
  const meta = item.metadata;
  const lifecycle = caller.may_write_lifecycle && holds("deprecate_context") && writes(meta.space);
  if (!lifecycle || meta.branch_state === "deprecated") return null;
  const row = el("div", { class: "row" });
  const panel = el("div", {});
  const busy = async (work) => {
    for (const b of row.querySelectorAll("button")) b.disabled = true;
    say(status, "Working…");
    try {
      const done = await work();
      say(status, done, "ok");
      if (changed) changed(item.id, done);
    } catch (error) {
      say(status, error.message, "error");
      for (const b of row.querySelectorAll("button")) b.disabled = false;
    }
  };
  if (holds("save_context")) {
    row.append(el("button", { type: "button", onclick: () => {
      const text = el("textarea", { id: "correct-" + item.id }, item.content || "");
      show(panel, el("label", { for: "correct-" + item.id }, "Corrected text"), text,
        el("div", { class: "row" }, el("button", { type: "button", class: "primary", onclick: () => busy(async () => {
          const saved = await bridge.call("save_context", { content: text.value, topic: meta.topic, space: meta.space });
          const fresh = saved.structuredContent.item.id;
          const done = await bridge.call("deprecate_context", { id: item.id, superseding_id: fresh, supersession_reason: "corrected", space: meta.space });
          return contested(done) || "Corrected: the new memory is " + fresh + ".";
        }) }, "Save the correction")));
      text.focus();
    } }, "Correct"));
  }
  row.append(el("button", { type: "button", class: "danger", onclick: () => {
    const by = el("input", { id: "replacement-" + item.id, autocomplete: "off" });
    const why = el("select", { id: "reason-" + item.id },
      el("option", { value: "changed" }, "it changed"), el("option", { value: "corrected" }, "it was wrong"));
    show(panel, el("label", { for: "replacement-" + item.id }, "Replaced by (a memory id, optional)"), by,
      el("label", { for: "reason-" + item.id }, "Why"), why,
      el("div", { class: "row" }, el("button", { type: "button", class: "danger", onclick: () => busy(async () => {
        const args = { id: item.id, space: meta.space, supersession_reason: why.value };
        if (by.value.trim()) args.superseding_id = by.value.trim();
        return contested(await bridge.call("deprecate_context", args)) || "Deprecated.";
      }) }, "Deprecate it")));
  } }, "Deprecate"));
  return el("div", {}, row, panel);
}
function contested(result) {
  const s = result.structuredContent || {};
  return s.contested_ids && s.contested_ids.length ? s.message || "Proposed to its author." : null;
}
// Reads a tool result's error text (isError results carry {"error": {...}}).
function failure(result) {
  try {
    return JSON.parse(result.content[0].text).error.message;
  } catch (_) {
    return "the tool failed";
  }
}
