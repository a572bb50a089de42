#!/usr/bin/env bats
# perf mode end to end on the demo: restart under perf record -g with the
# least privilege that works here, a stop that lets perf flush, then the
# conversion in the tools image (perf script, our collapser): perf.data,
# stacks.folded, flamegraph.svg and profile.pb.gz side by side, with the
# demo's hot function on top; a conversion that fails keeps perf.data.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

# top_leaf FOLDED: the leaf of the heaviest stack.
top_leaf() { sort -t' ' -k2,2n "$1" | tail -n 1 | sed -E 's/ [0-9.]+$//; s/.*;//'; }

@test "perf: the demo under load gives perf.data, folded stacks, a flamegraph and pprof, the hot function on top" {
    run ph start --mode perf front
    [ "$status" -eq 0 ]
    c=${PH_TEST_PROJECT}-front-perf
    # least privilege: seccomp unconfined; PERFMON and SYSLOG only where the
    # Engine knows them (Engine 20.10 does not); never SYS_ADMIN
    dk inspect -f '{{.HostConfig.SecurityOpt}}' "$c" | grep -q 'seccomp=unconfined'
    caps=$(dk inspect -f '{{.HostConfig.CapAdd}}' "$c")
    [[ "$caps" != *SYS_ADMIN* ]]
    [[ "$output" == *"PERFMON"* ]] || [[ "$caps" == *PERFMON* ]]
    drive_load 400
    run ph stop front
    [ "$status" -eq 0 ]
    run_dir=$(readlink -f "$OUT/front/latest")
    [[ "$(basename "$run_dir")" =~ -perf$ ]]
    # perf flushed: the service ended on SIGTERM, perf after it, no escalation
    jq -e '.exit_code == 0 and (.escalations | length) == 0 and .complete' "$run_dir/ph-exit.json"
    [ -s "$run_dir/perf.data" ]
    [ "$(readlink "$OUT/front/perf.data")" = "$(basename "$run_dir")/perf.data" ]
    # the binaries perf sampled are cached beside it: perf report reads it anywhere
    if command -v perf >/dev/null; then
        perf --buildid-dir "$run_dir/perf.buildid" report -i "$run_dir/perf.data" --stdio --no-children \
            --sort symbol 2>/dev/null | grep -v '^#' | grep -m1 '%' | grep -q front_checksum_payload
    fi
    [[ "$output" == *"samples of cpu-clock"* ]]
    for f in stacks.folded flamegraph.svg profile.pb.gz; do
        [ -s "$run_dir/$f" ]
    done
    for f in stacks.folded profile.pb.gz; do
        [ "$(readlink "$OUT/front/$f")" = "$(basename "$run_dir")/$f" ]
    done
    # flamegraph.svg links the report's rendering of the stacks: the
    # conversion's SVG went through the container
    [ "$(readlink "$OUT/front/flamegraph.svg")" = "$(basename "$run_dir")/report-flamegraph.svg" ]
    grep -q 'front_checksum_payload' "$run_dir/report-flamegraph.svg"
    grep -q "front (perf, run $(basename "$run_dir"))" "$run_dir/report-flamegraph.svg"
    [ "$(top_leaf "$run_dir/stacks.folded")" = front_checksum_payload ]
    grep -q '^demo-front;' "$run_dir/stacks.folded"
    grep -q 'front_checksum_payload' "$run_dir/flamegraph.svg"
    grep -q "front (perf, run $(basename "$run_dir"))" "$run_dir/flamegraph.svg"
    gunzip -c "$run_dir/profile.pb.gz" | protoc --decode_raw > "$BATS_TEST_TMPDIR/pprof.txt"
    grep -q '"front_checksum_payload"' "$BATS_TEST_TMPDIR/pprof.txt"
    grep -q '"nanoseconds"' "$BATS_TEST_TMPDIR/pprof.txt"
    # the report: samples (not the nanoseconds they weigh), the hot
    # function in the headline, perf.data an artifact of its own kind
    n=$(jq -r .samples "$run_dir/convert.json")
    [ "$n" -gt 0 ]
    nc=$(echo "$n" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') # as the headline writes it: 1,234
    jq -e --argjson n "$n" --arg nc "$nc" '.mode == "perf" and (.problems | length) == 0
        and .flamegraph.perf.samples == $n and (.headline | startswith("\($nc) samples of cpu-clock"))
        and (.headline | contains("top front_checksum_payload"))' "$run_dir/summary.json"
    [[ "$output" == *"front: $nc samples of cpu-clock"*"of CPU), top front_checksum_payload"* ]]
    [[ "$output" == *"report: "*"$(basename "$run_dir")/report.html"* ]]
    grep -q 'perf.data</td><td>perf</td>' "$run_dir/report.html"
    # the tables print perf's nanoseconds as times, not bare counts (the
    # hot function's self and total cells)
    [ "$(grep -Eo 'front_checksum_payload</td><td class="n" data-v="[0-9.e+]+">[0-9.]+ (ms|s)</td>' \
        "$run_dir/report.html" | wc -l)" -eq 2 ]
    [ "$(grep -Ec 'data-v="[0-9.e+]+">[0-9.]+ [kMG]</td>' "$run_dir/report.html")" -eq 0 ]
    # the converter is gone
    ! dk ps -a --filter "label=io.profharness.convert" --format '{{.Names}}' | grep -q . || false
}

@test "perf: attached to the running demo, converted the same way from the files it maps" {
    run ph restore front
    [ "$status" -eq 0 ]
    said=$(cat "$XDG_CACHE_HOME"/profharness/engine-* 2>/dev/null | grep -c PERFMON || true)
    run ph attach --mode perf front
    [ "$status" -eq 0 ]
    # an Engine that lacks PERFMON is told of once (the start before, when it ran)
    if [ "$said" -gt 0 ]; then
        [[ "$output" != *"does not know"* ]]
    elif [[ "$output" == *"does not know PERFMON"* ]]; then
        grep -q PERFMON "$XDG_CACHE_HOME"/profharness/engine-*
    fi
    drive_load 400
    run ph stop front
    [ "$status" -eq 0 ]
    run_dir=$(readlink -f "$OUT/front/latest")
    [ -d "$run_dir/symfs" ]
    [ -s "$run_dir/perf.data" ]
    [ "$(top_leaf "$run_dir/stacks.folded")" = front_checksum_payload ]
    [ -s "$OUT/front/flamegraph.svg" ]
    # the report: attached, perf's samples counted as samples
    jq -e '.mode == "perf" and (.attached_to | length) == 64 and (.problems | length) == 0
        and .flamegraph.perf.samples > 0
        and .flamegraph.top_self[0].name == "front_checksum_payload"' "$run_dir/summary.json"
    grep -q 'perf (attached)' "$OUT/index.html"
}

@test "perf: a conversion that fails keeps perf.data and says how to convert by hand" {
    profiles=$BATS_TEST_TMPDIR/profiles
    mkdir -p "$profiles"
    cp "$REPO"/profiles/*.yaml "$profiles/"
    # the converter reads a file the run did not write
    sed -i 's|command: \[perf, --buildid-dir, "{out}/perf.buildid", script, --no-inline, --force, -i, "{out}/perf.data"\]|command: [perf, script, -i, "{out}/no-such.data"]|' \
        "$profiles/perf.yaml"
    grep -q 'no-such.data' "$profiles/perf.yaml"
    PH_PROFILES=$profiles run ph start --mode perf front
    [ "$status" -eq 0 ]
    drive_load 50
    PH_PROFILES=$profiles run ph stop front
    [ "$status" -eq 0 ]
    [[ "$output" == *"front: the conversion failed"* ]]
    [[ "$output" == *"collected as it is; convert by hand with \`perf\`"* ]]
    run_dir=$(readlink -f "$OUT/front/latest")
    [ -s "$run_dir/perf.data" ]
    [ ! -e "$run_dir/stacks.folded" ]
    ! ls "$OUT/front" | grep -q '^\.convert-' || false
    ! project_containers | grep -q -- '-front-perf' || false
}
