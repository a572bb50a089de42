#!/usr/bin/env bash
# bench-collapse.sh: `profharness collapse perf` against stackcollapse-perf.pl
# on at least 300 MB of real perf script output (gen-perf-script.sh records
# it here; PERF_SCRIPT=FILE reuses one), the two run in turn RUNS times:
# wall and CPU seconds and peak RSS (medians, /usr/bin/time), MB/s, the
# ratios; the two outputs must be the same bytes.
#
# stackcollapse-perf.pl is not part of this project: point FLAMEGRAPH_DIR
# at a copy of github.com/brendangregg/FlameGraph; without it only ours is
# measured, and that is said.  Needs /usr/bin/time (Debian package `time`).
# Exit status: 0, or 1 when the outputs differ or a run fails.
# The goal: >= 20x stackcollapse-perf.pl, peak RSS <= 64 MB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
MB=${MB:-310}
PH=${PROFHARNESS:-build/profharness}
[ -x /usr/bin/time ] || { echo "bench-collapse: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
[ -x "$PH" ] || { echo "bench-collapse: $PH not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-collapse.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
input=${PERF_SCRIPT:-$tmp/perf.txt}
[ -n "${PERF_SCRIPT:-}" ] || tests/bench/gen-perf-script.sh "$MB" "$input"
mb=$(awk -v b="$(stat -c %s "$input")" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "bench-collapse: input $mb MB, $(grep -c '^$' "$input") samples, $RUNS runs each, in turn"

median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
# run NAME CMD...: one run, its "wall cpu peak-KB" appended to $tmp/NAME.
run() {
    local name=$1; shift
    if ! /usr/bin/time -f '%e %U %S %M' -o "$tmp/$name.time" "$@" < "$input" > "$tmp/$name.out" 2> "$tmp/$name.err"; then
        echo "bench-collapse: $name failed:" >&2; cat "$tmp/$name.err" >&2; return 1
    fi
    awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }' "$tmp/$name.time" >> "$tmp/$name.res"
}
pl=${FLAMEGRAPH_DIR:+$FLAMEGRAPH_DIR/stackcollapse-perf.pl}
for _ in $(seq 1 "$RUNS"); do
    run ours "$PH" collapse perf
    if [ -n "$pl" ] && [ -f "$pl" ]; then run perl perl "$pl"; fi
done
report() {   # report NAME LABEL: prints its medians, sets m_wall m_cpu m_kb
    m_wall=$(cut -d' ' -f1 "$tmp/$1.res" | median); m_cpu=$(cut -d' ' -f2 "$tmp/$1.res" | median)
    m_kb=$(cut -d' ' -f3 "$tmp/$1.res" | median)
    awk -v l="$2" -v w="$m_wall" -v c="$m_cpu" -v k="$m_kb" -v mb="$mb" 'BEGIN {
        printf "  %-22s %7.2f s wall %7.2f s cpu %8.1f MB/s %7.1f MB peak RSS\n", l, w, c, mb / w, k / 1024 }'
}
report ours "profharness collapse"
ow=$m_wall oc=$m_cpu ok=$m_kb
if [ -n "$pl" ] && [ -f "$pl" ]; then
    report perl stackcollapse-perf.pl
    awk -v ow="$ow" -v oc="$oc" -v pw="$m_wall" -v pc="$m_cpu" -v ok="$ok" 'BEGIN {
        printf "  speed: %.1fx (wall), %.1fx (cpu) stackcollapse-perf.pl (goal >= 20x)   peak RSS %.1f MB (goal <= 64)\n",
            pw / ow, pc / oc, ok / 1024 }'
    if cmp -s "$tmp/ours.out" "$tmp/perl.out"; then
        echo "  output: the same bytes ($(wc -l < "$tmp/ours.out") stacks)"
    else
        echo "  output: DIFFERS from stackcollapse-perf.pl's"
        exit 1
    fi
else
    echo "  stackcollapse-perf.pl: skipped (set FLAMEGRAPH_DIR to a copy of FlameGraph to compare)"
fi
