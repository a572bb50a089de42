// hostile.mjs - what a profiled container can plant in its artifacts, and
// the checks, in headless Chromium (DevTools protocol), that none of it
// runs in a page the harness writes (issue 19, findings 1 and 2):
//
//   write-callgrind PATH   a callgrind.out whose event names and function
//                          and file names are markup and script
//   write-svg PH PATH      a sampler-like flamegraph SVG (drawn by PH) with
//                          a script and an invisible rect over everything
//                          whose onclick navigates the top window
//   check-injected REPORT  the report of a run holding that callgrind.out:
//                          its title stays, no script of the container ran,
//                          no element or on* attribute of it exists, the
//                          names are shown as text; the page has a
//                          Content-Security-Policy without 'unsafe-inline'
//                          for scripts
//   check-flame REPORT     the report of a run holding that SVG: no frame
//                          holds it, every <iframe> is sandbox="allow-scripts"
//                          and a srcdoc document (no URL),
//                          a click in the report's flamegraph zooms it (the
//                          harness's own graph works in its sandbox) and
//                          the tab stays where it is
//
// usage: node --experimental-websocket tests/browser/hostile.mjs COMMAND ARGS
// (check-* exit 1 with one line per failure).  hostile.test.mjs runs the
// checks on run dirs made here; tests/45-report.bats on real runs.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { launch, until } from './cdp.mjs';

export const EVIL = "Ir<script>document.title='X'</script>";
export const EVIL_FN = `main<img src=x onerror="document.title='Y'">`;
export const EVIL_FILE = `<b onmouseover="document.title='Z'">front.c</b>`;
export const SVG_MARKER = 'CONTAINER-SVG-MARKER';
const NAV = 'about:blank#pwned';

export function callgrindText() {
  return ['# callgrind format', 'version: 1', 'creator: a hostile container', 'pid: 1', 'cmd: front',
    'positions: line', `events: ${EVIL} Dr`, `fl=${EVIL_FILE}`, `fn=${EVIL_FN}`, '10 900 5',
    'cfn=work', 'calls=1 20', '11 100 3', 'fn=work', '20 100 3', `totals: 1000 11`, ''].join('\n');
}

export function evilSvg(ph) {
  const folded = 'main-thread;main;work;hot 60\nmain-thread;main;work;cold 20\nmain-thread;main;idle 20\n';
  const svg = execFileSync(ph, ['flamegraph', '--title', SVG_MARKER, '-'], { input: folded }).toString();
  // what no renderer of the harness writes: a script, and a click anywhere
  // that takes the whole tab away
  return svg.replace('</svg>', `<!-- ${SVG_MARKER} --><script>top.location='${NAV}';</script>` +
    `<rect x="0" y="0" width="100%" height="100%" fill-opacity="0" onclick="top.location='${NAV}'"/></svg>`);
}

function cspProblems(html, name) {
  const out = [];
  const m = html.match(/<meta http-equiv="Content-Security-Policy" content="([^"]*)">/);
  if (!m) return [`${name}: no Content-Security-Policy`];
  const script = (m[1].split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src')) || '');
  if (!/^script-src( 'sha256-[A-Za-z0-9+/=]+')+$/.test(script)) out.push(`${name}: script-src is "${script}", not hashes only`);
  if (!/(^|; )default-src 'none'/.test(m[1])) out.push(`${name}: no default-src 'none'`);
  if (!/(^|; )frame-src 'none'/.test(m[1])) out.push(`${name}: frames may be loaded (no frame-src 'none')`);
  return out;
}

const injectedProbe = `(function () {
  var own = Array.prototype.filter.call(document.querySelectorAll('*'), function (e) {
    return Array.prototype.some.call(e.attributes, function (a) { return /^on/i.test(a.name); }); });
  return { title: document.title, scripts: document.querySelectorAll('script').length,
    imgs: document.querySelectorAll('img').length, bolds: document.querySelectorAll('b[onmouseover]').length,
    handlers: own.length, text: document.body.textContent };
})()`;

export async function checkInjected(page, report) {
  const fails = [];
  const html = readFileSync(report, 'utf8');
  const want = html.match(/<title>([^<]*)<\/title>/)[1].replace(/&amp;/g, '&').replace(/&lt;/g, '<');
  fails.push(...cspProblems(html, report));
  await page.open(`file://${report}`);
  const r = await page.eval(injectedProbe);
  if (r.title !== want) fails.push(`the title is "${r.title}", not "${want}": the container's script ran`);
  if (r.scripts !== 1) fails.push(`${r.scripts} <script> elements, the page has 1 of its own`);
  if (r.imgs !== 0 || r.bolds !== 0 || r.handlers !== 0)
    fails.push(`the container's markup became elements: ${r.imgs} img, ${r.bolds} b, ${r.handlers} with on* handlers`);
  for (const t of [EVIL, EVIL_FN, EVIL_FILE])
    if (!r.text.includes(t)) fails.push(`the text ${JSON.stringify(t)} is not shown as written`);
  return fails;
}

