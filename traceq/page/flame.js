// flame.js - the page's flame chart of programs traced with
// function_graph: per thread a band, a row per call depth, each call a
// frame from its entry to its exit. The calls are nested by traceq itself
// (/api/flame: graph.c's walk, the one traceq --graph prints), so the
// page only draws. Names and comms are peers' strings: drawn on the
// canvas or set as textContent, never parsed as HTML.
'use strict';

const FRAME_H = 16, BAND_GAP = 22, FLAME_GUTTER = 8;

const flame = { frames: [], bands: [], t0: 0, t1: 1, base: 0n };
window.flame = flame;

function nameColour(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return 'hsl(' + (20 + h % 50) + ',' + (60 + h % 30) + '%,' + (55 + (h >> 8) % 15) + '%)';
}
flame.colour = nameColour;

function fx(t) { return FLAME_GUTTER + (t - flame.t0) * (flame.canvas.width - 2 * FLAME_GUTTER) / (flame.t1 - flame.t0); }
function fxTime(x) { return flame.t0 + (x - FLAME_GUTTER) * (flame.t1 - flame.t0) / (flame.canvas.width - 2 * FLAME_GUTTER); }

// The answer's frames as objects, in the order each thread entered them; a band per thread.
function takeFrames(ans) {
  const fr = ans.frames.map(a => ({ seq: a[0], pid: a[1], cpu: a[2], depth: a[3],
    startNs: BigInt(a[4]), ns: a[5], name: String(a[6]), comm: String(a[7]) }));
  fr.sort((a, b) => a.seq - b.seq);
  flame.base = fr.length ? fr.reduce((m, f) => (f.startNs < m ? f.startNs : m), fr[0].startNs) : 0n;
  let end = 1;
  for (const f of fr) {
    f.start = Number(f.startNs - flame.base);
    end = Math.max(end, f.start + f.ns);
  }
  const byPid = new Map();
  for (const f of fr) {
    if (!byPid.has(f.pid)) byPid.set(f.pid, { pid: f.pid, comm: f.comm, depth: 0 });
    const b = byPid.get(f.pid);
    b.depth = Math.max(b.depth, Math.min(Math.max(f.depth, 0), 255));
  }
  let y = 4;
  flame.bands = [...byPid.values()].sort((a, b) => a.pid - b.pid);
  for (const b of flame.bands) {
    b.y = y + BAND_GAP;
    y = b.y + (b.depth + 1) * FRAME_H;
  }
  flame.canvas.height = Math.max(y + 8, 80);
  flame.frames = fr;
  flame.t0 = 0;
  flame.t1 = end;
}

function frameRect(f) {
  const b = flame.bands.find(b => b.pid === f.pid);
  const x0 = fx(f.start), x1 = fx(f.start + f.ns);
  return { x0, x1, y: b.y + Math.min(Math.max(f.depth, 0), 255) * FRAME_H };
}
flame.frameRect = frameRect;

function drawFlame() {
  const g = flame.ctx, w = flame.canvas.width;
  g.clearRect(0, 0, w, flame.canvas.height);
  g.font = '11px monospace';
  g.textBaseline = 'middle';
  for (const b of flame.bands) {
    g.fillStyle = '#333';
    g.fillText(b.comm + '-' + b.pid, 4, b.y - 8);
  }
  for (const f of flame.frames) {
    const r = frameRect(f);
    if (r.x1 < 0 || r.x0 > w) continue;
    const a = Math.max(r.x0, 0), z = Math.min(Math.max(r.x1, a + 1), w);
    g.fillStyle = nameColour(f.name);
    g.fillRect(a, r.y, z - a, FRAME_H - 1);
    if (z - a > 30) {
      g.save();
      g.beginPath();
      g.rect(a, r.y, z - a - 2, FRAME_H);
      g.clip();
      g.fillStyle = '#000';
      g.fillText(f.name, a + 2, r.y + FRAME_H / 2);
      g.restore();
    }
  }
  document.getElementById('fl-info').textContent = flame.frames.length + ' calls, ' +
    flame.bands.length + ' threads, ' + ((flame.t1 - flame.t0) / 1e3).toFixed(1) + ' us shown';
}
flame.draw = drawFlame;

