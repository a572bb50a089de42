// layout.test.mjs - what the browser really draws stays inside the image:
// the title and a long subtitle (centred, so a line wider than the image
// loses both ends) at two widths, and every frame label within its frame,
// measured with Chromium's own fonts (the renderer fits labels with a
// fixed 7.23 px a character).
//
// usage: node --experimental-websocket tests/browser/layout.test.mjs PROFHARNESS SHOTDIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch } from './cdp.mjs';

const [ph, shots] = process.argv.slice(2);
const tmp = mkdtempSync(join(tmpdir(), 'ph-layout-'));
let failures = 0;
const fail = (msg) => { failures++; console.log(`layout.test: FAIL: ${msg}`); };

const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
const folded = 'main;parse;lex_a_rather_long_function_name_for_a_label 30\nmain;eval;std::vector<int>::push_back 25\n' +
  'main;gc 5\nmain;WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW 12\nmain;Ωmega_ünïcode_名前 9\n';
const cases = [
  { name: 'wide', args: ['--subtitle', `perf record -g -- ${words}`, '--title', `A title ${words}`] },
  { name: 'narrow', args: ['--width', '300', '--subtitle', words, '--title', 'A rather long title for 300 px'] },
  { name: 'diff', args: ['--width', '500', '--diff-colors', 'self'], folded: 'main;a 10 20\nmain;b 20 10\n' },
  { name: 'long', args: [], folded: `${'n'.repeat(120)}${'W'.repeat(100)}${'i'.repeat(80)} 1\n` },
];

const page = await launch();
try {
  for (const c of cases) {
    const f = join(tmp, `${c.name}.folded`), svg = join(tmp, `${c.name}.svg`);
    writeFileSync(f, c.folded || folded);
    writeFileSync(svg, execFileSync(ph, ['flamegraph', ...c.args, f]));
    await page.open(`file://${svg}`);
    const r = await page.eval(`(function(){
      var W = +document.documentElement.getAttribute('width'), out = { W: W, boxes: [], labels: [] };
      ['title', 'subtitle'].forEach(function (id) { var e = document.getElementById(id); if (!e) return;
        var b = e.getBBox(); out.boxes.push({ id: id, x: b.x, r: b.x + b.width, text: e.textContent }); });
      document.querySelectorAll('#frames > g').forEach(function (g) {
        var r = g.querySelector('rect'), t = g.querySelector('text');
        if (!t.textContent) return;
        out.labels.push({ text: t.textContent, right: +t.getAttribute('x') + t.getComputedTextLength(),
          rr: +r.getAttribute('x') + +r.getAttribute('width') });
      });
      return out; })()`);
    for (const b of r.boxes)
      if (b.x < 0 || b.r > r.W) fail(`${c.name}: #${b.id} spans ${b.x.toFixed(1)}..${b.r.toFixed(1)} px of ${r.W}`);
    for (const l of r.labels)
      if (l.right > l.rr + 0.5) fail(`${c.name}: label "${l.text}" ends at ${l.right.toFixed(1)}, its frame at ${l.rr.toFixed(1)}`);
    if (c.name !== 'long' && !r.boxes.some((b) => b.id === 'subtitle')) fail(`${c.name}: no subtitle`);
    if (shots) writeFileSync(join(shots, `layout-${c.name}.png`), await page.screenshot());
    console.log(`layout.test: ${c.name}: ${r.boxes.length} headings, ${r.labels.length} labels checked`);
  }
} finally {
  await page.close();
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failures ? `layout.test: ${failures} failures` : 'layout.test: ok');
process.exit(failures ? 1 : 0);
