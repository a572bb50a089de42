#!/usr/bin/env bash
# flame.test.sh: load a rendered flamegraph in headless Chromium and drive
# it like a person: Ctrl-F a name and read "Matched: X%", toggle case with
# Ctrl-I, click a frame and check it fills the width with its ancestors
# faded and unrelated frames hidden, search while zoomed, Reset Zoom, and
# reopen the page from its own URL (zoom and search kept in the query).
#
# How: a driver script is appended to a copy of the SVG; it dispatches real
# DOM events (window.prompt is replaced so Ctrl-F gets its answer), writes
# its findings into the DOM, and `chromium --dump-dom` prints them.  Each
# finding is compared with the value worked out by hand below; any
# mismatch, a missing result (the page's script threw) or a missing
# chromium fails the test.  PH_BROWSER_SABOTAGE=1 breaks the SVG's search
# on purpose, to show the test can fail.
#
# Needs `chromium` (Debian's package; scripts/install-deps.sh installs it).
# Installs nothing itself.  PROFHARNESS overrides the binary under test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PH=${PROFHARNESS:-build/profharness}
if ! command -v chromium >/dev/null; then
    echo "flame.test.sh: FAIL: chromium is not installed (apt-get install chromium; scripts/install-deps.sh does it)" >&2
    exit 1
