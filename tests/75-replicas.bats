#!/usr/bin/env bats
# A service with several replicas on one Engine (`deploy.replicas: 2`, or
# `scale: 2`), as `docker compose up` runs it: two containers, each
# numbered (com.docker.compose.container-number).  start profiles every
# replica, stop stops and collects each into a sub-dir of one run dir
# (<run>/1/, <run>/2/, and <run>/tasks.json, as a Swarm service's tasks),
# a replica whose collection fails keeps its container and a retry adds
# it, restore brings back as many unprofiled ones as compose runs.  The
# demo's worker is the service (it has no port, so two can run).

load test_helper

setup_file() {
    common_setup_file
    demo_compose
    # the worker twice; front (which depends on it) untouched
    sed -i 's#^    command: \["demo-worker"\]#&\n    deploy:\n      replicas: 2#' "$DEMO_COMPOSE"
    grep -q 'replicas: 2' "$DEMO_COMPOSE"
    ph setup worker >&3 2>&1
}
teardown_file() { common_teardown_file; }
teardown() { common_teardown; }

# the run dir start printed on stdout ("worker<TAB>MODE<TAB>DIR")
run_dir_of() { sed -n "s#^worker	$1	##p" <<<"$2" | tail -1; }

# names and a label of the project's containers of mode MODE, sorted
replicas_of() {
    dk ps -a --filter "label=io.profharness.project=$PH_TEST_PROJECT" \
        --filter "label=io.profharness.mode=$1" --format "{{.Names}} {{.Label \"$2\"}}" | sort
}