const FRAME_RECT = `(function () {
  var best = null;
  Array.prototype.forEach.call(document.querySelectorAll('#frames > g'), function (g, i) {
    var b = g.querySelector('rect').getBoundingClientRect();
    if (i > 0 && (!best || b.width > best.w)) best = { x: b.left + b.width / 2, y: b.top + b.height / 2, w: b.width,
      title: g.querySelector('title').textContent };
  });
  return best;
})()`;

export async function checkFlame(page, report) {
  const fails = [];
  const html = readFileSync(report, 'utf8');
  const url = `file://${report}`;
  fails.push(...cspProblems(html, report));
  // the graphs' frames are srcdoc documents (an attribute, unescaped
  // here); no frame is loaded from anywhere
  const unescape = (t) => t.replace(/&#(\d+);/g, (_, n) => String.fromCharCode(+n)).replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  const docs = [...html.matchAll(/ srcdoc="([^"]*)"/g)].map((m) => unescape(m[1]));
  if (docs.length === 0) fails.push('the report shows no flamegraph');
  if (docs.some((s) => s.includes(SVG_MARKER))) fails.push("the report embeds the container's SVG");
  for (const tag of html.match(/<iframe[^>]*>/g) || []) {
    if (!/ sandbox="allow-scripts"/.test(tag)) fails.push(`an iframe without sandbox="allow-scripts": ${tag.slice(0, 120)}`);
    if (/ src=/.test(tag)) fails.push(`an iframe loaded from a URL: ${tag.slice(0, 120)}`);
  }
  await page.open(url);
  const sandboxes = await page.eval(`Array.prototype.map.call(document.querySelectorAll('iframe'), function (f) {
    return f.getAttribute('sandbox'); })`);
  if (sandboxes.some((s) => s !== 'allow-scripts')) fails.push(`iframe sandboxes: ${JSON.stringify(sandboxes)}`);
  // click the widest frame of the report's graph, as a person would
  const box = await page.eval(`(function () { var f = document.querySelector('iframe.flame'); f.scrollIntoView();
    var b = f.getBoundingClientRect(); return { x: b.left + f.clientLeft, y: b.top + f.clientTop }; })()`);
  const target = await until(() => page.evalInFrame(`document.readyState === 'complete' && ${FRAME_RECT}`)
    .catch(() => null), 60000, 'the graph in its frame');
  // click until the graph zooms (its script listens from its load event
  // on) or the tab goes elsewhere; every click is the same zoom
  let zoomed = null;
  for (let i = 0; i < 20 && !zoomed; i++) {
    await page.click(box.x + target.x, box.y + target.y);
    zoomed = await until(async () => {
      const href = await page.eval('location.href').catch(() => null);
      if (href !== url) return { moved: href };
      return (await page.evalInFrame(`!document.getElementById('unzoom').classList.contains('hide')`).catch(() => false))
        ? { zoomed: true } : null;
    }, 3000, 'the click to zoom the graph').catch(() => null);
  }
  zoomed = zoomed || {};
  const navs = page.events().filter((e) => e.method === 'Page.frameNavigated' && !e.params.frame.parentId &&
    e.params.frame.url !== url);
  if (zoomed.moved !== undefined || navs.length > 0)
    fails.push(`a click in the flamegraph took the tab to ${zoomed.moved || navs[0].params.frame.url}`);
  else if (!zoomed.zoomed) fails.push(`a click on "${target.title}" did not zoom the graph in its frame`);
  return fails;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [cmd, a, b] = process.argv.slice(2);
  if (cmd === 'write-callgrind') {
    writeFileSync(a, callgrindText());
  } else if (cmd === 'write-svg') {
    writeFileSync(b, evilSvg(a));
  } else if (cmd === 'check-injected' || cmd === 'check-flame') {
    const page = await launch();
    let fails;
    try {
      fails = cmd === 'check-injected' ? await checkInjected(page, a) : await checkFlame(page, a);
    } finally {
      await page.close();
    }
    for (const f of fails) console.log(`hostile: FAIL: ${f}`);
    console.log(fails.length ? `hostile: ${cmd}: ${fails.length} failures` : `hostile: ${cmd}: ok`);
    process.exit(fails.length ? 1 : 0);
  } else {
    console.error('usage: hostile.mjs write-callgrind PATH | write-svg PH PATH | check-injected REPORT | check-flame REPORT');
    process.exit(2);
  }
}
