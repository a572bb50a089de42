#!/usr/bin/env bats
# Any image: a FROM scratch service (one static program) and a
# distroless-like one (Debian's libc, no shell, no package manager, a
# non-root user) are profiled under strace and perf from the tools tree,
# flamegraph runs in the distroless one, and the modes an image cannot
# have are refused before anything starts, saying why: the image's C
# library, and the program itself (static in a glibc image); perf names a
# JIT's code from the map the run carries.
# (tests/data/any-image: the images are built here, no registry.)

load test_helper

ANY="$REPO/tests/data/any-image/compose.yaml"

# pha ARGS...: the harness on the any-image compose file.
pha() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$ANY" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

# ran_a_while SERVICE MODE: the service printed its 50th round (a second
# of work and sleep), read from the container's own output.
ran_a_while() {
    dk logs "${PH_TEST_PROJECT}-$1-$2" 2>&1 | grep -q 'still running after 50 rounds'
}

setup_file() {
    common_setup_file
    pha setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

@test "any image: setup finds no package manager in either, and a C library only in distroless" {
    run pha setup
    [ "$status" -eq 0 ]
    [[ "$output" == *"static: ready"*"package manager none, C library none"* ]]
    [[ "$output" == *"distroless: ready"*"package manager none, C library glibc)"* ]]
    # the loader is there, the program does not use it: setup says so
    [[ "$output" == *"staticglibc: ready"*"C library glibc; its program /usr/local/bin/anyimg is static: not for modes that preload, flamegraph, heap, wall)"* ]]
    # every mode these images can run takes its tools from the tools
    # volume: setup names it, and builds no profiling image for any
    for svc in static distroless staticglibc; do
        [[ "$output" == *"$svc: ready (tools volume profharness-tools-"* ]]
        ! grep -q "$svc: ready.*profiling image" <<<"$output" || false
    done
}

@test "FROM scratch: strace from the tools tree traces the static program to its clean end" {
    run pha start --mode strace static
    [ "$status" -eq 0 ]
    # the image has nothing: strace runs from the tree, with its own loader
    dk inspect -f '{{json .Config.Entrypoint}}' "${PH_TEST_PROJECT}-static-strace" | grep -q '"/opt/profharness/tools/bin/strace"'
    wait_for ran_a_while static strace
    run pha stop static
    [ "$status" -eq 0 ]
    log="$OUT/static/strace.log"
    [ -s "$log" ]
    grep -q 'execve("/anyimg"' "$log"
    grep -qE 'clock_nanosleep|nanosleep' "$log"
    grep -q 'write(1, "anyimg: still running after 50 rounds' "$log"
    # it ended cleanly: SIGTERM, its last line, exit 0, never SIGKILL
    grep -q -- '--- SIGTERM' "$log"
    grep -q 'anyimg: stopping after' "$log"
    tail -n 1 "$log" | grep -q '+++ exited with 0 +++'
    jq -e '.exit_code == 0 and (.escalations | length) == 0 and .complete' "$OUT/static/latest/ph-exit.json"
}

@test "distroless: strace traces the dynamic program as its non-root user" {
    run pha start --mode strace distroless
    [ "$status" -eq 0 ]
    [ "$(dk inspect -f '{{.Config.User}}' "${PH_TEST_PROJECT}-distroless-strace")" = 65532 ]
    wait_for ran_a_while distroless strace
    run pha stop distroless
    [ "$status" -eq 0 ]
    log="$OUT/distroless/strace.log"
    # the image's own loader and libc, not the tree's
    grep -q 'openat(AT_FDCWD, "/lib/x86_64-linux-gnu/libc.so.6"' "$log"
    grep -qE 'clock_nanosleep|nanosleep' "$log"
    tail -n 1 "$log" | grep -q '+++ exited with 0 +++'
    jq -e '.exit_code == 0 and (.escalations | length) == 0' "$OUT/distroless/latest/ph-exit.json"
}

# hot_on_top RUN_DIR: perf report (on the host) reads perf.data, with the
# binaries perf cached beside it, and the hot function has the most samples.
hot_on_top() {
    perf --buildid-dir "$1/perf.buildid" report -i "$1/perf.data" --stdio --no-children --sort symbol 2>/dev/null \
        > "$BATS_TEST_TMPDIR/report.txt"
    grep -v '^#' "$BATS_TEST_TMPDIR/report.txt" | grep -m1 '%' | grep -q 'anyimg_hot'
}

@test "FROM scratch and distroless: perf records them, perf.data is complete and names the hot function" {
    command -v perf >/dev/null || skip "perf is not installed on the host (scripts/install-deps.sh installs linux-perf)"
    run pha start --mode perf static distroless
    [ "$status" -eq 0 ]
    # least privilege: seccomp unconfined, no SYS_ADMIN
    caps=$(dk inspect -f '{{.HostConfig.CapAdd}}' "${PH_TEST_PROJECT}-static-perf")
    [[ "$caps" != *SYS_ADMIN* ]]
    dk inspect -f '{{.HostConfig.SecurityOpt}}' "${PH_TEST_PROJECT}-static-perf" | grep -q 'seccomp=unconfined'
    wait_for ran_a_while static perf
    wait_for ran_a_while distroless perf
    run pha stop static distroless
    [ "$status" -eq 0 ]
    for svc in static distroless; do
        run_dir=$(readlink -f "$OUT/$svc/latest")
        [ -s "$run_dir/perf.data" ]
        [ -L "$OUT/$svc/perf.data" ]
        jq -e '.exit_code == 0 and (.escalations | length) == 0 and .complete' "$run_dir/ph-exit.json"
        hot_on_top "$run_dir"
        # converted in the tools image (when the collapser is built in)
        if "$PH" collapse --help >/dev/null 2>&1; then
            [ "$(sort -t' ' -k2,2n "$run_dir/stacks.folded" | tail -n 1 | sed -E 's/ [0-9.]+$//; s/.*;//')" = anyimg_hot ]
            grep -q anyimg_hot "$run_dir/flamegraph.svg"
            [ -s "$run_dir/profile.pb.gz" ]
        fi
    done
}

@test "distroless: the sampler (flamegraph) loads into its glibc program" {
    run pha start --mode flamegraph distroless
    [ "$status" -eq 0 ]
    wait_for ran_a_while distroless flamegraph
    run pha stop distroless
    [ "$status" -eq 0 ]
    grep -q 'anyimg_hot' "$OUT/distroless/stacks.folded"
    grep -q 'anyimg_hot' "$OUT/distroless/flamegraph.svg"
}

@test "distroless: callgrind runs from the tools tree in the image itself, and names the hot function" {
    run pha start --mode callgrind distroless
    [ "$status" -eq 0 ]
    c=${PH_TEST_PROJECT}-distroless-callgrind
    # no profiling image: the service's own image, valgrind from the tree
    [ "$(dk inspect -f '{{.Config.Image}}' "$c")" = profharness-anyimg-distroless:latest ]
    WAIT_SECONDS=120 wait_for eval "dk logs $c 2>&1 | grep -q 'running after 0 rounds'"
    run pha stop distroless
    [ "$status" -eq 0 ]
    jq -e '.exit_code == 0 and (.escalations | length) == 0' "$OUT/distroless/latest/ph-exit.json"
    run callgrind_annotate "$OUT/distroless/callgrind.out"
    [ "$status" -eq 0 ]
    echo "$output" | grep -m1 -E 'anyimg_[a-z]+' | grep -q anyimg_hot
}

@test "FROM scratch: valgrind and the sampler are refused before anything starts, saying why" {
    for mode in massif callgrind; do
        run pha start --mode "$mode" static
        [ "$status" -eq 2 ]
        [[ "$output" == *"mode \`$mode\` needs the image's package manager, and the image has none"* ]]
        [[ "$output" == *"valgrind must start the service"* ]]
    done
    run pha start --mode flamegraph static
    [ "$status" -eq 2 ]
    # (its program is static: that refusal comes first, before the image's
    # C library is looked at)
    [[ "$output" == *"cannot profile \`/anyimg\`: it is statically linked"*"LD_PRELOAD"*"mode \`perf\` samples any program"* ]]
    # nothing was started or left behind
    ! project_containers | grep -q -- '-static-' || false
    # and the modes table says the same
    run pha modes
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^massif +no +glibc,musl or pm'
    echo "$output" | grep -E '^strace +yes +any'
    echo "$output" | grep -E '^perf +yes +any'
    echo "$output" | grep -E '^flamegraph +yes +glibc,musl'
    [[ "$output" == *"massif: valgrind must start the service"* ]]
}

@test "a static program in an image with glibc: flamegraph is refused before anything is restarted, naming perf" {
    run pha restore staticglibc
    [ "$status" -eq 0 ]
    c=${PH_TEST_PROJECT}-staticglibc-1
    id=$(dk inspect -f '{{.Id}}' "$c")
    run pha start --mode flamegraph staticglibc
    [ "$status" -eq 2 ]
    [[ "$output" == *"service \`staticglibc\`: mode \`flamegraph\` cannot profile \`/usr/local/bin/anyimg\`: it is statically linked"*"LD_PRELOAD"*"; mode \`perf\` samples any program"* ]]
    [ "$(echo "$output" | grep -c 'statically linked')" -eq 1 ]
    # nothing was restarted: the same container runs on, no profiled one
    [ "$(dk inspect -f '{{.Id}} {{.State.Running}}' "$c")" = "$id true" ]
    [ -z "$(project_containers | grep -- '-staticglibc-flamegraph')" ]
    run pha down staticglibc
    [ "$status" -eq 0 ]
}

@test "perf: JIT frames are named from the perf map the run carries, never a file of this host" {
    [ "$(uname -m)" = x86_64 ] || skip "jitimg's machine code is x86-64"
    run pha start --mode perf jit
    [ "$status" -eq 0 ]
    jit_ran() { dk logs "${PH_TEST_PROJECT}-jit-perf" 2>&1 | grep -q 'jitimg: 10000 calls'; }
    wait_for jit_ran
    run pha stop jit
    [ "$status" -eq 0 ]
    run_dir=$(readlink -f "$OUT/jit/latest")
    # the map the JIT wrote (HotSpot's 0x form) came with the run
    map=$(ls "$run_dir"/perf-maps/perf-*.map)
    grep -q '^0x[0-9a-f]* 0x[0-9a-f]* jit_hot_loop(long)$' "$map"
    # perf script, in the converter, had no such file: the collapser named
    # the code from the run's map; most of the CPU was there, marked JIT (_[j])
    grep -q '^jitimg;.*jit_hot_loop_\[j\] [0-9]*$' "$run_dir/stacks.folded"
    [ "$(grep -c 'perf-[0-9]*\.map' "$run_dir/stacks.folded")" -eq 0 ]
    jq -e '.flamegraph.top_self[0].name == "jit_hot_loop_[j]" and (.problems | length) == 0' "$run_dir/summary.json"
}
