// timeline.js - the page's timeline: one lane per CPU per host, a
// chosen window. sched_switch slices coloured by task, wakeup arrows,
// irq and softirq marks, loss markers; zoom and pan with the mouse and
// keys; a hover card; live mode (pushed: traceq --follow underneath).
//
// Level of detail: when the view holds more than RAW_MAX sched_switch
// events, the collector sums them (--hist keys=common_cpu,
// common_timestamp.buckets=N,next_pid per host: N the view's span over
// the canvas' width) and each bucket is drawn in the colour of the task
// switched to most in it; only a view of at most RAW_MAX switches asks
// for the events themselves.
'use strict';

const RAW_MAX = 20000;		// sched_switch events in a view drawn one by one
const LANE_H = 22, AXIS_H = 22, GUTTER = 130;
const WANT = ['sched:sched_switch', 'sched:sched_wakeup', 'sched:sched_waking',
  'irq:irq_handler_entry', 'irq:softirq_entry'];

const tl = {
  base: 0n,		// BigInt ns: the origin of the numbers below
  t0: 0, t1: 1,		// the view, ns after base
  lanes: [],		// {host, cpu, y}
  data: null,		// what was fetched: {mode, t0, t1, ...}
  events: [],		// the stored events (--events)
  live: false,
  loading: 0,
  seq: 0,		// fetches started: a late answer of an older one is dropped
  stats: { fetches: 0, bytes: 0, lastFetchMs: 0 },
};
window.tl = tl;

// JSON with "ts" (and other big integers) kept exact as BigInt where the text has them.
function parseBig(text) {
  return JSON.parse(text, (k, v, ctx) => {
    if (typeof v === 'number' && !Number.isSafeInteger(v) && ctx && /^-?\d+$/.test(ctx.source))
      return BigInt(ctx.source);
    return v;
  });
}
function rel(ns) { return Number(BigInt(ns) - tl.base); }	// ns after base, a Number
function absNs(t) { return tl.base + BigInt(Math.round(t)); }

function tlApi(args) {
  const p = new URLSearchParams(args);
  p.set('token', TOKEN);
  const host = document.getElementById('tl-host').value.trim();
  if (host) p.set('host', host);
  tl.stats.fetches++;
  return fetch('/api/query?' + p.toString(), { cache: 'no-store' }).then(r => r.text())
    .then(t => { tl.stats.bytes += t.length; return parseBig(t); });
}

function win(t0, t1) {
  return { since: '@' + absNs(t0).toString() + 'ns', until: '@' + absNs(t1).toString() + 'ns' };
}

// ---- colours ----

function taskColour(pid) {
  if (!pid) return '#e8e8e8';			// the idle task
  const h = (Number(pid) * 2654435761) % 360;
  return 'hsl(' + h + ',60%,62%)';
}

// ---- geometry ----

function plotW() { return tl.canvas.width - GUTTER; }
function timeToX(t) { return GUTTER + (t - tl.t0) * plotW() / (tl.t1 - tl.t0); }
function xToTime(x) { return tl.t0 + (x - GUTTER) * (tl.t1 - tl.t0) / plotW(); }
function laneOf(host, cpu) { return tl.lanes.find(l => l.host === host && l.cpu === Number(cpu)); }
tl.timeToX = ns => timeToX(rel(ns));
tl.laneY = (host, cpu) => { const l = laneOf(host, cpu); return l ? l.y : -1; };
tl.view = () => ({ from: absNs(tl.t0).toString(), to: absNs(tl.t1).toString() });

