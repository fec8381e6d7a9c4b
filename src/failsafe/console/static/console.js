"use strict";
// The failsafe console page: one event stream (/api/events) carries every view; buttons POST with the token header.
// The server writes the token in (it sends the page only to a request that had it: ?token= or the cookie).
const TOKEN = /*CONSOLE_TOKEN*/"";
// Keep the token out of the address bar (a projected screen shows it); the cookie keeps the page working on reload.
if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", location.pathname + location.hash);
// The report's leader plot colours (failsafe.reports.plots.BROKER_COLOURS).
const BROKER_COLOURS = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
const NO_LEADER = "#000000";
const state = { snapshot: null, startedMs: null, nowMs: null, partitions: new Map(), nodes: new Map(), faults: [], brokers: new Set() };

const $ = (sel) => document.querySelector(sel);
const esc = (v) => String(v ?? "-").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const colour = (b) => (b < 0 ? NO_LEADER : BROKER_COLOURS[((b % BROKER_COLOURS.length) + BROKER_COLOURS.length) % BROKER_COLOURS.length]);

function message(text, ok) {
  const m = $("#message");
  m.textContent = text;
  m.className = ok ? "ok" : "error";
}

// -- the event stream --------------------------------------------------------------------------
function connect() {
  const es = new EventSource("/api/events?token=" + encodeURIComponent(TOKEN));
  es.onmessage = (e) => {
    const data = JSON.parse(e.data);
    addTimeline(data.timeline);
    state.snapshot = data;
    state.nowMs = data.time_ms;
    render();
    $("#live").textContent = "live · last change " + new Date(data.time_ms).toLocaleTimeString();
    $("#live").className = "";
  };
  es.onerror = () => { $("#live").textContent = "disconnected, retrying…"; $("#live").className = "stale"; };
}

// -- actions -----------------------------------------------------------------------------------
function confirmThen(text, run) {
  const dialog = $("#confirm");
  $("#confirm-text").textContent = text;
  dialog.onclose = () => { if (dialog.returnValue === "ok") run(); };
  dialog.returnValue = "";
  dialog.showModal();
}

async function post(path, what) {
  message(what + "…", true);
  try {
    const response = await fetch(path, { method: "POST", headers: { "X-Failsafe-Token": TOKEN } });
    const body = await response.json();
    if (!response.ok) { message(what + ": " + (body.error || response.statusText), false); return; }
    message(what + ": done" + (body.state ? " (" + body.state + ")" : "") + (body.elected ? " (elected " + (body.elected.join(", ") || "none") + ")" : ""), true);
  } catch (err) {
    message(what + ": " + err, false);
  }
}

document.addEventListener("click", (e) => {
  const b = e.target.closest("button[data-action]");
  if (!b) return;
  if (b.dataset.action === "elect-leaders") {
    confirmThen("Run a preferred leader election on every partition?", () => post("/api/elect-leaders", "preferred leader election"));
    return;
  }
  const { role, node, action } = b.dataset;
  confirmThen(`${action} ${role} ${node}?`, () => post(`/api/nodes/${role}/${node}/${action}`, `${action} ${role} ${node}`));
});
$("#show-internal").addEventListener("change", () => render());

// -- views -------------------------------------------------------------------------------------
function render() {
  const s = state.snapshot;
  if (!s) return;
  renderCluster(s.cluster);
  renderTopics(s.topics);
  renderGroups(s.groups);
  renderTimeline();
  renderRuns(s.runs);
}

const ACTIONS = { up: ["kill", "stop", "pause"], paused: ["resume", "kill"], down: ["start"] };

