#!/usr/bin/env bats
# `profharness collapse perf` against stackcollapse-perf.pl itself, on the
# whole of FlameGraph's regression suite and on inferno's perf inputs.
#
# Needs copies of FlameGraph and inferno, which are not part of this
# project (`just test-peers` says how to get them):
#   FLAMEGRAPH_DIR=/path/to/FlameGraph INFERNO_DIR=/path/to/inferno bats tests/peers/43-collapse-peers.bats
# Without them the tests are skipped, and say so; that is why this file is
# not part of `just test`.  FlameGraph's saved results are not the
# reference: 8 of its 78 (java and vertx under --pid/--tid) are stale after
# a change to its Java detection, so the reference is what the
# stackcollapse-perf.pl of that copy prints now.

PH="$BATS_TEST_DIRNAME/../../build/profharness"

need_peers() {
    if [ -z "${FLAMEGRAPH_DIR:-}" ] || [ ! -f "$FLAMEGRAPH_DIR/stackcollapse-perf.pl" ]; then
        skip "set FLAMEGRAPH_DIR (and INFERNO_DIR) to copies of FlameGraph and inferno to compare with stackcollapse-perf.pl"
    fi
}

@test "collapse: FlameGraph's suite, six options, as stackcollapse-perf.pl prints it" {
    need_peers
    agree=0; total=0
    for opt in pid tid kernel jit all addrs; do
        for t in "$FLAMEGRAPH_DIR"/test/*.txt; do
            total=$((total + 1))
            perl "$FLAMEGRAPH_DIR/stackcollapse-perf.pl" --$opt "$t" > "$BATS_TEST_TMPDIR/want" 2>/dev/null
            "$PH" collapse perf --$opt "$t" > "$BATS_TEST_TMPDIR/got" 2>/dev/null
            if cmp -s "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"; then
                agree=$((agree + 1))
            else
                echo "differ: $t --$opt"
            fi
        done
    done
    echo "FlameGraph suite: agree $agree of $total"
    [ "$total" -eq 78 ]
    [ "$agree" -eq "$total" ]
}

@test "collapse: inferno's perf inputs (go, C++, weird lines), seven ways, as stackcollapse-perf.pl" {
    need_peers
    [ -d "${INFERNO_DIR:-}/tests/data/collapse-perf" ] || skip "set INFERNO_DIR to a copy of inferno"
    agree=0; total=0
    for opt in "" --pid --tid --kernel --jit --all --addrs; do
        for t in "$INFERNO_DIR"/tests/data/collapse-perf/*.txt; do
            total=$((total + 1))
            perl "$FLAMEGRAPH_DIR/stackcollapse-perf.pl" $opt "$t" > "$BATS_TEST_TMPDIR/want" 2>/dev/null
            "$PH" collapse perf $opt "$t" > "$BATS_TEST_TMPDIR/got" 2>/dev/null
            if cmp -s "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"; then
                agree=$((agree + 1))
            else
                echo "differ: $t $opt"
            fi
        done
    done
    echo "inferno's perf inputs: agree $agree of $total"
    [ "$agree" -eq "$total" ]
}
