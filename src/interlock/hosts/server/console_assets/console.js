// The Interlock console: plain DOM, no framework, nothing fetched from elsewhere.
// Text from the server is always set with textContent, never parsed as HTML.
"use strict";

const MAX_ROWS = 10000;       // rows kept in the page; older ones are paged from the server
const ROW_PX = 28;            // matches --row in console.css
let session = null;            // {name, role, csrf}
let rows = [];                 // newest first
let source = null;             // the EventSource of the live stream
let view = "decisions";

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(child ?? ""));
  }
  return node;
}

async function api(path, options = {}) {
  const init = {credentials: "same-origin", headers: {}, ...options};
  if (init.method === "POST") {
    init.headers["Content-Type"] = "application/json";
    if (session) init.headers["X-CSRF-Token"] = session.csrf;
  }
  const resp = await fetch("/ui/api/" + path, init);
  let body = null;
  try { body = await resp.json(); } catch (e) { body = {error: resp.statusText}; }
  if (resp.status === 401 && path !== "login" && path !== "session") { showLogin(); }
  if (!resp.ok) throw new Error(body.error || resp.statusText);
  return body;
}

// -- login ------------------------------------------------------------------------
function showLogin() {
  session = null;
  if (source) { source.close(); source = null; }
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "login";
  $("tabs").hidden = true; $("logout").hidden = true; $("who").textContent = "";
}

async function start(who) {
  session = who;
  $("who").textContent = `${who.name} (${who.role})`;
  $("tabs").hidden = false; $("logout").hidden = false;
  $("login").hidden = true;
  show(view);
  await loadDecisions();
  connect();
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("login-error").textContent = "";
  try {
    const who = await api("login", {method: "POST",
                                    body: JSON.stringify({token: $("token").value})});
    $("token").value = "";
    await start(who);
  } catch (e) { $("login-error").textContent = e.message; }
});

$("logout").addEventListener("click", async () => {
  try { await api("logout", {method: "POST", body: "{}"}); } finally { showLogin(); }
});

// -- views ----------------------------------------------------------------------------
function show(name) {
  view = name;
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== name;
  for (const b of document.querySelectorAll("#tabs button")) {
    b.classList.toggle("on", b.dataset.view === name);
  }
  if (name === "hooks") loadHooks();
  if (name === "deadletters") loadDeadLetters();
  if (name === "health") loadHealth();
  if (name === "decisions") render();
}
for (const b of document.querySelectorAll("#tabs button")) {
  b.addEventListener("click", () => show(b.dataset.view));
}

// -- decisions: a virtualised list ------------------------------------------------------
function filters() {
  const q = new URLSearchParams();
  for (const k of ["verdict", "hook", "tool", "session"]) {
    const v = $("f-" + k).value.trim();
    if (v) q.set(k, v);
  }
  return q;
}

async function loadDecisions() {
  const q = filters(); q.set("limit", "500");
  const page = await api("decisions?" + q);
  rows = page.rows;
  render();
}

async function loadOlder() {
  if (!rows.length || rows.length >= MAX_ROWS) return;
  const q = filters(); q.set("limit", "500"); q.set("before", rows[rows.length - 1].seq);
  const page = await api("decisions?" + q);
  if (page.rows.length) { rows = rows.concat(page.rows).slice(0, MAX_ROWS); render(); }
}

function connect() {
  if (source) source.close();
  const q = filters();
  if (rows.length) q.set("after", rows[0].seq);
  source = new EventSource("/ui/api/stream?" + q);
  source.onopen = () => { $("live").textContent = "live"; $("live").className = "pill ok"; };
  source.onerror = () => { $("live").textContent = "reconnecting"; $("live").className = "pill"; };
  source.onmessage = (msg) => {
    const row = JSON.parse(msg.data);
    if (rows.length && row.seq <= rows[0].seq) return;
    rows.unshift(row);
    if (rows.length > MAX_ROWS) rows.length = MAX_ROWS;
    scheduleRender();
  };
}

let pending = false;
function scheduleRender() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => { pending = false; render(); });
}

function render() {
  if (view !== "decisions") return;
  const box = $("rows"), spacer = $("spacer");
  spacer.style.height = rows.length * ROW_PX + "px";
  const first = Math.max(0, Math.floor(box.scrollTop / ROW_PX) - 10);
  const last = Math.min(rows.length, first + Math.ceil(box.clientHeight / ROW_PX) + 20);
  const frag = document.createDocumentFragment();
  for (let i = first; i < last; i++) frag.append(rowNode(rows[i], i));
  spacer.replaceChildren(frag);
  $("count").textContent = `${rows.length} decisions`;
}

