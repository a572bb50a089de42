#!/usr/bin/env bats
# What the Engine streams is bounded in time and in bytes (issue 19,
# findings 4 and 9).  A stalled Engine: the real one behind a proxy
# (tests/data/stall-proxy.py) whose archive answers stall after the first
# bytes or drip a byte every 5 s.  A stop through it fails after the stall
# limit, saying so, and keeps the container; a SIGTERM or SIGINT during the
# stalled transfer ends the stop at once with 143/130, the container kept
# and the retry hint.  A service that printed far more than service.log
# keeps: the rest is not even read.  The bounds here are hang bounds
# (timeout), never a pace.  The worker service is profiled: it needs no
# port.

load test_helper

setup_file() {
    common_setup_file
    ph setup worker >&3 2>&1
    export PH_PROFILES=$(short_grace_profiles)
    export PROXY_DIR=$(mktemp -d /tmp/ph-stall.XXXXXX)   # short: a unix socket path
    python3 "$REPO/tests/data/stall-proxy.py" "$PROXY_DIR/sock" /var/run/docker.sock "$PROXY_DIR" \
        >"$PROXY_DIR/log" 2>&1 </dev/null &
    echo $! > "$PROXY_DIR/pid"
    wait_for test -S "$PROXY_DIR/sock"
}

teardown_file() {
    [ ! -s "${PROXY_DIR:-/nonexistent}/pid" ] || kill "$(cat "$PROXY_DIR/pid")" 2>/dev/null || true
    [ -z "${PROXY_DIR:-}" ] || rm -rf "$PROXY_DIR"
    common_teardown_file
}

CTR="$PH_TEST_PROJECT-worker-strace"

start_worker() {
    echo pass > "$PROXY_DIR/mode"
    rm -f "$PROXY_DIR/stalled"
    run ph start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
}

# ph through the proxy.
php() { DOCKER_HOST="unix://$PROXY_DIR/sock" ph "$@"; }

kept_and_retried() {
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = exited ]
    echo pass > "$PROXY_DIR/mode"
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ -z "$(dk ps -aq --filter "name=^$CTR\$")" ]
}

@test "an archive that stalls, or drips a byte every 5 s, fails the stop after the stall limit; the container is kept" {
    for how in stall drip; do
        start_worker
        echo "$how" > "$PROXY_DIR/mode"
        PH_ENGINE_STALL=2 PH_TIMEOUT=120 run php stop worker
        echo "$output"
        [ "$status" -eq 1 ]
        [[ "$output" == *"copy \`/opt/profiling/worker\` out of container \`"*"\`: the Docker Engine at unix://$PROXY_DIR/sock stalled: less than a byte a second for 2 s"* ]]
        [[ "$output" == *"hint: the container "*" is kept"*"retry with \`profharness stop worker\`"* ]]
        kept_and_retried
    done
}

@test "--engine-stall wins over PH_ENGINE_STALL" {
    start_worker
    echo stall > "$PROXY_DIR/mode"
    PH_ENGINE_STALL=600 PH_TIMEOUT=120 run php --engine-stall 1s stop worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"stalled: less than a byte a second for 1 s"* ]]
    kept_and_retried
}

# stop through the proxy in the background, stalled, then signal SIG;
# the exit status must be WANT, within a hang bound.
# stop_stalled_by SIG: stop worker through the proxy, stall its archive,
# send SIG to the harness once the proxy holds the transfer; leaves the
# exit status in STOP_RC and what it printed in STOP_OUT.
stop_stalled_by() {
    local pid
    start_worker
    echo stall > "$PROXY_DIR/mode"
    # SIGINT is ignored in a background job unless its default is restored.
    DOCKER_HOST="unix://$PROXY_DIR/sock" env --default-signal=INT timeout 300 "$PH" -f "$DEMO_COMPOSE" \
        -p "$PH_TEST_PROJECT" --profiles "$PH_PROFILES" -o "$OUT" stop worker >"$BATS_TEST_TMPDIR/out" 2>&1 &
    pid=$!
    wait_for test -e "$PROXY_DIR/stalled"
    # timeout(1) forwards the signal to the harness.
    kill "-$1" "$pid"
    WAIT_SECONDS=30 wait_for bash -c "! kill -0 $pid 2>/dev/null"
    STOP_RC=0
    wait "$pid" || STOP_RC=$?
    STOP_OUT=$(cat "$BATS_TEST_TMPDIR/out")
    printf '%s\n' "$STOP_OUT"
}

@test "SIGTERM during a stalled archive ends the stop with 143, the container kept" {
    stop_stalled_by TERM
    [ "$STOP_RC" -eq 143 ]
    [[ "$STOP_OUT" == *"interrupted by SIGTERM"* ]]
    grep -q "is kept.*retry with \`profharness stop worker\`" <<< "$STOP_OUT"
    # kept as it was, and a retry collects it and removes it
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = exited ]
    echo pass > "$PROXY_DIR/mode"
    run ph stop worker
    [ "$status" -eq 0 ]
    [ -z "$(dk ps -aq --filter "name=^$CTR\$")" ]
}

@test "SIGINT during a stalled archive ends the stop with 130, the container kept" {
    stop_stalled_by INT
    [ "$STOP_RC" -eq 130 ]
    [[ "$STOP_OUT" == *"interrupted by SIGINT"* ]]
    grep -q "is kept.*retry with \`profharness stop worker\`" <<< "$STOP_OUT"
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = exited ]
    echo pass > "$PROXY_DIR/mode"
    run ph stop worker
    [ "$status" -eq 0 ]
    [ -z "$(dk ps -aq --filter "name=^$CTR\$")" ]
}

# The bytes the command read from the Engine's logs endpoint, from the run's
# own timings (harness.trace.json).
logs_bytes_in() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
events = d["traceEvents"] if isinstance(d, dict) else d
print(sum(e.get("args", {}).get("bytes_in", 0) for e in events if e.get("name", "").endswith("/logs")))
PY
}

@test "service.log stops at PH_SERVICE_LOG_MAX: the rest is not read, and the file says so" {
    start_worker
    # 32 MiB on the container's own stdout (its PID 1's), in 8 kB lines.
    dk exec "$CTR" sh -c 'yes "$(printf %07999d 0)" | head -c 33554432 > /proc/1/fd/1'
    PH_SERVICE_LOG_MAX=64KiB run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"worker: its output is over 64 KiB: service.log keeps the first 64 KiB, the rest was not read"* ]]
    log=$OUT/worker/latest/service.log
    [ "$(stat -c %s "$log")" -le $((65536 + 300)) ]
    tail -c 300 "$log" | grep -q "the output goes on past 64 KiB; at least [0-9]* more bytes were left out, the rest unread"
    # Read up to the cap and a little (what was in flight), not the 32 MiB.
    bytes=$(logs_bytes_in "$OUT/worker/latest/harness.trace.json")
    echo "read from the logs endpoint: $bytes bytes"
    [ "$bytes" -gt 65536 ]
    [ "$bytes" -lt $((4 << 20)) ]
}
