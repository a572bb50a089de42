#!/usr/bin/env bats
# Adopting profharness in one's own project (issue 13): installed into a
# prefix, run from the project's folder (not the clone), through the just
# module the project imports, beside a stack docker-compose runs.  The
# project is a copy of the demo in a temp folder, with an image name and a
# compose project of this test's own, plus a tiny service whose source the
# test edits.

load test_helper

PROJ_NAME="$PH_TEST_PROJECT-adopt"
OTHER_NAME="$PH_TEST_PROJECT-adopt2"
ADOPT_IMAGE="profharness-demo-$PH_TEST_PROJECT-adopt"
EDITED_IMAGE="$PH_TEST_PROJECT-adopt-edited"

# The installed binary, from wherever the caller stands.
iph() { timeout "${PH_TIMEOUT:-900}" "$PREFIX/bin/profharness" "$@"; }
dc() { (cd "$PROJ" && timeout 300 docker-compose -p "$PROJ_NAME" "$@"); }
# Poll (deadline 60 s) until container $1 has printed $2.
wait_log() {
    local i
    for i in $(seq 300); do
        dk logs "$1" 2>&1 | grep -q "$2" && return 0
        sleep 0.2
    done
    return 1
}
drive() { timeout 300 "$REPO/build/demo-load" -w 120 -n "${1:-20}" -c 2 "127.0.0.1:$DEMO_PORT"; }

remove_adopt() {
    local p ids
    dc down --remove-orphans >/dev/null 2>&1 || true
    for p in "$PROJ_NAME" "$OTHER_NAME"; do
        ids=$(dk ps -aq --filter "label=io.profharness.project=$p"; dk ps -aq --filter "label=com.docker.compose.project=$p")
        [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
        dk network ls -q --filter "label=io.profharness.project=$p" | xargs -r timeout 60 docker network rm >/dev/null 2>&1 || true
        dk network rm "${p}_default" >/dev/null 2>&1 || true
    done
}

setup_file() {
    export PROJ=$BATS_FILE_TMPDIR/proj PREFIX=$BATS_FILE_TMPDIR/prefix
    export COMPOSE_PROJECT_NAME=$PROJ_NAME
    mkdir -p "$PROJ/sub" "$PROJ/edited"
    # The user's project: the demo's two services (compose 1.29 reads it:
    # no top-level `name:`), and one whose source the test edits.
    sed -e '/^name:/d' -e "s#image: profharness-demo:latest#image: $ADOPT_IMAGE:latest#" \
        -e "s#context: images/demo#context: $REPO/images/demo#" "$REPO/compose.yaml" > "$PROJ/compose.yaml"
    cat >> "$PROJ/compose.yaml" <<EOF

  edited:
    build:
      context: ./edited
    image: $EDITED_IMAGE:latest
    profiles: [edit]
EOF
    printf 'FROM debian:bookworm-slim\nCOPY marker /marker\nCMD ["sh", "-c", "cat /marker; exec sleep infinity"]\n' \
        > "$PROJ/edited/Dockerfile"
    echo "edited-v1" > "$PROJ/edited/marker"
    printf "import '%s/share/profharness/profharness.just'\n" "$PREFIX" > "$PROJ/justfile"
    remove_adopt
    dk rmi -f "$EDITED_IMAGE:latest" >/dev/null 2>&1 || true # the test builds it from v1
    make -C "$REPO" -s install PREFIX="$PREFIX" >&3 2>&1
}

teardown_file() {
    remove_adopt
    [ ! -x "$PREFIX/bin/profharness" ] || (cd "$PROJ" && iph --profile edit prune --all >/dev/null 2>&1) || true
    dk rmi "$EDITED_IMAGE:latest" >/dev/null 2>&1 || true
    remove_project_networks
}

@test "install: FHS paths under the prefix, a staged DESTDIR, and uninstall" {
    [ -x "$PREFIX/bin/profharness" ]
    [ -x "$PREFIX/lib/profharness/ph-init" ]
    [ -f "$PREFIX/lib/profharness/libphsampler.so" ]
    [ -f "$PREFIX/share/profharness/profiles/strace.yaml" ]
    [ -f "$PREFIX/share/profharness/images/tools/Dockerfile" ]
    [ -f "$PREFIX/share/profharness/profharness.just" ]
    # it finds its modes from anywhere, not from the working directory
    run bash -c "cd / && '$PREFIX/bin/profharness' modes"
    [ "$status" -eq 0 ]
    [[ "$output" == *strace*flamegraph* || "$output" == *flamegraph*strace* ]]
    # DESTDIR stages the same tree; uninstall takes it all away
    stage=$BATS_TEST_TMPDIR/stage
    make -C "$REPO" -s install DESTDIR="$stage" PREFIX=/opt/ph >/dev/null
    [ -x "$stage/opt/ph/bin/profharness" ]
    [ -f "$stage/opt/ph/share/profharness/profiles/massif.yaml" ]
    run "$stage/opt/ph/bin/profharness" modes
    [ "$status" -eq 0 ]
    make -C "$REPO" -s uninstall DESTDIR="$stage" PREFIX=/opt/ph >/dev/null
    [ -z "$(find "$stage" -type f)" ]
}

@test "from the project's folder: status, modes and hints that name what was meant" {
    cd "$PROJ/sub"
    run iph status
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^front +- +absent'
    run iph modes
    [ "$status" -eq 0 ]
    [[ "$output" == *massif* ]]
    run iph start --mode flamegraf front
    [ "$status" -eq 2 ]
    [[ "$output" == *"no mode \`flamegraf\`; did you mean \`flamegraph\`?"* ]]
    [[ "$output" == *"the modes: callgrind, flamegraph, heap, massif (also valgrind), "*"strace"* ]]
    run iph start --mode strace frnot
    [ "$status" -eq 2 ]
    [[ "$output" == *"$PROJ/compose.yaml: no service \`frnot\`; did you mean \`front\`?"* ]]
    [[ "$output" == *"its services: worker, front, edited"* ]]
    run iph stauts
    [ "$status" -eq 2 ]
    [[ "$output" == *"did you mean \`status\`?"* ]]
    # nothing was started by any of it
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PROJ_NAME")" ]
}

