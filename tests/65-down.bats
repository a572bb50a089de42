#!/usr/bin/env bats
# down: the way down after restore (issue 20).  A service restore started
# is stopped as `docker compose stop` would stop it (the service's stop
# signal and grace, dependants first) and its container removed; docker
# compose's own containers are stopped and kept; a profiled run is
# collected first.

load test_helper

setup_file() {
    common_setup_file
    # the demo with front stopped by SIGINT: down must send the service's
    # signal, not SIGTERM or SIGKILL (compose 1.29 reads no top-level name:)
    DOWN_COMPOSE=$BATS_FILE_TMPDIR/down-compose.yaml
    sed -e '/^name:/d' -e 's/^    stop_grace_period: 20s$/    stop_grace_period: 20s\n    stop_signal: SIGINT/' \
        "$DEMO_COMPOSE" > "$DOWN_COMPOSE"
    [ "$(grep -c 'stop_signal: SIGINT' "$DOWN_COMPOSE")" -eq 2 ]
    export DOWN_COMPOSE
}
teardown_file() {
    dc down >/dev/null 2>&1 || true
    common_teardown_file
}

dph() { timeout "${PH_TIMEOUT:-900}" "$PH" -f "$DOWN_COMPOSE" -p "$PH_TEST_PROJECT" -o "$OUT" "$@"; }
dc() { timeout 300 docker-compose -f "$DOWN_COMPOSE" -p "$PH_TEST_PROJECT" "$@"; }

# The signals the Engine delivered to container $1 since $2 (a Unix time)
# and how it died, once its death is among them (polled).  --until is a
# second ahead: events of the current second are not all listed before.
events_of() {
    local ev
    for _ in $(seq 60); do
        ev=$(dk events --since "$2" --until "$(($(date +%s) + 1))" --filter "container=$1" \
            --format '{{.Action}} {{index .Actor.Attributes "signal"}}{{index .Actor.Attributes "exitCode"}}')
        case "$ev" in *die*) break ;; esac
    done
    echo "$ev"
}

@test "down: what restore started is stopped by its stop signal, dependants first, and removed" {
    run dph restore
    [ "$status" -eq 0 ]
    front=${PH_TEST_PROJECT}-front-1 worker=${PH_TEST_PROJECT}-worker-1
    [ "$(dk inspect -f '{{.State.Running}}' "$front")" = true ]
    # stop says there is nothing of its own to stop; the container runs on
    run dph stop
    [ "$status" -eq 0 ]
    [[ "$output" == *"nothing to stop"* ]]
    [ "$(dk inspect -f '{{.State.Running}}' "$front")" = true ]
    since=$(($(date +%s) - 1))
    run dph down
    [ "$status" -eq 0 ]
    echo "$output"
    [[ "$output" == *"front: stopped and removed container"* ]]
    [[ "$output" == *"worker: stopped and removed container"* ]]
    # front (the dependant) first
    [[ "$output" == *"front: stopped and removed"*"worker: stopped and removed"* ]]
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT")" ]
    # gracefully: the service's own signal, a clean exit, no SIGKILL
    ev=$(events_of "$front" "$since")
    echo "$ev"
    echo "$ev" | grep -qx 'kill 2'
    [ "$(echo "$ev" | grep -cx 'kill 9')" -eq 0 ]
    echo "$ev" | grep -qx 'die 0'
    run dph down
    [ "$status" -eq 0 ]
    [[ "$output" == *"nothing to take down"* ]]
}

@test "down: one service only; a profiled run is collected first; nothing of ours is left, not even Created" {
    run dph start --mode strace front
    [ "$status" -eq 0 ]
    vol=$(dk inspect -f '{{range .Mounts}}{{if eq .Destination "/opt/profharness"}}{{.Name}}{{end}}{{end}}' \
        "${PH_TEST_PROJECT}-front-strace")
    [[ "$vol" == profharness-tools-* ]]
    run dph down front
    [ "$status" -eq 0 ]
    [ -s "$OUT/front/latest/strace.log" ]
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT" --filter "label=io.profharness.service=front")" ]
    # worker, which start ran for front, runs on until it is named
    [ "$(dk inspect -f '{{.State.Running}}' "${PH_TEST_PROJECT}-worker-1")" = true ]
    run dph down worker
    [ "$status" -eq 0 ]
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT")" ]
    # the container that filled the tools volume is gone; the volume stays
    # for the next run (a copy of 500 MB), marked complete
    [ -z "$(dk ps -aq --filter status=created --filter "label=io.profharness.tools=${vol#profharness-tools-}")" ]
    ! dk container inspect "$vol" >/dev/null 2>&1 || false
    dk volume inspect "$vol" "$vol-filled" >/dev/null
}

@test "down: docker compose's own containers are stopped and kept, as docker compose stop does" {
    command -v docker-compose >/dev/null
    dc up -d >/dev/null 2>&1
    front=$(dc ps -q front)
    [ -n "$front" ]
    [ "$(dk inspect -f '{{.State.Running}}' "$front")" = true ]
    run dph down
    [ "$status" -eq 0 ]
    [[ "$output" == *"stopped docker compose's container"*"it is kept"* ]]
    [ "$(dk inspect -f '{{.State.Running}}' "$front")" = false ]
    [ "$(dk inspect -f '{{.State.ExitCode}}' "$front")" = 0 ]
    # restore starts compose's own again
    run dph restore front
    [ "$status" -eq 0 ]
    [ "$(dk inspect -f '{{.State.Running}}' "$front")" = true ]
    dc down >/dev/null 2>&1
}
