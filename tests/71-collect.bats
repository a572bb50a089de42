#!/usr/bin/env bats
# collect of a running service makes the profiler dump first (issue 13):
# the sampler's snapshot on request (here through a shell wrapper, which
# it follows into the program), callgrind_control --dump and massif's vgdb
# snapshot, on a service that rewrites its environment and process title
# as redis does; the service keeps running.  And a run in which the
# sampler recorded nothing says why at stop.

load test_helper

IMG="$PH_TEST_PROJECT-retitle:latest"

cph() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$CF" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

# Poll (deadline 120 s) until container $1 has printed $2.
wait_log() {
    local deadline=$((SECONDS + 120))
    until dk logs "$1" 2>&1 | grep -q "$2"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

running() { [ "$(dk inspect -f '{{.State.Running}}' "$1")" = true ]; }

setup_file() {
    common_setup_file
    dk rmi -f "$IMG" >/dev/null 2>&1 || true # built from tests/data/retitle as it is now
    export CF=$BATS_FILE_TMPDIR/compose.yaml
    cat > "$CF" <<YAML
services:
  wrapped:
    build: {context: $REPO/tests/data/retitle}
    image: $IMG
    command: ["sh", "-c", "echo starting; retitle"]
  retitle:
    build: {context: $REPO/tests/data/retitle}
    image: $IMG
    command: ["retitle"]
  idle:
    build: {context: $REPO/tests/data/retitle}
    image: $IMG
    command: ["sh", "-c", "echo starting; exec sleep infinity"]
YAML
}

teardown_file() {
    common_teardown_file
    cph prune --all >/dev/null 2>&1 || true # this file's profiling images
    dk rmi "$IMG" >/dev/null 2>&1 || true
}

teardown() {
    common_teardown
}

last_snapshot() { ls -d "$OUT/$1"/*-snapshot-* | sort | tail -1; }

@test "collect: the sampler follows a shell wrapper and dumps on request" {
    run cph start --mode flamegraph wrapped
    [ "$status" -eq 0 ]
    wait_log "$PH_TEST_PROJECT-wrapped-flamegraph" retitled
    run cph collect wrapped
    echo "$output"
    [ "$status" -eq 0 ]
    # a running service has no completion record yet: nothing to warn of
    [[ "$output" != *"no valid completion record"* && "$output" != *"may be incomplete"* ]]
    snap=$(last_snapshot wrapped)
    ls -l "$snap"
    # a snapshot the request made, of the program the shell started
    ls "$snap"/stacks-*.folded
    cat "$snap"/stacks-*.folded | grep -q 'spin'
    running "$PH_TEST_PROJECT-wrapped-flamegraph"
    run cph stop wrapped
    [ "$status" -eq 0 ]
    [[ "$output" != *"recorded no samples"* ]]
    cat "$OUT/wrapped/latest"/stacks-*.folded | grep -q spin
}

@test "collect: a status of a sampled process that was killed without a word is not waited for" {
    run cph start --mode flamegraph wrapped
    [ "$status" -eq 0 ]
    wait_log "$PH_TEST_PROJECT-wrapped-flamegraph" retitled
    # What a process SIGKILLed mid-run leaves: a status saying "running"
    # that no process will ever update (no such pid in the container).
    dk exec "$PH_TEST_PROJECT-wrapped-flamegraph" sh -c 'printf "%s\n" \
        "{\"pid\": 999999, \"ppid\": 1, \"program\": \"/gone\", \"followed\": false, \"state\": \"running\", \"samples\": 3, \"snapshot_request\": 0, \"reason\": \"\"}" \
        > /opt/profiling/wrapped/sampler-status-999999.json'
    run cph collect wrapped
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" != *"no snapshot within"* && "$output" != *"could not make"* ]]
    ls "$(last_snapshot wrapped)"/stacks-*.folded
    running "$PH_TEST_PROJECT-wrapped-flamegraph"
    run cph stop wrapped
    [ "$status" -eq 0 ]
}

@test "collect: callgrind dumps without harming a service that rewrote its environment" {
    run cph start --mode callgrind retitle
    [ "$status" -eq 0 ]
    wait_log "$PH_TEST_PROJECT-retitle-callgrind" retitled
    run cph collect retitle
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" != *"could not make"* && "$output" != *"exited with"* ]]
    snap=$(last_snapshot retitle)
    ls -l "$snap"
    dump=$(ls "$snap"/callgrind.out.* | head -1)
    [ -s "$dump" ]
    grep -q '^fn=main$' "$dump"
    running "$PH_TEST_PROJECT-retitle-callgrind"
    run cph stop retitle
    [ "$status" -eq 0 ]
    [ -s "$OUT/retitle/latest/callgrind.out" ]
}

@test "collect: massif writes a detailed snapshot on request" {
    run cph start --mode massif retitle
    [ "$status" -eq 0 ]
    [[ "$output" == *"before it accepts connections"* ]] # valgrind is slow to start: said so
    wait_log "$PH_TEST_PROJECT-retitle-massif" retitled
    run cph collect retitle
    echo "$output"
    [ "$status" -eq 0 ]
    snap=$(last_snapshot retitle)
    [ -s "$snap/massif.out.snapshot" ]
    grep -q '^snapshot=' "$snap/massif.out.snapshot"
    running "$PH_TEST_PROJECT-retitle-massif"
    run cph stop retitle
    [ "$status" -eq 0 ]
}

@test "stop: a perf run with no samples says so, and is no failed conversion" {
    # perf at 1 Hz: an idle `sleep` is never sampled, whatever the machine
    local prof=$BATS_TEST_TMPDIR/profiles
    mkdir -p "$prof"
    sed 's/-F, "499"/-F, "1"/' "$REPO/profiles/perf.yaml" > "$prof/perf.yaml"
    grep -q -- '-F, "1"' "$prof/perf.yaml"
    run cph --profiles "$prof" start --mode perf idle
    [ "$status" -eq 0 ]
    wait_log "$PH_TEST_PROJECT-idle-perf" starting
    run cph --profiles "$prof" stop idle
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"idle: perf recorded no samples, so there is no profile to draw"* ]]
    [[ "$output" != *"conversion failed"* ]]
    [ -s "$OUT/idle/latest/perf.data" ]
}

@test "stop: a run with no samples says why" {
    run cph start --mode flamegraph idle
    [ "$status" -eq 0 ]
    wait_log "$PH_TEST_PROJECT-idle-flamegraph" starting
    run cph stop idle
    echo "$output"
    [ "$status" -eq 0 ]
    # the reason is the sampler's (for `sleep`: no CPU time to speak of)
    [[ "$output" == *"idle: the sampler recorded no samples, so there is no profile to draw: "*"/usr/bin/sleep (pid "* ]]
}
