#!/usr/bin/env bats
# perf mode end to end on the demo: restart under perf record -g with the
# least privilege that works here, a stop that lets perf flush, then the
# conversion in the tools image (perf script, our collapser): perf.data,
# stacks.folded, flamegraph.svg and profile.pb.gz side by side, with the
# demo's hot function on top; a conversion that fails keeps perf.data.
# A hostile run makes the host pay no more than the limits set: the
# converter gets only what it reads, under the collection's limits, its
# output is read up to max_bytes, and an attach copies only the ELF files
# the service maps, not sparse ones.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }
# The small disk of a test that failed half way goes too.
teardown() {
    if mountpoint -q "$BATS_TEST_TMPDIR/small"; then umount "$BATS_TEST_TMPDIR/small"; fi
    common_teardown
}

# small SIZE: a tmpfs of SIZE at $BATS_TEST_TMPDIR/small, for a stop's -o.
small() {
    small=$BATS_TEST_TMPDIR/small
    mkdir -p "$small"
    mount -t tmpfs -o "size=$1" tmpfs "$small"
}

# perf_front: front under perf, driven a little; $c its container.
perf_front() {
    run ph start --mode perf front
    [ "$status" -eq 0 ]
    c=${PH_TEST_PROJECT}-front-perf
    drive_load 100
}

