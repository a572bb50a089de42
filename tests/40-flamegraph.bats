#!/usr/bin/env bats
# The flamegraph mode end to end: the sampler preloaded into the demo with
# no added capabilities, a graceful stop that writes the final snapshot.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

@test "flamegraph: the final SVG names the demo's hot function; pprof decodes" {
    run ph start --mode flamegraph front
    [ "$status" -eq 0 ]
    # the mode asks for nothing: no capabilities, default seccomp
    caps=$(dk inspect -f '{{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}}' ${PH_TEST_PROJECT}-front-flamegraph)
    [ "$caps" = "[] []" ]
    drive_load 200
    run ph stop front
    [ "$status" -eq 0 ]
    svg="$OUT/front/flamegraph.svg"
    [ -s "$svg" ]
    grep -q 'front_checksum_payload' "$svg"
    grep -q 'final:' "$svg"
    grep -q 'front_checksum_payload' "$OUT/front/stacks.folded"
    gunzip -c "$OUT/front/profile.pb.gz" | protoc --decode_raw > "$BATS_TEST_TMPDIR/pprof.txt"
    grep -q '"front_checksum_payload"' "$BATS_TEST_TMPDIR/pprof.txt"
    # the demo is built with -g and the profiling image has libdw: the
    # functions carry their source file
    grep -q '"/src/front.c"' "$BATS_TEST_TMPDIR/pprof.txt"
    # the profile holds the service's frames, never the sampler's own
    # (its stop handler's wait, the malloc interposers)
    no_sampler_frames 0 "$OUT"/front/latest/*.folded "$OUT"/front/latest/*.svg "$OUT"/front/latest/*.pb.gz
    # the sampler flushed, then the service's own SIGTERM handler ended it
    jq -e '.exit_code == 0 and (.escalations | length) == 0' "$OUT/front/latest/ph-exit.json"
}

@test "flamegraph: restore leaves no sampler loaded" {
    run ph restore front
    [ "$status" -eq 0 ]
    ! dk exec ${PH_TEST_PROJECT}-front-1 grep -q phsampler /proc/1/maps || false
    ! dk exec ${PH_TEST_PROJECT}-front-1 sh -c 'tr "\0" "\n" < /proc/1/environ' | grep -q LD_PRELOAD || false
}