@test "the imported just module profiles the demo; runs land beside the compose file, paths absolute" {
    cd "$PROJ/sub"
    run just profile-strace front
    [ "$status" -eq 0 ]
    [[ "$output" == *"its run dir is written when it stops"* ]]
    [[ "$output" == *"front	strace	$PROJ/contrib/profiling/front/"* ]]
    drive 20
    run just stop-profiling front
    [ "$status" -eq 0 ]
    run_dir=$(echo "$output" | sed -n "s#^front	\(/.*\)\$#\1#p")
    [ -n "$run_dir" ]
    [[ "$run_dir" == "$PROJ/contrib/profiling/front/"* ]]
    [ -s "$run_dir/strace.log" ]
    [ ! -e "$PROJ/sub/contrib" ]
    # the service's output stayed with the run, with the Engine's timestamps
    grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z front: listening on :8080' "$run_dir/service.log"
    [ "$(stat -c %a "$run_dir/service.log")" = 644 ]
    # and `logs` reads it once the container is gone
    run just profile-logs front
    [ "$status" -eq 0 ]
    [[ "$output" == *"no container; the output of its last run"* ]]
    [[ "$output" == *"front: listening on :8080"* ]]
}

@test "stop with no names stops a dependant before what it depends on" {
    cd "$PROJ"
    run iph start --mode strace worker front
    [ "$status" -eq 0 ]
    drive 5
    # concurrent stops (the default) go in waves: front depends on worker,
    # so front's wave is done before worker's begins
    run iph stop
    [ "$status" -eq 0 ]
    order=$(echo "$output" | sed -n 's#^\(front\|worker\)	/.*#\1#p' | tr '\n' ' ')
    [ "$order" = "front worker " ]
}

