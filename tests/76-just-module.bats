#!/usr/bin/env bats
# The installed just module (profharness.just) as a user has it: a project
# of its own outside the clone, its justfile importing the module as the
# README says, the demo's compose file beside it.  Each recipe is run with
# PROFHARNESS naming a wrapper that records the arguments it was given (the
# argument checks), and with the real binary for a real setup, start, stop,
# compare and report.

load test_helper

setup_file() {
    common_setup_file
    PROJ=$BATS_FILE_TMPDIR/project
    mkdir -p "$PROJ"
    sed -e "s/^name: .*/name: $PH_TEST_PROJECT/" "$DEMO_COMPOSE" > "$PROJ/compose.yaml"
    printf "import '%s/profharness.just'\n" "$REPO" > "$PROJ/justfile"
    # the recording wrapper: every argument it was given, each ended by a NUL
    REC=$BATS_FILE_TMPDIR/argv
    printf '#!/bin/sh\nprintf "%%s\\0" "$@" > "%s"\n' "$REC" > "$BATS_FILE_TMPDIR/record"
    chmod +x "$BATS_FILE_TMPDIR/record"
    export PROJ REC
}
teardown_file() { common_teardown_file; }

# jt ARGS...: just in the project, as a user types it there.
jt() { (cd "$PROJ" && timeout "${PH_TIMEOUT:-900}" just "$@"); }

# reaches "RECIPE ARGS..." -- EXPECTED...: the recipe, run with the
# recording wrapper, gave profharness exactly EXPECTED, word for word.
reaches() {
    local args=() want
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    rm -f "$REC"
    (cd "$PROJ" && PROFHARNESS=$BATS_FILE_TMPDIR/record timeout 60 just "${args[@]}") || return 1
    want=$(printf '%s\0' "$@" | od -An -c)
    if [ "$(od -An -c < "$REC")" != "$want" ]; then
        echo "just ${args[*]}: profharness was given" >&2
        tr '\0' '\n' < "$REC" | sed 's/^/  [/; s/$/]/' >&2
        return 1
    fi
}

@test "just-module: a recipe for every mode, start and attach, as the README names them" {
    "$PH" modes > "$BATS_TEST_TMPDIR/modes"
    n=0
    while read -r mode attach _; do
        case "$mode" in MODE) continue ;; "") break ;; esac
        n=$((n + 1))
        if [ "$mode" = massif ]; then
            reaches profile-valgrind front -- start --build --mode massif front
        fi
        reaches "profile-$mode" front worker -- start --build --mode "$mode" front worker
        reaches "profile-$mode" -- start --build --mode "$mode"
        if [ "$attach" = yes ]; then
            reaches "profile-attach-$mode" front -- attach --mode "$mode" front
        fi
    done < "$BATS_TEST_TMPDIR/modes"
    [ "$n" -ge 7 ]
}

# given JUST-ARGS... -- : what profharness was given by `just JUST-ARGS`,
# one argument a line, each in brackets (empty when just failed)
given() {
    local args=()
    while [ "$1" != -- ]; do args+=("$1"); shift; done
    rm -f "$REC"
    (cd "$PROJ" && PROFHARNESS=$BATS_FILE_TMPDIR/record timeout 60 just "${args[@]}") >/dev/null 2>&1 || return 0
    tr '\0' '\n' < "$REC" | sed 's/^/[/; s/$/]/'
}
# bracketed ARGS..., as given prints them
argv() { printf '[%s]\n' "$@"; }

@test "just-module: every command's recipe reaches profharness with its command" {
    [ "$(given setup --)" = "$(argv setup)" ]
    [ "$(given setup front --)" = "$(argv setup front)" ]
    [ "$(given stop-profiling front worker --)" = "$(argv stop front worker)" ]
    [ "$(given profile-restore front --)" = "$(argv restore front)" ]
    [ "$(given profile-down --)" = "$(argv down)" ]
    [ "$(given profile-collect front --)" = "$(argv collect front)" ]
    [ "$(given profile-status --)" = "$(argv status)" ]
    [ "$(given profile-logs front --)" = "$(argv logs front)" ]
    [ "$(given profile-logs -f front --)" = "$(argv logs -f front)" ]
    [ "$(given profile-modes --)" = "$(argv modes)" ]
    [ "$(given profile-prune --)" = "$(argv prune)" ]
    [ "$(given report --)" = "$(argv report)" ]
    [ "$(given report front --)" = "$(argv report front)" ]
    [ "$(given compare front --)" = "$(argv compare front)" ]
    # global options first, split as the user wrote them
    [ "$(PROFHARNESS_FLAGS="-o /tmp/runs -p other" given profile-status --)" = "$(argv -o /tmp/runs -p other status)" ]
}

