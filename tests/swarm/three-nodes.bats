#!/usr/bin/env bats
# The Swarm test bed (tests/swarm/bed.sh) with three nodes: one manager and
# two workers, each a private dockerd in a network namespace of its own,
# linked over veth pairs to one bridge; the demo image pushed to the bed's
# registry (Debian's docker-registry) and pulled from it by the nodes.  A
# stack with three replicas, one per node, reaching each other over the
# stack's overlay network; then one node killed: the
# manager says it is down, the other two tasks run on, untouched; and
# down after that crash leaves nothing.  Not in `just test` (about 2.5 min
# of three dockerds on a busy 2-core machine): `just test-swarm` runs it.

load ../test_helper
load swarm_helper

setup_file() {
    common_setup_file
    ph setup worker >&3 2>&1
    bed_down    # a bed an interrupted run left
    timed "up 3 nodes" bed_up 3
    REF=$(timed "push of the demo image to the registry" bed_push "$DEMO_IMAGE:latest")
    # the reference by digest, as `stack deploy` pins it
    DIGEST_REF=$(bed_docker 1 image inspect --format '{{index .RepoDigests 0}}' "$REF")
    export REF DIGEST_REF
    # the harness reaches the workers' Engines through Docker contexts
    # named as the nodes (docs/swarm.md)
    export DOCKER_CONFIG=$BATS_FILE_TMPDIR/docker-config
    mkdir -p "$DOCKER_CONFIG"
    for i in 2 3; do
        docker context create "$SWARM_BED-n$i" --docker "host=unix://$(bed_sock "$i")" >/dev/null
    done
    export PH_SWARM_REGISTRY=$(bed_registry)
}

teardown_file() {
    bed_down
    # the tag this file gave the demo image on the shared Engine
    [ -z "${REF:-}" ] || docker rmi "$REF" >/dev/null 2>&1 || true
    common_teardown_file
}

# profile_three MODE: the stack's worker, 3 tasks one per node, under MODE;
# stopped, every task collected; the service back as deployed.
profile_three() {
    local mode=$1 run_dir d n
    deploy
    wait_for tasks_deployed 3
    # the profiling image: made on the shared Engine (the demo image under
    # the registry's name there), pushed into the bed's registry
    docker tag "$DEMO_IMAGE:latest" "$REF"
    img=$(stack_profiling_image)
    [ -n "$img" ]
    timed "push of the profiling image" bed_push "$img" >/dev/null
    run timed "$mode: start (3 tasks updated, converged)" swarm_ph start --mode "$mode" worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "profiling under $mode: 3 tasks on " <<<"$output"
    for i in 1 2 3; do grep -q "$SWARM_BED-n$i (1)" <<<"$output"; done
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    # the workers pulled it from the registry
    [ "$(service_image)" = "$(bed_registry)/$img" ]
    run swarm_ph status
    echo "$output"
    [ "$(grep -c " worker *[123] *$mode *running *$run_dir" <<<"$output")" -eq 3 ]
    for i in 1 2 3; do
        wait_for node_tasks_listening "$i"
        work_tasks "$i"
    done
    run timed "$mode: stop (3 tasks stopped and collected)" swarm_ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "3 tasks collected into $run_dir" <<<"$output"
    # three complete sets of artifacts, one per task, one per node
    n=0
    for d in "$run_dir"/[123]-"$SWARM_BED"-n[123]; do
        check_task_dir "$d" "$mode"
        n=$((n + 1))
    done
    [ "$n" -eq 3 ]
    [ "$(ls -d "$run_dir"/*-n[123] | sed 's/.*-n//' | sort | tr '\n' ,)" = "1,2,3," ]
    [ "$(grep -c '"collected": true' "$run_dir/tasks.json")" -eq 3 ]
    [[ "$(service_image)" == "$REF"* && "$(service_image)" != *-profiling* ]]
    WAIT_SECONDS=300 wait_for tasks_deployed 3
}

# deploy: the stack, 3 replicas at most one per node, all running (a no-op
# when it runs already).
deploy() {
    run bed_docker 1 stack deploy -c "$(stack_compose "$REF" 3 1)" "$STACK"
    echo "$output"
    [ "$status" -eq 0 ]
    WAIT_SECONDS=300 wait_for tasks_running 3
}

@test "three nodes, 3 replicas one per node, the image pulled from the bed's registry" {
    [ "$(bed_docker 1 node ls --format '{{.Hostname}} {{.Status}} {{.ManagerStatus}}' | sort | tr '\n' ,)" = \
        "$SWARM_BED-n1 Ready Leader,$SWARM_BED-n2 Ready ,$SWARM_BED-n3 Ready ," ]
    # the workers have never seen the image
    for i in 2 3; do
        run bed_docker "$i" image inspect "$DIGEST_REF"
        [ "$status" -ne 0 ]
    done
    timed "3 tasks running" deploy
    # one task per node, each serving
    [ "$(running_tasks | awk '{ print $2 }' | sort | tr '\n' ,)" = "$SWARM_BED-n1,$SWARM_BED-n2,$SWARM_BED-n3," ]
    for i in 1 2 3; do
        [ "$(node_task_containers "$i" | wc -l)" -eq 1 ]
        wait_for node_tasks_listening "$i"
    done
    # the stack's network spans the nodes (VXLAN over the veth links): the
    # task on node 1 reaches every task by the service's name
    c=$(node_task_containers 1)
    addrs=$(bed_docker 1 exec "$c" getent hosts tasks.worker | awk '{ print $1 }')
    [ "$(wc -l <<<"$addrs")" -eq 3 ]
    for a in $addrs; do
        bed_docker 1 exec "$c" timeout 10 bash -c "exec 3<>/dev/tcp/$a/9090"
    done
    # the workers pulled it, by digest, from the registry: its log has their requests
    for i in 2 3; do
        bed_docker "$i" image inspect --format '{{json .RepoDigests}}' "$DIGEST_REF" | grep -qF "\"$DIGEST_REF\""
        grep -E "^$(bed_node_addr "$i") .*\"GET /v2/$DEMO_IMAGE/manifests/" "$(bed_dir)/registry/log"
    done
}