@test "beside docker-compose: profile one service of the running stack, restore it, compose has it again" {
    cd "$PROJ"
    remove_adopt # nothing of ours may hold the port
    dc up -d >/dev/null 2>&1
    run iph status
    [ "$status" -eq 0 ]
    echo "$output" | grep -E '^front +compose +running'
    echo "$output" | grep -E '^worker +compose +running'
    run iph start --mode strace front
    [ "$status" -eq 0 ]
    [[ "$output" == *"stopped docker compose's container"*"it is kept"* ]]
    run iph status
    echo "$output" | grep -E '^front +strace +running .*\(written at stop\)$'
    echo "$output" | grep -E '^front +compose +exited'
    # the profiled one took its place: same port, same network name
    drive 20
    run iph restore front
    [ "$status" -eq 0 ]
    [ -s "$PROJ/contrib/profiling/front/latest/strace.log" ]
    grep -qE 'accept4?\(' "$PROJ/contrib/profiling/front/latest/strace.log"
    run dc ps
    echo "$output"
    echo "$output" | grep -E "^${PROJ_NAME}_front_1 .* Up "
    drive 5
    # nothing of ours is left beside compose's containers
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PROJ_NAME")" ]
}

@test "a port held by another project's container is named in the hint" {
    cd "$PROJ"
    dc ps | grep -E "^${PROJ_NAME}_front_1 .* Up "
    run iph -p "$OTHER_NAME" start --mode strace front
    [ "$status" -eq 1 ]
    [[ "$output" == *"port is already allocated"* ]]
    [[ "$output" == *"hint: port $DEMO_PORT is held by container \`${PROJ_NAME}_front_1\`, service \`front\` of the compose project \`$PROJ_NAME\`"* ]]
    dc down >/dev/null 2>&1
}

@test "a restored stack is compose's: docker-compose ps and down take it" {
    cd "$PROJ"
    run iph restore
    [ "$status" -eq 0 ]
    run dc ps
    echo "$output"
    echo "$output" | grep -E "^${PROJ_NAME}-front-1 .* Up "
    echo "$output" | grep -E "^${PROJ_NAME}-worker-1 .* Up "
    dc down >/dev/null 2>&1
    [ -z "$(dk ps -aq --filter "label=io.profharness.project=$PROJ_NAME")" ]
}

@test "start --build runs the edited source in the service's own image; nothing of ours piles up" {
    cd "$PROJ"
    run iph start --mode strace edited
    [ "$status" -eq 0 ]
    first=$(dk inspect -f '{{.Image}}' "$PROJ_NAME-edited-strace")
    wait_log "$PROJ_NAME-edited-strace" edited-v1
    run iph stop edited
    [ "$status" -eq 0 ]
    grep -q 'edited-v1' "$PROJ/contrib/profiling/edited/latest/service.log"
    echo "edited-v2" > "$PROJ/edited/marker"
    # as compose: without --build the image there is used ...
    run iph start --mode strace edited
    [ "$status" -eq 0 ]
    [ "$(dk inspect -f '{{.Image}}' "$PROJ_NAME-edited-strace")" = "$first" ]
    wait_log "$PROJ_NAME-edited-strace" edited-v1
    run iph stop edited
    grep -q 'edited-v1' "$PROJ/contrib/profiling/edited/latest/service.log"
    old_service=$(dk image inspect -f '{{.Id}}' "$EDITED_IMAGE:latest")
    # ... with it, the edit runs
    run iph start --build --mode strace edited
    [ "$status" -eq 0 ]
    second=$(dk inspect -f '{{.Image}}' "$PROJ_NAME-edited-strace")
    wait_log "$PROJ_NAME-edited-strace" edited-v2
    [ "$second" != "$first" ]
    run iph stop edited
    [ "$status" -eq 0 ]
    grep -q 'edited-v2' "$PROJ/contrib/profiling/edited/latest/service.log"
    # strace runs the service's own image with the tools volume: the
    # profiled container ran the edited image itself, and no profiling
    # image was built for either edit (before the tools volume, one each)
    [ "$second" = "$(dk image inspect -f '{{.Id}}' "$EDITED_IMAGE:latest")" ]
    [ "$first" = "$old_service" ]
    [ -z "$(dk images -q "$EDITED_IMAGE-profiling")" ]
    # prune has nothing of ours to remove, and leaves the service's image
    run iph --profile edit prune --all
    [ "$status" -eq 0 ]
    ! echo "$output" | grep -q "^removed	$EDITED_IMAGE" || false
    dk image inspect "$second" >/dev/null
}
