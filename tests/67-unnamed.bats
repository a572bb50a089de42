#!/usr/bin/env bats
# Where a mode would name none of a runtime's functions (a profile's
# `runtimes.unnamed`: Python 3.11 under perf, a node started without
# --perf-basic-prof attached to), start and attach refuse before anything
# is restarted or attached: one line says why and what works, the running
# service is left exactly as it was, no container of the run is made.
# --allow-unnamed goes on, except where what attach runs would refuse it
# the same (a node with its inspector open under flamegraph).  The services are tests/lang's (Debian
# bookworm: python3 3.11, nodejs 18), run by `restore` as compose would.

load test_helper

LANGC="$REPO/tests/lang/compose.yaml"

# pl ARGS...: the harness on the language project.
pl() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$LANGC" ${PL_OVERRIDE:+-f "$PL_OVERRIDE"} -p "$PH_TEST_PROJECT" \
        --profiles "$REPO/profiles" -o "$OUT" "$@"
}

setup_file() {
    common_setup_file
    eval "$("$REPO/tests/lang/tags.sh")"
    export PH_LANG_C_TAG PH_LANG_CPP_TAG PH_LANG_RUST_TAG PH_LANG_GO_TAG PH_LANG_PYTHON_TAG PH_LANG_NODE_TAG PH_LANG_JAVA_TAG
    # a node started with its perf map on, as a user would set it
    export NODE_WITH_MAP=$BATS_FILE_TMPDIR/node-with-map.yaml
    printf 'services:\n  node:\n    environment:\n      NODE_OPTIONS: "--max-old-space-size=256 --perf-basic-prof"\n' \
        > "$NODE_WITH_MAP"
    # a node that names itself, as Verdaccio does (process.title): ps shows
    # `verdaccio`, and its arguments are gone
    export NODE_TITLED=$BATS_FILE_TMPDIR/node-titled.yaml
    cat > "$NODE_TITLED" <<'YAML'
services:
  node:
    entrypoint: ["node", "-e", "process.title = 'verdaccio'; require('/opt/lang/lang.js')"]
YAML
}
teardown_file() {
    pl down python node c javajre >/dev/null 2>&1 || true
    common_teardown_file
}
teardown() {
    common_teardown
    pl down python node c javajre >/dev/null 2>&1 || true
}

# Every container of the project (compose's labels and ours), sorted:
# id, name, state, start time.
containers() {
    {
        dk ps -aq --filter "label=com.docker.compose.project=$PH_TEST_PROJECT"
        dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT"
    } | sort -u | while read -r id; do
        dk inspect -f '{{.Id}} {{.Name}} {{.State.Status}} {{.State.StartedAt}}' "$id"
    done
}

# restored SERVICE: run it unprofiled, as compose would; its container id.
restored() {
    run pl restore "$1"
    [ "$status" -eq 0 ]
    dk ps -q --no-trunc --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=$1" | head -n 1
}

# recording CONTAINER: perf records in it (an attach's ph-attach copies
# the mapped files first, then becomes perf record; a start's perf runs
# the service).
recording() {
    dk top "$1" -o pid,args 2>/dev/null | awk '$2 ~ /(^|\/)perf$/ && / record / { f = 1 } END { exit !f }'
}

# titled CONTAINER: its node shows as `verdaccio` and nothing more
# (process.title is set; before, its arguments name the title too).
titled() { dk top "$1" -o pid,args | awk 'NR > 1 && $2 == "verdaccio" && NF == 2 { f = 1 } END { exit !f }'; }

# refused TEXT ARGS...: `pl ARGS` is refused with exit 2 and one error
# line holding TEXT, then the hint naming --allow-unnamed; the project's
# containers are as they were (none stopped, restarted or made).
refused() {
    local text=$1 before
    shift
    before=$(containers)
    run pl "$@"
    [ "$status" -eq 2 ]
    [[ "$output" == *"error: $text"* ]]
    [ "$(printf '%s\n' "$output" | grep -c 'error:')" -eq 1 ]
    printf '%s\n' "$output" | grep -q '^profharness: hint: .*--allow-unnamed'
    [ "$(containers)" = "$before" ]
}

@test "unnamed: start --mode perf of Python 3.11 is refused; the running service is left as it was" {
    c=$(restored python)
    [ -n "$c" ]
    refused "service \`python\`, mode \`perf\`: python3.11 has no perf support: its functions would show as _PyEval_EvalFrameDefault; use \`start --mode flamegraph\`" \
        start --mode perf python
    [[ "$output" == *"profharness start --mode perf --allow-unnamed python"* ]]
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    ! dk inspect "${PH_TEST_PROJECT}-python-perf" >/dev/null 2>&1 || false
    [ ! -e "$OUT/python" ]
}

