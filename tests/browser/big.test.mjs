// big.test.mjs - the embedded graphs of report.html and compare.html
// paint whatever their size (the report graphs review, finding 4), and a tall graph shows
// its root without scrolling.
//
// A graph of 15,000 frames is an SVG of about 3.4 MB: as a data: URL
// (4.6 M characters) it is past Chromium's 2 MiB limit on a URL, and the
// frame stayed an empty box.  Here the frame's own document is asked how
// many frames it drew (rect elements under #frames, through the frame's
// own DevTools target), which must be the SVG file's count; a screenshot
// of the card is left in SHOTDIR, and its pixels inside the frame must not
// all be one colour.  Then a graph 320 frames deep (5,000 px): its frame
// is no taller than the window, and its root frame is inside the part of
// the frame one sees, with the page scrolled to the frame and no more.
//
// usage: node --experimental-websocket tests/browser/big.test.mjs PROFHARNESS SHOTDIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { launch, until } from './cdp.mjs';

const [ph, shots] = process.argv.slice(2);
const tmp = mkdtempSync(join(tmpdir(), 'ph-big-'));
let failures = 0;
const fail = (msg) => { failures++; console.log(`big.test: FAIL: ${msg}`); };

// N chains of DEPTH frames of their own, COUNT samples each: N * DEPTH frames
function chains(n, depth, count) {
  const lines = [];
  for (let i = 0; i < n; i++) {
    const st = ['main-thread', 'main'];
    for (let d = 0; d < depth; d++) st.push(`handler_${i}_level_${d}`);
    lines.push(`${st.join(';')} ${typeof count === 'function' ? count(i) : count}`);
  }
  return lines.join('\n') + '\n';
}

// A PNG's pixels (8-bit RGB or RGBA, no interlace), as Chromium writes them.
function decodePng(buf) {
  let pos = 8, w = 0, h = 0, type = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos), kind = buf.toString('latin1', pos + 4, pos + 8), data = buf.subarray(pos + 8, pos + 8 + len);
    if (kind === 'IHDR') { w = data.readUInt32BE(0); h = data.readUInt32BE(4); type = data[9]; }
    if (kind === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const bpp = type === 6 ? 4 : 3, raw = inflateSync(Buffer.concat(idat)), out = Buffer.alloc(w * h * bpp);
  for (let y = 0; y < h; y++) {
    const f = raw[y * (w * bpp + 1)], row = raw.subarray(y * (w * bpp + 1) + 1, (y + 1) * (w * bpp + 1));
    for (let x = 0; x < w * bpp; x++) {
      const a = x >= bpp ? out[y * w * bpp + x - bpp] : 0, b = y > 0 ? out[(y - 1) * w * bpp + x] : 0,
        c = x >= bpp && y > 0 ? out[(y - 1) * w * bpp + x - bpp] : 0;
      const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
      const pred = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][f];
      out[y * w * bpp + x] = (row[x] + pred) & 255;
    }
  }
  return { w, h, bpp, px: out };
}

// The distinct colours of the screenshot SHOT inside BOX (CSS px, scale 1).
function colours(shot, box) {
  const seen = new Set();
  for (let y = Math.max(0, Math.floor(box.top)); y < Math.min(shot.h, box.bottom); y += 2)
    for (let x = Math.max(0, Math.floor(box.left)); x < Math.min(shot.w, box.right); x += 2) {
      const i = (y * shot.w + x) * shot.bpp;
      seen.add((shot.px[i] << 16) | (shot.px[i + 1] << 8) | shot.px[i + 2]);
    }
  return seen.size;
}

const out = join(tmp, 'out'), svc = join(out, 'front');
const big = join(svc, '20261122T140000Z-flamegraph'), big2 = join(svc, '20261122T150000Z-flamegraph'),
  tall = join(svc, '20261122T160000Z-flamegraph');
