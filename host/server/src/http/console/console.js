// hermetic operator console. Served from the binary; talks only to this server's
// admin JSON endpoints with the admin token the operator typed (kept in this tab's
// sessionStorage). Everything from the server is shown with textContent, never as
// markup: commands and audit records come from agents.
"use strict";

(() => {
  const TOKEN_KEY = "hermetic.console.token";
  const POLL_MS = 1500;       // approvals and audit: a waiting agent should not wait on us
  const TOOLS_POLL_MS = 15000; // availability changes rarely (checks are cached 30 s)
  const CHOICES = [
    ["once", "Approve once", "Run this command this time"],
    ["session", "Approve for session", "Also allow these rules for the rest of this session"],
    ["always", "Always", "Allow these rules permanently (written to the allowlist file)"],
    ["deny", "Deny", "Do not run it; the agent is told it was denied"],
  ];

  const $ = (id) => document.getElementById(id);
  let timers = [];
  let busy = new Set(); // approval ids being answered

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("data-")) node.setAttribute(k, v);
      else node[k] = v;
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  class Unauthorized extends Error {}

  // One JSON request with the admin token. Errors carry the server's sentence.
  async function api(method, path, body) {
    const headers = { "Authorization": "Bearer " + token(), "Accept": "application/json" };
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const text = await response.text();
    let data = null;
    try { data = JSON.parse(text); } catch (_) { /* a plain-text answer */ }
    if (response.status === 401) throw new Unauthorized("The server refused the admin token.");
    if (!response.ok) {
      const message = (data && typeof data.error === "string") ? data.error : text.trim();
      throw new Error(message || ("HTTP " + response.status));
    }
    return data;
  }

  function status(message, isError) {
    const node = $("status");
    node.textContent = message || "";
    node.classList.toggle("error", !!isError);
  }

  function age(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min " + (s % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " min";
  }

  function failed(error) {
    if (error instanceof Unauthorized) {
      logout(error.message);
    } else {
      status(error.message, true);
    }
  }

  // ── Approvals ────────────────────────────────────────────────────────────────
  function approvalRow(p) {
    const rules = el("td", { class: "rules" });
    (p.rules || []).forEach((rule, i) => {
      rules.append(el("div", {}, el("code", { text: rule })));
      const why = (p.descriptions || [])[i];
      if (why) rules.append(el("div", { class: "why", text: why }));
    });
    const answer = el("td", { class: "answer" });
    for (const [choice, label, title] of CHOICES) {
      let text = label;
      let hint = title;
      const sessionOnly = choice === "always" && !p.always_persists;
      if (sessionOnly) {
        text = "Always (session only)";
        hint = p.always_note || "\"always\" lasts for the session here";
      }
      const button = el("button", {
        type: "button",
        class: choice + (sessionOnly ? " always session-only" : ""),
        title: hint,
        text,
        "data-action": choice,
      });
      button.addEventListener("click", () => answerApproval(p.id, choice, label));
      answer.append(button);
    }
    if (!p.always_persists && p.always_note) {
      answer.append(el("span", { class: "note", text: p.always_note }));
    }
    const tr = el("tr", { "data-id": String(p.id) },
      el("td", { text: "#" + p.id }),
      el("td", {}, el("span", { class: "cmd", text: p.command })),
      rules,
      el("td", { text: p.tenant === "" ? "(operator)" : p.tenant }),
      el("td", { text: p.tool || "—" }),
      el("td", { class: "age", title: "raised " + p.raised }),
      el("td", { class: "deadline" }),
      answer,
    );
    return tr;
  }

  function renderApprovals(list) {
    const tbody = $("approvals").tBodies[0];
    const rows = new Map([...tbody.rows].map((r) => [r.dataset.id, r]));
    const keep = new Set();
    for (const p of list) {
      const id = String(p.id);
      keep.add(id);
      let row = rows.get(id);
      if (!row) {
        // New rows are appended: the list is oldest first, and rows that exist keep
        // their buttons (rebuilding them under a pointer would eat clicks).
        row = approvalRow(p);
        tbody.append(row);
      }
      row.querySelector("td.age").textContent = age(p.age_ms);
      // Silence is a no: when nobody answers by then, the command is denied.
      row.querySelector("td.deadline").textContent = age(p.expires_in_ms);
      for (const b of row.querySelectorAll("button")) b.disabled = busy.has(p.id);
    }
    for (const [id, row] of rows) if (!keep.has(id)) row.remove();
    $("approvals").hidden = list.length === 0;
    $("approvals-empty").hidden = list.length !== 0;
    $("approvals-count").textContent = list.length ? "(" + list.length + ")" : "";
  }

  async function answerApproval(id, choice, label) {
    busy.add(id);
    refreshApprovals().catch(failed);
    try {
      await api("POST", "/approvals/" + id, { answer: choice });
      status("#" + id + ": " + label.toLowerCase() + " — sent.");
    } catch (error) {
      failed(error);
    } finally {
      busy.delete(id);
      refreshApprovals().catch(failed);
      refreshAudit().catch(failed);
    }
  }

  async function refreshApprovals() {
    renderApprovals(await api("GET", "/approvals"));
  }

  // ── Audit ────────────────────────────────────────────────────────────────────
  function detailOf(e) {
    const d = e.detail || {};
    const parts = [];
    if (e.reason) parts.push(e.reason);
    if (d.command) parts.push("$ " + d.command);
    if (d.rules && d.rules.length) parts.push("rules: " + d.rules.join(", "));
    if (d.approver) parts.push("may answer: " + d.approver);
    if (d.decided_by) parts.push("decided by " + d.decided_by);
    if (d.answered_by) parts.push("answered by " + d.answered_by);
    if (typeof e.duration_ms === "number") parts.push(e.duration_ms.toFixed(1) + " ms");
    return parts.join(" · ");
  }

  function outcomeClass(outcome) {
    if (/^(ok|approved|allow)/.test(outcome)) return "pill ok";
    if (/(denied|blocked|error|unknown|rate_limited|unavailable|limit)/.test(outcome)) return "pill bad";
    return "pill warn";
  }

  async function refreshAudit() {
    const answer = await api("GET", "/admin/audit?limit=100");
    const table = $("audit");
    const tbody = table.tBodies[0];
    if (!answer.configured) {
      $("audit-note").textContent = answer.message;
      table.hidden = true;
      return;
    }
    $("audit-note").textContent = "Newest first, the last " + answer.events.length +
      " of " + answer.file + " (hash-chained; check it with hermetic audit verify).";
    tbody.replaceChildren(...answer.events.map((e) => el("tr", {},
      el("td", { class: "time", text: String(e.time || "").replace("T", " ").replace("Z", "") }),
      el("td", { text: e.kind }),
      el("td", { text: e.tenant === "" ? "(operator)" : e.tenant }),
      el("td", { text: e.tool || "" }),
      el("td", {}, el("span", { class: outcomeClass(String(e.outcome)), text: e.outcome })),
      el("td", { class: "detail", text: detailOf(e) }),
    )));
    table.hidden = answer.events.length === 0;
    if (answer.events.length === 0) $("audit-note").textContent = "The audit log (" + answer.file + ") is empty.";
  }

  // ── Tools ────────────────────────────────────────────────────────────────────
  async function refreshTools() {
    const answer = await api("GET", "/admin/tools");
    const blocks = answer.tenants.map((t) => {
      const rows = t.tools.map((tool) => {
        let state;
        if (tool.listed) state = el("span", { class: "pill ok", text: "listed" });
        else if (!tool.served) state = el("span", { class: "pill warn", text: "not served (--toolsets / --disable)" });
        else state = el("span", { class: "pill bad", text: "unavailable" });
        return el("tr", { "data-tool": tool.name },
          el("td", {}, el("code", { text: tool.name })),
          el("td", { text: tool.toolset }),
          el("td", {}, state),
          el("td", { class: "detail", text: tool.reason || "" }),
        );
      });
      const table = el("table", {},
        el("thead", {}, el("tr", {}, ...["Tool", "Toolset", "tools/list", "Why not"].map((h) => el("th", { text: h })))),
        el("tbody", {}, ...rows));
      const hidden = t.hidden.length
        ? el("p", { class: "muted", text: "Not visible to this tenant (outside its toolsets): " + t.hidden.join(", ") })
        : null;
      return el("div", { class: "tenant", "data-tenant": t.tenant },
        el("h3", { text: t.tenant === "" ? "(operator, no tenant)" : "Tenant " + t.tenant }),
        table, hidden);
    });
    $("tools").replaceChildren(...blocks);
  }

  // ── Session ──────────────────────────────────────────────────────────────────
  function every(ms, refresh) {
    const tick = () => refresh().then(() => {
      $("refreshed").textContent = "updated " + new Date().toLocaleTimeString();
    }).catch(failed);
    tick();
    timers.push(setInterval(tick, ms));
  }

  function start() {
    $("login-view").hidden = true;
    $("app").hidden = false;
    $("session").hidden = false;
    every(POLL_MS, refreshApprovals);
    every(POLL_MS, refreshAudit);
    every(TOOLS_POLL_MS, refreshTools);
  }

  function logout(message) {
    timers.forEach(clearInterval);
    timers = [];
    sessionStorage.removeItem(TOKEN_KEY);
    $("app").hidden = true;
    $("session").hidden = true;
    $("login-view").hidden = false;
    $("login-error").textContent = message || "";
    $("token").value = "";
  }

  async function login(event) {
    event.preventDefault();
    const value = $("token").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $("login-error").textContent = "";
    try {
      await api("GET", "/approvals"); // checks the token before showing anything
      $("token").value = "";
      start();
    } catch (error) {
      sessionStorage.removeItem(TOKEN_KEY);
      $("login-error").textContent = error.message;
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login").addEventListener("submit", login);
    $("logout").addEventListener("click", () => logout("Logged out."));
    // The URL `hermetic serve` prints carries its token in the fragment (never sent to
    // the server, so never in a log): keep it for this tab, drop it from the address.
    const given = new URLSearchParams(location.hash.slice(1)).get("token");
    if (given) {
      sessionStorage.setItem(TOKEN_KEY, given);
      history.replaceState(null, "", location.pathname + location.search);
    }
    if (token()) start();
  });
})();