@test "just-module: arguments arrive whole: shell metacharacters, spaces, quotes, empty" {
    reaches compare front --fail-if 'samples>+1000%' -- compare front --fail-if 'samples>+1000%'
    [ ! -e "$PROJ/+1000%" ] || false
    reaches report 'a b' '$(touch pwned)' "it's" '*' '' '--x;y|z' -- report 'a b' '$(touch pwned)' "it's" '*' '' '--x;y|z'
    [ ! -e "$PROJ/pwned" ] || false
    reaches profile-strace 'front' 'a  b' -- start --build --mode strace front 'a  b'
    [ -z "$(ls -A "$PROJ" | grep -vx -e compose.yaml -e justfile)" ]
}

@test "just-module: the README's table of the module's recipes is the module's list" {
    # the rows of the table under "Use it in your project"
    documented=$(awk '/^## Use it in your project/ { on = 1; next } on && /^## / { exit }
                      on && /^\| `just / { sub(/^\| `just /, ""); sub(/[ `].*/, ""); print }' "$REPO/README.md" | sort)
    listed=$(jt --summary | tr ' ' '\n' | sort)
    [ -n "$documented" ]
    diff <(echo "$documented") <(echo "$listed")
}

@test "just-module: the installed module runs the installed profharness" {
    stage=$BATS_TEST_TMPDIR/stage
    make -s -C "$REPO" install DESTDIR="$stage" PREFIX=/usr/local >/dev/null
    share=$stage/usr/local/share/profharness
    [ -s "$share/profharness.just" ]
    proj=$BATS_TEST_TMPDIR/installed
    mkdir -p "$proj"
    cp "$PROJ/compose.yaml" "$proj/"
    printf "import '%s/profharness.just'\n" "$share" > "$proj/justfile"
    run bash -c "cd '$proj' && unset PROFHARNESS && timeout 60 just --evaluate profharness"
    [ "$status" -eq 0 ]
    [ "$(readlink -f "$output")" = "$stage/usr/local/bin/profharness" ]
    run bash -c "cd '$proj' && unset PROFHARNESS && timeout 60 just profile-modes"
    [ "$status" -eq 0 ]
    [[ "$output" == *"perf "*"CPU stacks"* ]]
}

@test "just-module: a real setup, perf start and stop twice, compare SERVICE with --fail-if, report" {
    unset PROFHARNESS PROFHARNESS_FLAGS
    run jt setup front
    [ "$status" -eq 0 ]
    [[ "$output" == *"front: ready"* ]]
    for i in 1 2; do
        run jt profile-perf front
        [ "$status" -eq 0 ]
        [ "$(dk ps --filter "label=io.profharness.project=$PH_TEST_PROJECT" \
            --filter label=io.profharness.service=front --format '{{.Label "io.profharness.mode"}}')" = perf ]
        drive_load 200 >&3 2>&1
        run jt stop-profiling front
        [ "$status" -eq 0 ]
    done
    runs=$(ls -d "$PROJ"/contrib/profiling/front/*-perf | wc -l)
    [ "$runs" -eq 2 ]
    # options after the runs too, as a user types them
    run jt compare front --fail-if 'samples>+1000%'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"compare front (perf): "*" -> "* ]]
    run jt compare --fail-if 'samples>+1000%' front
    [ "$status" -eq 0 ]
    [ -z "$(find "$PROJ" -name '+1000%')" ]
    run jt report
    [ "$status" -eq 0 ]
    for rd in "$PROJ"/contrib/profiling/front/*-perf; do [ -s "$rd/report.html" ]; done
    [ -s "$PROJ/contrib/profiling/index.html" ]
    run jt profile-down
    [ "$status" -eq 0 ]
}
