#!/usr/bin/env bash
# flame.test.sh: load a rendered flamegraph in headless Chromium and drive
# it like a person: search a name and read "Matched: X%", click a frame and
# check it fills the width with its ancestors faded, reset the zoom.  A
# driver script is appended to a copy of the SVG; it writes its findings
# into the DOM, which Chromium dumps.  Exits non-zero on any mismatch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
command -v chromium >/dev/null || { echo "flame.test.sh: chromium is not installed (scripts/install-deps.sh installs it)"; exit 1; }
tmp=$(mktemp -d /tmp/ph-browser.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# a;b is 30% of the total, b also appears under c (nested matches: b under
# b must not be counted twice): "^b$" matches b (30) + c;b (20) + b;b inside
# a;b, so Matched is 50%.
printf 'main;a;b 20\nmain;a;b;b 10\nmain;c;b 20\nmain;c 20\nmain;d 30\n' > "$tmp/in.folded"
build/profharness flamegraph --title "browser test" "$tmp/in.folded" > "$tmp/fg.svg"

sed '$d' "$tmp/fg.svg" > "$tmp/driven.svg"   # drop </svg>
cat >> "$tmp/driven.svg" <<'JS'
<script type="text/ecmascript"><![CDATA[
window.addEventListener('load', function () { setTimeout(function () {
  var out = [];
  function frame(name) { return frames.filter(function (g) { return g.dataset.name === name; })[0]; }
  function w(g) { return +g.querySelector('rect').getAttribute('width'); }
  search('^b$');
  out.push('matched=' + document.getElementById('matched').textContent);
  out.push('painted=' + document.querySelectorAll('rect[fill="rgb(230,0,230)"]').length);
  resetSearch();
  var a = frame('a');
  a.dispatchEvent(new MouseEvent('click', { bubbles: true }));
  out.push('zoomw=' + w(a).toFixed(0));
  out.push('mainparent=' + frame('main').classList.contains('parent'));
  out.push('dhidden=' + frame('d').classList.contains('hide'));
  out.push('url=' + (location.search.indexOf('x=') >= 0));
  document.getElementById('unzoom').dispatchEvent(new MouseEvent('click', { bubbles: true }));
  out.push('resetw=' + w(a).toFixed(0) + '/' + (+a.dataset.w).toFixed(0));
  out.push('dvisible=' + !frame('d').classList.contains('hide'));
  var r = document.createElementNS('http://www.w3.org/2000/svg', 'text');
  r.setAttribute('id', 'result'); r.textContent = 'RESULT ' + out.join(' ') + ' END';
  document.documentElement.appendChild(r);
}, 100); });
]]></script>
</svg>
JS

dom=$(timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
      --disable-component-update --disable-sync --no-first-run --user-data-dir="$tmp/profile" \
      --virtual-time-budget=3000 --dump-dom "file://$tmp/driven.svg" 2>/dev/null)
result=$(grep -o 'RESULT matched=.* END' <<<"$dom" || true)
echo "flame.test.sh: $result"
fail=0
check() { grep -q -- "$1" <<<"$result" || { echo "flame.test.sh: expected $1"; fail=1; }; }
check 'matched=Matched: 50.0%'
check 'painted=3'
check 'zoomw=1180'
check 'mainparent=true'
check 'dhidden=true'
check 'url=true'
check 'dvisible=true'
reset=$(grep -o 'resetw=[0-9]*/[0-9]*' <<<"$result" || true)
[ -n "$reset" ] && [ "${reset#resetw=}" = "$(cut -d/ -f2 <<<"${reset#resetw=}")/$(cut -d/ -f2 <<<"${reset#resetw=}")" ] || { echo "flame.test.sh: reset zoom did not restore the width ($reset)"; fail=1; }
exit $fail
