#!/usr/bin/env bats
# The Swarm test bed (tests/swarm/bed.sh), the quick case: a one-node swarm
# on a private dockerd in a network namespace of its own, a stack of the
# demo's worker deployed on it with `docker stack deploy`, the image copied
# in by save | load (no registry); then `down` leaves nothing of the bed and
# the shared dockerd as it was.  The three-node bed (a registry, a node
# killed) is tests/swarm/three-nodes.bats (`just test-swarm`).

load test_helper
load swarm/swarm_helper

setup_file() {
    common_setup_file
    ph setup worker >&3 2>&1
    SHARED_PID=$(cat /var/run/docker.pid)
    export SHARED_PID
    bed_down    # a bed an interrupted run left
    timed "up 1 node" bed_up 1
}

teardown_file() {
    bed_down
    common_teardown_file
}

@test "a one-node swarm: a stack of the demo's worker, 2 replicas, both tasks run" {
    timed "save | load of the demo image" bed_load "$DEMO_IMAGE:latest"
    [ "$(bed_docker 1 info --format '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}')" = "active true" ]
    run bed_docker 1 stack deploy -c "$(stack_compose "$DEMO_IMAGE:latest" 2)" "$STACK"
    echo "$output"
    [ "$status" -eq 0 ]
    timed "2 tasks running" wait_for tasks_running 2
    [ "$(node_task_containers 1 | wc -l)" -eq 2 ]
    wait_for node_tasks_listening 1
    # the private dockerd's swarm is its own: the shared Engine is in none
    [ "$(dk info --format '{{.Swarm.LocalNodeState}}')" = inactive ]
    [ -z "$(dk ps -q --filter "label=com.docker.stack.namespace=$STACK")" ]
}

@test "the Engine client's Swarm calls, on the bed's manager (tests/unit/bed/test_engine_swarm.c)" {
    run env DOCKER_HOST="unix://$(bed_sock 1)" PH_TEST_SWARM_IMAGE="$DEMO_IMAGE:latest" \
        PH_TEST_SWARM_NODE="$SWARM_BED-n1" timeout 600 "$REPO/build/tests/bed/test_engine_swarm"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q '^\[  PASSED  \] 5 test' <<<"$output"
}

@test "a stack's service under strace: every task profiled, stopped, collected per task, rolled back" {
    tasks_running 2
    img=$(timed "the profiling image (setup on the shared Engine)" stack_profiling_image)
    [ -n "$img" ]
    timed "save | load of the profiling image" bed_load "$img"
    run timed "start (update, converged)" swarm_ph start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "profiling under strace: 2 tasks on $SWARM_BED-n1 (2)" <<<"$output"
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    [ "$(service_image)" = "$img" ]
    run swarm_ph status
    echo "$output"
    [ "$(grep -c "^$SWARM_BED-n1 *worker *[12] *strace *running *$run_dir" <<<"$output")" -eq 2 ]
    wait_for node_tasks_listening 1
    run timed "stop (tasks stopped, collected, rolled back)" swarm_ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "2 tasks collected into $run_dir; the service is rolled back as deployed" <<<"$output"
    for slot in 1 2; do
        check_task_dir "$run_dir/$slot-$SWARM_BED-n1" strace
        grep -q "\"slot\": $slot" "$run_dir/$slot-$SWARM_BED-n1/run.json"
    done
    [ "$(grep -c '"collected": true' "$run_dir/tasks.json")" -eq 2 ]
    # the service as deployed: its image, its tasks running again
    [ "$(service_image)" = "$DEMO_IMAGE:latest" ]
    wait_for tasks_deployed 2
    run swarm_ph restore worker
    [ "$status" -eq 0 ]
    grep -q "nothing to restore" <<<"$output"
}

@test "the bed is off the host's network: no address or route of its subnet here" {
    [ -n "$(bed__namespaces)" ]
    [ -z "$(ip -o addr show | grep -F " $(bed__net)." || true)" ]
    [ -z "$(ip route show | grep -F "$(bed__net)." || true)" ]
    # ... but inside node 1 it is
    ip -n "$(bed__ns n1)" -o addr show dev eth0 | grep -qF " $(bed_node_addr 1)/24"
}

@test "down removes the whole bed, twice over, and leaves the shared dockerd as it was" {
    [ -n "$(bed_leftovers)" ]
    timed "down" bed_down
    run bed_leftovers
    echo "$output"
    [ -z "$output" ]
    run bed_down
    [ "$status" -eq 0 ]
    [ -z "$(bed_leftovers)" ]
    [ "$(cat /var/run/docker.pid)" = "$SHARED_PID" ]
    kill -0 "$SHARED_PID"
    dk version --format '{{.Server.Version}}' >/dev/null
    ip link show docker0 >/dev/null
}