function renderCluster(c) {
  if (!c) return;
  $("#facts").textContent = `${c.mode} · Kafka ${c.kafka_version} · cluster ${c.cluster_id || "?"} · ${c.bootstrap_servers}`;
  const urp = c.under_replicated_partitions, off = c.offline_partitions;
  $("#cluster-summary").innerHTML =
    `active controller <b id="active-controller">${esc(c.active_controller ?? "none known")}</b> · ` +
    `under-replicated partitions <span id="urp" class="${urp ? "bad" : ""}">${urp}</span> · ` +
    `offline partitions <span id="offline" class="${off ? "bad" : ""}">${off}</span>` +
    (c.metadata_error ? ` · <span class="bad">${esc(c.metadata_error)}</span>` : "") +
    (c.poller_error ? ` · <span class="bad">the console could not read: ${esc(c.poller_error)}</span>` : "");
  $("#nodes tbody").innerHTML = c.nodes.map((n) => {
    const role = n.role === "zookeeper" ? "zookeeper" : n.role.startsWith("broker") ? "broker" : "controller";
    const buttons = (ACTIONS[n.state] || []).map((a) =>
      `<button data-action="${a}" data-role="${role}" data-node="${n.id}"${a === "kill" ? ' class="danger"' : ""}>${a}</button>`).join("");
    const extra = n.zookeeper_mode ? ` (${esc(n.zookeeper_mode)})` : n.registered === false && n.state === "up" ? " (not registered)" : "";
    return `<tr data-node="${esc(n.name)}"><td>${esc(n.name)}</td><td>${n.id}</td><td>${esc(n.role)}${n.active_controller ? ' <span class="active">(active controller)</span>' : ""}</td>` +
      `<td>${esc(n.pid)}</td><td>${esc(n.port)}</td><td>${esc(n.controller_port)}</td>` +
      `<td class="state state-${n.state}">${n.state}${extra}</td>` +
      `<td>${n.leaders ?? "-"}</td><td class="${n.under_replicated ? "bad" : ""}">${n.under_replicated ?? "-"}</td>` +
      `<td class="${n.offline ? "bad" : ""}">${n.offline ?? "-"}</td><td class="metrics">${nodeMetrics(n.metrics)}</td><td>${buttons}</td></tr>`;
  }).join("");
}

// A node's metrics as its JMX exporter served them (views.metrics_view): a few numbers and a link to the endpoint.
function nodeMetrics(m) {
  if (!m) return "-";
  const link = `<a href="${esc(m.url)}" target="_blank" rel="noopener">endpoint</a>`;
  if (m.error) return `<span class="bad" title="${esc(m.error)}">unreadable</span> · ${link}`;
  const num = (v, digits = 0) => (v === null || v === undefined ? "?" : Number(v).toFixed(digits));
  const parts = [];
  if (m.under_replicated !== undefined) parts.push(`<span class="${m.under_replicated ? "bad" : ""}">URP ${num(m.under_replicated)}</span>`);
  if (m.produce_p99_ms !== undefined) parts.push(`produce p99 ${num(m.produce_p99_ms)} ms`);
  if (m.request_queue !== undefined) parts.push(`queue ${num(m.request_queue)}`);
  if (m.network_idle !== undefined) parts.push(`network idle ${num(m.network_idle * 100)}%`);
  if (m.fenced_brokers !== undefined) parts.push(`<span class="${m.fenced_brokers ? "bad" : ""}">fenced ${num(m.fenced_brokers)}</span>`);
  if (m.offline_partitions !== undefined) parts.push(`<span class="${m.offline_partitions ? "bad" : ""}">offline ${num(m.offline_partitions)}</span>`);
  return `${parts.join(" · ")} · ${link}`;
}

function renderTopics(topics) {
  const internal = $("#show-internal").checked;
  $("#topics-list").innerHTML = topics.filter((t) => internal || !t.internal).map((t) => {
    const configs = Object.entries(t.configs).map(([k, v]) => `${esc(k)}=${esc(v.value)}${v.source && v.source !== "DEFAULT_CONFIG" ? "" : ' <span class="muted">(default)</span>'}`).join(" · ");
    const rows = t.partitions.map((p) => {
      const leader = p.offline ? '<span class="offline">none</span>'
        : `${p.leader}${p.non_preferred_leader ? ` <span class="non-preferred" title="preferred leader: ${p.preferred_leader}">not preferred (${p.preferred_leader})</span>` : ""}`;
      const isr = p.replicas.map((r) => `<span class="replica ${p.isr.includes(r) ? "in-sync" : "missing"}">${r}</span>`).join("");
      return `<tr data-partition="${esc(t.name)}-${p.partition}"><td>${p.partition}</td><td class="leader">${leader}</td>` +
        `<td>${p.replicas.join(",")}</td><td class="isr">${isr}${p.under_min_isr ? ' <span class="bad">below min.insync.replicas</span>' : ""}</td></tr>`;
    }).join("");
    return `<h3 data-topic="${esc(t.name)}">${esc(t.name)} <span class="muted">RF ${t.replication_factor}, ${t.partitions.length} partitions</span>` +
      `${t.under_replicated ? ` <span class="bad">${t.under_replicated} under-replicated</span>` : ""}${t.offline ? ` <span class="bad">${t.offline} offline</span>` : ""}</h3>` +
      `<p class="muted">${configs}</p>` +
      `<table><thead><tr><th>partition</th><th>leader</th><th>replicas</th><th>ISR (red: replica not in sync)</th></tr></thead><tbody>${rows}</tbody></table>`;
  }).join("") || '<p class="muted">no topics</p>';
}