// The innermost frame under canvas point (x, y), or null.
function frameAt(x, y) {
  let best = null;
  for (const f of flame.frames) {
    const r = frameRect(f);
    if (x >= r.x0 && x <= Math.max(r.x1, r.x0 + 1) && y >= r.y && y < r.y + FRAME_H &&
      (!best || f.depth > best.depth)) best = f;
  }
  return best;
}
flame.frameAt = frameAt;

function flameHover(ev) {
  const card = document.getElementById('fl-card'), c = flame.canvas;
  const r = c.getBoundingClientRect();
  const x = (ev.clientX - r.left) * c.width / r.width, y = (ev.clientY - r.top) * c.height / r.height;
  const f = frameAt(x, y);
  card.hidden = !f;
  if (!f) return;
  card.textContent = f.name + '()\npid ' + f.pid + ' (' + f.comm + ') cpu ' + f.cpu +
    '\ndepth ' + f.depth + '\n' + (f.ns / 1e3).toFixed(3) + ' us\nstart ' + f.startNs + ' ns';
  card.style.left = (ev.clientX - r.left + 12) + 'px';
  card.style.top = (ev.clientY - r.top + 12) + 'px';
}

function flameZoom(factor, atX) {
  const t = fxTime(atX), span = Math.max((flame.t1 - flame.t0) * factor, 100);
  const f = (t - flame.t0) / (flame.t1 - flame.t0);
  flame.t0 = t - f * span;
  flame.t1 = flame.t0 + span;
  drawFlame();
}

async function loadFlame() {
  document.body.dataset.flameReady = '0';
  const err = document.getElementById('fl-error');
  const args = { q: document.getElementById('fl-q').value.trim() || 'funcgraph' };
  for (const [k, id] of [['host', 'fl-host'], ['since', 'fl-since'], ['until', 'fl-until']]) {
    const v = document.getElementById(id).value.trim();
    if (v) args[k] = v;
  }
  try {
    const ans = await api('/api/flame', args);
    err.textContent = ans.ok ? (ans.more ? 'only the first ' + ans.count + ' calls are shown' : '') :
      ans.error;
    if (ans.ok) takeFrames(ans);
    drawFlame();
  } catch (e) {
    err.textContent = String(e.message || e);
  }
  document.body.dataset.flameReady = '1';
}
flame.load = loadFlame;

window.flameInit = () => {
  const c = flame.canvas = document.getElementById('fl-canvas');
  flame.ctx = c.getContext('2d');
  document.getElementById('fl-form').addEventListener('submit', e => {
    e.preventDefault();
    loadFlame();
  });
  let drag = null;
  c.addEventListener('wheel', e => {
    e.preventDefault();
    const r = c.getBoundingClientRect();
    flameZoom(e.deltaY > 0 ? 1.25 : 0.8, (e.clientX - r.left) * c.width / r.width);
  }, { passive: false });
  c.addEventListener('mousedown', e => { drag = { x: e.clientX, t0: flame.t0, t1: flame.t1 }; });
  window.addEventListener('mouseup', () => { drag = null; });
  c.addEventListener('mousemove', e => {
    if (drag) {
      const r = c.getBoundingClientRect();
      const dt = (e.clientX - drag.x) * c.width / r.width * (drag.t1 - drag.t0) /
        (c.width - 2 * FLAME_GUTTER);
      flame.t0 = drag.t0 - dt;
      flame.t1 = drag.t1 - dt;
      drawFlame();
    }
    flameHover(e);
  });
  c.addEventListener('mouseleave', () => { document.getElementById('fl-card').hidden = true; });
};
window.flameShown = () => {
  const w = Math.max(400, Math.floor(flame.canvas.parentElement.clientWidth));
  if (flame.canvas.width !== w) flame.canvas.width = w;
  if (!flame.loaded) { flame.loaded = true; loadFlame(); } else drawFlame();
};
