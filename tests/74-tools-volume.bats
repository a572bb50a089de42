#!/usr/bin/env bats
# Edit, then profile again: a mode the tools tree serves runs the
# service's own image, the tools volume (the tree, the shim, the sampler)
# mounted read-only, so a code change costs the service image's build and
# nothing more: no profiling image per service image.

load test_helper

setup_file() {
    common_setup_file
    # the demo in a copy this file edits, under an image name of its own
    export EDIT_IMAGE="$DEMO_IMAGE-edit"
    cp -r "$BATS_TEST_DIRNAME/../images/demo" "$BATS_FILE_TMPDIR/demo"
    sed -e "s#image: $DEMO_IMAGE:latest#image: $EDIT_IMAGE:latest#" \
        -e "s#context: .*#context: $BATS_FILE_TMPDIR/demo#" "$DEMO_COMPOSE" > "$BATS_FILE_TMPDIR/edit.yaml"
    mv "$BATS_FILE_TMPDIR/edit.yaml" "$DEMO_COMPOSE" # what ph() runs on
}
teardown_file() {
    common_teardown_file
    tags=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E "^$EDIT_IMAGE(-profiling)?:" || true)
    [ -z "$tags" ] || docker rmi -f $tags >/dev/null 2>&1 || true
}

profiling_images() { dk images -q "$EDIT_IMAGE-profiling" | sort; }

@test "tools volume: a profiled container runs the service's own image, the tools mounted read-only" {
    run ph start --build --mode strace front
    [ "$status" -eq 0 ]
    c=${PH_TEST_PROJECT}-front-strace
    [ "$(dk inspect -f '{{.Config.Image}}' "$c")" = "$EDIT_IMAGE:latest" ]
    [ "$(dk inspect -f '{{.Image}}' "$c")" = "$(dk image inspect -f '{{.Id}}' "$EDIT_IMAGE:latest")" ]
    dk inspect -f '{{range .Mounts}}{{.Destination}} {{.Name}} {{.RW}}{{"\n"}}{{end}}' "$c" > "$BATS_TEST_TMPDIR/mounts"
    grep -Eq '^/opt/profharness profharness-tools-[0-9a-f]{16} false$' "$BATS_TEST_TMPDIR/mounts"
    [ -z "$(profiling_images)" ]
    drive_load 20
    run ph stop front
    [ "$status" -eq 0 ]
    grep -q 'accept' "$OUT/front/strace.log"
}

@test "tools volume: massif and callgrind on a glibc image run valgrind from the tree, no profiling image" {
    for mode in massif callgrind; do
        run ph start --build --mode "$mode" front
        [ "$status" -eq 0 ]
        c=${PH_TEST_PROJECT}-front-$mode
        [ "$(dk inspect -f '{{.Config.Image}}' "$c")" = "$EDIT_IMAGE:latest" ]
        [ "$(dk inspect -f '{{range .Mounts}}{{if eq .Destination "/opt/profharness"}}{{.RW}}{{end}}{{end}}' "$c")" = false ]
        # valgrind is the tree's (its launcher, through the tree's loader)
        dk inspect -f '{{json .Config.Entrypoint}}' "$c" | grep -q '"/opt/profharness/tools/bin/valgrind"'
        [ -z "$(profiling_images)" ]
        drive_load 10
        # collect: the dump command is the tree's vgdb too
        run ph collect front
        [ "$status" -eq 0 ]
        [[ "$output" != *"could not make"* && "$output" != *"exited with"* ]]
        run ph stop front
        [ "$status" -eq 0 ]
        jq -e '.exit_code == 0 and (.escalations | length) == 0' "$OUT/front/latest/ph-exit.json"
    done
    # the service's frames are named, and glibc's malloc was replaced
    run ms_print "$OUT/front/massif.out"
    [ "$status" -eq 0 ]
    [[ "$output" == *"front_build_response"* ]]
    # (collect's dump holds the load: callgrind starts over after a dump)
    run callgrind_annotate "$OUT/front/latest/callgrind.out.1"
    [ "$status" -eq 0 ]
    echo "$output" | grep -m1 -E 'front_[a-z_]+' | grep -q front_checksum_payload
}

