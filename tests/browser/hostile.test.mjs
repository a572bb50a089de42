// hostile.test.mjs - hostile.mjs's checks on run dirs made here, no
// Engine needed: a strace run whose dir also holds a planted
// callgrind.out.1 (markup and script in its event, function and file
// names), a flamegraph run whose sampler SVG carries a script and a
// top-navigating onclick, the index, and a comparison of two flamegraph
// runs (its differential graph in a sandboxed frame too), and a script
// put into a graph's frame document, which keeps the page's policy.
// tests/45-report.bats runs the same checks on real runs.
//
// usage: node --experimental-websocket tests/browser/hostile.test.mjs PROFHARNESS SHOTDIR
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, until } from './cdp.mjs';
import { callgrindText, evilSvg, checkInjected, checkFlame } from './hostile.mjs';

const [ph] = process.argv.slice(2);
const tmp = mkdtempSync(join(tmpdir(), 'ph-hostile-'));
let failures = 0;
const fail = (msg) => { failures++; console.log(`hostile.test: FAIL: ${msg}`); };

const out = join(tmp, 'out'), svc = join(out, 'front');
const st = join(svc, '20261122T130000Z-strace'), fa = join(svc, '20261122T140000Z-flamegraph'),
  fb = join(svc, '20261122T150000Z-flamegraph');
for (const d of [st, fa, fb]) mkdirSync(d, { recursive: true });
// each a run as stop leaves it: its run.json says its mode (a directory without one is no run)
for (const d of [st, fa, fb]) writeFileSync(join(d, 'run.json'),
  JSON.stringify({ version: 1, mode: d.replace(/.*-/, ''), run: d.replace(/.*\//, '') }));
writeFileSync(join(st, 'strace.log'),
  '100 10:00:00.000100 read(3, "x", 1) = 1 <0.000010>\n100 10:00:00.000200 write(1, "y", 1) = 1 <0.000020>\n');
writeFileSync(join(st, 'callgrind.out.1'), callgrindText());
writeFileSync(join(fa, 'stacks-20261122T140100Z-1.folded'), 'main-thread;main;work;hot 60\nmain-thread;main;idle 40\n');
writeFileSync(join(fa, 'flamegraph-20261122T140100Z-1.svg'), evilSvg(ph));
writeFileSync(join(fb, 'stacks-20261122T150100Z-1.folded'), 'main-thread;main;work;hot 80\nmain-thread;main;idle 20\n');
writeFileSync(join(fb, 'flamegraph-20261122T150100Z-1.svg'), evilSvg(ph));
execFileSync(ph, ['-o', out, 'report'], { stdio: 'ignore' });
execFileSync(ph, ['-o', out, 'compare', '--html', join(out, 'compare.html'), fa, fb], { stdio: 'ignore' });

const page = await launch();
try {
  for (const f of await checkInjected(page, join(st, 'report.html'))) fail(`strace run: ${f}`);
  for (const f of await checkFlame(page, join(fa, 'report.html'))) fail(`flamegraph run: ${f}`);
  for (const f of await checkFlame(page, join(out, 'compare.html'))) fail(`compare: ${f}`);
  // the graph's frame keeps the page's policy (a srcdoc document inherits
  // it): a script that got into it by any path does not run, the
  // renderer's does
  const injected = join(fa, 'injected.html');
  writeFileSync(injected, readFileSync(join(fa, 'report.html'), 'utf8')
    .replace('&lt;/style&gt;', '&lt;/style&gt;&lt;script&gt;window.injected=1&lt;/script&gt;'));
  await page.open(`file://${injected}`);
  const inframe = await until(() => page.evalInFrame(`document.readyState === 'complete' &&
    document.querySelector('#frames > g') && { injected: typeof window.injected,
    ran: !!document.querySelector('#frames > g').frame }`).catch(() => null), 30000, 'the graph in its frame')
    .catch(() => ({}));
  if (inframe.injected !== 'undefined') fail(`a script put into the graph's frame ran (${inframe.injected})`);
  if (inframe.ran !== true) fail("the renderer's script did not run in the graph's frame");
  // the index: its own policy too, and nothing of the runs' runs
  const index = readFileSync(join(out, 'index.html'), 'utf8');
  if (!/script-src 'sha256-[^']+' 'sha256-[^']+'; /.test(index)) fail('index.html: no hash-only script-src');
  await page.open(`file://${join(out, 'index.html')}`);
  if (await page.eval('document.title') !== 'profharness: all runs') fail('index.html: its title changed');
} finally {
  await page.close();
  rmSync(tmp, { recursive: true, force: true });
}
console.log(failures ? `hostile.test: ${failures} failures` : 'hostile.test: ok');
process.exit(failures ? 1 : 0);