@test "unnamed: attach --mode perf to a node started without --perf-basic-prof is refused; nothing is attached" {
    c=$(restored node)
    [ -n "$c" ]
    refused "service \`node\`, mode \`perf\`: node was started without --perf-basic-prof: its JavaScript would be unnamed; use \`start --mode perf\`" \
        attach --mode perf node
    [[ "$output" == *"profharness attach --mode perf --allow-unnamed node"* ]]
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    ! dk inspect "${PH_TEST_PROJECT}-node-attach-perf" >/dev/null 2>&1 || false
    # and Python 3.11 alike, in one call with node: nothing attached to either
    restored python >/dev/null
    refused "service \`python\`, mode \`perf\`: python3.11 has no perf support" attach --mode perf python node
}

@test "unnamed: attach --mode perf to a node that set its title is refused: it runs node all the same" {
    PL_OVERRIDE=$NODE_TITLED
    c=$(restored node)
    [ -n "$c" ]
    # the precondition: ps names no node
    wait_for titled "$c"
    ! dk top "$c" -o pid,args | grep -q node || false
    refused "service \`node\`, mode \`perf\`: node (shown as \`verdaccio\`: it set its title) was started without --perf-basic-prof" \
        attach --mode perf node
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    ! dk inspect "${PH_TEST_PROJECT}-node-attach-perf" >/dev/null 2>&1 || false
}

@test "unnamed: --allow-unnamed goes on: attach to that node, and stop detaches and collects" {
    c=$(restored node)
    started=$(dk inspect -f '{{.State.StartedAt}}' "$c")
    run pl attach --mode perf --allow-unnamed node
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for recording "${PH_TEST_PROJECT}-node-attach-perf"
    run pl stop node
    [ "$status" -eq 0 ]
    [ -s "$OUT/node/latest/perf.data" ]
    [ "$(dk inspect -f '{{.State.StartedAt}}' "$c")" = "$started" ]
}

@test "unnamed: --allow-unnamed goes on: start --mode perf of Python 3.11 runs it under perf" {
    restored python >/dev/null
    run pl start --mode perf --allow-unnamed python
    [ "$status" -eq 0 ]
    [ "$(dk inspect -f '{{.State.Running}} {{index .Config.Labels "io.profharness.mode"}}' \
        "${PH_TEST_PROJECT}-python-perf")" = "true perf" ]
    WAIT_SECONDS=120 wait_for recording "${PH_TEST_PROJECT}-python-perf"
    run pl stop python
    [ "$status" -eq 0 ]
    [ -s "$OUT/python/latest/perf.data" ]
}

@test "unnamed: a node started with --perf-basic-prof in its NODE_OPTIONS is attached to" {
    PL_OVERRIDE=$NODE_WITH_MAP
    restored node >/dev/null
    run pl attach --mode perf node
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for recording "${PH_TEST_PROJECT}-node-attach-perf"
    run pl stop node
    [ "$status" -eq 0 ]
    [ -s "$OUT/node/latest/perf.data" ]
}

# attach refuses before the tools container what that container would
# refuse after `attach` had returned 0 (issue 30).

# runs SERVICE: its run dirs under $OUT (earlier tests of this file leave
# theirs), one a line.
runs() { ls -1A "$OUT/$1" 2>/dev/null || true; }
@test "unnamed: attach --mode wall to a native program is refused before anything is attached" {
    c=$(restored c)
    [ -n "$c" ]
    before=$(runs c)
    refused "service \`c\`, mode \`wall\`: its processes run lang-c, none of them a JVM, a CPython or a Node: the wall clock of a program the sampler is not loaded into cannot be sampled from outside it (perf samples CPU time); use \`start --mode wall\`, or \`attach --mode flamegraph\` for its CPU time" \
        attach --mode wall c
    [[ "$output" == *"embedded: it maps libjvm.so or a libpython3), \`profharness attach --mode wall --allow-unnamed c\`"* ]]
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    ! dk inspect "${PH_TEST_PROJECT}-c-attach-wall" >/dev/null 2>&1 || false
    [ "$(runs c)" = "$before" ]
    # under a shell: every process is looked at, each program named once
    local shell=$BATS_TEST_TMPDIR/c-shell.yaml
    printf 'services:\n  c:\n    entrypoint: ["sh", "-c", "/usr/local/bin/lang-c & /usr/local/bin/lang-c & wait"]\n' > "$shell"
    export PL_OVERRIDE=$shell
    c=$(restored c)
    two() { [ "$(dk top "$1" -o pid,exe 2>/dev/null | grep -c '/lang-c$')" -eq 2 ]; }
    WAIT_SECONDS=60 wait_for two "$c"
    refused "service \`c\`, mode \`wall\`: its processes run dash, lang-c, none of them a JVM" attach --mode wall c
    ! dk inspect "${PH_TEST_PROJECT}-c-attach-wall" >/dev/null 2>&1 || false
}