@test "replicas: start profiles both replicas, stop collects each into its sub-dir of one run dir" {
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
    [[ "$output" == *"worker: profiling under strace: 2 replicas"* ]]
    dir=$(run_dir_of strace "$output")
    [ -n "$dir" ]
    [ "$(replicas_of strace io.profharness.replica)" = "$PH_TEST_PROJECT-worker-strace-1 1
$PH_TEST_PROJECT-worker-strace-2 2" ]
    run ph status
    [ "$status" -eq 0 ]
    echo "$output" | grep -E "^worker/1 +strace +running .*$dir/1 \(written at stop\)$"
    echo "$output" | grep -E "^worker/2 +strace +running .*$dir/2 \(written at stop\)$"
    run ph stop worker
    [ "$status" -eq 0 ]
    [[ "$output" == *"replica 1 of 2 collected"* ]]
    [[ "$output" == *"replica 2 of 2 collected"* ]]
    for k in 1 2; do
        [ -s "$dir/$k/strace.log" ]
        # each stopped through the shim, the profiler complete
        jq -e '.complete == true and .stop_requested' "$dir/$k/ph-exit.json"
        jq -e ".missing_artifacts == []" "$dir/$k/run.json"
        [ -s "$dir/$k/report.html" ]
    done
    # two containers, two records
    [ "$(jq -r .container "$dir/1/run.json")" != "$(jq -r .container "$dir/2/run.json")" ]
    jq -e '.service == "worker" and .mode == "strace" and (.tasks | length) == 2 and
           ([.tasks[] | select(.collected) | .dir] == ["1", "2"])' "$dir/tasks.json"
    [ -z "$(replicas_of strace io.profharness.replica)" ]
    # the index lists each replica's run, linking to its report
    grep -q "href=\"worker/$(basename "$dir")/1/report.html\"" "$OUT/index.html"
    grep -q "href=\"worker/$(basename "$dir")/2/report.html\"" "$OUT/index.html"
}

@test "replicas: both replicas are asked to stop at once: their stop protocols overlap" {
    # each ignores SIGTERM, so each stop takes the (short) grace before the
    # shim escalates; one after the other, the first would have ended
    # before the second was asked
    export PH_PROFILES=$(short_grace_profiles)
    DEMO_IGNORE_SIGTERM=1 run ph start --mode strace worker
    [ "$status" -eq 0 ]
    dir=$(run_dir_of strace "$output")
    run ph stop worker
    [ "$status" -eq 0 ]
    rec() { jq -r ".$2" "$dir/$1/ph-exit.json"; }
    for k in 1 2; do
        jq -e '.escalations == ["SIGKILL"] and .stop_requested' "$dir/$k/ph-exit.json"
    done
    [[ "$(rec 1 stop_requested_at)" < "$(rec 2 ended_at)" ]]
    [[ "$(rec 2 stop_requested_at)" < "$(rec 1 ended_at)" ]]
}

@test "replicas: restore brings back two unprofiled replicas numbered as compose numbers them; status lists each" {
    run ph restore worker
    [ "$status" -eq 0 ]
    [ "$(replicas_of none com.docker.compose.container-number)" = "$PH_TEST_PROJECT-worker-1 1
$PH_TEST_PROJECT-worker-2 2" ]
    run ph status
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^worker/1 +none +running'
    echo "$output" | grep -E '^worker/2 +none +running'
    # profiled again: both of compose's replicas make way, restore puts two back
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
    [ "$(replicas_of none com.docker.compose.container-number)" = "" ]
    run ph restore worker
    [ "$status" -eq 0 ]
    [[ "$output" == *"replica 2 of 2 collected"* ]]
    [ "$(replicas_of none com.docker.compose.container-number)" = "$PH_TEST_PROJECT-worker-1 1
$PH_TEST_PROJECT-worker-2 2" ]
}

@test "replicas: flamegraph on both replicas, each its own sampler's files" {
    run ph start --mode flamegraph worker
    [ "$status" -eq 0 ]
    dir=$(run_dir_of flamegraph "$output")
    # each replica serves requests of its own (through front, the
    # Engine's DNS may send them all to one)
    for c in $(dk ps -q --filter "label=io.profharness.project=$PH_TEST_PROJECT" \
        --filter label=io.profharness.mode=flamegraph); do
        dk exec "$c" timeout 120 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090
            for k in $(seq 40); do echo "WORK 50000 $k" >&3; read -r a <&3; [ "${a%% *}" = OK ] || exit 1; done'
    done
    run ph stop worker
    [ "$status" -eq 0 ]
    for k in 1 2; do
        ls "$dir/$k"/stacks-*.folded
        ls "$dir/$k"/sampler-status-*.json
        jq -e '.mode == "flamegraph"' "$dir/$k/run.json"
    done
    jq -e '[.tasks[] | select(.collected)] | length == 2' "$dir/tasks.json"
}

@test "replicas: a replica whose collection fails keeps its container; the retry adds it to the same run" {
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
    dir=$(run_dir_of strace "$output")
    # replica 2 wrote more than the stop lets in (replica 1's strace.log is small)
    dk exec "$PH_TEST_PROJECT-worker-strace-2" dd if=/dev/urandom of=/opt/profiling/worker/big bs=1M count=2 status=none
    run ph stop --max-bytes 1MiB worker
    [ "$status" -eq 1 ]
    [[ "$output" == *"replica 2 of 2"* ]]
    [[ "$output" == *"profharness stop"*"worker"* ]]
    [ -s "$dir/1/strace.log" ]
    [ ! -e "$dir/2" ]
    [ "$(replicas_of strace io.profharness.replica)" = "$PH_TEST_PROJECT-worker-strace-2 2" ]
    jq -e '[.tasks[] | select(.collected) | .dir] == ["1"] and
           (.tasks[] | select(.dir == "2") | .lost | test("is kept"))' "$dir/tasks.json"
    run ph stop worker
    [ "$status" -eq 0 ]
    [ -s "$dir/2/strace.log" ]
    [ -s "$dir/2/big" ]
    jq -e '[.tasks[] | select(.collected) | .dir] == ["1", "2"]' "$dir/tasks.json"
    [ -z "$(replicas_of strace io.profharness.replica)" ]
}

@test "replicas: a sub-dir name taken by a file: the replica lands beside it, tasks.json says where" {
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
    dir=$(run_dir_of strace "$output")
    mkdir -p "$dir" && touch "$dir/2"
    run ph stop worker
    [ "$status" -eq 0 ]
    [ -s "$dir/2.2/strace.log" ]
    jq -e '[.tasks[] | select(.collected) | .dir] == ["1", "2.2"]' "$dir/tasks.json"
}

# refused FILE_EDIT MESSAGE: the demo with the worker edited by sed
# expression FILE_EDIT is refused at start with MESSAGE, nothing started.
refused() {
    local f=$BATS_TEST_TMPDIR/compose.yaml
    sed "$1" "$DEMO_COMPOSE" > "$f"
    run timeout 300 "$PH" -f "$f" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" start --mode strace worker
    [ "$status" -eq 2 ]
    [[ "$output" == *"$2"* ]]
}

@test "replicas: scale: 2 is the same; global mode, distinct counts, and a fixed container name are refused" {
    remove_project
    local f=$BATS_TEST_TMPDIR/scale.yaml
    sed 's#^      replicas: 2#      replicas: 2\n    scale: 2#' "$DEMO_COMPOSE" > "$f"
    grep -q '^    scale: 2' "$f"
    run timeout 300 "$PH" -f "$f" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" restore worker
    [ "$status" -eq 0 ]
    [ "$(replicas_of none com.docker.compose.container-number)" = "$PH_TEST_PROJECT-worker-1 1
$PH_TEST_PROJECT-worker-2 2" ]
    refused 's#^      replicas: 2#      mode: global#' "deploy.mode other than replicated"
    refused 's#^      replicas: 2#      replicas: 3\n    scale: 2#' "scale and deploy.replicas with distinct values"
    refused 's#^    deploy:#    container_name: one-worker\n&#' "container_name with more than one replica"
    refused 's#^      replicas: 2#      replicas: 0#' "deploy.replicas: 0"
}

@test "replicas: docker-compose numbers its replicas as restore does (the oracle)" {
    command -v docker-compose || skip "docker-compose 1.29 is not installed"
    remove_project
    local f=$BATS_TEST_TMPDIR/oracle.yaml p=${PH_TEST_PROJECT}oracle
    # 1.29 reads `scale` in a version 2 file (deploy is version 3's), no `name`
    { echo 'version: "2.4"'; sed -e '/^name:/d' -e '/^    deploy:/d' -e 's#^      replicas: 2#    scale: 2#' "$DEMO_COMPOSE"; } > "$f"
    timeout 300 docker-compose -f "$f" -p "$p" up -d --no-build worker
    theirs=$(dk ps -a --filter "label=com.docker.compose.project=$p" \
        --format '{{.Label "com.docker.compose.service"}} {{.Label "com.docker.compose.container-number"}} {{.Label "com.docker.compose.oneoff"}}' | sort)
    timeout 120 docker-compose -f "$f" -p "$p" down -t 1
    run timeout 300 "$PH" -f "$f" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" restore worker
    [ "$status" -eq 0 ]
    ours=$(dk ps -a --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --format '{{.Label "com.docker.compose.service"}} {{.Label "com.docker.compose.container-number"}} {{.Label "com.docker.compose.oneoff"}}' | sort)
    [ "$theirs" = "worker 1 False
worker 2 False" ]
    [ "$ours" = "$theirs" ]
}

@test "replicas: attach joins every running replica; stop detaches and collects each into its sub-dir" {
    run ph restore worker
    [ "$status" -eq 0 ]
    [ "$(dk ps --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=worker" -q | wc -l)" -eq 2 ]
    run ph attach --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"worker: attached strace to 2 replicas"* ]]
    dir=$(run_dir_of strace "$output")
    [ -n "$dir" ]
    [ "$(dk ps --filter "label=io.profharness.project=$PH_TEST_PROJECT" --filter label=io.profharness.attached \
        --format '{{.Label "io.profharness.replica"}}' | sort | tr '\n' ' ')" = "1 2 " ]
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    for k in 1 2; do
        [ -s "$dir/$k/strace.log" ]
        [ -s "$dir/$k/report.html" ]
    done
    jq -e '(.tasks | length) == 2 and ([.tasks[] | select(.collected) | .dir] == ["1", "2"])' "$dir/tasks.json"
    # the replicas ran on, never restarted; the tools containers are gone
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT" --filter label=io.profharness.attached)" ]
    [ "$(dk ps --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=worker" -q | wc -l)" -eq 2 ]
}
