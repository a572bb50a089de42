// cdp.mjs - headless Chromium through the DevTools protocol, no packages:
// start it, open a page, evaluate, click with real input events, take
// screenshots.  Needs Node 20+ run with --experimental-websocket (or 22+).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll FN until it returns a truthy value or MS pass.
export async function until(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export async function launch() {
  const dir = mkdtempSync(join(tmpdir(), 'ph-cdp-'));
  const proc = spawn('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--hide-scrollbars',
    '--remote-debugging-port=0', `--user-data-dir=${dir}`, 'about:blank'], { stdio: 'ignore', detached: true });
  const portFile = join(dir, 'DevToolsActivePort');
  const port = await until(() => existsSync(portFile) && readFileSync(portFile, 'utf8').split('\n')[0], 30000,
    'chromium to listen');
  const list = await until(async () => {
    try {
      const l = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
      return l.find((t) => t.type === 'page');
    } catch { return null; }
  }, 30000, 'a page target');
  const ws = new WebSocket(list.webSocketDebuggerUrl);
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = fail; });
  let next = 1;
  const pending = new Map(), events = [];
  ws.onmessage = (m) => {
    const msg = JSON.parse(m.data);
    if (msg.id && pending.has(msg.id)) {
      const { ok, fail } = pending.get(msg.id);
      pending.delete(msg.id);
      msg.error ? fail(new Error(`${msg.error.message} ${msg.error.data || ''}`)) : ok(msg.result);
    } else if (msg.method) {
      events.push(msg);
    }
  };
  // SESSION: a frame's own target (an out-of-process iframe), else the page
  const send = (method, params = {}, sessionId = undefined) => new Promise((ok, fail) => {
    const id = next++;
    pending.set(id, { ok, fail });
    ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
  });
  // Frames Chromium puts in processes of their own (a sandboxed frame is
  // one) are targets of their own: attach to them as they come.
  await send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true });
  const page = {
    send,
    async open(url, width = 1300, height = 900) {
      await send('Page.enable');
      await send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
      events.length = 0;
      await send('Page.navigate', { url });
      await until(() => events.some((e) => e.method === 'Page.loadEventFired'), 30000, `${url} to load`);
    },
    // The value of EXPR (a JS expression) in the page; throws on an exception.
    async eval(expr) {
      const r = await send('Runtime.evaluate', { expression: expr, returnByValue: true, awaitPromise: true });
      if (r.exceptionDetails) throw new Error(`page threw: ${JSON.stringify(r.exceptionDetails).slice(0, 400)}`);
      return r.result.value;
    },
    // A left click at (X, Y) CSS px: pointer moved there, pressed, released.
    async click(x, y) {
      await send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
      await send('Input.dispatchMouseEvent', { type: 'mousePressed', x, y, button: 'left', clickCount: 1 });
      await send('Input.dispatchMouseEvent', { type: 'mouseReleased', x, y, button: 'left', clickCount: 1 });
    },
    // What the page did since it was opened (Page.* events: navigations).
    events() { return events.slice(); },
    // The value of EXPR in the first child frame (an iframe) of the page,
    // whatever the frame's origin (a sandboxed srcdoc frame's is opaque):
    // through its own target when it has one, else in an isolated world
    // of the page's process (it sees the frame's DOM all the same).
    async evalInFrame(expr) {
      const own = events.find((e) => e.method === 'Target.attachedToTarget' && e.params.targetInfo.type === 'iframe');
      let r;
      if (own) {
        r = await send('Runtime.evaluate', { expression: expr, returnByValue: true }, own.params.sessionId);
      } else {
        const tree = await send('Page.getFrameTree');
        const child = (tree.frameTree.childFrames || [])[0];
        if (!child) throw new Error('the page has no frame');
        const w = await send('Page.createIsolatedWorld', { frameId: child.frame.id, worldName: 'ph-test' });
        r = await send('Runtime.evaluate', { expression: expr, contextId: w.executionContextId, returnByValue: true });
      }
      if (r.exceptionDetails) throw new Error(`frame threw: ${JSON.stringify(r.exceptionDetails).slice(0, 400)}`);
      return r.result.value;
    },
    async screenshot() {
      const r = await send('Page.captureScreenshot', { format: 'png' });
      return Buffer.from(r.data, 'base64');
    },
    async close() {
      try { ws.close(); } catch { /* gone */ }
      // chromium leads a process group of its own (detached): its helpers
      // (renderers, crashpad) are signalled with it, not left writing
      const group = (sig) => { try { process.kill(-proc.pid, sig); } catch { /* gone */ } };
      group('SIGTERM');
      await until(() => proc.exitCode !== null || proc.signalCode !== null, 10000, 'chromium to exit').catch(() => {});
      group('SIGKILL');
      // a helper that outlived the group's kill may still write a moment:
      // retried, and a profile dir left in /tmp is said, not a failed test
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 25, retryDelay: 200 });
      } catch (e) {
        process.stderr.write(`cdp: left ${dir}: ${e.code || e.message}\n`);
      }
    },
  };
  return page;
}
