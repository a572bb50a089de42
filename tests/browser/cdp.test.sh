#!/usr/bin/env bash
# cdp.test.sh: the browser tests driven through the DevTools protocol, one
# Node script each (tests/browser/*.test.mjs, helper cdp.mjs): real mouse
# clicks and real font measurement in headless Chromium.
#   zoom.test.mjs    click frames; a zoom keeps descendants and ancestors
#   layout.test.mjs  title, subtitle and labels stay inside the image
#   hostile.test.mjs nothing a container planted runs in a report: names
#                    escaped, a CSP per page, the host's own graphs in
#                    sandboxed frames (a click zooms, the tab stays)
#   big.test.mjs     a report's and compare.html's graph of 15,000 frames
#                    (past a URL's 2 MiB) paints; a tall one fits the
#                    window and shows its root
# Screenshots are left in PH_BROWSER_SHOTS (default: a temp dir, removed)
# to look at.  Needs `chromium` and Node 20+ (scripts/install-deps.sh
# installs both).  PROFHARNESS overrides the binary under test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PH=${PROFHARNESS:-build/profharness}
command -v chromium >/dev/null || { echo "cdp.test.sh: FAIL: chromium is not installed" >&2; exit 1; }
command -v node >/dev/null || { echo "cdp.test.sh: FAIL: node is not installed" >&2; exit 1; }
[ -x "$PH" ] || { echo "cdp.test.sh: FAIL: $PH not built (run make)" >&2; exit 1; }
shots=${PH_BROWSER_SHOTS:-}
if [ -z "$shots" ]; then
    shots=$(mktemp -d /tmp/ph-cdp-shots.XXXXXX)
    trap 'rm -rf "$shots"' EXIT
fi
mkdir -p "$shots"
# Node 20 has WebSocket behind a flag; 22 and later by default.
flag=--experimental-websocket
node $flag -e '' 2>/dev/null || flag=
fail=0
for t in tests/browser/*.test.mjs; do
    node $flag "$t" "$PH" "$shots" || fail=1
done
exit $fail
