#!/usr/bin/env bats
# One command on several Engines at once (`--context A --context B`, or
# PH_CONTEXTS=A,B): two private dockerds (tests/swarm/bed.sh, SWARM_BED_PLAIN:
# two Engines that form no swarm, each in a network namespace of its own),
# each a Docker context in a config dir of this file's own, each given the
# demo's images by save | load.  The flamegraph mode on both: a run dir per
# host, a merged one whose stacks add up to the hosts' sum, the index
# telling them apart; an Engine that does not answer stops none of the
# others and is said, with how to retry.

load test_helper
load swarm/swarm_helper

setup_file() {
    common_setup_file
    local imgs
    # the modes the tools tree serves run the service's image with the
    # tools volume, filled on each Engine from the tools image (the bed has
    # no mirror to build it from): it goes to the hosts, with the profiling
    # image when setup made one
    imgs=$(setup_images front "$(ph setup front worker 2>&1)")
    [[ "$imgs" == *profharness-tools:* ]] || { echo "# no tools volume named by setup: $imgs" >&3; return 1; }
    export SWARM_BED_PLAIN=1
    bed_down
    timed "up 2 Engines" bed_up 2
    # the images into both at once (bed_load does one node after the other)
    timeout 600 docker save -o "$(bed_dir)/images.tar" "$DEMO_IMAGE:latest" $imgs
    timed "load into both" load_both
    rm -f "$(bed_dir)/images.tar"
    export DOCKER_CONFIG=$BATS_FILE_TMPDIR/docker-config
    mkdir -p "$DOCKER_CONFIG"
    CTX1=$PH_TEST_PROJECT-h1 CTX2=$PH_TEST_PROJECT-h2
    export CTX1 CTX2
    docker context create "$CTX1" --docker "host=unix://$(bed_sock 1)" >/dev/null
    docker context create "$CTX2" --docker "host=unix://$(bed_sock 2)" >/dev/null
    # an Engine that is not there: its socket's directory exists, the socket not
    docker context create "$PH_TEST_PROJECT-gone" --docker "host=unix://$(bed_dir)/gone.sock" >/dev/null
}

load_both() {
    SWARM_BED_TIMEOUT=600 bed_docker 1 load -i "$(bed_dir)/images.tar" >/dev/null &
    local p1=$!
    SWARM_BED_TIMEOUT=600 bed_docker 2 load -i "$(bed_dir)/images.tar" >/dev/null || { wait $p1; return 1; }
    wait $p1
}

teardown_file() {
    bed_down
    common_teardown_file
}

# load_on I N: N requests at node I's front, from inside its namespace
# (its published port is there, not on this host).
load_on() {
    nsenter --net="/run/netns/$(bed__ns "n$1")" timeout 300 "$REPO/build/demo-load" -w 120 -n "$2" -c 2 \
        "127.0.0.1:$DEMO_PORT"
}

total() { awk '{ s += $NF } END { printf "%d", s }' "$@"; }

@test "status on two Engines and one that is not there: each said, prefixed; the worst status; how to retry" {
    run ph --context "$CTX1" --context "$CTX2" --context "$PH_TEST_PROJECT-gone" status
    echo "$output"
    [ "$status" -eq 1 ]
    echo "$output" | grep -E "^$CTX1 +\| SERVICE"
    echo "$output" | grep -E "^$CTX2 +\| SERVICE"
    echo "$output" | grep -E "^$PH_TEST_PROJECT-gone +\| .*cannot reach the Docker Engine"
    echo "$output" | grep -F "$PH_TEST_PROJECT-gone: \`status\` ended with status 1; the other Engines went on"
    echo "$output" | grep -F "profharness --context $PH_TEST_PROJECT-gone -o $OUT/@$PH_TEST_PROJECT-gone status"
}

