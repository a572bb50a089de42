#!/usr/bin/env bats
# Stopping several services stops and collects them at the same time
# (bounded): their stop protocols overlap, where one after the other each
# would wait for the one before.  Shown without a clock: both services
# ignore SIGTERM, so each stop takes the (short) grace before the shim
# escalates, and the completion records say when each stop was asked for
# and when each service ended.  PH_JOBS=1 gives the sequential order, and
# the same check then fails, as it must.

load test_helper

setup_file() {
    common_setup_file
    # Services stop in compose's order, dependants first, each wave at
    # once: front depends on worker, so here neither depends on the other
    # (tests/70-adopt.bats checks the order with the dependency).
    demo_compose
    sed -i '/depends_on: \[worker\]/d' "$DEMO_COMPOSE"
    ! grep -q depends_on "$DEMO_COMPOSE" || false
    ph setup >&3 2>&1
    export PH_PROFILES=$(short_grace_profiles)
}
teardown_file() { common_teardown_file; }

rec() { jq -r ".$2" "$OUT/$1/latest/ph-exit.json"; }

# overlap: each stop was asked for before the other service had ended.
overlap() {
    [[ "$(rec front stop_requested_at)" < "$(rec worker ended_at)" ]] &&
        [[ "$(rec worker stop_requested_at)" < "$(rec front ended_at)" ]]
}

@test "stop: two services that each take the grace are stopped at the same time" {
    DEMO_IGNORE_SIGTERM=1 run ph start --mode strace worker front
    [ "$status" -eq 0 ]
    drive_load 5
    run ph --timings stop front worker
    [ "$status" -eq 0 ]
    for svc in front worker; do
        jq -e '.escalations == ["SIGKILL"] and .stop_requested' "$OUT/$svc/latest/ph-exit.json"
        [ -s "$OUT/$svc/strace.log" ]
    done
    overlap
    # the timing tree has one stage per service's stop
    [[ "$output" == *"stop front"* ]]
    [[ "$output" == *"stop worker"* ]]
}

@test "stop: PH_JOBS=1 stops one after the other (the check above fails then)" {
    DEMO_IGNORE_SIGTERM=1 run ph start --mode strace worker front
    [ "$status" -eq 0 ]
    PH_JOBS=1 run ph stop front worker
    [ "$status" -eq 0 ]
    ! overlap || false
    # one after the other: whichever went first had ended before the
    # other's stop was asked for
    [[ "$(rec front ended_at)" < "$(rec worker stop_requested_at)" ||
        "$(rec worker ended_at)" < "$(rec front stop_requested_at)" ]]
}

@test "stop: one service's fault does not keep the other from being collected" {
    run ph start --mode strace worker front
    [ "$status" -eq 0 ]
    # worker's artifacts cannot land: its output dir is a file
    rm -rf "$OUT/worker" && touch "$OUT/worker"
    run ph stop front worker
    [ "$status" -eq 1 ]
    [[ "$output" == *"error:"*"/worker"*"Not a directory"* ]]
    # front was collected all the same, worker's container is kept
    [ -s "$OUT/front/strace.log" ]
    ! project_containers | grep -q -- '-front-strace' || false
    project_containers | grep -q -- '-worker-strace'
    rm -f "$OUT/worker"
    run ph stop worker
    [ "$status" -eq 0 ]
    [ -s "$OUT/worker/strace.log" ]
}

@test "stop: SIGINT while both services are being collected: both temp dirs removed, both containers kept, 130" {
    run ph start --mode strace worker front
    [ "$status" -eq 0 ]
    for svc in front worker; do
        wait_for bash -c "docker logs ${PH_TEST_PROJECT}-$svc-strace 2>&1 | grep -q 'listening on'"
        # enough to be still streaming when the signal comes
        dk exec "${PH_TEST_PROJECT}-$svc-strace" sh -c "head -c 400000000 /dev/zero > /opt/profiling/$svc/big"
    done
    demo_compose # the copy without the dependency: both services in one wave
    env --default-signal=INT,TERM "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" \
        --profiles "$PH_PROFILES" -o "$OUT" stop front worker > "$BATS_TEST_TMPDIR/int.out" 2>&1 &
    pid=$!
    WAIT_SECONDS=120 wait_for bash -c "ls -A '$OUT/front' '$OUT/worker' 2>/dev/null | grep -c '^\.incoming-' | grep -qx 2"
    kill -STOP "$pid"
    # frozen while both collect: the precondition, not a timing bet
    [ "$(ls -A "$OUT/front" "$OUT/worker" | grep -c '^\.incoming-')" -eq 2 ] || { echo "a collection ended before the signal"; false; }
    kill -INT "$pid"
    kill -CONT "$pid"
    wait "$pid" && rc=0 || rc=$?
    cat "$BATS_TEST_TMPDIR/int.out"
    [ "$rc" -eq 130 ]
    grep -q 'interrupted by SIGINT' "$BATS_TEST_TMPDIR/int.out"
    [ -z "$(ls -A "$OUT/front" "$OUT/worker" | grep '^\.incoming-' || true)" ]
    project_containers | grep -q -- '-front-strace'
    project_containers | grep -q -- '-worker-strace'
    # and the retry collects both
    run ph stop front worker
    [ "$status" -eq 0 ]
    [ "$(stat -c %s "$OUT/front/latest/big")" -eq 400000000 ]
    [ "$(stat -c %s "$OUT/worker/latest/big")" -eq 400000000 ]
}
