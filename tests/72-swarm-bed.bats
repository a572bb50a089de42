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
    # what a mode asks of the runtimes reaches every task, after what the
    # user set, as on one Engine: a strace profile asking for one variable,
    # and a refresh step before the stop (as jcmd Compiler.perfmap is)
    export PH_PROFILES=$BATS_TEST_TMPDIR/profiles
    mkdir -p "$PH_PROFILES"
    cp "$REPO"/profiles/*.yaml "$PH_PROFILES/"
    printf '%s\n' 'runtimes:' '  environment:' '    DEMO_PH_OPTS: "--from-profile"' '  refresh:' \
        '    - in: profiler' '      exec: [sh, -c, "echo refreshed > \"$1/refreshed\"", sh, "{out}"]' \
        >> "$PH_PROFILES/strace.yaml"
    img=$(timed "the profiling image (setup on the shared Engine)" stack_profiling_image)
    [ -n "$img" ]
    timed "save | load of the profiling image" bed_load "$img"
    run timed "start (update, converged)" swarm_ph start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "profiling under strace: 2 tasks on $SWARM_BED-n1 (2)" <<<"$output"
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    [ "$(service_image)" = "$img" ]
    bed_docker 1 service inspect --format '{{json .Spec.TaskTemplate.ContainerSpec.Env}}' "${STACK}_worker" |
        grep -q '"DEMO_PH_OPTS=--from-user --from-profile"'
    run swarm_ph status
    echo "$output"
    [ "$(grep -c "^$SWARM_BED-n1 *worker *[12] *strace *running *$run_dir" <<<"$output")" -eq 2 ]
    wait_for node_tasks_listening 1
    # collect: one run, a sub-dir per task, as stop lays a run out; the
    # tasks the same containers, running on
    before=$(node_task_containers 1 | sort)
    run timed "collect (2 running tasks copied)" swarm_ph collect worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(ls -d "$OUT"/worker/*-snapshot-* | wc -l)" -eq 1 ]
    snap=$(awk -F'\t' '$1 == "worker" { print $2 }' <<<"$output")
    [ "$snap" = "$(ls -d "$OUT"/worker/*-snapshot-*)" ]
    for slot in 1 2; do
        [ -s "$snap/$slot-$SWARM_BED-n1/run.json" ]
        [ -s "$snap/$slot-$SWARM_BED-n1/report.html" ]
        grep -q 'execve(".*demo-worker"' "$snap/$slot-$SWARM_BED-n1/strace.log"
    done
    [ "$(grep -c '"collected": true' "$snap/tasks.json")" -eq 2 ]
    [ "$(node_task_containers 1 | sort)" = "$before" ]
    # what a harness that died mid-collection left in the run dir
    mkdir -p "$run_dir/.incoming-left-by-a-dead-harness"
    run timed "stop (tasks stopped, collected, rolled back)" swarm_ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "2 tasks collected into $run_dir; the service is rolled back as deployed" <<<"$output"
    # as a lone run's stop: the leftover swept, `latest` at the run, the
    # index rewritten with each task's report, each task's run.json
    # saying how it ended from the shim's completion record
    [ ! -e "$run_dir/.incoming-left-by-a-dead-harness" ]
    grep -q "removed .*\.incoming-left-by-a-dead-harness" <<<"$output"
    [ "$(readlink "$OUT/worker/latest")" = "$(basename "$run_dir")" ]
    for slot in 1 2; do
        grep -qF "href=\"worker/$(basename "$run_dir")/$slot-$SWARM_BED-n1/report.html\"" "$OUT/index.html"
        jq -e '.completion.outcome == "stopped" and .completion_problem == null and .missing_artifacts == []
               and .oom_killed == false and .node != null and .task_state != null' \
            "$run_dir/$slot-$SWARM_BED-n1/run.json"
    done
    for slot in 1 2; do
        check_task_dir "$run_dir/$slot-$SWARM_BED-n1" strace
        grep -q "\"slot\": $slot" "$run_dir/$slot-$SWARM_BED-n1/run.json"
        # what the task printed, through its node (service.log)
        grep -q 'listening on' "$run_dir/$slot-$SWARM_BED-n1/service.log"
        # the refresh step ran in the task before its stop
        grep -qx refreshed "$run_dir/$slot-$SWARM_BED-n1/refreshed"
    done
    [ "$(grep -c '"collected": true' "$run_dir/tasks.json")" -eq 2 ]
    # the service as deployed: its image, its tasks running again
    [ "$(service_image)" = "$DEMO_IMAGE:latest" ]
    wait_for tasks_deployed 2
    run swarm_ph restore worker
    [ "$status" -eq 0 ]
    grep -q "nothing to restore" <<<"$output"
}

@test "attach to a stack's service: a profiler beside every task on its node, the tasks never restarted" {
    wait_for tasks_deployed 2
    run ph setup worker
    [ "$status" -eq 0 ]
    tools=$(setup_images worker "$output" | grep '^profharness-tools:')
    [ -n "$tools" ]
    timed "save | load of the tools image" bed_load "$tools"
    wait_for node_tasks_listening 1
    before=$(node_task_containers 1 | sort)
    # a runtime the mode would name nothing of is refused in every task,
    # as on one Engine: a rule for the worker's own program, in a copy of
    # the profiles; nothing is attached
    profs=$BATS_TEST_TMPDIR/profiles
    mkdir -p "$profs"
    cp "$REPO"/profiles/*.yaml "$profs/"
    printf '%s\n' 'runtimes:' '  unnamed:' '    - program: [demo-worker]' '      on: [attach]' \
        '      why: "would name nothing here (a test rule)"' '      use: "nothing"' >> "$profs/strace.yaml"
    PH_PROFILES=$profs run swarm_ph attach --mode strace worker
    echo "$output"
    [ "$status" -eq 2 ]
    grep -q "would name nothing here (a test rule)" <<<"$output"
    [ -z "$(bed_docker 1 ps -aq --filter label=io.profharness.attached)" ]
    run timed "attach (2 tasks)" swarm_ph attach --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "worker: attached strace to 2 tasks" <<<"$output"
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    [ -n "$run_dir" ]
    [ "$(bed_docker 1 ps -q --filter label=io.profharness.attached | wc -l)" -eq 2 ]
    # a second attach is refused, and attaches nothing more
    run swarm_ph attach --mode strace worker
    [ "$status" -ne 0 ]
    grep -q "already attached to" <<<"$output"
    [ "$(bed_docker 1 ps -aq --filter label=io.profharness.attached | wc -l)" -eq 2 ]
    # the service's spec was not touched: the deployed image, no update
    [ "$(service_image)" = "$DEMO_IMAGE:latest" ]
    # each task serves requests while strace follows it
    task_requests 1 10 5000
    run timed "stop (detached, collected)" swarm_ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "detached from 2 tasks, collected into $run_dir" <<<"$output"
    for d in "$run_dir"/[12]-"$SWARM_BED"-n1; do
        [ -s "$d/run.json" ]
        [ -s "$d/report.html" ]
        grep -q 'WORK 5000' "$d/strace.log"
    done
    [ "$(ls -d "$run_dir"/[12]-"$SWARM_BED"-n1 | wc -l)" -eq 2 ]
    [ "$(grep -c '"collected": true' "$run_dir/tasks.json")" -eq 2 ]
    [ "$(readlink "$OUT/worker/latest")" = "$(basename "$run_dir")" ]
    # the tools containers are gone; the tasks are the ones that ran before
    [ -z "$(bed_docker 1 ps -aq --filter label=io.profharness.attached)" ]
    [ "$(node_task_containers 1 | sort)" = "$before" ]
}

@test "attach --mode perf to a stack's service: each task's perf.data converted on the manager, named" {
    wait_for tasks_deployed 2
    wait_for node_tasks_listening 1
    # start cannot: perf_event_open under the default seccomp profile; said, nothing updated
    run swarm_ph start --mode perf worker
    echo "$output"
    [ "$status" -eq 2 ]
    grep -q "mode \`perf\` cannot run in a task of the swarm managed at .*: Docker's default seccomp profile" <<<"$output"
    [ "$(service_image)" = "$DEMO_IMAGE:latest" ]
    run timed "attach perf (2 tasks)" swarm_ph attach --mode perf worker
    echo "$output"
    [ "$status" -eq 0 ]
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    task_requests 1 40 20000
    run timed "stop (detached, converted, collected)" swarm_ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(grep -c 'converting the perf run' <<<"$output")" -eq 2 ]
    for d in "$run_dir"/[12]-"$SWARM_BED"-n1; do
        [ -s "$d/perf.data" ]
        [ -s "$d/stacks.folded" ]
        [ -s "$d/profile.pb.gz" ]
        grep -q ';worker_' "$d/stacks.folded" # (the worker's functions: worker_cmp_record, …)
    done
    [ -z "$(bed_docker 1 ps -aq --filter label=io.profharness.attached)" ]
}

@test "down on a stack: a profiled service collected and rolled back first, then the stack's services removed" {
    wait_for tasks_deployed 2
    run timed "start (update, converged)" swarm_ph start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    run_dir=$(awk -F'\t' '$1 == "worker" { print $3 }' <<<"$output")
    wait_for node_tasks_listening 1
    run timed "down (stopped, collected, removed)" swarm_ph down
    echo "$output"
    [ "$status" -eq 0 ]
    for slot in 1 2; do
        check_task_dir "$run_dir/$slot-$SWARM_BED-n1" strace
    done
    grep -q "service ${STACK}_worker removed" <<<"$output"
    [ -z "$(bed_docker 1 service ls -q --filter "label=com.docker.stack.namespace=$STACK")" ]
    run swarm_ph down
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "nothing to take down" <<<"$output"
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
