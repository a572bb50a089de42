#!/usr/bin/env bash
# demo.sh: the whole loop on the bundled demo.  For each mode: restart both
# services under it, drive load at the front service, stop gracefully, and
# show where the artifacts landed and how to open them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ph=build/profharness
modes=${PH_DEMO_MODES:-"strace massif callgrind flamegraph"}
requests=${PH_DEMO_REQUESTS:-300}

$ph setup
for mode in $modes; do
    if ! $ph modes | grep -q "^$mode "; then
        echo "demo: mode $mode is not defined in profiles/; skipping it" >&2
        continue
    fi
    echo "== demo: $mode"
    $ph start --mode "$mode"
    # valgrind needs a few seconds before the service listens.
    build/demo-load -w 60 -n "$requests" -c 4
    $ph stop
done
$ph restore
echo
echo "== results (contrib/profiling/<service>/latest is the newest run of each)"
for svc in contrib/profiling/*/; do
    s=$(basename "$svc")
    echo "$s:"
    ls -1 "$svc" | grep -v '^\.' | sed 's/^/  /'
done
cat <<'TXT'

open contrib/profiling/index.html in a browser: every run, each with its report; or each file
with its own tool:
  strace:     less contrib/profiling/front/strace.log
  massif:     ms_print contrib/profiling/front/massif.out
  callgrind:  callgrind_annotate contrib/profiling/front/callgrind.out
  flamegraph: a browser on contrib/profiling/front/flamegraph.svg (pprof: profile.pb.gz)
TXT
