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
    DEMO_IGNORE_SIGTERM=1 run ph start --mode strace front worker
    [ "$status" -eq 0 ]
    load 5
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
    DEMO_IGNORE_SIGTERM=1 run ph start --mode strace front worker
    [ "$status" -eq 0 ]
    PH_JOBS=1 run ph stop front worker
    [ "$status" -eq 0 ]
    ! overlap
    # front first (the order asked), then worker
    [[ "$(rec front ended_at)" < "$(rec worker stop_requested_at)" ]]
}

@test "stop: one service's fault does not keep the other from being collected" {
    run ph start --mode strace front worker
    [ "$status" -eq 0 ]
    # worker's artifacts cannot land: its output dir is a file
    rm -rf "$OUT/worker" && touch "$OUT/worker"
    run ph stop front worker
    [ "$status" -eq 1 ]
    [[ "$output" == *"error:"*"/worker/"* ]]
    # front was collected all the same, worker's container is kept
    [ -s "$OUT/front/strace.log" ]
    ! project_containers | grep -q -- '-front-strace'
    project_containers | grep -q -- '-worker-strace'
    rm -f "$OUT/worker"
    run ph stop worker
    [ "$status" -eq 0 ]
    [ -s "$OUT/worker/strace.log" ]
}