function rowNode(r, i) {
  const time = new Date(r.at * 1000).toLocaleTimeString();
  const node = el("div", {class: "row", "data-seq": r.seq, onclick: () => openDetail(r.seq)},
    el("span", {}, time), el("span", {}, r.event), el("span", {}, r.tool || ""),
    el("span", {title: r.subject || ""}, r.subject || ""),
    el("span", {class: "verdict v-" + r.verdict}, r.verdict), el("span", {}, r.hook || ""),
    el("span", {title: r.reason || ""}, r.reason || ""),
    el("span", {}, r.latency_ms == null ? "" : r.latency_ms.toFixed(1)),
    el("span", {}, r.session || ""));
  node.style.top = i * ROW_PX + "px";
  return node;
}

$("rows").addEventListener("scroll", () => {
  const box = $("rows");
  scheduleRender();
  if (box.scrollTop + box.clientHeight >= box.scrollHeight - ROW_PX * 5) loadOlder();
});
for (const k of ["verdict", "hook", "tool", "session"]) {
  $("f-" + k).addEventListener("change", async () => { await loadDecisions(); connect(); });
}

async function openDetail(seq) {
  const rec = await api("decisions/" + seq);
  $("detail-title").textContent = `${rec.event} → ${rec.verdict}` +
    (rec.hook ? ` by ${rec.hook}` : "");
  const table = $("detail-hooks");
  table.replaceChildren(el("tr", {}, el("th", {}, "hook"), el("th", {}, "status"),
                              el("th", {}, "verdict"), el("th", {}, "ms"),
                              el("th", {}, "reason / error")));
  for (const h of rec.hooks) {
    table.append(el("tr", {}, el("td", {}, h.hook), el("td", {}, h.status),
                    el("td", {class: "v-" + h.verdict}, h.verdict),
                    el("td", {}, h.latency_ms == null ? "" : String(h.latency_ms)),
                    el("td", {}, h.error || h.reason || "")));
  }
  $("detail-json").textContent = JSON.stringify({outcome: rec.outcome, payload: rec.payload},
                                                null, 2);
  $("detail").hidden = false;
}
$("detail-close").addEventListener("click", () => { $("detail").hidden = true; });

// -- hooks ----------------------------------------------------------------------------
async function loadHooks() {
  $("hooks-error").textContent = "";
  const data = await api("hooks");
  const table = $("hooks-table");
  table.replaceChildren(el("tr", {}, ...["hook", "source", "state", "approval", "breaker",
    "p50 ms", "p99 ms", "errors", ""].map((h) => el("th", {}, h))));
  for (const h of data.hooks) {
    const approval = !h.needs_approval ? "not needed" : h.approved ? "approved"
      : h.drift ? "changed since approval" : "not approved";
    const actions = el("td", {});
    if (session.role === "admin") {
      if (h.needs_approval && !h.approved) actions.append(button("approve", h.name));
      if (h.needs_approval && h.approved) actions.append(button("revoke", h.name));
      actions.append(button(h.enabled ? "disable" : "enable", h.name));
    }
    table.append(el("tr", {"data-hook": h.name}, el("td", {}, h.name), el("td", {}, h.source),
      el("td", {}, h.state), el("td", {}, approval), el("td", {}, h.breaker),
      el("td", {}, h.p50_ms == null ? "" : String(h.p50_ms)),
      el("td", {}, h.p99_ms == null ? "" : String(h.p99_ms)),
      el("td", {}, `${h.failures}/${h.calls}`), actions));
  }
}

function button(action, name) {
  return el("button", {"data-action": action, onclick: async () => {
    try {
      await api(`hooks/${encodeURIComponent(name)}/${action}`, {method: "POST", body: "{}"});
      await loadHooks();
    } catch (e) { $("hooks-error").textContent = e.message; }
  }}, action);
}

// -- dead letters ---------------------------------------------------------------------
async function loadDeadLetters() {
  $("dl-error").textContent = "";
  const data = await api("deadletters" + ($("dl-all").checked ? "?all=1" : ""));
  const table = $("dl-table");
  table.replaceChildren(el("tr", {}, ...["id", "when", "hook", "event", "mode", "error",
    "resolved", ""].map((h) => el("th", {}, h))));
  for (const d of data.records) {
    const actions = el("td", {});
    if (session.role === "admin" && !d.resolved_at) {
      actions.append(el("button", {"data-resolve": d.id, onclick: () => resolve(d.id)},
                        "resolve"));
      actions.append(el("button", {onclick: () => resolve(null, d.hook)}, "all of this hook"));
    }
    table.append(el("tr", {"data-dl": d.id}, el("td", {}, String(d.id)),
      el("td", {}, new Date(d.at * 1000).toLocaleString()), el("td", {}, d.hook),
      el("td", {}, d.event), el("td", {}, d.mode), el("td", {}, d.error),
      el("td", {}, d.resolved_at ? `${d.resolved_by || ""} ${d.note || ""}` : ""), actions));
  }
}
$("dl-all").addEventListener("change", loadDeadLetters);