@test "3 replicas under strace: three complete sets of artifacts, one per task, from each node" {
    profile_three strace
}

@test "3 replicas under flamegraph: three complete sets of artifacts" {
    profile_three flamegraph
}

@test "a node killed: the manager reports it down, the other nodes' tasks run on" {
    deploy
    # the tasks before, by node; the node to kill is a worker's
    before=$(running_tasks | sort)
    c1=$(node_task_containers 1)
    c2=$(node_task_containers 2)
    [ -n "$c1" ]
    [ -n "$c2" ]
    timed "node 3 killed" bed_stop 3 KILL
    node_down() { [ "$(bed_docker 1 node inspect --format '{{.Status.State}}' "$SWARM_BED-n3")" = down ]; }
    timed "node 3 reported down" wait_for node_down
    [ "$(bed_docker 1 node inspect --format '{{.Status.State}}' "$SWARM_BED-n1") $(bed_docker 1 node inspect --format '{{.Status.State}}' "$SWARM_BED-n2")" = "ready ready" ]
    # the task on node 3 is gone from the running ones; the two others are
    # the same tasks in the same containers, still running
    tasks_running 2
    [ "$(running_tasks | sort)" = "$(grep -v " $SWARM_BED-n3\$" <<<"$before")" ]
    [ "$(node_task_containers 1)" = "$c1" ]
    [ "$(node_task_containers 2)" = "$c2" ]
    # its slot has nowhere to go (one replica per node): pending, not moved
    slot_pending() {
        bed_docker 1 service ps --no-trunc "${STACK}_worker" --filter desired-state=running \
            --format '{{.CurrentState}} {{.Error}}' | grep -q '^Pending.*no suitable node'
    }
    wait_for slot_pending
    tasks_running 2
}

@test "a node killed mid-run: the other tasks collected, the lost one said" {
    # node 3 is down (above): two replicas, one each on nodes 1 and 2
    run bed_docker 1 stack deploy -c "$(stack_compose "$REF" 2 1)" "$STACK"
    [ "$status" -eq 0 ]
    WAIT_SECONDS=300 wait_for tasks_deployed 2
    run swarm_ph start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "profiling under strace: 2 tasks on " <<<"$output"
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    lost_slot=$(bed_docker 1 service ps "${STACK}_worker" --filter desired-state=running \
        --filter "node=$SWARM_BED-n2" --format '{{.Name}}' | sed 's/.*\.//')
    [ -n "$lost_slot" ]
    wait_for node_tasks_listening 2
    timed "node 2 killed" bed_stop 2 KILL
    node_down() { [ "$(bed_docker 1 node inspect --format '{{.Status.State}}' "$SWARM_BED-n2")" = down ]; }
    wait_for node_down
    # the orchestrator then gives up the lost task (desired: shutdown), and
    # the rollback removes its slot's tasks: it must still be said lost
    lost_given_up() {
        bed_docker 1 service ps "${STACK}_worker" --filter "node=$SWARM_BED-n2" \
            --format '{{.Name}} {{.DesiredState}} {{.Image}}' | grep -q "\.$lost_slot Shutdown .*-profiling"
    }
    WAIT_SECONDS=120 wait_for lost_given_up
    bed_docker 1 service ps --no-trunc "${STACK}_worker"
    run timed "stop with a node down" swarm_ph stop worker
    echo "$output"
    bed_docker 1 service ps --no-trunc "${STACK}_worker"
    [ "$status" -eq 1 ]
    grep -q "task $lost_slot on $SWARM_BED-n2 not collected: its node is down" <<<"$output"
    grep -q "1 of 2 tasks lost (tasks.json says which)" <<<"$output"
    # the service is rolled back, so a second stop finds no run: the way to
    # the lost task's files is said
    grep -q "stays on its node ($SWARM_BED-n2).*copy /opt/profiling/worker out of it with \`docker cp\`" <<<"$output"
    check_task_dir "$(ls -d "$run_dir"/*-"$SWARM_BED"-n1)" strace
    [ ! -e "$run_dir/$lost_slot-$SWARM_BED-n2" ]
    [ "$(grep -c '"collected": true' "$run_dir/tasks.json")" -eq 1 ]
    grep -q '"lost": "its node is down"' "$run_dir/tasks.json"
}

@test "down after a node's crash: nothing of the bed is left" {
    [ -n "$(bed_leftovers | grep '^mount ')" ]
    timed "down" bed_down
    run bed_leftovers
    echo "$output"
    [ -z "$output" ]
}
