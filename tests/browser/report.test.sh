#!/usr/bin/env bash
# report.test.sh: the reports, the index and a comparison in headless
# Chromium: each page loads with no console error (its own script and the
# flamegraphs' in their frames), every section it should have is there,
# the event tabs switch with no script (CSS only), a click on a column
# header sorts the table, and the index links every report.
#
# The runs are made here from gen_artifacts.c (callgrind twice, massif,
# strace) and a folded-stacks run drawn by `profharness flamegraph`, then
# `profharness report` and `profharness compare`.  A driver script
# appended to a copy of each page writes its findings into the DOM, read
# back with --dump-dom; console messages come from Chromium's log.
# PH_BROWSER_SABOTAGE=1 breaks the tabs' CSS on purpose, to show the test
# can fail.  Needs chromium and cc; installs nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PH=$(readlink -f "${PROFHARNESS:-build/profharness}")
if ! command -v chromium >/dev/null; then
    echo "report.test.sh: FAIL: chromium is not installed (scripts/install-deps.sh installs it)" >&2
    exit 1
fi
[ -x "$PH" ] || { echo "report.test.sh: FAIL: $PH not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-browser-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cc -O2 -o "$tmp/gen" tests/bench/gen_artifacts.c
out=$tmp/out/front
mkdir -p "$out/20261122T100000Z-callgrind" "$out/20261122T110000Z-callgrind" "$out/20261122T120000Z-massif" \
         "$out/20261122T130000Z-strace" "$out/20261122T140000Z-flamegraph"
# each a run as stop leaves it: its run.json says its mode (a directory
# without one is no run)
for d in "$out"/*/; do
    d=${d%/}; printf '{"version":1,"mode":"%s","run":"%s"}\n' "${d##*-}" "${d##*/}" > "$d/run.json"
done
"$tmp/gen" callgrind 2 1 > "$out/20261122T100000Z-callgrind/callgrind.out"
"$tmp/gen" callgrind 3 2 > "$out/20261122T110000Z-callgrind/callgrind.out"
"$tmp/gen" massif 400 > "$out/20261122T120000Z-massif/massif.out"
"$tmp/gen" strace 1 > "$out/20261122T130000Z-strace/strace.log"
printf 'main-thread;main;work;hot 60\nmain-thread;main;work;cold 20\nworker-1;start;hot 15\nworker-1;start;<b>not bold</b> 5\n' \
    > "$out/20261122T140000Z-flamegraph/stacks-20261122T140100Z-1.folded"
"$PH" flamegraph --subtitle 'final: 100 samples over 0.67 CPU-s; 0 dropped, 0 truncated, 0 threads without perf events, 2 in the sampler'"'"'s own writer (left out); requested 150 Hz, timer 150 Hz (setitimer), delivered 149 Hz per CPU-second' \
    "$out/20261122T140000Z-flamegraph/stacks-20261122T140100Z-1.folded" > "$out/20261122T140000Z-flamegraph/flamegraph-20261122T140100Z-1.svg"
"$PH" -o "$tmp/out" report > "$tmp/report.txt"
"$PH" -o "$tmp/out" compare --html "$tmp/out/compare.html" "$out/20261122T100000Z-callgrind" "$out/20261122T110000Z-callgrind" > /dev/null 2>&1
if [ "${PH_BROWSER_SABOTAGE:-0}" = 1 ]; then
    sed -i 's/{display:block}<\/style>/{display:none}<\/style>/' "$out/20261122T100000Z-callgrind/report.html"
fi

# The driver: what the page shows, as "RESULT k=v ... END".
cat > "$tmp/driver.js" <<'JS'
window.addEventListener('load', function () { setTimeout(function () {
  var out = [];
  ['massif', 'callgrind', 'strace', 'flamegraph', 'run', 'problems', 'totals', 'diff', 'runs'].forEach(function (id) {
    if (document.getElementById(id)) out.push('section=' + id); });
  out.push('frames=' + document.querySelectorAll('iframe.flame').length);
  var fr = document.querySelector('iframe.flame');
  if (fr) out.push('flameaspect=' + (fr.clientWidth / fr.clientHeight).toFixed(4));
  out.push('tables=' + document.querySelectorAll('table.data').length);
  var p0 = document.getElementById('cg-pn-0'), p1 = document.getElementById('cg-pn-1');
  if (p0 && p1) {
    out.push('tab0before=' + getComputedStyle(p0).display + ',' + getComputedStyle(p1).display);
    document.querySelector('label[for=cg-ev-1]').click();
    out.push('tab1after=' + getComputedStyle(p0).display + ',' + getComputedStyle(p1).display);
  }
  var th = document.querySelector('table.data th.n');
  if (th) {
    var t = th.closest('table'), i = Array.prototype.indexOf.call(th.parentNode.children, th);
    var col = function () { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return parseFloat(r.cells[i].getAttribute('data-v')); }); };
    var sorted = function (a, up) { for (var k = 1; k < a.length; k++) if (up ? a[k] < a[k-1] : a[k] > a[k-1]) return false; return true; };
    th.click(); var d = col(); th.click(); var a = col();
    out.push('sort=' + (d.length < 2 ? 'short' : sorted(d, false) && sorted(a, true) ? 'ok' : 'wrong'));
  }
  out.push('links=' + document.querySelectorAll('a[href$="report.html"]').length);
  var r = document.createElement('pre');
  r.textContent = 'RES' + 'ULT ' + out.join(' ') + ' END';
  document.body.appendChild(r);
}, 300); });
JS
# The pages allow only their own scripts (Content-Security-Policy): the
# driver is let in by its hash, in the copy only; everything else the
# policy says still holds.
driver_hash=$(printf '%s' "$(cat "$tmp/driver.js")" | openssl dgst -sha256 -binary | base64)

