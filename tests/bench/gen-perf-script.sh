#!/usr/bin/env bash
# gen-perf-script.sh MB OUT: real `perf script` output of at least MB
# megabytes in OUT, for the collapse benchmark.
#
# A workload is recorded on this machine with `perf record -e cpu-clock`
# (a software event: no hardware counters needed) and DWARF call graphs
# (`-g` would stop at the first function without a frame pointer, which
# is nearly all of Debian's): python3 generating a folded profile (deep
# interpreter stacks, perf's own `(inlined)` frames) and profharness
# rendering it, kernel frames included where perf may see them.  Its
# `perf script` text is then repeated, each copy with its own pids, until
# OUT holds MB megabytes: the stacks of a real profile, the volume of a
# long one.  Needs perf (Debian: linux-perf) and python3.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mb=${1:?usage: gen-perf-script.sh MB OUT}
out=${2:?usage: gen-perf-script.sh MB OUT}
PH=${PROFHARNESS:-build/profharness}
gen=tests/bench/gen_folded.py
command -v perf >/dev/null || { echo "gen-perf-script: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
[ -f "$gen" ] || { echo "gen-perf-script: $gen not found" >&2; exit 1; }
[ -x "$PH" ] || { echo "gen-perf-script: $PH not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-gen-perf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
perf record -q -e cpu-clock -F 2000 --call-graph dwarf,16384 -o "$tmp/perf.data" -- \
    sh -c "python3 '$gen' --stacks 80000 --names 3000 --seed 7 > '$tmp/w.folded' && '$PH' flamegraph '$tmp/w.folded' > /dev/null" \
    2> "$tmp/record.err" || { cat "$tmp/record.err" >&2; exit 1; }
perf script -i "$tmp/perf.data" > "$tmp/one.txt" 2> /dev/null
one=$(stat -c %s "$tmp/one.txt")
[ "$one" -gt 100000 ] || { echo "gen-perf-script: perf script gave only $one bytes" >&2; exit 1; }
: > "$out"
i=0
while [ "$(stat -c %s "$out")" -lt $((mb * 1000000)) ]; do
    # each copy another process: pids shifted, so --pid sees more stacks
    awk -v d=$((i * 100000)) '/^[^ \t#]/ && match($0, / [0-9]+(\/[0-9]+)? /) {
        n = split(substr($0, RSTART + 1, RLENGTH - 2), a, "/")
        $0 = substr($0, 1, RSTART) (a[1] + d) (n > 1 ? "/" (a[2] + d) : "") substr($0, RSTART + RLENGTH - 1) } { print }' \
        "$tmp/one.txt" >> "$out"
    i=$((i + 1))
done
echo "gen-perf-script: $(( $(stat -c %s "$out") / 1000000 )) MB in $out ($i copies of $((one / 1000)) kB of perf script)" >&2