# convert_with COMMAND: $profiles, a copy of the profiles whose perf
# conversion runs COMMAND (a YAML flow list) instead of perf script.
convert_with() {
    profiles=$BATS_TEST_TMPDIR/profiles
    mkdir -p "$profiles"
    cp "$REPO"/profiles/*.yaml "$profiles/"
    sed -i "s#command: \[perf, --buildid-dir, \"{out}/perf.buildid\", script, --no-inline, --force, -i, \"{out}/perf.data\"\]#command: $1#" \
        "$profiles/perf.yaml"
    grep -qF "command: $1" "$profiles/perf.yaml"
}

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
    ! dk ps -a --filter "label=io.profharness.convert" --filter "label=io.profharness.project=$PH_TEST_PROJECT" --format '{{.Names}}' | grep -q . || false
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
    # the converter reads a file the run did not write
    convert_with '[perf, script, -i, "{out}/no-such.data"]'
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

@test "perf: the converter gets only what it reads: a 2 GiB sparse file beside perf.data is not copied, not even onto a 128 MiB disk" {
    [ "$(id -u)" -eq 0 ] || skip "a tmpfs needs root"
    small 128m
    perf_front
    dk exec "$c" truncate -s 2G /opt/profiling/front/sparse.bin
    run "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$small" stop --max-bytes 64MiB front
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"front: the converter gets perf.buildid, perf.data ("* ]]
    [[ "$output" != *"the conversion failed"* ]]
    [[ "$output" == *"front: "*" samples of cpu-clock"*"stacks.folded, flamegraph.svg, profile.pb.gz"* ]]
    # the collection refuses the file as ever, and keeps the container
    [[ "$output" == *"error: "*"sparse.bin"*"over the limit \`max_bytes\` of 64 MiB (set with --max-bytes)"* ]]
    [ "$(dk inspect -f '{{.State.Status}}' "$c")" = exited ]
    [ -z "$(ls -A "$small/front" | grep -v '^\.lock$' || true)" ]
    [ "$(df --output=avail -B1 "$small" | tail -1)" -gt $((120 << 20)) ]
    umount "$small"
    run ph stop --discard front
    [ "$status" -eq 0 ]
}

@test "perf: an input over --max-bytes ends the conversion before it is copied, with the collection's message" {
    perf_front
    # perf's build-id cache is an input: a sparse file in it (perf fills
    # the directory when the service has exited)
    dk exec "$c" sh -c 'mkdir -p /opt/profiling/front/perf.buildid && truncate -s 2G /opt/profiling/front/perf.buildid/huge'
    run ph stop --max-bytes 64MiB front
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"warning: front: the conversion failed: \`/opt/profiling/front/perf.buildid\` brings the converter's input, holes included, to "*" bytes: over the limit \`max_bytes\` of 64 MiB (set with --max-bytes)"* ]]
    [[ "$output" != *"samples of cpu-clock"* ]]
    [[ "$output" == *"error: "*"perf.buildid/huge"*"over the limit \`max_bytes\` of 64 MiB"* ]]
    [[ "$output" == *"hint: the container "*" is kept"*"--max-bytes 128MiB front"* ]]
    [ "$(dk inspect -f '{{.State.Status}}' "$c")" = exited ]
    ! ls -A "$OUT/front" | grep -q '^\.convert-' || false
    run ph stop --discard front
    [ "$status" -eq 0 ]
}

@test "perf: a converter's input that would leave less than min_free stops before the disk is full" {
    [ "$(id -u)" -eq 0 ] || skip "a tmpfs needs root"
    small 24m
    perf_front
    # 20 MB of real data in an input (perf.buildid is 7 MB more): min_free
    # is 5 % of the disk (1.2 MB)
    dk exec "$c" sh -c 'mkdir -p /opt/profiling/front/perf.buildid &&
        head -c 20000000 /dev/urandom > /opt/profiling/front/perf.buildid/blob'
    run "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$small" stop front
    echo "$output"
    df "$small"
    [ "$status" -eq 1 ]
    [[ "$output" == *"warning: front: the conversion failed: writing \`"*"would leave less free space"*"over the limit \`min_free\` of "*"(the default)"* ]]
    [[ "$output" == *"error: "*"over the limit \`min_free\`"* ]]
    [ -z "$(ls -A "$small/front" | grep -v '^\.lock$' || true)" ]
    [ "$(df --output=avail -B1 "$small" | tail -1)" -gt $((20 << 20)) ]
    [ "$(dk inspect -f '{{.State.Status}}' "$c")" = exited ]
    umount "$small"
    run ph stop --discard front
    [ "$status" -eq 0 ]
}

@test "perf: the converter's output is read up to --max-bytes, then the conversion ends and says so" {
    # a command that writes 256 MiB (perf script writes ~500 times its
    # perf.data for 200-deep stacks of 4 KiB names)
    convert_with '[sh, -c, "yes 0123456789abcdef | head -c 268435456", "{out}/perf.data"]'
    PH_PROFILES=$profiles run ph start --mode perf front
    [ "$status" -eq 0 ]
    drive_load 50
    PH_PROFILES=$profiles run ph stop --max-bytes 64MiB front
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"warning: front: the conversion failed: the output of \`sh\` passed 64 MiB: over the limit \`max_bytes\` of 64 MiB (set with --max-bytes)"* ]]
    run_dir=$(readlink -f "$OUT/front/latest")
    [ -s "$run_dir/perf.data" ]
    [ ! -e "$run_dir/stacks.folded" ]
    ! ls -A "$OUT/front" | grep -q '^\.convert-' || false
    ! dk ps -a --filter "label=io.profharness.convert" --filter "label=io.profharness.project=$PH_TEST_PROJECT" --format '{{.Names}}' | grep -q . || false
}

@test "perf: an attach copies the ELF files the service maps, not a sparse one, and says what it left out" {
    run ph restore front
    [ "$status" -eq 0 ]
    svc=${PH_TEST_PROJECT}-front-1
    # a program made 2 GiB by a hole at its end: it still runs, mapped
    dk exec "$svc" sh -c 'cp /bin/sleep /tmp/bigsleep && truncate -s 2G /tmp/bigsleep'
    dk exec -d "$svc" /tmp/bigsleep 600
    wait_for dk exec "$svc" sh -c 'for p in /proc/[0-9]*; do [ "$(readlink $p/exe)" = /tmp/bigsleep ] && exit 0; done; exit 1'
    run ph attach --mode perf front
    [ "$status" -eq 0 ]
    drive_load 200
    run ph stop front
    echo "$output"
    [ "$status" -eq 0 ]
    run_dir=$(readlink -f "$OUT/front/latest")
    grep 'ph-attach: not copied' "$run_dir/service.log" || true
    grep -q 'ph-attach: not copied: /tmp/bigsleep (2147483648 bytes, [0-9]* of them on disk: a sparse file)' "$run_dir/service.log"
    [ ! -e "$run_dir/symfs/tmp/bigsleep" ]
    [ -s "$run_dir/symfs/usr/local/bin/demo-front" ]
    [ "$(top_leaf "$run_dir/stacks.folded")" = front_checksum_payload ]
    run ph down front
}
