#!/usr/bin/env bats
# `profharness collapse perf`: the command as a user runs it, and real
# recordings made here with perf (a Node.js program's JIT frames named
# through --perf-basic-prof's map file).  No Engine needed.  The whole of
# FlameGraph's regression suite against stackcollapse-perf.pl itself is in
# tests/peers/43-collapse-peers.bats (`just test-peers`).

PH="$BATS_TEST_DIRNAME/../build/profharness"

@test "collapse: usage errors are exit 2 and say what is wrong" {
    run "$PH" collapse
    [ "$status" -eq 2 ]
    [[ "$output" == *"no format: the format collapsed is \`perf\`"* ]]
    run "$PH" collapse dtrace x.txt
    [ "$status" -eq 2 ]
    [[ "$output" == *"\`dtrace\`: the format collapsed is \`perf\`"* ]]
    run "$PH" collapse perf --bogus
    [ "$status" -eq 2 ]
    run "$PH" collapse perf "$BATS_TEST_TMPDIR/missing.txt"
    [ "$status" -eq 2 ]
    [[ "$output" == *"open \`$BATS_TEST_TMPDIR/missing.txt\`"* ]]
    run "$PH" collapse --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--event-filter EV"* ]]
}

@test "collapse: stdin or files; skipped events and foreign lines are reported" {
    printf 'app 7 1.0: 3 cycles:\n\tffff do_sys ([kernel.kallsyms])\n\t7f00 main+0x1 (/bin/app)\n\n' > "$BATS_TEST_TMPDIR/a.txt"
    printf 'app 7 1.0: 5 instructions:\n\t7f00 main (/bin/app)\n\nnot perf\n' > "$BATS_TEST_TMPDIR/b.txt"
    run "$PH" collapse perf --kernel "$BATS_TEST_TMPDIR/a.txt" "$BATS_TEST_TMPDIR/b.txt"
    [ "$status" -eq 0 ]
    [[ "$output" == *"app;main;do_sys_[k] 3"* ]]
    [[ "$output" == *"kept the samples of event \`cycles\` only; 1 of \`instructions\`"* ]]
    [[ "$output" == *"1 of 8 lines are not perf script output and were skipped (line 8)"* ]]
    run sh -c "'$PH' collapse perf --event-filter instructions < '$BATS_TEST_TMPDIR/b.txt' 2>/dev/null"
    [ "$output" = "app;main 5" ]
}

# A Node.js program under perf, with V8 writing its JIT symbols to
# /tmp/perf-PID.map (--perf-basic-prof).
record_node() {
    cat > "$BATS_TEST_TMPDIR/work.js" <<'JS'
function phFib(n) { return n < 2 ? n : phFib(n - 1) + phFib(n - 2); }
const end = Date.now() + 1200;
let total = 0;
while (Date.now() < end) total += phFib(20);
console.log(total > 0 ? 'ok' : 'none');
JS
    # (in the temp dir: V8 leaves an isolate-*-v8.log where it runs)
    (cd "$BATS_TEST_TMPDIR" && timeout 120 perf record -q -e cpu-clock -F 499 -g -o node.data -- \
        node --perf-basic-prof work.js > node.out)
    [ "$(cat "$BATS_TEST_TMPDIR/node.out")" = ok ]
    map=$(perf script -i "$BATS_TEST_TMPDIR/node.data" -F ip,sym,dso 2>/dev/null | grep -o '/tmp/perf-[0-9]*\.map' | head -1)
    [ -n "$map" ] && [ -f "$map" ]
}

@test "collapse: a Node.js program's JIT frames, named and annotated _[j]" {
    command -v node >/dev/null
    command -v perf >/dev/null
    record_node
    perf script -i "$BATS_TEST_TMPDIR/node.data" > "$BATS_TEST_TMPDIR/node.txt" 2>/dev/null
    "$PH" collapse perf --jit "$BATS_TEST_TMPDIR/node.txt" > "$BATS_TEST_TMPDIR/node.folded"
    grep -q 'phFib [^;]*work.js[^;]*_\[j\]' "$BATS_TEST_TMPDIR/node.folded"
    # where perf script ran without the map file (another machine, a
    # container), the frames are [unknown]: --map-dir names them as perf would
    mkdir "$BATS_TEST_TMPDIR/maps"
    mv "$map" "$BATS_TEST_TMPDIR/maps/"
    perf script -i "$BATS_TEST_TMPDIR/node.data" > "$BATS_TEST_TMPDIR/node2.txt" 2>/dev/null
    grep -q "\[unknown\] ($map)" "$BATS_TEST_TMPDIR/node2.txt"
    "$PH" collapse perf --jit "$BATS_TEST_TMPDIR/node2.txt" > "$BATS_TEST_TMPDIR/nomap.folded"
    ! grep -q phFib "$BATS_TEST_TMPDIR/nomap.folded" || false
    "$PH" collapse perf --jit --map-dir "$BATS_TEST_TMPDIR/maps" "$BATS_TEST_TMPDIR/node2.txt" > "$BATS_TEST_TMPDIR/mapped.folded"
    cmp "$BATS_TEST_TMPDIR/node.folded" "$BATS_TEST_TMPDIR/mapped.folded"
    # and the renderer shows them without the annotation, coloured as JIT
    "$PH" flamegraph --colors js "$BATS_TEST_TMPDIR/mapped.folded" > "$BATS_TEST_TMPDIR/node.svg"
    grep -q '<title>JS:[^<]*phFib [^<]*work.js[^<(]* (' "$BATS_TEST_TMPDIR/node.svg"
    ! grep -q '_\[j\]' "$BATS_TEST_TMPDIR/node.svg" || false
}

teardown() {
    [ -z "${map:-}" ] || rm -f "$map"
}
