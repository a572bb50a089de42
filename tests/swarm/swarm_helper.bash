# swarm_helper.bash: what the Swarm test files share, over the bed of
# tests/swarm/bed.sh (load test_helper first).

source "$REPO/tests/swarm/bed.sh"

# The bed is the test project's own, so two helpers' runs never meet.
export SWARM_BED=$PH_TEST_PROJECT
STACK=$PH_TEST_PROJECT

# timed LABEL CMD…: run CMD, print how long it took to the TAP output.
timed() {
    local label=$1 t0=$SECONDS rc=0
    shift
    "$@" || rc=$?
    echo "# $label: $((SECONDS - t0)) s" >&3
    return $rc
}

# stack_compose IMAGE REPLICAS [MAX_PER_NODE]: a compose file deploying the
# demo's worker as a stack; prints its path.  endpoint_mode dnsrr: a
# service's virtual IP needs IPVS, which kernels built without it
# (CONFIG_IP_VS unset, as here) lack; the tasks run either way, but dnsrr
# spares the errors in every node's log.
stack_compose() {
    local f=$BATS_FILE_TMPDIR/stack.yaml
    {
        echo "services:"
        echo "  worker:"
        echo "    image: $1"
        echo '    command: ["demo-worker"]'
        echo '    environment:'
        echo '      DEMO_PH_OPTS: "--from-user"' # (the worker ignores it: runtimes' variables extend it)
        echo "    stop_grace_period: 20s"
        echo "    deploy:"
        echo "      replicas: $2"
        echo "      endpoint_mode: dnsrr"
        if [ -n "${3:-}" ]; then
            echo "      placement:"
            echo "        max_replicas_per_node: $3"
        fi
    } > "$f"
    echo "$f"
}

# The stack's worker tasks the manager wants running and has running: one
# line each, "TASK-ID NODE".
running_tasks() {
    bed_docker 1 service ps "${STACK}_worker" --filter desired-state=running \
        --format '{{.ID}} {{.Node}} {{.CurrentState}}' | awk '$3 == "Running" { print $1, $2 }'
}

tasks_running() { [ "$(running_tasks | wc -l)" -eq "$1" ]; }

# The ids of node I's containers of the stack's worker service that run.
node_task_containers() {
    bed_docker "$1" ps -q --filter "label=com.docker.swarm.service.name=${STACK}_worker" --filter status=running
}

# Every container of the stack on node I says it listens (the worker serves).
node_tasks_listening() {
    local c
    for c in $(node_task_containers "$1"); do
        bed_docker "$1" logs "$c" 2>&1 | grep -q 'listening on' || return 1
    done
}

# swarm_ph ARGS…: the harness against the bed's manager (node 1) on the
# stack's compose file (stack_compose's), the stack's name its project.
swarm_ph() {
    DOCKER_HOST="unix://$(bed_sock 1)" timeout "${PH_TIMEOUT:-900}" "$PH" -f "$BATS_FILE_TMPDIR/stack.yaml" \
        -p "$STACK" --profiles "${PH_PROFILES:-$REPO/profiles}" -o "$OUT" "$@"
}

# stack_profiling_image: the profiling image of the stack's worker, built
# on the shared Engine (the bed's nodes have no network to install
# packages from) from the stack's compose file; prints its tag.  Copy it
# to the nodes with bed_load (one node) or bed_push (the registry).
stack_profiling_image() {
    local out
    out=$(timeout 900 "$PH" -f "$BATS_FILE_TMPDIR/stack.yaml" -p "$STACK" --profiles "${PH_PROFILES:-$REPO/profiles}" \
        -o "$OUT" setup --profiling-image worker 2>&1) || { echo "$out" >&2; return 1; }
    # a Swarm task runs the profiling image whatever the mode (no tools
    # volume on the nodes): setup's, as it names it
    setup_images worker "$out" | grep -- '-profiling:'
}

# The stack's worker service, as the manager has it: its spec's image.
service_image() {
    bed_docker 1 service inspect --format '{{.Spec.TaskTemplate.ContainerSpec.Image}}' "${STACK}_worker"
}

# Every task the worker service wants running runs the deployed image
# (not the profiling one): N of them.
tasks_deployed() {
    [ "$(bed_docker 1 service ps "${STACK}_worker" --filter desired-state=running \
        --format '{{.Image}} {{.CurrentState}}' | grep -v -- '-profiling' | grep -c ' Running')" -eq "$1" ]
}

# task_requests I N SIZE [FILTER...]: every running worker task on node I
# (FILTER: more `docker ps` filters) serves N requests of SIZE records,
# each answered OK.
task_requests() {
    local node=$1 n=$2 size=$3 c
    shift 3
    for c in $(bed_docker "$node" ps -q --filter "label=com.docker.swarm.service.name=${STACK}_worker" \
        --filter status=running "$@"); do
        bed_docker "$node" exec "$c" timeout 120 bash -c "exec 3<>/dev/tcp/127.0.0.1/9090
            for k in \$(seq $n); do echo \"WORK $size \$k\" >&3; read -r a <&3; [ \"\${a%% *}\" = OK ] || exit 1; done" ||
            return 1
    done
}

# work_tasks I: every profiled worker task running on node I serves 40
# requests (an idle worker gives a sampler nothing to see); a deployed
# task still being replaced is left alone.
work_tasks() { task_requests "$1" 40 50000 --filter label=io.profharness.run; }

# check_task_dir DIR MODE: a complete per-task run dir of MODE.
check_task_dir() {
    local d=$1 mode=$2
    [ -s "$d/run.json" ] && [ -s "$d/report.html" ] && [ -s "$d/ph-exit.json" ] || return 1
    grep -q '"outcome":"stopped"' "$d/ph-exit.json" || return 1
    case $mode in
    strace) grep -q 'execve(".*demo-worker"' "$d/strace.log" ;;
    flamegraph) cat "$d"/stacks-*.folded | grep -q 'worker_serve_connection' && [ -s "$d/report-flamegraph.svg" ] ;;
    esac
}