@test "unnamed: a node with its inspector open: attach --mode flamegraph is refused, --allow-unnamed too; the hint names perf" {
    local inspect=$BATS_TEST_TMPDIR/node-inspect.yaml
    printf 'services:\n  node:\n    environment:\n      NODE_OPTIONS: "--max-old-space-size=256 --inspect"\n' > "$inspect"
    export PL_OVERRIDE=$inspect
    c=$(restored node)
    [ -n "$c" ]
    before=$(runs node)
    refused "service \`node\`, mode \`flamegraph\`: node was started with its inspector open (--inspect)" \
        attach --mode flamegraph node
    [[ "$output" == *"its native frames only: \`profharness attach --mode perf --allow-unnamed node\`"* ]]
    [[ "$output" != *"--mode flamegraph --allow-unnamed"* ]]
    # the tools container would refuse it the same: --allow-unnamed does not make one
    refused "service \`node\`, mode \`flamegraph\`: node was started with its inspector open" \
        attach --mode flamegraph --allow-unnamed node
    ! dk inspect "${PH_TEST_PROJECT}-node-attach-flamegraph" >/dev/null 2>&1 || false
    [ "$(runs node)" = "$before" ]
}

# A CPython the attached reader has no layout for, by its program's name:
# bookworm's 3.11 copied as python3.14 (the name is what the harness
# reads; before, the tools container's ph-pyattach refused it only after
# `attach` had returned 0).
@test "unnamed: attach --mode flamegraph and wall to a python3.14 are refused before anything is attached" {
    local as314=$BATS_TEST_TMPDIR/python314.yaml
    cat > "$as314" <<'YAML'
services:
  python:
    entrypoint: ["sh", "-c", "cp /usr/bin/python3.11 /tmp/python3.14 && exec /tmp/python3.14 /opt/lang/lang.py"]
YAML
    export PL_OVERRIDE=$as314
    c=$(restored python)
    [ -n "$c" ]
    # until it runs the copy
    runs_copy() { dk top "$1" -o pid,exe 2>/dev/null | grep -q '/tmp/python3\.14$'; }
    WAIT_SECONDS=60 wait_for runs_copy "$c"
    before=$(runs python)
    refused "service \`python\`, mode \`flamegraph\`: python3.14 is a CPython whose frames the attached reader cannot read (it reads 3.8 to 3.13, not a free-threaded build); use \`start --mode flamegraph\`" \
        attach --mode flamegraph python
    [[ "$output" == *"its native frames only: \`profharness attach --mode perf --allow-unnamed python\`"* ]]
    refused "service \`python\`, mode \`flamegraph\`: python3.14 is a CPython" attach --mode flamegraph --allow-unnamed python
    run pl attach --mode wall --allow-unnamed python
    [ "$status" -eq 2 ]
    [[ "$output" == *"error: service \`python\`, mode \`wall\`: python3.14 is a CPython whose frames the attached reader cannot read"*"use \`start --mode wall\`"* ]]
    [[ "$output" == *"--allow-unnamed does not go on under wall"* ]]
    for m in flamegraph wall; do
        ! dk inspect "${PH_TEST_PROJECT}-python-attach-$m" >/dev/null 2>&1 || false
    done
    [ "$(runs python)" = "$before" ]
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
}

# attach.needs looks at every process: a JVM under a shell is joined.
@test "unnamed: attach --mode wall to a JVM under a shell is not refused; stop detaches and collects" {
    local shell=$BATS_TEST_TMPDIR/java-shell.yaml
    printf 'services:\n  javajre:\n    entrypoint: ["sh", "-c", "java -cp /opt/lang LangJava & wait"]\n' > "$shell"
    export PL_OVERRIDE=$shell
    c=$(restored javajre)
    [ -n "$c" ]
    jvm() { dk top "$1" -o pid,exe 2>/dev/null | grep -q '/java$'; }
    WAIT_SECONDS=60 wait_for jvm "$c"
    run pl attach --mode wall javajre
    [ "$status" -eq 0 ]
    [[ "$output" == *"javajre: attached wall to container"* ]]
    run pl stop javajre
    [ "$status" -eq 0 ]
    ls "$OUT"/javajre/latest/stacks-*.folded
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
}