@test "flamegraph on two Engines: a run dir per host, a merged folded that is their sum, pprof and report" {
    run ph --context "$CTX1" --context "$CTX2" start --mode flamegraph front
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(bed_docker 1 ps -q --filter "label=io.profharness.mode=flamegraph" | wc -l)" -eq 1 ]
    [ "$(bed_docker 2 ps -q --filter "label=io.profharness.mode=flamegraph" | wc -l)" -eq 1 ]
    # nothing of it on the shared Engine
    [ -z "$(dk ps -q --filter "label=io.profharness.project=$PH_TEST_PROJECT")" ]
    load_on 1 150
    load_on 2 60
    # the list form this time
    PH_CONTEXTS="$CTX1,$CTX2" run ph stop front
    echo "$output"
    [ "$status" -eq 0 ]
    echo "$output" | grep -E "^$CTX1 +\| profharness: front: stopped on SIGTERM"
    echo "$output" | grep -E "^$CTX2 +\| profharness: front: stopped on SIGTERM"
    local r1 r2 m
    r1=$(readlink -f "$OUT/@$CTX1/front/latest")
    r2=$(readlink -f "$OUT/@$CTX2/front/latest")
    m=$(readlink -f "$OUT/front/latest")
    [ -d "$r1" ]
    [ -d "$r2" ]
    [ -d "$m" ]
    [[ "$m" == *-flamegraph-merged ]]
    # each host's run is whole (its last snapshot, cumulative, is what its
    # report counts: <service>/stacks.folded links it); the merged stacks
    # are their sum
    local s1 s2 t1 t2 tm
    s1=$OUT/@$CTX1/front/stacks.folded
    s2=$OUT/@$CTX2/front/stacks.folded
    [ "$(dirname "$(readlink -f "$s1")")" = "$r1" ]
    [ "$(dirname "$(readlink -f "$s2")")" = "$r2" ]
    t1=$(total "$s1")
    t2=$(total "$s2")
    tm=$(total "$m/stacks-merged.folded")
    echo "# $CTX1 $t1, $CTX2 $t2, merged $tm" >&3
    [ "$t1" -gt 0 ]
    [ "$t2" -gt 0 ]
    [ "$tm" -eq $((t1 + t2)) ]
    [ "$(jq '.flamegraph.samples' "$r1/summary.json" | cut -d. -f1)" -eq "$t1" ]
    [ "$(jq '.flamegraph.samples' "$r2/summary.json" | cut -d. -f1)" -eq "$t2" ]
    # frame by frame too: the service's hot function's samples add up
    local f1 f2 fm
    f1=$(awk '/front_checksum_payload/ { s += $NF } END { printf "%d", s }' "$s1")
    f2=$(awk '/front_checksum_payload/ { s += $NF } END { printf "%d", s }' "$s2")
    fm=$(awk '/front_checksum_payload/ { s += $NF } END { printf "%d", s }' "$m/stacks-merged.folded")
    [ "$fm" -eq $((f1 + f2)) ]
    # a pprof of the sum, the report's own graph, the summary counting all
    gzip -t "$m/profile-merged.pb.gz"
    grep -q '<svg' "$m/report-flamegraph.svg"
    [ "$(jq '.flamegraph.samples' "$m/summary.json" | cut -d. -f1)" -eq "$tm" ]
    [ "$(jq '.problems | length' "$m/summary.json")" -eq 0 ]
    [ "$(jq -r '.merged_from | map(.context) | join(" ")' "$m/run.json")" = "$CTX1 $CTX2" ]
    grep -qF "href=\"../../@$CTX2/front/$(basename "$r2")/report.html\"" "$m/report.html"
    echo "$output" | grep -F "front (merged: $CTX1, $CTX2): $tm samples"
    # the containers are gone from both
    [ -z "$(bed_docker 1 ps -aq --filter "label=io.profharness.mode=flamegraph")" ]
    [ -z "$(bed_docker 2 ps -aq --filter "label=io.profharness.mode=flamegraph")" ]
}

@test "the index and report keep the hosts' runs and the merged one apart" {
    local r1 r2 m
    r1=$(basename "$(readlink -f "$OUT/@$CTX1/front/latest")")
    r2=$(basename "$(readlink -f "$OUT/@$CTX2/front/latest")")
    m=$(basename "$(readlink -f "$OUT/front/latest")")
    grep -qF "href=\"@$CTX1/front/$r1/report.html\"" "$OUT/index.html"
    grep -qF "href=\"@$CTX2/front/$r2/report.html\"" "$OUT/index.html"
    grep -qF "href=\"front/$m/report.html\"" "$OUT/index.html"
    grep -qF "3 runs of 1 service" "$OUT/index.html"
    # each host's own output dir is an ordinary one
    grep -qF "href=\"front/$r1/report.html\"" "$OUT/@$CTX1/index.html"
    # `report` over the whole output dir: every run again, no host taken for a service
    run ph report
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(echo "$output" | grep -c '^front: ')" -eq 3 ]
    ! echo "$output" | grep -q "^@" || false
    grep -qF "3 runs of 1 service" "$OUT/index.html"
    grep -qF "href=\"@$CTX2/front/$r2/report.html\"" "$OUT/index.html"
}

@test "commands without an Engine run once; a bad context name is a usage error" {
    run ph --context "$CTX1" --context "$CTX2" modes
    [ "$status" -eq 0 ]
    ! echo "$output" | grep -q " | " || false
    run ph --context "$CTX1" --context 'a/../b' status
    echo "$output"
    [ "$status" -eq 2 ]
    echo "$output" | grep -F "is no Docker context name"
}
