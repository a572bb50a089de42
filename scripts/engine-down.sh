#!/usr/bin/env bash
# engine-down.sh: stop the dockerd that engine-up.sh started, and only that one.
set -uo pipefail
STATE_DIR=${PH_STATE_DIR:-/tmp/profharness-engine}
PIDFILE=$STATE_DIR/dockerd.pid
[ -f "$PIDFILE" ] || exit 0
pid=$(cat "$PIDFILE")
if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
fi
rm -f "$PIDFILE"
