#!/usr/bin/env bats
# The strace mode end to end: start, load, graceful stop, artifacts.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

@test "strace: start, drive load, stop collects a complete strace.log" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    [[ "$output" == *"front"*"strace"* ]]
    # front is profiled, its dependency runs unprofiled.
    project_containers | grep -q "^${PH_TEST_PROJECT}-front-strace running strace$"
    project_containers | grep -q "^${PH_TEST_PROJECT}-worker-1 running none$"

    drive_load 40
    run ph stop front
    [ "$status" -eq 0 ]

    log="$OUT/front/strace.log"
    [ -L "$log" ]
    [ -s "$log" ]
    # the demo's syscalls: it accepts, reads requests and talks to the worker
    grep -qE 'accept4?\(' "$log"
    grep -qE 'connect\(' "$log"
    grep -qE '(recvfrom|read)\(' "$log"
    # it ended cleanly: the service saw SIGTERM and exited, never SIGKILL
    grep -q 'SIGTERM' "$log"
    ! grep -q 'killed by SIGKILL' "$log" || false
    tail -n 1 "$log" | grep -q '+++ exited with 0 +++'
    # the completion record: no escalation needed
    rec="$OUT/front/latest/ph-exit.json"
    [ -f "$rec" ]
    jq -e '.exit_code == 0 and (.escalations | length) == 0' "$rec"
    # the profiled container is gone, the worker still runs
    ! project_containers | grep -q "${PH_TEST_PROJECT}-front-strace" || false
}

@test "strace: artifacts belong to the invoking user and are readable" {
    run_dir=$(readlink -f "$OUT/front/latest")
    [ -d "$run_dir" ]
    [[ "$(basename "$run_dir")" =~ ^[0-9]{8}T[0-9]{6}Z-strace$ ]]
    for f in "$run_dir"/*; do
        [ "$(stat -c %u "$f")" -eq "$(id -u)" ]
        perm=$(stat -c %a "$f")
        [ "$perm" = 644 ] || [ "$perm" = 755 ]
    done
    jq -e '.mode == "strace" and .service == "front" and .timing.name == "stop" and (.trace_id | length) == 32' "$run_dir/run.json"
}

@test "strace: a second run does not overwrite the first" {
    first=$(readlink "$OUT/front/latest")
    sleep 1 # run ids have one-second resolution
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    drive_load 5
    run ph stop front
    [ "$status" -eq 0 ]
    second=$(readlink "$OUT/front/latest")
    [ "$first" != "$second" ]
    [ -s "$OUT/front/$first/strace.log" ]
    [ -s "$OUT/front/$second/strace.log" ]
}

@test "strace: both services at once, then status shows them" {
    run ph start --mode strace
    [ "$status" -eq 0 ]
    run ph status
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^front +strace +running'
    echo "$output" | grep -E '^worker +strace +running'
    drive_load 10
    run ph stop
    [ "$status" -eq 0 ]
    [ -s "$OUT/worker/strace.log" ]
    grep -qE 'accept4?\(' "$OUT/worker/strace.log"
}
