#!/usr/bin/env bash
# engine-up.sh: make sure a Docker Engine answers. When none does, start
# dockerd detached, its output in a log file, and record its pid so that
# engine-down.sh stops only an engine we started.
set -euo pipefail

STATE_DIR=${PH_STATE_DIR:-/tmp/profharness-engine}
LOG=$STATE_DIR/dockerd.log
PIDFILE=$STATE_DIR/dockerd.pid

ping_engine() {
    local sock=${DOCKER_HOST:-unix:///var/run/docker.sock}
    case "$sock" in
        unix://*) curl -fsS --max-time 3 --unix-socket "${sock#unix://}" http://d/_ping >/dev/null 2>&1 ;;
        tcp://*)  curl -fsS --max-time 3 "http://${sock#tcp://}/_ping" >/dev/null 2>&1 ;;
        *) return 1 ;;
    esac
}

if ping_engine; then
    exit 0
fi
if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST#unix:///var/run/docker.sock}" != "" ]; then
    echo "engine-up: DOCKER_HOST=$DOCKER_HOST does not answer; not starting a local dockerd" >&2
    exit 1
fi
command -v dockerd >/dev/null 2>&1 || { echo "engine-up: dockerd not installed (run scripts/install-deps.sh)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "engine-up: starting dockerd needs root" >&2; exit 1; }

mkdir -p "$STATE_DIR"
echo "engine-up: no engine answers; starting dockerd (log: $LOG)" >&2
setsid dockerd >"$LOG" 2>&1 < /dev/null &
echo $! > "$PIDFILE"
for _ in $(seq 1 120); do
    if ping_engine; then
        echo "engine-up: dockerd is up (pid $(cat "$PIDFILE"))" >&2
        exit 0
    fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "engine-up: dockerd exited; last lines of $LOG:" >&2
        tail -n 20 "$LOG" >&2
        rm -f "$PIDFILE"
        exit 1
    fi
    sleep 0.5
done
echo "engine-up: dockerd did not answer within 60 s; see $LOG" >&2
exit 1
