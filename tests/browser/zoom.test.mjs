// zoom.test.mjs - click every frame of rendered flamegraphs with real mouse
// events (Chromium, DevTools protocol) and check what the zoom shows: the
// clicked frame fills the width, every frame above it (its descendants)
// stays visible, every frame below it (its ancestors) stays visible and
// faded, everything else is hidden; Reset Zoom brings back the original
// geometry.  Which frames are descendants is worked out here from the
// drawn geometry (containment within 0.005 px), not by the page's script.
//
// usage: node --experimental-websocket tests/browser/zoom.test.mjs PROFHARNESS SHOTDIR
// Exit status 0 when every check passes.  Screenshots of one zoom per
// graph go to SHOTDIR (look at them).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch } from './cdp.mjs';

const [ph, shots] = process.argv.slice(2);
const MAX_CLICKS = 80;
const tmp = mkdtempSync(join(tmpdir(), 'ph-zoom-'));
let failures = 0;
const fail = (msg) => { failures++; console.log(`zoom.test: FAIL: ${msg}`); };

// A deterministic random profile: N stacks over a few names, shared prefixes.
function randomFolded(seed, n, decimals) {
  let s = seed;
  const rnd = (m) => { s = (s * 1103515245 + 12345) >>> 0; return (s >>> 8) % m; };
  const names = ['main', 'parse', 'lex', 'eval', 'gc', 'alloc', 'qsort_r', 'msort_with_tmp', 'read', 'write', 'f1', 'f10'];
  const lines = [];
  for (let i = 0; i < n; i++) {
    const depth = 1 + rnd(7), st = ['main'];
    for (let d = 1; d < depth; d++) st.push(names[rnd(names.length)]);
    const c = decimals ? (1 + rnd(997)) / 7 : 1 + rnd(50);
    lines.push(`${st.join(';')} ${decimals ? c.toFixed(3) : c}`);
  }
  return lines.join('\n') + '\n';
}

const graphs = [
  { name: 'cksum', folded: 'cksum;a 38\ncksum;cksum 19\nnoploop 276\n', args: [] },
  { name: 'random', folded: randomFolded(7, 300, false), args: [] },
  { name: 'decimals', folded: randomFolded(11, 300, true), args: [] },
  { name: 'icicle', folded: randomFolded(13, 200, true), args: ['--inverted'] },
];

const FRAMES = `Array.from(document.querySelectorAll('#frames > g')).map(function (g, i) {
  var r = g.querySelector('rect'), b = r.getBoundingClientRect();
  return { i: i, title: g.querySelector('title').textContent, x: +r.getAttribute('x'), w: +r.getAttribute('width'),
    y: +r.getAttribute('y'), xs: r.getAttribute('x'), ws: r.getAttribute('width'),
    shown: getComputedStyle(g).display !== 'none', parent: g.classList.contains('parent'),
    cx: b.left + b.width / 2, cy: b.top + b.height / 2 };
})`;

const page = await launch();
try {
  for (const g of graphs) {
    const folded = join(tmp, `${g.name}.folded`), svg = join(tmp, `${g.name}.svg`);
    writeFileSync(folded, g.folded);
    writeFileSync(svg, execFileSync(ph, ['flamegraph', ...g.args, folded]));
    await page.open(`file://${svg}`);
    const orig = await page.eval(FRAMES);
    const inverted = g.args.includes('--inverted');
    const above = (a, b) => (inverted ? a.y > b.y : a.y < b.y);
    const within = (a, b) => a.x >= b.x - 0.005 && a.x + a.w <= b.x + b.w + 0.005;
    let clicked = 0;
    // frames wide enough to aim at, at most MAX_CLICKS of them, evenly spread
    const aim = orig.filter((z) => z.w >= 1), step = Math.max(1, aim.length / MAX_CLICKS);
    for (let k = 0; k < aim.length; k += step) {
      const z = aim[Math.floor(k)];
      await page.click(z.cx, z.cy);
      const now = await page.eval(FRAMES);
      clicked++;
      for (const f of orig) {
        const n = now[f.i];
        const desc = f.i === z.i || (above(f, z) && within(f, z));
        const anc = above(z, f) && within(z, f);
        if ((desc || anc) && !n.shown) fail(`${g.name}: zoomed on "${z.title}", "${f.title}" is hidden`);
        if (!desc && !anc && n.shown) fail(`${g.name}: zoomed on "${z.title}", unrelated "${f.title}" is shown`);
        if (anc && !n.parent) fail(`${g.name}: zoomed on "${z.title}", ancestor "${f.title}" is not faded`);
      }
      if (now[z.i].ws !== '1180.00') fail(`${g.name}: zoomed "${z.title}" is ${now[z.i].ws} px wide, not 1180.00`);
      if (clicked === 2 && shots) writeFileSync(join(shots, `zoom-${g.name}.png`), await page.screenshot());
      const reset = await page.eval(`(function(){ var b=document.getElementById('unzoom').getBoundingClientRect();
        return { x: b.left + b.width / 2, y: b.top + b.height / 2 }; })()`);
      await page.click(reset.x, reset.y);
      const back = await page.eval(FRAMES);
      for (const f of orig)
        if (!back[f.i].shown || back[f.i].xs !== f.xs || back[f.i].ws !== f.ws || back[f.i].parent)
          fail(`${g.name}: after Reset Zoom "${f.title}" is not as drawn`);
    }
    console.log(`zoom.test: ${g.name}: ${orig.length} frames, ${clicked} clicked`);
  }
} finally {
  await page.close();
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failures ? `zoom.test: ${failures} failures` : 'zoom.test: ok');
process.exit(failures ? 1 : 0);
