#!/usr/bin/env bats
# Engine faults: the Docker Engine restarted while a service is profiled,
# the Engine down when `stop` runs, and a socket the user may not open.
# Nothing here touches the shared dockerd: a private one is started in a
# network namespace of its own (so its bridges, routes and rules are its
# own) with its own data root, exec root (and so its own containerd), pid
# file, socket and cgroup parent; the images it needs are copied in with
# save | load, and the harness is pointed at it with DOCKER_HOST.  Only
# that one is stopped and restarted.
#
# Why a network namespace: a dockerd in the host's deletes the host's
# docker0 -- the shared Engine's default bridge -- when started with
# --bridge=none, and when restarted with --default-address-pool (it clears
# its "stale" default bridge network by that name).  Both happened here.

load test_helper

PD=/tmp/phd-$PH_TEST_PROJECT   # short: containerd's socket paths are bounded
NS=phns-$PH_TEST_PROJECT

pdocker() { DOCKER_HOST="unix://$PD/sock" timeout 120 docker "$@"; }

engine_up() {
    mkdir -p "$PD"
    if [ ! -e "/run/netns/$NS" ]; then
        ip netns add "$NS" && ip -n "$NS" link set lo up || return 1
    fi
    # nsenter, not `ip netns exec`: that remounts /sys, hiding the cgroups
    nsenter --net="/run/netns/$NS" dockerd --data-root "$PD/data" --exec-root "$PD/x" --pidfile "$PD/pid" \
        -H "unix://$PD/sock" --iptables=false --ip6tables=false --cgroup-parent "$PH_TEST_PROJECT-dockerd" \
        --containerd-namespace "$PH_TEST_PROJECT" --containerd-plugins-namespace "$PH_TEST_PROJECT-plugins" \
        >>"$PD/log" 2>&1 &
    echo $! > "$PD/started-pid"
    WAIT_SECONDS=90 wait_for pdocker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

# Stop the private dockerd (as a restart does: SIGTERM, it stops its
# containers) and wait until it is gone.
engine_down() {
    local pid
    pid=$(cat "$PD/started-pid")
    kill -TERM "$pid" 2>/dev/null || return 0
    WAIT_SECONDS=120 wait_for bash -c "! kill -0 $pid 2>/dev/null"
}

setup_file() {
    common_setup_file
    export PH_PROFILES=$(short_grace_profiles)
    # images built on the shared Engine, copied into the private one
    imgs=$(setup_images worker "$(ph setup worker 2>&1 | tee /dev/fd/3)")
    [ -n "$imgs" ]
    if ! engine_up; then
        tail -20 "$PD/log" >&3
        skip "a private dockerd could not start here (log above)"
    fi
    timeout 600 docker save "$DEMO_IMAGE:latest" $imgs | DOCKER_HOST="unix://$PD/sock" timeout 600 docker load >&3
    export DOCKER_HOST="unix://$PD/sock"
}

teardown_file() {
    if [ -e "$PD/started-pid" ] && kill -0 "$(cat "$PD/started-pid")" 2>/dev/null; then
        ids=$(pdocker ps -aq)
        [ -z "$ids" ] || pdocker rm -f $ids >/dev/null 2>&1 || true
        pdocker network prune -f >/dev/null 2>&1 || true
        engine_down || true
    fi
    if [ -e "$PD/started-pid" ] && ! kill -0 "$(cat "$PD/started-pid")" 2>/dev/null &&
        ! grep -q " $PD/" /proc/mounts; then
        rm -rf "$PD"
    fi
    [ ! -e "/run/netns/$NS" ] || ip netns del "$NS"
    unset DOCKER_HOST
    remove_project_networks
}

CTR="$PH_TEST_PROJECT-worker-strace"

start_worker() {
    run ph start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    wait_for bash -c "DOCKER_HOST=unix://$PD/sock docker logs $CTR 2>&1 | grep -q 'listening on'"
}

@test "the Engine restarted while a service is profiled: stop collects from the exited container" {
    start_worker
    engine_down
    engine_up
    [ "$(pdocker inspect -f '{{.State.Status}}' "$CTR")" = exited ]
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    log="$OUT/worker/latest/strace.log"
    [ -s "$log" ]
    tail -n 1 "$log" | grep -qE '\+\+\+ exited with 0 \+\+\+'
    # the daemon's SIGTERM went through the shim's stop protocol
    jq -e '.exit_code == 0 and .stop_requested and .escalations == []' "$OUT/worker/latest/ph-exit.json"
    [ -z "$(pdocker ps -aq --filter "name=^$CTR\$")" ]
}

@test "the Engine down at stop: a clear message, nothing lost; stop works once it is back" {
    start_worker
    before=$(ls "$OUT/worker" | grep -c strace$ || true)
    engine_down
    run ph stop worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"unix://$PD/sock"* ]]
    [[ "$output" == *"hint:"* ]]
    # nothing half-made on the host
    [ "$(ls "$OUT/worker" | grep -c strace$ || true)" -eq "$before" ]
    [ -z "$(ls -A "$OUT/worker" | grep '^\.incoming-' || true)" ]
    engine_up
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(ls "$OUT/worker" | grep -c strace$)" -eq $((before + 1)) ]
    tail -n 1 "$OUT/worker/latest/strace.log" | grep -qE '\+\+\+ exited with 0 \+\+\+'
}

@test "a socket the user may not open: the message names it and the fixes" {
    np=$(mktemp -d /tmp/ph-np-XXXXXX)
    cp "$DEMO_COMPOSE" "$np/compose.yaml"
    cp -r "$PH_PROFILES" "$np/profiles"
    chmod -R a+rX "$np"
    chmod 777 "$np"
    # the socket is root's (0660, group docker when that exists): 65534 is neither
    run setpriv --reuid=65534 --regid=65534 --clear-groups \
        timeout 60 "$PH" -f "$np/compose.yaml" -p "$PH_TEST_PROJECT" --profiles "$np/profiles" -o "$np/out" stop worker
    rm -rf "$np/compose.yaml" "$np/profiles"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"$PD/sock"* ]]
    [[ "$output" == *"docker group"* ]]
    [[ "$output" == *"DOCKER_HOST"* ]]
    [[ "$output" == *"root"* || "$output" == *"sudo"* ]]
    [ ! -e "$np/out" ]
    rmdir "$np"
}
