// bench/page.mjs - the browser half of `bench/run page` (bench/page.sh):
// argv: URL FROM_NS TO_NS EVENTS CHROMIUM. Times the timeline's first
// paint of the window, counts the bytes the page fetched for it, and
// times frames while panning (a drag: the view moves and is drawn each
// animation frame). Last line:
//   page: first_paint_ms=<n> bytes_per_event=<n> pan_frame_ms_p95=<n>
import puppeteer from 'puppeteer-core';

const [url, from, to, events, chromium] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  defaultViewport: { width: 1400, height: 900 },
});
try {
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: 'load' });
  await page.evaluate(async () => {	// the lanes, without loading a window yet
    fleet.last = await api('/api/stats');
    for (const b of document.querySelectorAll('nav button')) b.classList.toggle('on', b.dataset.view === 'timeline');
    for (const s of document.querySelectorAll('section.view')) s.hidden = s.id !== 'timeline';
  });
  const r = await page.evaluate(async (from, to) => {
    const tl = window.tl;
    tl.canvas.width = tl.canvas.parentElement.clientWidth;
    document.getElementById('tl-host').value = 'bench-p';
    const b0 = tl.stats.bytes, t0 = performance.now();
    await tl.setWindow(from, to);
    await new Promise(r => requestAnimationFrame(() => r()));	// painted
    const paint = performance.now() - t0, bytes = tl.stats.bytes - b0;
    const frames = [];
    let last = performance.now();
    for (let i = 0; i < 120; i++) {
      await new Promise(r => requestAnimationFrame(() => {
        const d = (tl.t1 - tl.t0) * 0.005;
        tl.t0 += d; tl.t1 += d;
        tl.draw();
        r();
      }));
      const now = performance.now();
      frames.push(now - last);
      last = now;
    }
    frames.sort((a, b) => a - b);
    return { paint, bytes, p95: frames[Math.floor(frames.length * 0.95)], mode: tl.data.mode,
      count: tl.data.count, draw: tl.lastDrawMs, err: document.getElementById('tl-error').textContent };
  }, from, to);
  if (r.err) throw new Error(r.err);
  console.log(`timeline: ${r.mode}, ${r.count} sched_switch summarized, last draw ${r.draw.toFixed(1)} ms, ` +
    `${r.bytes} bytes fetched`);
  console.log(`page: first_paint_ms=${Math.round(r.paint)} bytes_per_event=${(r.bytes / events).toFixed(3)} ` +
    `pan_frame_ms_p95=${r.p95.toFixed(1)}`);
} finally {
  await browser.close();
}