function renderGroups(g) {
  if (!g) return;
  const groups = g.groups || [];
  $("#groups-list").innerHTML = (g.error ? `<p class="bad">${esc(g.error)}</p>` : "") + (groups.map((d) => {
    if (d.error) return `<h3>${esc(d.group)}</h3><p class="bad">${esc(d.error)}</p>`;
    const members = d.member_list.map((m) => `<tr><td>${esc(m.consumer_id)}</td><td>${esc(m.client_id)}</td><td>${esc(m.host)}</td><td>${esc(m.assignment.join(", ") || "-")}</td></tr>`).join("");
    const parts = d.partitions.map((r) => `<tr><td>${esc(r.topic)}</td><td>${r.partition}</td><td>${esc(r.current_offset)}</td><td>${esc(r.log_end_offset)}</td>` +
      `<td class="${r.lag ? "warn" : ""}">${esc(r.lag)}</td><td>${esc(r.consumer_id)}</td><td>${esc(r.host)}</td><td>${esc(r.client_id)}</td></tr>`).join("");
    return `<h3 data-group="${esc(d.group)}">${esc(d.group)} <span class="muted">${esc(d.state)} · protocol ${esc(d.type)} · assignor ${esc(d.assignor || "-")} · ` +
      `coordinator ${esc(d.coordinator)} · ${d.members} members · total lag ${d.total_lag}</span></h3>` +
      (members ? `<table><thead><tr><th>consumer id</th><th>client id</th><th>host</th><th>assigned partitions</th></tr></thead><tbody>${members}</tbody></table>` : "") +
      `<table><thead><tr><th>topic</th><th>partition</th><th>current offset</th><th>log end offset</th><th>lag</th><th>consumer id</th><th>host</th><th>client id</th></tr></thead><tbody>${parts}</tbody></table>`;
  }).join("") || '<p class="muted">no consumer groups</p>');
}

function renderRuns(r) {
  if (!r) return;
  const live = r.live;
  $("#live-run").innerHTML = live ? `<p><b>running: ${esc(live.id)}</b> · phase <b>${esc(live.phase)}</b> · sends acknowledged <b id="live-ok">${live.sends.ok}</b>, ` +
    `failed <b>${live.sends.fail}</b>, unknown <b>${live.sends.info}</b> (invoked ${live.sends.invoked}) · faults: ` +
    (live.faults.map((f) => `${esc(f.fault)} ${esc(f.target)} ${esc((f.nodes || []).join(","))}${f.stop_ms ? "" : " (active)"}`).join("; ") || "none") + "</p>" : "";
  $("#runs-table tbody").innerHTML = r.runs.map((x) => `<tr><td>${esc(x.scenario)}</td><td>${esc(x.stamp)}</td>` +
    `<td class="verdict-${esc(x.verdict)}">${x.running ? "running" : esc(x.verdict ?? "not checked")}</td>` +
    `<td>${x.report ? `<a target="_blank" rel="noopener" href="/runs/${x.id.split("/").map(encodeURIComponent).join("/")}/report.html?token=${encodeURIComponent(TOKEN)}">report.html</a>` : "-"}</td>` +
    `<td><button data-run="${esc(x.id)}">groups</button></td></tr>`).join("");
}

// -- one run's groups: rebalances and share groups (read from its history on request) -----------------------------------
// nextAt: when a running scenario's view is read again (never while a read is under way: nextAt is Infinity then).
const runView = { id: null, nextAt: Infinity };

