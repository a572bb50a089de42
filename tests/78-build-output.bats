#!/usr/bin/env bats
# What an image build shows.  Off a terminal: no carriage return, no step
# log, one line for a build whose steps all came from the cache.  On a
# terminal (a pseudo-terminal from script(1), 70 columns): one status line
# per build redrawn with "\r" and ESC[K, cut to the width, the builder's
# controls escaped, the result line left.  A failed build: its step and
# tail, and the whole log kept where the hint says.

load test_helper

setup_file() {
    common_setup_file
    ph setup front >&3 2>&1
    # a project beside the demo: one service whose build fails after 100
    # lines, one whose Dockerfile line holds terminal controls and is long
    BUILDS=$BATS_FILE_TMPDIR/builds
    mkdir -p "$BUILDS/broken" "$BUILDS/hostile"
    printf 'FROM debian:bookworm-slim\nRUN for i in $(seq 1 100); do echo "build line $i"; done; exit 3\n' \
        > "$BUILDS/broken/Dockerfile"
    printf 'FROM debian:bookworm-slim\nRUN echo "\033]0;pwned\007\033[2J" > /x && echo %s\n' "$(printf 'x%.0s' $(seq 300))" \
        > "$BUILDS/hostile/Dockerfile"
    cat > "$BUILDS/compose.yaml" <<EOF
services:
  broken:
    build: { context: $BUILDS/broken }
    image: ph-$PH_TEST_PROJECT-broken:latest
    command: ["true"]
  hostile:
    build: { context: $BUILDS/hostile }
    image: ph-$PH_TEST_PROJECT-hostile:latest
    command: ["true"]
EOF
    export BUILDS
}
teardown_file() {
    dk rmi -f "ph-$PH_TEST_PROJECT-hostile:latest" >/dev/null 2>&1 || true
    common_teardown_file
}

bph() { timeout 600 "$PH" -f "$BUILDS/compose.yaml" -p "$PH_TEST_PROJECT" -o "$OUT" "$@"; }

# on_tty FILE ARGS...: the command ARGS on a pseudo-terminal of 70 columns,
# what it showed into FILE (the terminal's "\r\n" line ends made "\n").
on_tty() {
    local file=$1 cmd
    shift
    printf -v cmd '%q ' "$@"
    script -qec "stty cols 70 && exec timeout 600 $cmd" /dev/null < /dev/null > "$file.raw"
    sed 's/\r$//' "$file.raw" > "$file"
}

# Every redraw of the status line in FILE ("\r" TEXT ESC[K, another
# redraw after it, not a line's end) fits in 70 columns (all ASCII here:
# bytes are columns); there is at least one.
fits_70() {
    awk 'BEGIN { RS = "\r" } /\x1b\[K$/ { n++; if (length($0) - 3 >= 70) { print "too wide: " $0; bad = 1 } }
         END { exit bad || !n }' "$1"
}

@test "build output: a cached build off a terminal is one line, no carriage return, no step log" {
    run ph setup front
    [ "$status" -eq 0 ]
    echo "$output"
    [[ "$output" != *$'\r'* ]]
    ! grep -E 'Step [0-9]+/[0-9]+ :|---> |Successfully (built|tagged)' <<<"$output" || false
    [ "$(grep -c "front: $DEMO_IMAGE:latest up to date, from the build cache" <<<"$output")" -eq 1 ]
    # that line and the service's ready line: nothing else about front
    [ "$(grep -c 'front: ' <<<"$output")" -eq 2 ]
}

@test "build output: on a terminal a status line redrawn in place, cut to the width, the result left" {
    t=$BATS_TEST_TMPDIR/tty
    on_tty "$t" "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" -o "$OUT" setup front
    cat -v "$t"
    grep -q $'\rprofharness: front: build context' "$t"
    grep -q $'\rprofharness: front: step 8/8 COPY' "$t"
    grep -q $'\x1b\\[K' "$t"
    # the line left: the result, after the last redraw of its line
    last=$(grep "front: $DEMO_IMAGE:latest up to date" "$t" | tr '\r' '\n' | tail -1)
    [ "$last" = "profharness: front: $DEMO_IMAGE:latest up to date, from the build cache (8 steps)"$'\x1b[K' ]
    ! grep -q 'Step [0-9]*/[0-9]* :' "$t" || false
    fits_70 "$t"
}

@test "build output: on a terminal the builder's controls are escaped, a long step cut" {
    t=$BATS_TEST_TMPDIR/tty
    on_tty "$t" "$PH" -f "$BUILDS/compose.yaml" -p "$PH_TEST_PROJECT" -o "$OUT" setup hostile
    cat -v "$t"
    grep -q "hostile: built ph-$PH_TEST_PROJECT-hostile:latest\|hostile: ph-$PH_TEST_PROJECT-hostile:latest up to date" "$t"
    grep -qF 'step 2/2 RUN echo "\x1b]0;pwned\x07' "$t"
    # no escape but the harness's own ESC[K, no bell
    [ "$(grep -o $'\x1b' "$t" | wc -l)" -eq "$(grep -o $'\x1b\\[K' "$t" | wc -l)" ]
    [ "$(grep -o $'\x1b\\[K' "$t" | wc -l)" -gt 0 ]
    ! grep -q $'\a' "$t" || false
    fits_70 "$t"
}

@test "build output: a failed build shows its step and tail, and the whole log is kept where the hint says" {
    run bph setup broken
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" != *$'\r'* ]]
    [[ "$output" == *"  [broken] Step 2/2 : RUN for i in"* ]]
    [[ "$output" == *"  [broken] build line 100"* ]]
    [[ "$output" != *"build line 50"$'\n'* ]]
    [[ "$output" == *"returned a non-zero code: 3"* ]]
    log=$(sed -n 's/^profharness: hint: .*the whole build log: \([^ ]*\).*/\1/p' <<<"$output")
    [ -n "$log" ]
    [ -s "$log" ]
    grep -qx 'build line 1' "$log"
    grep -qx 'build line 100' "$log"
    grep -q 'Step 2/2 : RUN for i in' "$log"
}
