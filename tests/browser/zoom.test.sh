#!/usr/bin/env bash
# zoom.test.sh: click every frame (up to 80 per graph) of four rendered
# flamegraphs with real mouse events in headless Chromium, driven through
# the DevTools protocol by zoom.test.mjs, and check that a zoom keeps
# every descendant and ancestor of the clicked frame and hides the rest.
# Screenshots of one zoom per graph are left in PH_BROWSER_SHOTS (default:
# a temp dir, removed) to look at.
#
# Needs `chromium` and Node 20+ (scripts/install-deps.sh installs both).
# PROFHARNESS overrides the binary under test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PH=${PROFHARNESS:-build/profharness}
command -v chromium >/dev/null || { echo "zoom.test.sh: FAIL: chromium is not installed" >&2; exit 1; }
command -v node >/dev/null || { echo "zoom.test.sh: FAIL: node is not installed" >&2; exit 1; }
[ -x "$PH" ] || { echo "zoom.test.sh: FAIL: $PH not built (run make)" >&2; exit 1; }
shots=${PH_BROWSER_SHOTS:-}
if [ -z "$shots" ]; then
    shots=$(mktemp -d /tmp/ph-zoom-shots.XXXXXX)
    trap 'rm -rf "$shots"' EXIT
fi
mkdir -p "$shots"
# Node 20 has WebSocket behind a flag; 22 and later by default.
flag=--experimental-websocket
node $flag -e '' 2>/dev/null || flag=
node $flag tests/browser/zoom.test.mjs "$PH" "$shots"
