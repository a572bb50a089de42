#!/usr/bin/env bats
# The flamegraph mode on a Python 3.11 service (Debian bookworm's python3,
# built here: tests/data/python), profiled as a user would, with no flag
# beyond the mode: the sampler reads CPython's own frames, so the folded
# stacks name the Python functions, with the workload's shares (75 / 25 by
# iteration counts), and the status says which Python it read.

load test_helper

PYC="$REPO/tests/data/python/compose.yaml"

php() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$PYC" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

# rounds_done N: the workload printed its Nth round (CPU time, not wall).
rounds_done() {
    dk logs "${PH_TEST_PROJECT}-py-flamegraph" 2>&1 | grep -q "hot_cool: $1 rounds"
}

setup_file() {
    common_setup_file
    php setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

@test "flamegraph: a Python 3.11 service is shown by its Python functions, 75 / 25" {
    run php start --mode flamegraph py
    [ "$status" -eq 0 ]
    # ~5 CPU-seconds of the workload: ~750 samples at the mode's 150 Hz
    WAIT_SECONDS=180 wait_for rounds_done 1500
    run php stop py
    [ "$status" -eq 0 ]
    folded="$OUT/py/stacks.folded"
    [ -s "$folded" ]
    hot=$(share ";main (hot_cool.py:33)_[p];hot_seventy_five (hot_cool.py:21)_[p];spin (hot_cool.py:" "$folded")
    # (called through map: C frames between main and cool_twenty_five)
    cool=$(share ";cool_twenty_five (hot_cool.py:25)_[p];spin (hot_cool.py:" "$folded")
    eval=$(share "_PyEval_EvalFrameDefault" "$folded")
    echo "# hot_seventy_five $hot, cool_twenty_five $cool, eval loop left $eval (per mille)" >&3
    [ "$hot" -ge 700 ]
    [ "$hot" -le 800 ]
    [ "$cool" -ge 200 ]
    [ "$cool" -le 300 ]
    [ "$eval" -lt 50 ]
    # the status and the graph say which Python was read
    jq -s -e 'map(select(.program | test("python"))) | length > 0 and
              all(.python | startswith("Python 3.11.") and endswith(": frames read"))' \
        "$OUT"/py/latest/sampler-status-*.json
    grep -q 'Python 3.11.[0-9]*: frames read' "$OUT/py/flamegraph.svg"
    # pprof: the Python functions with their file
    gunzip -c "$OUT/py/profile.pb.gz" | protoc --decode_raw > "$BATS_TEST_TMPDIR/pprof.txt"
    grep -q '"hot_seventy_five"' "$BATS_TEST_TMPDIR/pprof.txt"
    grep -q '"/app/hot_cool.py"' "$BATS_TEST_TMPDIR/pprof.txt"
}