for (const d of [big, big2, tall]) mkdirSync(d, { recursive: true });
// each a run as stop leaves it: its run.json says its mode (a directory without one is no run)
for (const d of [big, big2, tall]) writeFileSync(join(d, 'run.json'),
  JSON.stringify({ version: 1, mode: d.replace(/.*-/, ''), run: d.replace(/.*\//, '') }));
writeFileSync(join(big, 'stacks-20261122T140100Z-1.folded'), chains(1000, 15, 1));
writeFileSync(join(big2, 'stacks-20261122T150100Z-1.folded'), chains(1000, 15, (i) => 1 + (i % 3)));
writeFileSync(join(tall, 'stacks-20261122T160100Z-1.folded'), chains(3, 320, 10));
execFileSync(ph, ['-o', out, 'report'], { stdio: 'ignore' });
execFileSync(ph, ['-o', out, 'compare', '--html', join(out, 'compare.html'), big, big2], { stdio: 'ignore' });

const FRAME = `(function () { var f = document.querySelector('iframe.flame'); f.scrollIntoView();
  var b = f.getBoundingClientRect(); return { top: b.top, bottom: b.bottom, left: b.left, right: b.right,
  height: b.height, inner: innerHeight }; })()`;
const PAINTED = `document.readyState === 'complete' && (function () {
  var rs = document.querySelectorAll('#frames rect'); if (!rs.length) return null;
  var root = rs[0].getBoundingClientRect();
  return { rects: rs.length, rootTop: root.top, rootBottom: root.bottom, view: innerHeight }; })()`;

const page = await launch();
try {
  for (const [name, report, svgFile] of [['report', join(big, 'report.html'), join(big, 'report-flamegraph.svg')],
    ['compare', join(out, 'compare.html'), null]]) {
    const html = readFileSync(report, 'utf8');
    const chars = Math.max(...(html.match(/<iframe[^>]*>/g) || ['']).map((t) => t.length));
    console.log(`big.test: ${name}: the frame's tag is ${chars} characters`);
    if (chars < 2.66e6) fail(`${name}: the graph is ${chars} characters, not past the 2.66 M where frames went blank`);
    await page.open(`file://${report}`);
    const box = await page.eval(FRAME);
    const drawn = await until(() => page.evalInFrame(PAINTED).catch(() => null), 20000, `${name}'s graph to paint`)
      .catch(() => null);
    if (!drawn) { fail(`${name}: the frame painted no frame of the graph (a blank box ${Math.round(box.height)} px tall)`); continue; }
    const want = svgFile ? (readFileSync(svgFile, 'utf8').match(/<rect /g) || []).length - 1 : 0;
    console.log(`big.test: ${name}: ${drawn.rects} frames drawn in the frame${svgFile ? `, ${want} in the SVG` : ''}`);
    if (svgFile && drawn.rects !== want) fail(`${name}: ${drawn.rects} frames drawn, the SVG has ${want}`);
    const shot = await page.screenshot();
    if (shots) writeFileSync(join(shots, `big-${name}.png`), shot);
    const n = colours(decodePng(shot), box);
    if (n < 8) fail(`${name}: the frame shows ${n} colours: nothing drawn`);
  }
  // a tall graph: the frame fits the window, the root is in view
  await page.open(`file://${join(tall, 'report.html')}`);
  const box = await page.eval(FRAME);
  // painted, then scrolled to its root by the frame's own script on load:
  // waited for (a look right after the first paint can come before the
  // scroll), and taken as it is when the wait ends
  const inView = (m) => m && m.rootTop >= 0 && m.rootBottom <= m.view;
  let t = await until(() => page.evalInFrame(PAINTED).then((m) => (inView(m) ? m : null)).catch(() => null), 20000,
    'the tall graph to show its root').catch(() => null);
  if (!t) t = await page.evalInFrame(PAINTED).catch(() => null);
  const svgH = +readFileSync(join(tall, 'report-flamegraph.svg'), 'utf8').match(/<svg [^>]*height="(\d+)"/)[1];
  console.log(`big.test: tall: the SVG is ${svgH} px high, its frame ${Math.round(box.height)} px in a ${box.inner} px window`);
  if (shots) writeFileSync(join(shots, 'big-tall.png'), await page.screenshot());
  if (box.height > box.inner) fail(`tall: the frame is ${Math.round(box.height)} px high, the window ${box.inner}`);
  if (!t) fail('tall: the frame painted nothing');
  else if (t.rootTop < 0 || t.rootBottom > t.view || box.top + t.rootBottom > box.inner)
    fail(`tall: the root frame is at ${Math.round(t.rootTop)}..${Math.round(t.rootBottom)} px of the frame's ${t.view} px ` +
      `in view, ${Math.round(box.top + t.rootBottom)} px down a ${box.inner} px window`);
} finally {
  await page.close();
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failures ? `big.test: ${failures} failures` : 'big.test: ok');
process.exit(failures ? 1 : 0);
