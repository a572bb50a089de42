#!/usr/bin/env bats
# The renderer against flamegraph.pl on the peers' own test data: the
# folded files of FlameGraph (test/results/*.txt) and of inferno
# (tests/data/*/results/*.txt, tests/data/flamegraph/*/*.txt), 141 inputs,
# each drawn plainly, reversed and inverted; the frames drawn (depth, name,
# samples, left-to-right order) must be the same (tests/peers/flame_compare.py).
#
# Needs copies of the two repositories, which are not part of this project:
#   FLAMEGRAPH_DIR=/path/to/FlameGraph INFERNO_DIR=/path/to/inferno bats tests/peers/42-flamegraph-peers.bats
# (github.com/brendangregg/FlameGraph, github.com/jonhoo/inferno); without
# them the tests are skipped, and say so.
#
# The differences that remain are deliberate or flamegraph.pl's, listed
# here with the reason, and checked to be the only ones:
#   CRLF line ends (5 inputs): flamegraph.pl refuses every line; we read them.
#   austin's "# duration: 23873" (1): a comment to us (and to inferno);
#     flamegraph.pl draws a frame "# duration:" of 23,873 samples.
#   ghcprof percent, ticks, ticks_bytes, ticks_ticks under --reverse (4):
#     their 294 zero-count lines make flamegraph.pl lose real frames (its
#     frames are keyed by name, depth and end time, and a zero-width frame
#     ends where they do); without the zero-count lines the two agree.

PH="$BATS_TEST_DIRNAME/../../build/profharness"
COMPARE="$BATS_TEST_DIRNAME/flame_compare.py"

setup() {
    if [ -z "${FLAMEGRAPH_DIR:-}" ] || [ -z "${INFERNO_DIR:-}" ] || [ ! -f "$FLAMEGRAPH_DIR/flamegraph.pl" ] ||
        [ ! -d "$INFERNO_DIR/tests/data" ]; then
        skip "set FLAMEGRAPH_DIR and INFERNO_DIR to copies of FlameGraph and inferno to compare with flamegraph.pl"
    fi
    inputs=$(ls "$FLAMEGRAPH_DIR"/test/results/*.txt "$INFERNO_DIR"/tests/data/*/results/*.txt \
        "$INFERNO_DIR"/tests/data/flamegraph/*/*.txt)
}

# compare OPTS ALLOWED...: every input agrees but the ALLOWED ones (path
# suffixes), which must differ.
compare() {
    local opts=$1 out differ want
    shift
    out=$(python3 "$COMPARE" -v --opts "$opts" "$FLAMEGRAPH_DIR/flamegraph.pl" "$PH" $inputs) || true
    echo "$out"
    differ=$(sed -n 's/^differ: \([^:]*\).*/\1/p' <<<"$out" | sed "s|^$INFERNO_DIR/tests/data/||; s|^$FLAMEGRAPH_DIR/||" | sort)
    want=$(printf '%s\n' "$@" | sort)
    [ "$differ" = "$want" ]
    [ "$(wc -l <<<"$inputs")" -eq 141 ]
}

CRLF=(collapse-ghcprof/results/utf8.txt collapse-ghcprof/results/utf8_bytes.txt collapse-ghcprof/results/utf8_ticks.txt
      collapse-vsprof/results/sample-default.txt collapse-vsprof/results/vsprof-default.txt)

@test "peers: frames as flamegraph.pl draws them (135 of 141 agree; 6 deliberate)" {
    compare "" "${CRLF[@]}" flamegraph/austin/flames.txt
}

@test "peers: --reverse (131 of 141 agree; 6 deliberate, 4 flamegraph.pl's)" {
    compare --reverse "${CRLF[@]}" flamegraph/austin/flames.txt collapse-ghcprof/results/percent.txt \
        collapse-ghcprof/results/ticks.txt collapse-ghcprof/results/ticks_bytes.txt collapse-ghcprof/results/ticks_ticks.txt
}

@test "peers: --inverted (135 of 141 agree)" {
    compare --inverted "${CRLF[@]}" flamegraph/austin/flames.txt
}
