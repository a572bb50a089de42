#!/usr/bin/env bats
# Faults lose no data: a service that ignores SIGTERM, one that crashes,
# two stops at once, a stop with nothing to stop, bad input, no Engine.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
    export PH_PROFILES=$(short_grace_profiles)
}
teardown_file() { common_teardown_file; }

@test "a service that ignores SIGTERM still yields a complete strace.log" {
    DEMO_IGNORE_SIGTERM=1 run ph start --mode strace front
    [ "$status" -eq 0 ]
    drive_load 10
    run ph stop front
    [ "$status" -eq 0 ]
    [[ "$output" == *"escalated"* ]]
    log="$OUT/front/strace.log"
    grep -q 'killed by SIGKILL' "$log"
    # strace itself was not killed: it wrote the tracee's end and exited
    jq -e '.escalations == ["SIGKILL"] and .wrapper_killed == false' "$OUT/front/latest/ph-exit.json"
}

@test "a service that ignores SIGTERM still yields a massif profile" {
    DEMO_IGNORE_SIGTERM=1 run ph start --mode massif front
    [ "$status" -eq 0 ]
    drive_load 10
    run ph stop front
    [ "$status" -eq 0 ]
    run ms_print "$OUT/front/massif.out"
    [ "$status" -eq 0 ]
    [[ "$output" == *"front_"* ]]
    jq -e '(.escalations | length) >= 1' "$OUT/front/latest/ph-exit.json"
}

@test "a service that crashes mid-run still yields what strace wrote" {
    DEMO_CRASH_AFTER=5 run ph start --mode strace front
    [ "$status" -eq 0 ]
    timeout 120 "$REPO/build/demo-load" -w 120 -n 20 -c 1 "127.0.0.1:$DEMO_PORT" || true
    wait_for bash -c "docker ps -a --filter name=${PH_TEST_PROJECT}-front-strace --format '{{.State}}' | grep -q exited"
    run ph stop front
    [ "$status" -eq 0 ]
    grep -q 'SIGABRT' "$OUT/front/strace.log"
    # strace re-raises its tracee's signal; the shim reports it as 128+6
    jq -e '.exit_code == 134' "$OUT/front/latest/ph-exit.json"
}

@test "two stops at once: one collects, the other finds nothing left" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    drive_load 5
    before=$(ls "$OUT/front" | grep -c strace$ || true)
    ph stop front > "$BATS_TEST_TMPDIR/a.out" 2>&1 & a=$!
    ph stop front > "$BATS_TEST_TMPDIR/b.out" 2>&1 & b=$!
    wait $a; sa=$?
    wait $b; sb=$?
    [ "$sa" -eq 0 ]
    [ "$sb" -eq 0 ]
    after=$(ls "$OUT/front" | grep -c strace$)
    [ "$after" -eq $((before + 1)) ]
    cat "$BATS_TEST_TMPDIR/a.out" "$BATS_TEST_TMPDIR/b.out" | grep -qE 'nothing to stop|already collected'
}

@test "stop with nothing running says so and exits 0" {
    run ph stop front
    [ "$status" -eq 0 ]
    [[ "$output" == *"nothing to stop"* ]]
}

@test "restore runs the services with no profiler, shim or sampler" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    run ph restore
    [ "$status" -eq 0 ]
    # restore collected the profiled run first
    [ -s "$OUT/front/strace.log" ]
    project_containers | grep -q "^${PH_TEST_PROJECT}-front-1 running none$"
    project_containers | grep -q "^${PH_TEST_PROJECT}-worker-1 running none$"
    for c in ${PH_TEST_PROJECT}-front-1 ${PH_TEST_PROJECT}-worker-1; do
        procs=$(dk top "$c" -eo pid,comm)
        echo "$procs"
        ! grep -qE 'strace|valgrind|memcheck|massif|callgrind|ph-init' <<<"$procs" || false
        ! dk exec "$c" grep -q phsampler /proc/1/maps || false
        image=$(dk inspect -f '{{.Config.Image}}' "$c")
        [[ "$image" != *profiling* ]]
    done
    drive_load 5
}

@test "profiling one service leaves the other as it was" {
    run ph restore
    [ "$status" -eq 0 ]
    worker_id=$(dk ps -q --filter name=${PH_TEST_PROJECT}-worker-1)
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    [ "$(dk ps -q --filter name=${PH_TEST_PROJECT}-worker-1)" = "$worker_id" ]
    run ph stop front
    [ "$status" -eq 0 ]
}

@test "collect copies a running profile without stopping it" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    drive_load 5
    run ph collect front
    [ "$status" -eq 0 ]
    snap=$(ls -d "$OUT"/front/*-snapshot-* | tail -1)
    [ -s "$snap/strace.log" ]
    project_containers | grep -q "^${PH_TEST_PROJECT}-front-strace running strace$"
    run ph stop front
    [ "$status" -eq 0 ]
}

@test "a bad compose file: exit 2, file:line in the message, no container made" {
    remove_project
    bad=$BATS_TEST_TMPDIR/compose.yaml
    printf 'services:\n  front:\n    image: x\n    ports: [unterminated\n' > "$bad"
    run timeout 60 "$PH" -f "$bad" -p phbad -o "$OUT" start --mode strace
    [ "$status" -eq 2 ]
    [[ "$output" == *"$bad:"[0-9]*":"[0-9]*":"* ]]
    [ -z "$(dk ps -aq --filter label=io.profharness.project=phbad)" ]
}

@test "an unknown mode or service: exit 2 and nothing changes" {
    run ph start --mode nosuchmode front
    [ "$status" -eq 2 ]
    [[ "$output" == *"nosuchmode"* ]]
    run ph start --mode strace nosuchservice
    [ "$status" -eq 2 ]
    [[ "$output" == *"nosuchservice"* ]]
}

@test "an unreachable Engine gives a clear message and exit 1" {
    DOCKER_HOST=unix:///nonexistent/docker.sock run ph status
    [ "$status" -eq 1 ]
    [[ "$output" == *"/nonexistent/docker.sock"* ]]
    [[ "$output" == *"hint:"* ]]
}

@test "privileged: true is replaced by explicit capabilities where the host refuses it" {
    priv=$BATS_TEST_TMPDIR/priv
    mkdir -p "$priv"
    # a project of this run's own, so parallel runs do not meet here
    local proj=$PH_TEST_PROJECT-priv
    cat > "$priv/compose.yaml" <<YAML
name: $proj
services:
  solo:
    image: $DEMO_IMAGE:latest
    command: ["demo-worker"]
    privileged: true
YAML
    run timeout 600 "$PH" -f "$priv/compose.yaml" --profiles "$PH_PROFILES" -o "$OUT" start --mode strace
    echo "$output"
    [ "$status" -eq 0 ]
    run timeout 300 "$PH" -f "$priv/compose.yaml" --profiles "$PH_PROFILES" -o "$OUT" stop
    [ "$status" -eq 0 ]
    [ -s "$OUT/solo/strace.log" ]
    ids=$(dk ps -aq --filter label=io.profharness.project=$proj); [ -z "$ids" ] || dk rm -f $ids
}