async function resolve(id, hook) {
  const note = $("dl-note").value;
  try {
    if (hook) await api("deadletters/resolve", {method: "POST",
                                                body: JSON.stringify({hook, note})});
    else await api(`deadletters/${id}/resolve`, {method: "POST",
                                                  body: JSON.stringify({note})});
    await loadDeadLetters();
  } catch (e) { $("dl-error").textContent = e.message; }
}

// -- health and charts -------------------------------------------------------------------
async function loadHealth() {
  const [h, c] = await Promise.all([api("health"), api("charts")]);
  const cards = $("health-cards");
  const card = (label, value) => el("div", {class: "card"}, el("b", {}, String(value)), label);
  cards.replaceChildren(card("revision", h.revision),
    card("open breakers", h.breakers_open.length ? h.breakers_open.join(", ") : "none"),
    card("store", h.store ? h.store.backend : "none"),
    card("store health", h.store ? (h.store.ok ? "ok" : h.store.problems.join("; ")) : "-"),
    card("store backlog", h.store ? h.store.backlog : "-"),
    card("unresolved dead letters", h.store ? h.store.unresolved : "-"),
    card("agents seen", h.agents.map((a) => `${a.platform} (${a.ago_s}s ago)`).join(", ")
         || "none"),
    card("viewers", h.viewers));
  $("chart-decisions").replaceChildren(barChart(c.minutes, c.decisions));
  $("chart-latency").replaceChildren(lineChart(c.minutes, c.p99_ms));
  const table = $("changes");
  table.replaceChildren(el("tr", {}, ...["when", "revision", "applied", "files", "error"]
    .map((x) => el("th", {}, x))));
  for (const ch of h.changes.slice().reverse()) {
    table.append(el("tr", {}, el("td", {}, new Date(ch.at * 1000).toLocaleTimeString()),
      el("td", {}, String(ch.revision)), el("td", {}, ch.applied ? "yes" : "no"),
      el("td", {}, ch.files.join(", ")), el("td", {}, ch.error || ch.blocked || "")));
  }
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}
const COLORS = {block: "#c0392b", stop: "#922b21", approve: "#1e8449", modify: "#b9770e",
                ask: "#7d3c98", none: "#aab0bc"};

function barChart(minutes, series) {
  const w = 720, h = 140, bw = w / minutes.length;
  const totals = minutes.map((_, i) => Object.values(series).reduce((s, v) => s + v[i], 0));
  const max = Math.max(1, ...totals);
  const root = svg("svg", {width: w, height: h + 16, viewBox: `0 0 ${w} ${h + 16}`,
                           role: "img", "aria-label": "decisions per minute"});
  minutes.forEach((_, i) => {
    let y = h;
    for (const [verdict, values] of Object.entries(series)) {
      const bh = values[i] / max * (h - 10);
      if (!bh) continue;
      y -= bh;
      const rect = svg("rect", {x: i * bw + 1, y, width: bw - 2, height: bh,
                                fill: COLORS[verdict] || "#5d6d7e"});
      rect.append(svg("title", {}));
      rect.firstChild.textContent = `${verdict}: ${values[i]}`;
      root.append(rect);
    }
  });
  const label = svg("text", {x: 4, y: h + 13, "font-size": 11, fill: "#6b7385"});
  label.textContent = `max ${max}/min`;
  root.append(label);
  let x = 110;
  for (const verdict of Object.keys(series)) {
    root.append(svg("rect", {x, y: h + 4, width: 10, height: 10,
                             fill: COLORS[verdict] || "#5d6d7e"}));
    const name = svg("text", {x: x + 14, y: h + 13, "font-size": 11, fill: "#6b7385"});
    name.textContent = verdict;
    root.append(name);
    x += 24 + verdict.length * 7;
  }
  return root;
}

function lineChart(minutes, values) {
  const w = 720, h = 100;
  const max = Math.max(1, ...values.filter((v) => v != null));
  const root = svg("svg", {width: w, height: h + 16, viewBox: `0 0 ${w} ${h + 16}`,
                           role: "img", "aria-label": "p99 latency per minute"});
  const pts = values.map((v, i) => v == null ? null
    : `${(i + 0.5) * w / values.length},${h - v / max * (h - 10)}`).filter(Boolean);
  if (pts.length) root.append(svg("polyline", {points: pts.join(" "), fill: "none",
                                               stroke: "#2e86c1", "stroke-width": 2}));
  for (const p of pts) {
    const [cx, cy] = p.split(",");
    root.append(svg("circle", {cx, cy, r: 3, fill: "#2e86c1"}));
  }
  const label = svg("text", {x: 4, y: h + 13, "font-size": 11, fill: "#6b7385"});
  label.textContent = `max ${max} ms`;
  root.append(label);
  return root;
}

// -- start ----------------------------------------------------------------------------------
api("session").then(start).catch(showLogin);