function setLanes() {
  const hosts = new Map();
  for (const s of (fleet.last && fleet.last.stats) || []) {
    if (s.cpu === 'all' || typeof s.cpu !== 'number' || s.cpu >= 32768) continue;
    if (!hosts.has(s.host)) hosts.set(s.host, new Set());
    hosts.get(s.host).add(s.cpu);
  }
  // a host without per-CPU counters (an import): the CPUs its --hosts row says
  for (const h of (fleet.last && fleet.last.hosts) || []) {
    if (hosts.has(h.host) || typeof h.cpus !== 'number') continue;
    hosts.set(h.host, new Set([...Array(Math.min(h.cpus, 1024)).keys()]));
  }
  const glob = document.getElementById('tl-host').value.trim();
  const re = glob ? new RegExp('^' + glob.replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*').replace(/\?/g, '.') + '$') : null;
  tl.lanes = [];
  let y = AXIS_H;
  for (const [h, cpus] of [...hosts].sort()) {
    if (re && !re.test(h)) continue;
    for (const c of [...cpus].sort((a, b) => a - b)) {
      tl.lanes.push({ host: h, cpu: c, y });
      y += LANE_H;
    }
  }
  tl.canvas.height = Math.max(y + 4, 80);
}

// ---- fetching ----

function stored(name) { return tl.events.some(e => e.event === name && e.count > 0); }

// The raw events of [t0, t1], page by page, up to RAW_MAX * 3 rows of every kind.
async function fetchRaw(t0, t1, seq) {
  const sel = WANT.filter(stored).join(',');
  const rows = [];
  let after = null;
  do {
    const args = Object.assign({ q: sel, format: 'json', limit: 5000 }, win(t0, t1));
    if (after) Object.assign(args, { after_ts: after.ts, after_id: after.id, after_type: after.type });
    const ans = await tlApi(args);
    if (seq !== tl.seq) return null;
    if (!ans.ok) throw new Error(ans.error);
    for (const line of ans.text.split('\n'))
      if (line) rows.push(parseBig(line));
    after = ans.more ? ans.after : null;
  } while (after && rows.length < RAW_MAX * 3);
  return rows;
}

// Per lane: the slices between its sched_switch rows (in time order);
// wakeups, irq marks. The rows are kept (d.rows) for live mode to add to.
function buildRaw(rows, t0, t1) {
  const d = { mode: 'raw', t0, t1, slices: new Map(), arrows: [], marks: [], losses: [], n: rows.length,
    rows };
  for (const r of rows) {
    if (r.lost_events) continue;
    const key = r.host + '/' + r.cpu, t = rel(r.ts);
    if (r.event === 'sched:sched_switch') {
      if (!d.slices.has(key)) {
        d.slices.set(key, []);
        d.slices.get(key).push({ t0: t0, t1: t, pid: r.prev_pid, comm: r.prev_comm, row: null });
      }
      const sl = d.slices.get(key);
      sl[sl.length - 1].t1 = t;
      sl.push({ t0: t, t1: t1, pid: r.next_pid, comm: r.next_comm, row: r });
    } else if (r.event === 'sched:sched_wakeup' || r.event === 'sched:sched_waking') {
      d.arrows.push({ host: r.host, from: r.cpu, to: r.target_cpu, t, row: r });
    } else {
      d.marks.push({ host: r.host, cpu: r.cpu, t, soft: r.event === 'irq:softirq_entry', row: r });
    }
  }
  return d;
}

// The summaries of [t0, t1]: per host a histogram over time (see above).
async function fetchLod(t0, t1, seq) {
  const buckets = Math.max(1, Math.floor((t1 - t0) / plotW()));
  const d = { mode: 'lod', t0, t1, bucket: buckets, cells: new Map(), dropped: 0 };
  const hosts = [...new Set(tl.lanes.map(l => l.host))];
  for (const h of hosts) {
    const args = Object.assign({
      q: 'sched_switch', mode: 'hist', format: 'json', host: h,
      hist: 'keys=common_cpu,common_timestamp.buckets=' + buckets + ',next_pid:size=131072',
    }, win(t0, t1));
    const p = new URLSearchParams(args);
    p.set('token', TOKEN);
    tl.stats.fetches++;
    const text = await (await fetch('/api/query?' + p.toString(), { cache: 'no-store' })).text();
    tl.stats.bytes += text.length;
    if (seq !== tl.seq) return null;
    const ans = parseBig(text);
    if (!ans.ok) throw new Error(ans.error);
    d.dropped += ans.dropped;
    const cols = ans.table[0] || [];
    const ic = cols.indexOf('common_cpu'), it = cols.indexOf('common_timestamp'),
      ip = cols.indexOf('next_pid'), ih = cols.indexOf('hitcount');
    for (let i = 1; i < ans.table.length; i++) {
      const r = ans.table[i], key = h + '/' + r[ic] + '/' + r[it];
      let c = d.cells.get(key);
      if (!c) d.cells.set(key, c = { host: h, cpu: r[ic], t: rel(r[it]), n: 0, pid: 0, top: 0 });
      c.n += r[ih];
      if (r[ih] > c.top) { c.top = r[ih]; c.pid = r[ip]; }
    }
  }
  return d;
}

async function fetchLosses(t0, t1, seq) {
  const ans = await tlApi(Object.assign({ mode: 'losses' }, win(t0, t1)));
  if (seq !== tl.seq || !ans.ok) return [];
  return ans.text.split('\n').filter(Boolean).map(l => parseBig(l).lost_events)
    .map(x => ({ host: x.host, cpu: x.cpu, t: rel(x.ts), count: x.count }));
}

// Fetch what the view needs: summaries or events, and the losses.
async function refetch() {
  const seq = ++tl.seq, t0 = tl.t0, t1 = tl.t1, started = performance.now();
  tl.loading++;
  document.body.dataset.tlReady = '0';
  try {
    const c = await tlApi(Object.assign({ q: 'sched_switch', mode: 'count' }, win(t0, t1)));
    if (seq !== tl.seq) return;
    if (!c.ok) throw new Error(c.error);
    const d = c.count > (tl.rawMax || RAW_MAX) ? await fetchLod(t0, t1, seq) :
      buildRaw(await fetchRaw(t0, t1, seq) || [], t0, t1);
    if (!d || seq !== tl.seq) return;
    d.count = c.count;
    d.losses = await fetchLosses(t0, t1, seq);
    if (seq !== tl.seq) return;
    tl.data = d;
    document.getElementById('tl-error').textContent = '';
  } catch (e) {
    document.getElementById('tl-error').textContent = String(e.message || e);
  } finally {
    tl.loading--;
    if (seq === tl.seq) {
      tl.stats.lastFetchMs = performance.now() - started;
      draw();
      document.body.dataset.tlReady = '1';
      document.body.dataset.tlSeq = String(seq);
    }
  }
}

let refetchTimer = 0;
function refetchSoon() {
  clearTimeout(refetchTimer);
  refetchTimer = setTimeout(refetch, 200);
}

// ---- drawing ----

function fmtRel(t) {
  const a = Math.abs(t - tl.t0), span = tl.t1 - tl.t0;
  if (span >= 2e9) return '+' + (a / 1e9).toFixed(2) + ' s';
  if (span >= 2e6) return '+' + (a / 1e6).toFixed(2) + ' ms';
  return '+' + (a / 1e3).toFixed(1) + ' us';
}

function drawAxis(g) {
  const w = tl.canvas.width;
  g.fillStyle = '#f4f4f4';
  g.fillRect(0, 0, w, AXIS_H);
  g.fillStyle = '#333';
  g.font = '11px sans-serif';
  const start = new Date(Number(absNs(tl.t0) / 1000000n));
  g.fillText(start.toISOString().slice(11, 23), 4, 14);
  for (let i = 1; i < 8; i++) {
    const x = GUTTER + i * plotW() / 8;
    g.fillRect(x, AXIS_H - 5, 1, 5);
    g.fillText(fmtRel(xToTime(x)), x + 2, 14);
  }
}

function drawLanes(g) {
  g.font = '11px monospace';
  for (const l of tl.lanes) {
    g.fillStyle = '#fafafa';
    g.fillRect(GUTTER, l.y, plotW(), LANE_H - 2);
    g.fillStyle = '#333';
    g.fillText((l.host.length > 12 ? l.host.slice(0, 11) + '…' : l.host) + ' cpu' + l.cpu, 4, l.y + 14);
  }
}

function clipRect(g, x0, x1, y, h) {
  const a = Math.max(x0, GUTTER), b = Math.min(x1, tl.canvas.width);
  if (b > a) g.fillRect(a, y, Math.max(b - a, 1), h);
}

function drawRaw(g, d) {
  for (const [key, sl] of d.slices) {
    const i = key.lastIndexOf('/'), l = laneOf(key.slice(0, i), key.slice(i + 1));
    if (!l) continue;
    for (const s of sl) {
      if (s.t1 < tl.t0 || s.t0 > tl.t1) continue;
      g.fillStyle = taskColour(s.pid);
      clipRect(g, timeToX(s.t0), timeToX(s.t1), l.y + 3, LANE_H - 8);
    }
  }
  for (const m of d.marks) {
    const l = laneOf(m.host, m.cpu);
    if (!l || m.t < tl.t0 || m.t > tl.t1) continue;
    g.fillStyle = m.soft ? '#e80' : '#c00';
    g.fillRect(timeToX(m.t), l.y, 1, 4);
  }
  g.strokeStyle = 'rgba(0,0,160,0.55)';
  g.lineWidth = 1;
  for (const a of d.arrows) {
    const l0 = laneOf(a.host, a.from), l1 = laneOf(a.host, a.to);
    if (!l0 || !l1 || a.t < tl.t0 || a.t > tl.t1) continue;
    const x = timeToX(a.t), y0 = l0.y + LANE_H / 2, y1 = l1.y + (l1.y >= l0.y ? 2 : LANE_H - 4);
    g.beginPath();
    g.moveTo(x, y0);
    g.lineTo(x, y1);
    g.moveTo(x - 3, y1 + (y1 > y0 ? -4 : 4));
    g.lineTo(x, y1);
    g.lineTo(x + 3, y1 + (y1 > y0 ? -4 : 4));
    g.stroke();
  }
}

function drawLod(g, d) {
  const bw = d.bucket * plotW() / (tl.t1 - tl.t0);
  for (const c of d.cells.values()) {
    const l = laneOf(c.host, c.cpu);
    if (!l) continue;
    const x = timeToX(c.t);
    if (x + bw < GUTTER || x > tl.canvas.width) continue;
    g.fillStyle = taskColour(c.pid);
    clipRect(g, x, x + Math.max(bw, 1), l.y + 3, LANE_H - 8);
  }
}

function drawLosses(g, d) {
  g.fillStyle = '#d00';
  for (const x of d.losses || []) {
    if (x.t < tl.t0 || x.t > tl.t1) continue;
    for (const l of tl.lanes)
      if (l.host === x.host && l.cpu === x.cpu) {
        const px = timeToX(x.t);
        g.fillRect(px - 1, l.y, 3, LANE_H - 2);
        g.fillText('×', px + 3, l.y + 10);
      }
  }
}

function draw() {
  const started = performance.now();
  const g = tl.ctx;
  g.clearRect(0, 0, tl.canvas.width, tl.canvas.height);
  drawAxis(g);
  drawLanes(g);
  const d = tl.data;
  if (d) {
    if (d.mode === 'raw') drawRaw(g, d); else drawLod(g, d);
    drawLosses(g, d);
  }
  const info = d ? (d.mode === 'raw' ? d.count + ' switches, events' :
    d.count + ' switches, summaries of ' + (d.bucket / 1e3).toFixed(1) + ' us') : '';
  document.getElementById('tl-info').textContent = info + '  ' +
    ((tl.t1 - tl.t0) / 1e6).toFixed(3) + ' ms shown';
  tl.lastDrawMs = performance.now() - started;
}
tl.draw = draw;

// ---- zoom, pan, hover ----

function zoom(factor, atX) {
  const t = xToTime(atX === undefined ? GUTTER + plotW() / 2 : atX);
  const span = Math.max((tl.t1 - tl.t0) * factor, 1000);
  const f = (t - tl.t0) / (tl.t1 - tl.t0);
  tl.t0 = t - f * span;
  tl.t1 = tl.t0 + span;
  draw();
  refetchSoon();
}
function pan(frac) {
  const d = (tl.t1 - tl.t0) * frac;
  tl.t0 += d;
  tl.t1 += d;
  draw();
  refetchSoon();
}
tl.zoom = zoom;
tl.pan = pan;

function hover(ev) {
  const card = document.getElementById('tl-card');
  const r = tl.canvas.getBoundingClientRect();
  const x = (ev.clientX - r.left) * tl.canvas.width / r.width;
  const y = (ev.clientY - r.top) * tl.canvas.height / r.height;
  const l = tl.lanes.find(l => y >= l.y && y < l.y + LANE_H);
  const d = tl.data;
  let text = '';
  if (l && d && x >= GUTTER) {
    const t = xToTime(x), key = l.host + '/' + l.cpu;
    if (d.mode === 'raw') {
      const s = (d.slices.get(key) || []).find(s => s.t0 <= t && t < s.t1);
      if (s) text = s.row ? Object.entries(s.row).map(([k, v]) => k + ': ' + v).join('\n') :
        'pid ' + s.pid + ' (' + s.comm + ') from before the window';
    } else {
      const b = Math.floor(rel(absNs(t)) / d.bucket);
      for (const c of d.cells.values())
        if (c.host === l.host && c.cpu === l.cpu && Math.floor(c.t / d.bucket) === b)
          text = 'host: ' + c.host + '\ncpu: ' + c.cpu + '\nswitches: ' + c.n +
            '\nmost switched to: pid ' + c.pid + ' (' + c.top + ')\nbucket: ' +
            (d.bucket / 1e3).toFixed(1) + ' us';
    }
  }
  card.hidden = !text;
  card.textContent = text;
  card.style.left = (ev.clientX - r.left + 12) + 'px';
  card.style.top = (ev.clientY - r.top + 12) + 'px';
}

function setupInput() {
  const c = tl.canvas;
  let drag = null;
  c.addEventListener('wheel', e => {
    e.preventDefault();
    const r = c.getBoundingClientRect();
    zoom(e.deltaY > 0 ? 1.25 : 0.8, (e.clientX - r.left) * c.width / r.width);
  }, { passive: false });
  c.addEventListener('mousedown', e => { drag = { x: e.clientX, t0: tl.t0, t1: tl.t1 }; });
  window.addEventListener('mouseup', () => { if (drag) refetchSoon(); drag = null; });
  c.addEventListener('mousemove', e => {
    if (drag) {
      const r = c.getBoundingClientRect();
      const dt = (e.clientX - drag.x) * c.width / r.width * (drag.t1 - drag.t0) / plotW();
      tl.t0 = drag.t0 - dt;
      tl.t1 = drag.t1 - dt;
      draw();
    }
    hover(e);
  });
  c.addEventListener('mouseleave', () => { document.getElementById('tl-card').hidden = true; });
  c.tabIndex = 0;
  c.addEventListener('keydown', e => {
    const k = { '+': () => zoom(0.5), '=': () => zoom(0.5), 'w': () => zoom(0.5),
      '-': () => zoom(2), 's': () => zoom(2), 'ArrowLeft': () => pan(-0.2), 'a': () => pan(-0.2),
      'ArrowRight': () => pan(0.2), 'd': () => pan(0.2) }[e.key];
    if (k) { e.preventDefault(); k(); }
  });
}

// ---- the window, live ----

async function loadEvents() {
  const ans = await tlApi({ mode: 'events' });
  if (!ans.ok) throw new Error(ans.error);
  tl.events = ans.text.split('\n').filter(Boolean).map(parseBig);
}

function newest() {
  let n = null;
  for (const e of tl.events)
    if (e.event === 'sched:sched_switch' && e.last !== null && e.last !== undefined)
      n = BigInt(e.last);
  return n;
}

// The window the form names: since/until (traceq's forms) resolved by the
// collector (--events over that window: its first and last switch); empty:
// the last 2 s stored.
async function loadWindow() {
  document.body.dataset.tlReady = '0';
  try {
    if (!fleet.last) fleet.last = await api('/api/stats');
    setLanes();
    await loadEvents();
    const since = document.getElementById('tl-since').value.trim();
    const until = document.getElementById('tl-until').value.trim();
    let from, to;
    if (since || until) {
      const a = {};
      if (since) a.since = since;
      if (until) a.until = until;
      const ans = await tlApi(Object.assign({ mode: 'events', q: 'sched_switch' }, a));
      if (!ans.ok) throw new Error(ans.error);
      const e = ans.text.split('\n').filter(Boolean).map(parseBig)[0];
      if (!e || !e.count) throw new Error('no sched_switch in that window');
      from = BigInt(e.first); to = BigInt(e.last) + 1n;
    } else {
      to = newest();
      if (to === null) throw new Error('no sched_switch stored');
      to += 1n;
      from = to - 2000000000n;
    }
    tl.base = from;
    tl.t0 = 0;
    tl.t1 = Number(to - from);
    await refetch();
  } catch (e) {
    document.getElementById('tl-error').textContent = String(e.message || e);
    document.body.dataset.tlReady = '1';
  }
}
tl.load = loadWindow;
tl.setWindow = (fromNs, toNs) => {	// for scripts and tests: ns strings
  setLanes();
  tl.base = BigInt(fromNs);
  tl.t0 = 0;
  tl.t1 = Number(BigInt(toNs) - tl.base);
  return refetch();
};

// Live: traceq --follow underneath (/api/live, traceq/serve_live.c): the
// serve process follows the collector and pushes the rows it stores as
// Server-Sent Events; the view's end follows the newest. A view drawn
// from events takes the rows in; one drawn from summaries asks again,
// at most every LIVE_REFETCH_MS. EventSource reconnects by itself
// (traceq resumes from the last message's id); a traceq --serve that
// stopped, or came back with a new token, closes the stream for good.
const LIVE_REFETCH_MS = 1000, LIVE_DRAW_MS = 100;
const LIVE_SAY = {
  connecting: 'live: connecting to traceq --serve',
  following: 'live: following the collector (traceq --follow)',
  waiting: 'live: no event of the view is stored yet; waiting for one',
  lost: 'live: the collector does not answer; traceq --serve tries again',
  reconnecting: 'live: lost the stream to traceq --serve; reconnecting',
  closed: 'live: lost the stream: traceq --serve stopped or restarted with a new token; ' +
    'open the URL it printed',
  failed: 'live: the collector refused the query',
  behind: 'live: fell behind the collector\'s retention',
  reset: 'live: the collector\'s database was replaced; following it from its start',
};

function setLive(state, extra) {
  if (state === 'back') state = 'following';
  document.body.dataset.live = state;
  const say = (LIVE_SAY[state] || 'live: ' + state) + (extra ? ': ' + extra : '');
  document.getElementById('tl-live-state').textContent = say;
}

const live = { es: null, pending: [], timer: 0, lastFetch: 0 };
tl.liveRows = new WeakSet();	// the rows that came over the stream (for tests)
tl.stats.liveRows = 0;

function liveTake(data) {
  for (const line of data.split('\n')) {
    if (!line) continue;
    const r = parseBig(line);
    tl.liveRows.add(r);
    live.pending.push(r);
    tl.stats.liveRows++;
  }
  if (!live.timer) live.timer = setTimeout(liveApply, LIVE_DRAW_MS);
}

// The rows taken since the last time: the window moved to the newest, drawn.
function liveApply() {
  live.timer = 0;
  const rows = live.pending;
  live.pending = [];
  let newest = null;
  for (const r of rows)
    if (r.ts !== undefined && (newest === null || BigInt(r.ts) > newest)) newest = BigInt(r.ts);
  if (newest !== null && rel(newest + 1n) > tl.t1) {
    const span = tl.t1 - tl.t0;
    tl.t1 = rel(newest + 1n);
    tl.t0 = tl.t1 - span;
  }
  const d = tl.data;
  if (d && d.mode === 'raw' && !tl.loading) {
    const keep = d.rows.filter(r => r.lost_events || rel(r.ts) >= tl.t0);
    const add = rows.filter(r => !r.lost_events);
    const all = keep.concat(add).sort((a, b) => (BigInt(a.ts) < BigInt(b.ts) ? -1 : 1));
    const n = tl.data = buildRaw(all, tl.t0, tl.t1);
    n.count = all.filter(r => r.event === 'sched:sched_switch').length;
    n.losses = d.losses.filter(x => x.t >= tl.t0).concat(rows.filter(r => r.lost_events)
      .map(r => r.lost_events).map(x => ({ host: x.host, cpu: x.cpu, t: rel(x.ts), count: x.count })));
    if (n.count > (tl.rawMax || RAW_MAX)) refetch();	// summaries from here on
    else draw();
  } else if (performance.now() - live.lastFetch >= LIVE_REFETCH_MS && !tl.loading) {
    live.lastFetch = performance.now();
    refetch();
  } else {
    draw();
  }
}

function liveStart() {
  liveStop();
  const p = new URLSearchParams({ q: WANT.filter(stored).join(',') || 'sched_switch' });
  p.set('token', TOKEN);
  const host = document.getElementById('tl-host').value.trim();
  if (host) p.set('host', host);
  const es = live.es = new EventSource('/api/live?' + p.toString());
  setLive('connecting');
  es.addEventListener('rows', e => liveTake(e.data));
  es.addEventListener('status', e => {
    const st = JSON.parse(e.data);
    setLive(st.collector, st.missed ? st.missed + ' events missed' : '');
  });
  es.addEventListener('fail', e => {
    es.close();
    setLive('failed', JSON.parse(e.data).error);
  });
  es.onerror = () => {
    if (live.es !== es) return;
    setLive(es.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
  };
}

function liveStop() {
  if (live.es) live.es.close();
  live.es = null;
  clearTimeout(live.timer);
  live.timer = 0;
  live.pending = [];
  delete document.body.dataset.live;
  document.getElementById('tl-live-state').textContent = '';
}

// The downloads: traceq --export of the view (its window and hosts).
function exportUrl(format) {
  const p = new URLSearchParams(Object.assign({ format }, win(tl.t0, tl.t1)));
  p.set('token', TOKEN);
  const host = document.getElementById('tl-host').value.trim();
  if (host) p.set('host', host);
  return '/api/export?' + p.toString();
}
tl.exportUrl = exportUrl;

function download(format) {
  const a = document.createElement('a');
  a.href = exportUrl(format);
  a.download = '';
  document.body.appendChild(a);
  a.click();
  a.remove();
}

window.tlInit = () => {
  tl.canvas = document.getElementById('tl-canvas');
  tl.ctx = tl.canvas.getContext('2d');
  setupInput();
  document.getElementById('tl-form').addEventListener('submit', e => {
    e.preventDefault();
    loadWindow();
  });
  document.getElementById('tl-perfetto').addEventListener('click', () => download('perfetto'));
  document.getElementById('tl-tracedat').addEventListener('click', () => download('tracedat'));
  document.getElementById('tl-live').addEventListener('change', e => {
    tl.live = e.target.checked;
    if (tl.live) liveStart(); else liveStop();
  });
};
window.tlShown = () => {
  const w = Math.max(400, Math.floor(tl.canvas.parentElement.clientWidth));
  if (tl.canvas.width !== w) tl.canvas.width = w;
  if (!tl.data) loadWindow(); else draw();
};
