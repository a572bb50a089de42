#!/usr/bin/env bats
# `profharness flamegraph`, `diff` and `collapse` as a user runs them: flags
# checked, bad lines reported, exit statuses.  No Engine needed.

PH="$BATS_TEST_DIRNAME/../build/profharness"

@test "flamegraph: --width below 100 px, or not a number, is a usage error" {
    printf 'a;b 1\n' > "$BATS_TEST_TMPDIR/in.folded"
    for w in 0 99 -5 1e9 abc '' 200px; do
        run "$PH" flamegraph --width "$w" "$BATS_TEST_TMPDIR/in.folded"
        [ "$status" -eq 2 ]
        [[ "$output" == *"--width: \`$w\` is not a width in pixels (100 to 1000000)"* ]]
    done
    run "$PH" flamegraph --width 100 "$BATS_TEST_TMPDIR/in.folded"
    [ "$status" -eq 0 ]
    [[ "$output" == *'width="100"'* ]]
}

@test "flamegraph: more bad lines than are listed: all counted, the first 8 named" {
    { for i in $(seq 1 12); do echo "bad $i x"; done; echo 'a;b 3'; } > "$BATS_TEST_TMPDIR/in.folded"
    run "$PH" flamegraph "$BATS_TEST_TMPDIR/in.folded"
    [ "$status" -eq 0 ]
    [[ "$output" == *"12 of 13 lines are not folded stacks and were skipped (lines 1, 2, 3, 4, 5, 6, 7, 8, ...)"* ]]
}

@test "flamegraph: --diff-colors self or subtree, said in the subtitle" {
    printf 'main;read 20 10\nmain;read;wait 10 30\n' > "$BATS_TEST_TMPDIR/in.folded"
    run "$PH" flamegraph --diff-colors self "$BATS_TEST_TMPDIR/in.folded"
    [ "$status" -eq 0 ]
    [[ "$output" == *"<title>read (40 samples, 100.00%; -25.00%)</title>"* ]]
    [[ "$output" == *"in each frame itself"* ]]
    run "$PH" flamegraph "$BATS_TEST_TMPDIR/in.folded"
    [[ "$output" == *"<title>read (40 samples, 100.00%; +25.00%)</title>"* ]]
    [[ "$output" == *"counting each frame with its children"* ]]
    run "$PH" flamegraph --diff-colors leaf "$BATS_TEST_TMPDIR/in.folded"
    [ "$status" -eq 2 ]
    [[ "$output" == *"--diff-colors: \`leaf\` is neither"* ]]
}

@test "flamegraph: nothing to draw is exit 2 and an SVG that says so on stdout" {
    for input in '' 'not folded\n' 'a 0\n'; do
        printf "$input" > "$BATS_TEST_TMPDIR/in.folded"
        rc=0
        "$PH" flamegraph "$BATS_TEST_TMPDIR/in.folded" > "$BATS_TEST_TMPDIR/out.svg" 2> "$BATS_TEST_TMPDIR/err" || rc=$?
        [ "$rc" -eq 2 ]
        grep -q 'no stack with a positive count' "$BATS_TEST_TMPDIR/err"
        grep -q '>ERROR: flamegraph: no stack with a positive count' "$BATS_TEST_TMPDIR/out.svg"
        python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$BATS_TEST_TMPDIR/out.svg"
    done
}

@test "flamegraph -o: written whole or not at all; an old file is kept on error" {
    cd "$BATS_TEST_TMPDIR"
    printf 'a;b 3\n' > good.folded
    printf 'junk\n' > bad.folded
    run "$PH" flamegraph -o out.svg bad.folded
    [ "$status" -eq 2 ]
    [ ! -e out.svg ]
    [[ "$output" == *"\`out.svg\` was left as it was"* ]]
    run "$PH" flamegraph --output out.svg good.folded
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    grep -q '<title>b (3 samples' out.svg
    [ "$(stat -c %a out.svg)" = "$(printf '%o' $(( 0666 & ~0$(umask) )))" ] # as a new file would be
    cp out.svg before.svg
    run "$PH" flamegraph -o out.svg bad.folded
    [ "$status" -eq 2 ]
    cmp out.svg before.svg
    # a write that fails leaves nothing behind (no room: /dev/full is a
    # file, so write to a directory that cannot hold the temporary file)
    run "$PH" flamegraph -o /proc/ph-no-such-dir/out.svg good.folded
    [ "$status" -eq 1 ]
    [[ "$output" == *"create a temporary file for"* ]]
    [ "$(ls | sort | tr '\n' ' ')" = "bad.folded before.svg good.folded out.svg " ]
}
