#!/usr/bin/env bats
# massif and callgrind end to end, checked with the upstream tools.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

@test "massif: ms_print reads the heap profile and names the demo's allocator" {
    run ph start --mode massif front
    [ "$status" -eq 0 ]
    drive_load 30
    run ph stop front
    [ "$status" -eq 0 ]
    [ -s "$OUT/front/massif.out" ]
    run ms_print "$OUT/front/massif.out"
    [ "$status" -eq 0 ]
    [[ "$output" == *"front_build_response"* ]]
    jq -e '.exit_code == 0 and (.escalations | length) == 0' "$OUT/front/latest/ph-exit.json"
}

@test "callgrind: callgrind_annotate reads the profile and names the hot function" {
    run ph start --mode callgrind front
    [ "$status" -eq 0 ]
    drive_load 20
    run ph stop front
    [ "$status" -eq 0 ]
    [ -s "$OUT/front/callgrind.out" ]
    run callgrind_annotate "$OUT/front/callgrind.out"
    [ "$status" -eq 0 ]
    # the checksum is the demo's hottest function: first among the demo's own
    echo "$output" | grep -m1 -E 'front_[a-z_]+' | grep -q front_checksum_payload
    perm=$(stat -c %a "$(readlink -f "$OUT/front/callgrind.out")")
    [ "$perm" = 644 ]
}
