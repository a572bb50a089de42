#!/usr/bin/env bats
# `profharness flamegraph`, `diff` and `collapse` as a user runs them: flags
# checked, bad lines reported, exit statuses.  No Engine needed.

PH="$BATS_TEST_DIRNAME/../build/profharness"

@test "flamegraph: --width below 100 px, or not a number, is a usage error" {
    printf 'a;b 1\n' > "$BATS_TEST_TMPDIR/in.folded"
    for w in 0 99 -5 1e9 abc ''; do
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