async function getJSON(path) {
  const response = await fetch(path, { headers: { "X-Failsafe-Token": TOKEN } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

async function loadRun(id, quiet) {
  runView.id = id;
  runView.nextAt = Infinity;
  const began = Date.now();
  const base = "/api/runs/" + id.split("/").map(encodeURIComponent).join("/");
  if (!quiet) message(`reading the history of ${id}…`, true);
  try {
    const [rebalances, shares] = await Promise.all([getJSON(base + "/rebalances"), getJSON(base + "/share-groups")]);
    if (runView.id !== id) return;  // another run was picked meanwhile
    // Reading a long history costs the machine the scenario runs on: at most a fifth of the time, and every 5 s at most.
    runView.nextAt = Date.now() + Math.max(5000, 4 * (Date.now() - began));
    renderRebalances(rebalances);
    renderShareGroups(shares);
    if (!quiet) message(`${id}: ${rebalances.groups.length} consumer groups, ${shares.groups.length} share groups`, true);
  } catch (err) {
    message(`${id}: ${err.message || err}`, false);
  }
}

document.addEventListener("click", (e) => {
  const b = e.target.closest("button[data-run]");
  if (b) loadRun(b.dataset.run, false);
});

const ms = (v) => (v == null ? "-" : `${Math.round(v)} ms`);

function renderRebalances(r) {
  const verdict = r.error ? `<span class="bad">checker failed: ${esc(r.error)}</span>`
    : `rebalance checker: <span class="verdict-${r.valid === true ? "VALID" : r.valid === false ? "INVALID" : "UNKNOWN"}">${esc(r.valid)}</span>` +
      (r.violations.length ? ` (${r.violations.map(esc).join(", ")})` : "");
  $("#rebalances-run").innerHTML = `${esc(r.id)} · ${verdict} · from ${r.source === "results.json" ? "its results.json" : "its history, with the checker's defaults"}`;
  $("#rebalances-list").innerHTML = r.groups.map((g) => {
    const rows = g.rebalances.map((ev) => {
      const parts = ev.partitions.length ? ev.partitions : [null];
      const kept = !ev.measured ? "-" : ev.survivors_kept ? "yes"
        : `<span class="${ev.violations.includes("survivors-interrupted") ? "bad" : "warn"}">no: ${esc(ev.interrupted.join(", "))}</span>`;
      const expected = ev.measured ? (ev.survivors_kept_expected ? " (expected)" : ' <span class="muted">(not expected)</span>') : "";
      const span = `rowspan="${parts.length}"`;
      return parts.map((p, i) => {
        const head = i ? "" : `<td ${span}>${ev.at_s ?? "-"} s <span class="muted">${new Date(ev.time_ms).toLocaleTimeString()}</span></td>` +
          `<td ${span} class="change-${ev.kind}">${ev.kind}</td><td ${span}>${esc(ev.members.join(", "))}</td>` +
          `<td ${span}>${esc(ev.source)}${ev.fault_id != null ? ` #${ev.fault_id}` : ""}</td><td ${span}>${esc(ev.protocol)}</td>` +
          `<td ${span}>${ev.measured ? ms(ev.pause_ms) : "-"}</td>`;
        const tail = i ? "" : `<td ${span}>${kept}${expected}</td>`;
        if (!p) return `<tr class="event-start">${head}<td colspan="4" class="muted">no partition</td>${tail}</tr>`;
        let what;
        if (p.change === "moved") {
          what = p.reassigned ? `moved to ${esc(p.new_owner)} after ${ms(p.reassigned_ms)}` : `<span class="${p.violation ? "bad" : "warn"}">never reassigned</span>`;
        } else if (p.change === "kept") {
          what = !p.revoked ? "kept" : `<span class="${p.violation ? "bad" : "warn"}">revoked after ${ms(p.revoked_ms)}${p.lost ? " (lost: its own session)" : ""}</span>`;
        } else {
          what = "assigned";
        }
        return `<tr${i ? "" : ' class="event-start"'} data-rebalance="${esc(g.group)}|${ev.time_ms}|${esc(p.topic)}-${p.partition}">${head}` +
          `<td>${esc(p.topic)}-${p.partition}</td><td>${esc(p.owner ?? ev.members[0])}</td><td>${what}</td>` +
          `<td class="gap">${p.change === "assigned" ? "-" : ms(p.gap_ms)}</td>${tail}</tr>`;
      }).join("");
    }).join("");
    return `<h3 data-rebalance-group="${esc(g.group)}">${esc(g.group)} <span class="muted">protocol ${esc(g.protocol ?? "unknown")} · members ${esc(g.members.join(", "))} · ` +
      `${g.departures} left, ${g.joins} joined · longest pause ${ms(g.max_pause_ms)}</span>` +
      `${g.survivors_interrupted ? ` <span class="bad">${g.survivors_interrupted} survivors' partitions interrupted</span>` : ""}</h3>` +
      `<table><thead><tr><th>when (since the run began)</th><th>change</th><th>member</th><th>cause</th><th>protocol</th><th>pause</th>` +
      `<th>partition</th><th>owner</th><th>what became of it</th><th>unowned (gap between reads)</th><th>survivors kept</th></tr></thead><tbody>${rows}</tbody></table>`;
  }).join("") || '<p class="muted">no consumer group in this run</p>';
}

function renderShareGroups(s) {
  $("#share-groups-run").textContent = `${s.id} · as of ${s.as_of_ms ? new Date(s.as_of_ms).toLocaleTimeString() : "-"} (the history's last op) · lock ${s.lock_duration_ms} ms`;
  $("#share-groups-list").innerHTML = s.groups.map((g) => {
    const members = g.members.map((m) => `<tr><td>${esc(m.member)}</td><td>${m.acquired}</td><td class="${m.in_flight ? "warn" : ""}">${m.in_flight}</td>` +
      `<td>${m.stopped ? "stopped" : "-"}</td></tr>`).join("");
    const parts = g.partitions.map((p) => `<tr data-share-partition="${esc(g.group)}|${esc(p.topic)}-${p.partition}"><td>${esc(p.topic)}</td><td>${p.partition}</td>` +
      `<td>${p.acquired}</td><td>${p.records}</td><td>${p.accepted}</td><td>${p.released}</td><td>${p.rejected}</td>` +
      `<td class="${p.acks_refused + p.acks_unknown ? "warn" : ""}">${p.acks_refused} / ${p.acks_unknown}</td>` +
      `<td class="in-flight">${p.in_flight}</td><td>${esc(p.max_delivery_count)}</td>` +
      `<td>${esc(p.holders.map((h) => `${h.member} (${h.in_flight})`).join(", ") || "-")}</td></tr>`).join("");
    return `<h3 data-share-group="${esc(g.group)}">${esc(g.group)} <span class="muted">acquired ${g.acquired} · accepted ${g.accepted} · released ${g.released} · ` +
      `rejected ${g.rejected} · in flight ${g.in_flight} · highest delivery count ${esc(g.max_delivery_count)} · holding now: ${esc(g.holders.join(", ") || "nobody")}</span></h3>` +
      `<table><thead><tr><th>member</th><th>acquired</th><th>in flight</th><th></th></tr></thead><tbody>${members}</tbody></table>` +
      `<table><thead><tr><th>topic</th><th>partition</th><th>acquired</th><th>records</th><th>accepted</th><th>released</th><th>rejected</th>` +
      `<th>acks refused / unknown</th><th>in flight</th><th>highest delivery count</th><th>held by</th></tr></thead><tbody>${parts}</tbody></table>`;
  }).join("") || '<p class="muted">no share group in this run</p>';
}

// -- the timeline ------------------------------------------------------------------------------
function addTimeline(t) {
  if (!t) return;
  if (t.started_ms != null) state.startedMs = t.started_ms;
  for (const e of t.events) {
    if (e.kind === "partition") {
      const key = `${e.topic}-${e.partition}`;
      const list = state.partitions.get(key) || [];
      list.push({ t: e.time_ms, leader: e.leader, short: e.isr.length < e.replicas.length, topic: e.topic });
      state.partitions.set(key, list);
      e.replicas.forEach((b) => state.brokers.add(b));
    } else if (e.kind === "partition-gone") {
      const list = state.partitions.get(`${e.topic}-${e.partition}`);
      if (list) list.push({ t: e.time_ms, gone: true });
    } else if (e.kind === "node") {
      const key = `${e.role} ${e.node}`;
      const list = state.nodes.get(key) || [];
      list.push({ t: e.time_ms, state: e.state });
      state.nodes.set(key, list);
    } else if (e.kind === "fault") {
      state.faults.push(e);
    }
  }
}

function renderTimeline() {
  if (state.startedMs == null) return;
  const internal = $("#show-internal").checked;
  const rows = [...state.partitions.entries()].filter(([, l]) => internal || !l[0].topic.startsWith("__")).map(([k]) => k).sort();
  // The chart grows with the clock between changes (the server sends only changes).
  const t0 = state.startedMs, t1 = Math.max(Date.now(), state.nowMs || t0, t0 + 1000);
  const left = 150, right = 20, rowH = 16, top = 8, width = Math.max(600, $("#timeline-chart").clientWidth || 900);
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (width - left - right);
  const height = top + rows.length * rowH + 36;
  let svg = `<svg width="${width}" height="${height}" xmlns="http://www.w3.org/2000/svg">`;
  // Node outages (down or paused), shaded like the report's fault windows.
  for (const [name, list] of state.nodes) {
    list.forEach((s, i) => {
      if (s.state === "up") return;
      const end = i + 1 < list.length ? list[i + 1].t : t1;
      svg += `<rect x="${x(s.t)}" y="${top}" width="${Math.max(1, x(end) - x(s.t))}" height="${rows.length * rowH}" fill="#d62728" fill-opacity="0.2"><title>${esc(name)} ${s.state}</title></rect>`;
    });
  }
  rows.forEach((key, r) => {
    const y = top + r * rowH;
    svg += `<text x="${left - 6}" y="${y + rowH - 4}" text-anchor="end" font-size="11">${esc(key)}</text>`;
    const list = state.partitions.get(key);
    list.forEach((seg, i) => {
      if (seg.gone) return;
      const end = i + 1 < list.length ? list[i + 1].t : t1;
      const w = Math.max(1, x(end) - x(seg.t));
      svg += `<rect x="${x(seg.t)}" y="${y + 2}" width="${w}" height="${rowH - 7}" fill="${colour(seg.leader)}"><title>${esc(key)}: leader ${seg.leader < 0 ? "none" : seg.leader}${seg.short ? ", ISR short" : ""}</title></rect>`;
      if (seg.short) svg += `<rect x="${x(seg.t)}" y="${y + rowH - 5}" width="${w}" height="3" fill="#c62828"/>`;
    });
  });
  for (const f of state.faults) {
    svg += `<line x1="${x(f.time_ms)}" x2="${x(f.time_ms)}" y1="${top}" y2="${top + rows.length * rowH}" stroke="#d62728" stroke-dasharray="3,2"><title>${esc(f.action)} ${esc(f.role)} ${esc(f.node)} (${esc(f.source)})</title></line>`;
  }
  const axisY = top + rows.length * rowH + 14, span = (t1 - t0) / 1000, step = niceStep(span / 8);
  for (let s = 0; s <= span; s += step) svg += `<text x="${x(t0 + s * 1000)}" y="${axisY}" font-size="10" text-anchor="middle">${s.toFixed(step < 1 ? 1 : 0)}s</text>`;
  svg += `<text x="${left}" y="${axisY + 16}" font-size="10">seconds since the console started (${new Date(t0).toLocaleTimeString()})</text></svg>`;
  $("#timeline-chart").innerHTML = svg;
  $("#timeline-legend").innerHTML = [...state.brokers].sort((a, b) => a - b).map((b) => `<span><i class="swatch" style="background:${colour(b)}"></i>leader ${b}</span>`).join("") +
    `<span><i class="swatch" style="background:${NO_LEADER}"></i>no leader</span><span><i class="swatch" style="background:#c62828"></i>ISR short</span>` +
    `<span><i class="swatch" style="background:#d62728;opacity:.2"></i>node down or paused</span><span>dashed: a fault or action</span>`;
  $("#timeline-faults").innerHTML = state.faults.slice(-20).map((f) => `<li>${new Date(f.time_ms).toLocaleTimeString()} · ${esc(f.action)} ${esc(f.role)} ${esc(f.node ?? "")} ` +
    `<span class="muted">(${esc(f.source)})</span>${f.ok ? "" : ` <span class="bad">failed: ${esc(f.error)}</span>`}</li>`).join("");
}

function niceStep(raw) {
  for (const s of [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600]) if (s >= raw) return s;
  return 7200;
}

connect();
setInterval(() => { if (state.snapshot) renderTimeline(); }, 1000);
// A running scenario's groups change as it runs: read them again every few seconds while its view is open.
setInterval(() => {
  const runs = state.snapshot?.runs?.runs || [];
  if (runView.id && Date.now() >= runView.nextAt && runs.some((x) => x.id === runView.id && x.running)) loadRun(runView.id, true);
}, 1000);
