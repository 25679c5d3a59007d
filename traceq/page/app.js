// app.js - traceq --serve's page: the fleet, the query box; the timeline
// (timeline.js) and the flame chart (flame.js).
// Plain JS and canvas, no libraries. Every request carries the page's
// token (traceq/serve.c answers 403 without it). What the collector
// sends is shown as text (textContent), never parsed as HTML.
'use strict';

const TOKEN = new URLSearchParams(location.search).get('token') || '';
const FLEET_EVERY_MS = 2000;

function api(path, args) {
  const p = new URLSearchParams(args || {});
  p.set('token', TOKEN);
  return fetch(path + '?' + p.toString(), { cache: 'no-store' })
    .then(r => r.json().catch(() => ({ ok: false, error: 'HTTP ' + r.status })));
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// ---- views ----

function show(view) {
  for (const b of document.querySelectorAll('nav button'))
    b.classList.toggle('on', b.dataset.view === view);
  for (const s of document.querySelectorAll('section.view'))
    s.hidden = s.id !== view;
  if (view === 'timeline' && window.tlShown) window.tlShown();
  if (view === 'flame' && window.flameShown) window.flameShown();
}

// ---- the fleet (traceq --stats, --hosts) ----

const fleet = { prev: null };	// the last answer: rates are its differences

function fmtNs(ns) {
  if (ns === null || ns === undefined || ns === '') return '';
  const n = Number(ns), a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(3) + ' s';
  if (a >= 1e6) return (n / 1e6).toFixed(3) + ' ms';
  if (a >= 1e3) return (n / 1e3).toFixed(1) + ' us';
  return n + ' ns';
}

// The host's clock against the collector's (issue 36, traceq --hosts'
// clock columns): its realtime less the collector's measurement of its
// trace clock (> 0: ahead), +- the measurement's uncertainty; '-' where
// the collector has measured nothing (an older agent, an import).
function fmtClock(i) {
  if (i.clock_disagree_ns === null || i.clock_disagree_ns === undefined) return '-';
  const d = Number(i.clock_disagree_ns);
  return (d > 0 ? '+' : '') + fmtNs(d) + ' \u00b1 ' + fmtNs(i.clock_uncertainty_ns);
}

function clockTitle(i) {
  if (i.clock_measured_ns === null || i.clock_measured_ns === undefined)
    return 'no measurement by the collector; events placed by ' + (i.clock_source || 'host');
  return 'the host\'s realtime less the collector\'s measurement: ' + i.clock_disagree_ns +
    ' ns +- ' + i.clock_uncertainty_ns + ' ns; drift ' + i.clock_drift_ppb +
    ' ppb; events placed by ' + (i.clock_source || 'host');
}

function fmtTime(ns) {
  if (!ns) return '';
  const d = new Date(Number(ns) / 1e6);
  return d.toISOString().replace('T', ' ').replace('Z', '');
}

// One row per host (name and machine_id): its cpu=all total, its hosts row.
function fleetRows(ans) {
  const rows = new Map();
  const key = r => r.host + '\u0000' + (r.machine_id || '');
  for (const h of ans.hosts || [])
    rows.set(key(h), { host: h.host, info: h, total: null });
  for (const s of ans.stats || []) {
    if (s.cpu !== 'all') continue;
    const k = key(s);
    if (!rows.has(k)) rows.set(k, { host: s.host, info: {}, total: null });
    rows.get(k).total = s;
  }
  return rows;
}

function rate(k, field, now, rows) {
  const p = fleet.prev;
  if (!p || now <= p.now) return '';
  const a = p.rows.get(k), b = rows.get(k);
  if (!a || !a.total || !b.total) return '';
  return ((b.total[field] - a.total[field]) * 1000 / (now - p.now)).toFixed(0);
}

function renderFleet(ans) {
  const body = document.querySelector('#fleet-table tbody');
  const rows = fleetRows(ans);
  body.textContent = '';
  for (const [k, r] of rows) {
    const t = r.total || {}, i = r.info || {};
    const tr = el('tr');
    tr.dataset.host = r.host;
    const cells = [
      r.host, i.connected || '',
      rate(k, 'agent_events', ans.now_ms, rows), rate(k, 'events', ans.now_ms, rows),
      t.agent_events ?? '', t.events ?? '', t.lost_pages ?? '', t.overrun ?? '',
      fmtClock(i), i.clock_source || '', i.agent || '', fmtTime(i.last_seen),
    ];
    const names = ['host', 'connected', 'rate_in', 'rate_stored', 'events_in',
      'events_stored', 'lost_pages', 'overrun', 'clock_offset', 'clock_source', 'agent',
      'last_seen'];
    cells.forEach((c, j) => {
      const td = el('td', c, j === 1 && c === 'no' ? 'no' : undefined);
      td.dataset.col = names[j];
      if (names[j] === 'clock_offset') {
        td.title = clockTitle(i);
        td.dataset.ns = String(i.clock_disagree_ns ?? '');
        td.dataset.uncertainty = String(i.clock_uncertainty_ns ?? '');
      }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
  fleet.prev = { now: ans.now_ms, rows };
}

function pollFleet() {
  api('/api/stats').then(ans => {
    document.getElementById('fleet-error').textContent = ans.ok ? '' : ans.error;
    if (ans.ok) { fleet.last = ans; renderFleet(ans); }
    document.getElementById('status').textContent =
      'updated ' + new Date().toLocaleTimeString();
    document.body.dataset.fleetUpdates = String(Number(document.body.dataset.fleetUpdates || 0) + 1);
  }).catch(e => {
    document.getElementById('fleet-error').textContent = String(e);
  }).finally(() => setTimeout(pollFleet, FLEET_EVERY_MS));
}

// ---- the query box (traceq QUERY, --count, --hist) ----

const qstate = { after: null, args: null };

function runQuery(more) {
  const mode = document.getElementById('query-mode').value;
  const args = more ? Object.assign({}, qstate.args) : {
    q: document.getElementById('query-q').value,
    mode,
    format: document.getElementById('query-format').value,
    limit: document.getElementById('query-limit').value,
  };
  if (!more && mode === 'hist') args.hist = document.getElementById('query-hist').value;
  if (more && qstate.after) {
    args.after_ts = qstate.after.ts; args.after_id = qstate.after.id;
    args.after_type = qstate.after.type;
  }
  const out = document.getElementById('query-out'), err = document.getElementById('query-error');
  document.body.dataset.queryDone = '0';
  return api('/api/query', args).then(ans => {
    err.textContent = ans.error || '';
    if (!more) out.textContent = '';
    if (ans.ok) out.textContent += ans.text;
    qstate.args = args;
    qstate.after = ans.more ? ans.after : null;
    document.getElementById('query-more').disabled = !ans.more;
    document.body.dataset.queryDone = '1';
  });
}

// ---- start ----

window.addEventListener('DOMContentLoaded', () => {
  for (const b of document.querySelectorAll('nav button'))
    b.addEventListener('click', () => show(b.dataset.view));
  document.getElementById('query-form').addEventListener('submit', e => {
    e.preventDefault();
    runQuery(false);
  });
  document.getElementById('query-more').addEventListener('click', () => runQuery(true));
  document.getElementById('query-mode').addEventListener('change', e => {
    document.getElementById('query-hist').hidden = e.target.value !== 'hist';
  });
  pollFleet();
  if (window.tlInit) window.tlInit();
  if (window.flameInit) window.flameInit();
});
