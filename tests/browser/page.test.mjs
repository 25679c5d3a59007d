// page.test.mjs - traceq --serve's page in Debian's chromium, headless,
// driven by puppeteer-core (tests/test_page.sh runs it and says what it
// asserts). Reads its inputs from the JSON file named by argv[2]; prints
// "ok: ..." or "FAIL: ..." per check, and exits 1 when any failed.
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let failed = 0;
function check(what, ok, detail) {
  console.log((ok ? 'ok: ' : 'FAIL: ') + what + (ok || detail === undefined ? '' : ' (' + detail + ')'));
  if (!ok) failed = 1;
}
const shot = async (page, name) => {
  const p = path.join(cfg.artifacts, name + '.png');
  await page.screenshot({ path: p, fullPage: true });
  console.log('screenshot: ' + p);
};
const sleep = ms => new Promise(r => setTimeout(r, ms));
const WAIT = { timeout: 120000, polling: 50 };

const browser = await puppeteer.launch({
  executablePath: cfg.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--window-size=1400,900'],
  defaultViewport: { width: 1400, height: 900 },
});
try {
  const page = await browser.newPage();
  page.on('pageerror', e => check('no script error on the page', false, String(e)));

  // ---- the token ----
  const bare = await page.goto(cfg.base + '/', { waitUntil: 'load' });
  check('the page without the token gets 403', bare.status() === 403, bare.status());
  const wrong = await page.goto(cfg.base + '/?token=' + '0'.repeat(32), { waitUntil: 'load' });
  check('the page with a wrong token gets 403', wrong.status() === 403, wrong.status());

  // ---- the fleet ----
  const res = await page.goto(cfg.url, { waitUntil: 'load' });
  check('the page with the token loads', res.status() === 200, res.status());
  await page.waitForFunction(() => Number(document.body.dataset.fleetUpdates || 0) >= 2, WAIT);
  const fleet = await page.$$eval('#fleet-table tbody tr', trs => trs.map(tr => {
    const o = {};
    for (const td of tr.querySelectorAll('td')) o[td.dataset.col] = td.textContent;
    return o;
  }));
  for (const want of cfg.stats) {
    const got = fleet.find(r => r.host === want.host) || {};
    const same = ['events_in', 'events_stored', 'lost_pages', 'overrun']
      .every(k => got[k] === String(want[{ events_in: 'agent_events', events_stored: 'events',
        lost_pages: 'lost_pages', overrun: 'overrun' }[k]]));
    check(`fleet row ${want.host}: events in/stored, pages lost, overruns equal traceq --stats ` +
      `(${got.events_in}/${got.events_stored}/${got.lost_pages}/${got.overrun})`, same,
      JSON.stringify(got) + ' vs ' + JSON.stringify(want));
    check(`fleet row ${want.host}: agent version is --hosts' (${got.agent})`,
      got.agent === cfg.hosts.find(h => h.host === want.host).agent);
  }
  // the clock offset: the collector's measurement (traceq --hosts' clock
  // columns, issue 36), not realtime - trace clock
  const clocks = await page.$$eval('#fleet-table tbody tr', trs => trs.map(tr => {
    const td = tr.querySelector('td[data-col=clock_offset]');
    return { host: tr.dataset.host, ns: td.dataset.ns, unc: td.dataset.uncertainty,
      text: td.textContent, source: tr.querySelector('td[data-col=clock_source]').textContent };
  }));
  let measured = 0;
  for (const h of cfg.hosts) {
    const got = clocks.find(c => c.host === h.host) || {};
    const has = h.clock_disagree_ns !== null && h.clock_disagree_ns !== undefined;
    measured += has;
    const same = has ? got.ns === String(h.clock_disagree_ns) &&
      got.unc === String(h.clock_uncertainty_ns) && got.text.includes('\u00b1') :
      got.text === '-';
    check(`fleet row ${h.host}: clock offset ${got.text} (${got.ns} +- ${got.unc} ns, placed by ` +
      `${got.source}) is --hosts' clock_disagree_ns ${h.clock_disagree_ns} +- ` +
      `clock_uncertainty_ns ${h.clock_uncertainty_ns}, source ${h.clock_source}`,
      same && got.source === h.clock_source, JSON.stringify(got));
  }
  check(`the collector measured a host's clock (${measured} of ${cfg.hosts.length})`, measured > 0);
  await shot(page, 'fleet');

  // ---- the query box ----
  await page.click('nav button[data-view=query]');
  await page.type('#query-q', cfg.query);
  await page.$eval('#query-limit', (e, n) => { e.value = n; }, String(cfg.queryLimit));
  await page.click('#query-run');
  await page.waitForFunction(() => document.body.dataset.queryDone === '1', WAIT);
  const rows = await page.$eval('#query-out', e => e.textContent);
  check(`the query box shows traceq's rows (${rows.split('\n').length - 1} lines)`,
    rows === cfg.queryRows, rows.slice(0, 200));
  await shot(page, 'query');
  await page.$eval('#query-q', e => { e.value = ''; });
  await page.type('#query-q', 'sched_switch where prev_pid = 0');
  await page.click('#query-run');
  await page.waitForFunction(() => document.body.dataset.queryDone === '1', WAIT);
  const err = await page.$eval('#query-error', e => e.textContent);
  check('a wrong query shows traceq\'s error with the caret', err === cfg.queryError, err);

  // ---- the timeline: a known sched_switch slice, by its pixels ----
  await page.click('nav button[data-view=timeline]');
  await page.waitForFunction(() => document.body.dataset.tlReady === '1', WAIT);
  await shot(page, 'timeline-default');
  const s = cfg.slice;
  await page.evaluate((a, b) => window.tl.setWindow(a, b), s.from, s.to);
  await page.waitForFunction(() => document.body.dataset.tlReady === '1', WAIT);
  const px = await page.evaluate(s => {
    const tl = window.tl, mid = (BigInt(s.t0) + BigInt(s.t1)) / 2n;
    const x = Math.round(tl.timeToX(mid)), y = tl.laneY(s.host, s.cpu) + 10;
    const d = tl.ctx.getImageData(x, y, 1, 1).data;
    // the colour the page gives the task, drawn on a canvas of its own
    const c = document.createElement('canvas').getContext('2d');
    c.fillStyle = s.colour;
    c.fillRect(0, 0, 1, 1);
    const w = c.getImageData(0, 0, 1, 1).data;
    return { x, y, got: [...d.slice(0, 3)], want: [...w.slice(0, 3)], mode: tl.data && tl.data.mode };
  }, Object.assign({}, s, { colour: await page.evaluate(p => {
    const h = (Number(p) * 2654435761) % 360;
    return p ? 'hsl(' + h + ',60%,62%)' : '#e8e8e8';
  }, s.pid) }));
  check(`timeline: the slice of pid ${s.pid} on ${s.host} cpu ${s.cpu} is drawn in its ` +
    `colour at (${px.x},${px.y}) [${px.got}] (events, not summaries: ${px.mode})`,
    px.mode === 'raw' && px.got.every((v, i) => Math.abs(v - px.want[i]) <= 2),
    'want ' + px.want);
  await page.hover('#tl-canvas', { offset: { x: px.x * 1, y: px.y } }).catch(() => {});
  await page.mouse.move(...(await page.$eval('#tl-canvas', (c, p) => {
    const r = c.getBoundingClientRect();
    return [r.left + p.x * r.width / c.width, r.top + p.y * r.height / c.height];
  }, px)));
  const card = await page.$eval('#tl-card', e => e.hidden ? '' : e.textContent);
  check('the hover card shows the switch\'s fields', card.includes('next_pid: ' + s.pid) &&
    card.includes('sched_switch'), card.slice(0, 200));
  await shot(page, 'timeline-slice');

  // ---- zoom: keys and the wheel change the view as computed ----
  const v0 = await page.evaluate(() => window.tl.view());
  await page.focus('#tl-canvas');
  await page.keyboard.press('+');
  const v1 = await page.evaluate(() => window.tl.view());
  const span0 = BigInt(v0.to) - BigInt(v0.from), mid0 = BigInt(v0.from) + span0 / 2n;
  const span1 = BigInt(v1.to) - BigInt(v1.from), mid1 = BigInt(v1.from) + span1 / 2n;
  const near = (a, b, tol) => (a > b ? a - b : b - a) <= tol;
  check(`'+' halves the view around its middle (${span0} -> ${span1} ns)`,
    near(span1 * 2n, span0, 4n) && near(mid1, mid0, 4n));
  await page.keyboard.press('ArrowRight');
  const v2 = await page.evaluate(() => window.tl.view());
  check('ArrowRight pans by a fifth of the view',
    near(BigInt(v2.from) - BigInt(v1.from), span1 / 5n, 4n) &&
    near(BigInt(v2.to) - BigInt(v2.from), span1, 4n));
  const box = await page.$eval('#tl-canvas', c => {
    const r = c.getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width, cw: c.width };
  });
  const mx = box.left + box.width * 0.75;
  const tAt = await page.evaluate(x => {
    const tl = window.tl, c = tl.canvas, r = c.getBoundingClientRect();
    const cx = (x - r.left) * c.width / r.width;
    const v = tl.view(), span = BigInt(v.to) - BigInt(v.from);
    return (BigInt(v.from) + BigInt(Math.round((cx - 130) / (c.width - 130) * Number(span)))).toString();
  }, mx);
  await page.mouse.move(mx, box.top + 40);
  await page.mouse.wheel({ deltaY: -100 });
  const v3 = await page.evaluate(() => window.tl.view());
  const span3 = BigInt(v3.to) - BigInt(v3.from), span2 = BigInt(v2.to) - BigInt(v2.from);
  const frac = Number(BigInt(tAt) - BigInt(v3.from)) / Number(span3);
  const want = (0.75 * box.cw - 130) / (box.cw - 130);	// where the mouse is in the plot
  check(`the wheel zooms in by 0.8 around the mouse (span ${span2} -> ${span3}, the time under ` +
    `the mouse stays at ${frac.toFixed(4)} of the view, want ${want.toFixed(4)})`,
    near(span3 * 10n, span2 * 8n, 40n) && Math.abs(frac - want) < 0.002);
  await page.waitForFunction(() => document.body.dataset.tlReady === '1', WAIT);
  await shot(page, 'timeline-zoomed');

  // ---- level of detail: the whole run as summaries ----
  await page.evaluate(() => { window.tl.rawMax = 10; });	// any run has more
  const before = await page.evaluate(() => window.tl.stats.bytes);
  await page.evaluate((a, b) => window.tl.setWindow(a, b), cfg.all.from, cfg.all.to);
  await page.waitForFunction(() => document.body.dataset.tlReady === '1', WAIT);
  const lod = await page.evaluate(b => ({ mode: window.tl.data.mode, count: window.tl.data.count,
    bytes: window.tl.stats.bytes - b }), before);
  check(`a view of ${lod.count} switches is drawn from summaries (${lod.mode}, ` +
    `${(lod.bytes / lod.count).toFixed(2)} bytes per switch)`, lod.mode === 'lod' && lod.count > 10);
  await page.evaluate(() => { window.tl.rawMax = undefined; });
  await shot(page, 'timeline-summaries');

  // ---- the flame chart: traceq --graph's calls, per thread ----
  const tids = Object.keys(cfg.flame || {});
  if (tids.length) {
    await page.click('nav button[data-view=flame]');
    await page.waitForFunction(() => document.body.dataset.flameReady === '1', WAIT);
    const err = await page.$eval('#fl-error', e => e.textContent);
    check('the flame chart loads without an error', err === '', err);
    for (const tid of tids) {
      const got = await page.evaluate(t => window.flame.frames.filter(f => String(f.pid) === t)
        .map(f => [f.depth, f.name, f.ns]), tid);
      const want = cfg.flame[tid];
      const same = got.length === want.length &&
        got.every((g, i) => g[0] === want[i][0] && g[1] === want[i][1] && g[2] === want[i][2]);
      const diff = got.findIndex((g, i) => !want[i] || g.join() !== want[i].join());
      check(`flame chart, thread ${tid}: its ${got.length} frames nest as traceq --graph's ` +
        `${want.length} calls (depth, name, duration, order)`, same && want.length > 0,
        diff >= 0 ? 'first difference at ' + diff + ': ' + JSON.stringify(got[diff]) + ' vs ' +
          JSON.stringify(want[diff]) : 'lengths');
    }
    // the hover card over the first thread's outermost call names it
    const hit = await page.evaluate(t => {
      const f = window.flame.frames.find(f => String(f.pid) === t && f.depth === 0);
      const r = window.flame.frameRect(f), c = window.flame.canvas, b = c.getBoundingClientRect();
      return { name: f.name, x: b.left + (r.x0 + r.x1) / 2 * b.width / c.width,
        y: b.top + (r.y + 6) * b.height / c.height };
    }, tids[0]);
    await page.mouse.move(hit.x, hit.y);
    const fcard = await page.$eval('#fl-card', e => e.hidden ? '' : e.textContent);
    check(`the flame chart's hover card names the call under the mouse (${hit.name})`,
      fcard.startsWith(hit.name + '()'), fcard);
    await shot(page, 'flame');
    await page.click('nav button[data-view=timeline]');
  } else {
    console.log('SKIP: the flame chart (no traced program)');
  }

  // ---- live: an event stored after the page opened ----
  fs.writeFileSync(cfg.liveGo, 'go\n');		// test_page.sh starts an agent now
  const newest0 = cfg.newest;
  await page.evaluate(n => window.tl.setWindow((BigInt(n) - 200000000n).toString(),
    (BigInt(n) + 1n).toString()), newest0);
  await page.waitForFunction(() => document.body.dataset.tlReady === '1', WAIT);
  await page.click('#tl-live');
  await page.waitForFunction(() => document.body.dataset.live === 'following', WAIT);
  const shown = await page.waitForFunction(n => {
    const tl = window.tl, d = tl.data, after = BigInt(n) - tl.base;
    if (!d || BigInt(tl.view().to) <= BigInt(n)) return false;
    if (d.mode === 'raw') {
      for (const sl of d.slices.values())
        for (const x of sl)
          if (x.row && BigInt(x.row.ts) > BigInt(n) && tl.liveRows.has(x.row))
            return x.row.ts.toString();
    } else if (tl.stats.liveRows > 0) {
      for (const c of d.cells.values())
        if (c.t > Number(after)) return 'a summary at +' + c.t;
    }
    return false;
  }, WAIT, newest0).then(h => h.jsonValue()).catch(() => null);
  const pushed = await page.evaluate(() => window.tl.stats.liveRows);
  check(`live mode shows a switch stored after the page opened, pushed by traceq --serve's ` +
    `follower (ts ${shown} > ${newest0}; ${pushed} rows pushed)`, !!shown && pushed > 0);
  await shot(page, 'timeline-live');

  // ---- live: the serve side goes, and comes back with a new token ----
  fs.writeFileSync(cfg.serveStop, 'stop\n');	// test_page.sh stops traceq --serve
  const gone = await page.waitForFunction(() => document.body.dataset.live === 'reconnecting',
    WAIT).then(() => true).catch(() => false);
  const sayGone = await page.$eval('#tl-live-state', e => e.textContent);
  check(`with traceq --serve stopped, the page says it lost the stream (${sayGone})`,
    gone && /lost the stream/.test(sayGone));
  fs.writeFileSync(cfg.serveStart, 'start\n');	// test_page.sh starts it again, same port
  const closed = await page.waitForFunction(() => document.body.dataset.live === 'closed',
    WAIT).then(() => true).catch(() => false);
  const sayClosed = await page.$eval('#tl-live-state', e => e.textContent);
  check(`a traceq --serve started again (a new token) refuses the old page's stream, and the ` +
    `page says so (${sayClosed})`, closed && /new token/.test(sayClosed));
  await shot(page, 'timeline-live-lost');
  await page.click('#tl-live');
} catch (e) {
  check('the browser run', false, e.stack || String(e));
} finally {
  await browser.close();
}
process.exit(failed);