# visit PAGE: the driver's RESULT line; console messages into $tmp/console.
visit() {
    local page=$1 copy
    copy="$(dirname "$page")/.driven-$(basename "$page")"
    sed -e 's#</body></html>##' -e "s#script-src #script-src 'sha256-$driver_hash' #" "$page" > "$copy"
    { printf '<script>%s</script>' "$(cat "$tmp/driver.js")"; echo '</body></html>'; } >> "$copy"
    timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$tmp/profile" \
        --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "file://$copy" 2> "$tmp/console" |
        grep -oE 'RESULT [^<]* END' || true
    rm -f "$copy"
}

fail=0
check() {   # check PAGE-NAME RESULT WANT...: each WANT is a k=v the result must hold
    local name=$1 result=$2; shift 2
    if [ -z "$result" ]; then
        echo "report.test.sh: FAIL: $name: no result (the page's script failed, or chromium did not run)"; fail=1; return
    fi
    for w in "$@"; do
        if ! grep -qE -- "(^| )$w( |$)" <<<"$result"; then
            echo "report.test.sh: FAIL: $name: expected $w in: $result"; fail=1
        fi
    done
    if grep -E 'CONSOLE|Uncaught|SyntaxError|TypeError|Refused to' "$tmp/console" > "$tmp/errors"; then
        echo "report.test.sh: FAIL: $name: console errors:"; cat "$tmp/errors"; fail=1
    fi
}

r=$(visit "$out/20261122T100000Z-callgrind/report.html"); echo "callgrind: $r"
check callgrind "$r" section=callgrind section=run frames=1 tab0before=block,none tab1after=none,block sort=ok
r=$(visit "$out/20261122T120000Z-massif/report.html"); echo "massif: $r"
check massif "$r" section=massif section=run sort=ok
r=$(visit "$out/20261122T130000Z-strace/report.html"); echo "strace: $r"
check strace "$r" section=strace section=run sort=ok
r=$(visit "$out/20261122T140000Z-flamegraph/report.html"); echo "flamegraph: $r"
check flamegraph "$r" section=flamegraph section=run frames=1 sort=ok
# The embedded flamegraph fits the card: its frame has the SVG's own aspect
# ratio, so the whole graph shows, scaled, with no scroll bar clipping it
# (this one is shorter than the window; a taller one is held to the
# window and scrolls inside: big.test.mjs).
svg_aspect=$(sed -n 's/^<svg [^>]*width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2/p' \
    "$out/20261122T140000Z-flamegraph/report-flamegraph.svg" | head -1)
got=$(grep -oE 'flameaspect=[0-9.]+' <<<"$r" | cut -d= -f2)
if ! awk -v g="${got:-0}" -v wh="$svg_aspect" 'BEGIN { split(wh, a, " "); want = a[1] / a[2];
        exit !(a[2] > 0 && g > want * 0.98 && g < want * 1.02) }'; then
    echo "report.test.sh: FAIL: flamegraph frame aspect ${got:-none}, the SVG's is $svg_aspect"; fail=1
fi
r=$(visit "$tmp/out/compare.html"); echo "compare: $r"
check compare "$r" section=totals section=diff frames=1
r=$(visit "$tmp/out/index.html"); echo "index: $r"
check index "$r" section=runs links=5
grep -q '<b>not bold</b>' "$out/20261122T140000Z-flamegraph/report.html" &&
    { echo "report.test.sh: FAIL: a name was not escaped"; fail=1; }
[ "$fail" = 0 ] && echo "report.test.sh: ok" || echo "report.test.sh: FAILED"
exit $fail