@test "tools volume: an edit, then start --build runs the new image profiled, and builds no profiling image" {
    run ph start --build --mode flamegraph front
    [ "$status" -eq 0 ]
    vol1=$(dk inspect -f '{{range .Mounts}}{{if eq .Destination "/opt/profharness"}}{{.Name}}{{end}}{{end}}' \
        ${PH_TEST_PROJECT}-front-flamegraph)
    run ph stop front
    [ "$status" -eq 0 ]
    echo 'const char front_edited[] __attribute__((used)) = "edited";' >> "$BATS_FILE_TMPDIR/demo/front.c"
    old=$(dk image inspect -f '{{.Id}}' "$EDIT_IMAGE:latest")
    run ph start --build --mode flamegraph front
    [ "$status" -eq 0 ]
    c=${PH_TEST_PROJECT}-front-flamegraph
    new=$(dk image inspect -f '{{.Id}}' "$EDIT_IMAGE:latest")
    [ "$new" != "$old" ]
    [ "$(dk inspect -f '{{.Image}}' "$c")" = "$new" ]
    [ "$(dk inspect -f '{{range .Mounts}}{{if eq .Destination "/opt/profharness"}}{{.Name}}{{end}}{{end}}' "$c")" = "$vol1" ]
    [ -z "$(profiling_images)" ]
    drive_load 40
    run ph stop front
    [ "$status" -eq 0 ]
    grep -q 'front_checksum_payload' "$OUT/front/stacks.folded"
}

@test "tools volume: prune removes an old tools volume no container mounts, keeps one in use and the current one" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    cur=$(dk inspect -f '{{range .Mounts}}{{if eq .Destination "/opt/profharness"}}{{.Name}}{{end}}{{end}}' \
        ${PH_TEST_PROJECT}-front-strace)
    [ -n "$cur" ]
    img=$(dk inspect -f '{{.Config.Image}}' "${PH_TEST_PROJECT}-front-strace")
    # the current one: marked complete, and no keeper left (Created)
    dk volume inspect "$cur-filled" >/dev/null
    ! dk container inspect "$cur" >/dev/null 2>&1 || false
    # old ones, made as the harness makes them (a volume labelled with its
    # hash and its mark) and as an older one did (a keeper named as its
    # volume); the second still mounted by a container (a service started
    # under the old tools)
    for h in 00000000000000a1 00000000000000a2 00000000000000a3; do
        dk volume create --label io.profharness.tools=$h profharness-tools-$h >/dev/null
    done
    dk volume create --label io.profharness.tools=00000000000000a3 profharness-tools-00000000000000a3-filled >/dev/null
    for h in 00000000000000a1 00000000000000a2; do
        dk create --name profharness-tools-$h --label io.profharness.tools=$h \
            -v profharness-tools-$h:/opt/profharness "$img" true >/dev/null
    done
    dk create --name ${PH_TEST_PROJECT}-oldtools-user -v profharness-tools-00000000000000a2:/opt/profharness \
        "$img" true >/dev/null
    run ph prune
    dk rm -f ${PH_TEST_PROJECT}-oldtools-user >/dev/null
    [ "$status" -eq 0 ]
    [[ "$output" == *"removed	profharness-tools-00000000000000a1"* ]]
    [[ "$output" == *"removed	profharness-tools-00000000000000a3"* ]]
    [[ "$output" == *"kept the old tools volume profharness-tools-00000000000000a2: a container still mounts it"* ]]
    ! dk volume inspect profharness-tools-00000000000000a1 >/dev/null 2>&1 || false
    ! dk container inspect profharness-tools-00000000000000a1 >/dev/null 2>&1 || false
    ! dk volume inspect profharness-tools-00000000000000a3 >/dev/null 2>&1 || false
    ! dk volume inspect profharness-tools-00000000000000a3-filled >/dev/null 2>&1 || false
    dk volume inspect profharness-tools-00000000000000a2 >/dev/null
    dk volume inspect "$cur" "$cur-filled" >/dev/null
    # once its user is gone, the second goes too
    run ph prune
    [ "$status" -eq 0 ]
    [[ "$output" == *"removed	profharness-tools-00000000000000a2"* ]]
    ! dk volume inspect profharness-tools-00000000000000a2 >/dev/null 2>&1 || false
    dk volume inspect "$cur" >/dev/null
    run ph stop front
    [ "$status" -eq 0 ]
}