fi
[ -x "$PH" ] || { echo "flame.test.sh: FAIL: $PH not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-browser.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# 100 samples.  "^b$" matches main;a;b (30, with a nested b of 10 inside
# it: counted once) and main;c;b (20): Matched 50.0%.  Zoomed on a (30),
# its b covers all of it: 100.0%.
printf 'main;a;b 20\nmain;a;b;b 10\nmain;c;b 20\nmain;c 20\nmain;d 30\n' > "$tmp/in.folded"
"$PH" flamegraph --title "browser test" "$tmp/in.folded" > "$tmp/fg.svg"
if [ "${PH_BROWSER_SABOTAGE:-0}" = 1 ]; then
    sed -i 's/var a=Math.max(s\[0\],end);/var a=s[0];/' "$tmp/fg.svg"   # count nested matches twice
fi

# drive FILE QUERY: print the RESULT line the driver leaves in the DOM.
drive() {
    local svg=$1 query=$2
    timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$tmp/profile" \
        --virtual-time-budget=5000 --dump-dom "file://$svg$query" 2>/dev/null |
        grep -oE 'RESULT [a-z]+=[^<]* END' || true
}

# The first visit: everything through events.
sed '$d' "$tmp/fg.svg" > "$tmp/driven.svg"   # drop </svg>
cat >> "$tmp/driven.svg" <<'JS'
<script type="text/ecmascript"><![CDATA[
window.addEventListener('load', function () { setTimeout(function () {
  var out = [], answer = '';
  window.prompt = function () { return answer; };
  function frame(name, nth) { return frames.filter(function (f) { return f.name.join('') === name; })[nth || 0]; }
  function w(f) { return f.r.getAttribute('width'); }
  function key(k) { window.dispatchEvent(new KeyboardEvent('keydown', { key: k, ctrlKey: true, bubbles: true })); }
  function click(el) { el.dispatchEvent(new MouseEvent('click', { bubbles: true })); }
  function matched() { var m = document.getElementById('matched'); return m.classList.contains('hide') ? 'hidden' : m.textContent.replace(/ /g, '_'); }
  answer = '^b$'; key('f');
  out.push('matched=' + matched());
  out.push('painted=' + document.querySelectorAll('rect[fill="rgb(230,0,230)"]').length);
  out.push('searchurl=' + /[?&]s=/.test(location.search));
  answer = 'B'; key('f');
  out.push('casesensitive=' + matched());
  key('i');
  out.push('ignorecase=' + matched());
  key('i');
  click(document.getElementById('search'));            /* "Reset Search" */
  out.push('reset=' + matched() + '/' + document.querySelectorAll('rect[fill="rgb(230,0,230)"]').length);
  var a = frame('a');
  out.push('aw=' + w(a));
  click(a.r);
  out.push('zoomw=' + w(a));
  out.push('bw=' + w(frame('b', 1)) + ',' + w(frame('b', 0)));   /* a;b, then a;b;b */
  out.push('mainparent=' + frame('main').g.classList.contains('parent'));
  out.push('dhidden=' + frame('d').g.classList.contains('hide'));
  out.push('unzoomshown=' + !document.getElementById('unzoom').classList.contains('hide'));
  answer = '^b$'; key('f');
  out.push('zoommatched=' + matched());
  out.push('url=' + location.search.replace(/&/g, ','));
  click(document.getElementById('unzoom'));
  out.push('resetw=' + w(a));
  out.push('dvisible=' + !frame('d').g.classList.contains('hide'));
  out.push('unzoomurl=' + /[?&]x=/.test(location.search));
  out.push('label=' + a.t.textContent);
  var r = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  r.setAttribute('id', 'result'); r.textContent = 'RES' + 'ULT ' + out.join(' ') + ' END';
  document.documentElement.appendChild(r);
}, 200); });
]]></script>
</svg>
JS
result=$(drive "$tmp/driven.svg" "")
echo "flame.test.sh: $result"

fail=0
check() {   # check NAME=VALUE: the finding must be exactly this
    if ! grep -qE -- "(^| )$1( |$)" <<<"${result:-}"; then
        echo "flame.test.sh: FAIL: expected $1, got $(grep -oE -- "(^| )${1%%=*}=[^ ]*" <<<"${result:-}" || echo nothing)"
        fail=1
    fi
}
if [ -z "$result" ]; then
    echo "flame.test.sh: FAIL: no result from the page (its script failed, or chromium did not run)"
    exit 1
fi
check 'matched=Matched:_50.0%'
check 'painted=3'
check 'searchurl=true'
check 'casesensitive=Matched:_0.0%'
check 'ignorecase=Matched:_50.0%'
check 'reset=hidden/0'
check 'aw=354.00'          # 30 of 100 samples in 1180 px
check 'zoomw=1180.00'
check 'bw=1180.00,393.33'  # b is all of a, the nested b a third
check 'mainparent=true'
check 'dhidden=true'
check 'unzoomshown=true'
check 'zoommatched=Matched:_100.0%'
check 'resetw=354.00'
check 'dvisible=true'
check 'unzoomurl=false'
check 'label=a'

# The second visit: the zoomed, searched URL of the first restores its view.
url=$(grep -oE '(^| )url=[^ ]*' <<<"$result" | sed 's/^ *url=//; s/,/\&/g')
sed '$d' "$tmp/fg.svg" > "$tmp/reopen.svg"
cat >> "$tmp/reopen.svg" <<'JS'
<script type="text/ecmascript"><![CDATA[
window.addEventListener('load', function () { setTimeout(function () {
  var a = frames.filter(function (f) { return f.name.join('') === 'a'; })[0], m = document.getElementById('matched');
  var r = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  r.textContent = 'RES' + 'ULT reopenw=' + a.r.getAttribute('width') + ' reopenmatched=' + m.textContent.replace(/ /g, '_') + ' END';
  document.documentElement.appendChild(r);
}, 200); });
]]></script>
</svg>
JS
if [ -n "$url" ]; then
    result=$(drive "$tmp/reopen.svg" "$url")
    echo "flame.test.sh: reopened with $url: $result"
    check 'reopenw=1180.00'
    check 'reopenmatched=Matched:_100.0%'
else
    echo "flame.test.sh: FAIL: the zoomed page left no state in its URL"
    fail=1
fi
[ "$fail" = 0 ] && echo "flame.test.sh: ok" || echo "flame.test.sh: FAILED"
exit $fail
