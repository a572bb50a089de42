#!/usr/bin/env bash
# bench-flamegraph-render.sh: our renderer against flamegraph.pl on the
# benchmark input (tests/bench/gen_folded.py: 200,000 unique stacks over 3,000
# names, 75 MB), same pruning (--minwidth 0.1 px, both defaults), wall time
# (median of RUNS) and peak RSS (median, /usr/bin/time), as ratios; and the
# number of frames each draws (<g><title> elements), which must be equal.
#
# flamegraph.pl is not part of this project: point FLAMEGRAPH_PL at a copy
# (github.com/brendangregg/FlameGraph); without it that comparison is
# skipped and said so.  Needs /usr/bin/time (Debian package `time`).
# Exit status: 0, or 1 when the frame counts differ or a run fails.
# The goal: >= 40x faster and <= 1/10 of flamegraph.pl's memory.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
PH=${PROFHARNESS:-build/profharness}
gen=tests/bench/gen_folded.py
[ -f "$gen" ] || { echo "bench-flamegraph-render: $gen not found" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-flamegraph-render: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
[ -x "$PH" ] || { echo "bench-flamegraph-render: $PH not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-render.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 "$gen" --stacks 200000 --names 3000 --seed 42 > "$tmp/big.folded"
echo "bench-flamegraph-render: input $(du -m "$tmp/big.folded" | cut -f1) MB, $(wc -l < "$tmp/big.folded") lines, $RUNS runs each"

median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
# measure NAME CMD...: RUNS runs; prints "median-seconds median-peak-KB svg-KB".
measure() {
    local name=$1 t m; shift
    : > "$tmp/$name.t"; : > "$tmp/$name.m"
    for _ in $(seq 1 "$RUNS"); do
        if ! /usr/bin/time -f '%e %M' -o "$tmp/$name.time" "$@" > "$tmp/$name.svg" 2> "$tmp/$name.err"; then
            echo "bench-flamegraph-render: $name failed:" >&2; cat "$tmp/$name.err" >&2; return 1
        fi
        read -r t m < "$tmp/$name.time"
        echo "$t" >> "$tmp/$name.t"; echo "$m" >> "$tmp/$name.m"
    done
    echo "$(median < "$tmp/$name.t") $(median < "$tmp/$name.m") $(( $(stat -c %s "$tmp/$name.svg") / 1024 ))"
}
frames() { grep -o '<title>' "$1" | wc -l; }

measure ours "$PH" flamegraph --minwidth 0.1 "$tmp/big.folded" > "$tmp/ours.res"
read -r ot om osz < "$tmp/ours.res"
of=$(frames "$tmp/ours.svg")
printf '  %-14s %8.2f s %9d KB peak RSS %7d frames %7d KB SVG\n' profharness "$ot" "$om" "$of" "$osz"
if [ -n "${FLAMEGRAPH_PL:-}" ] && [ -f "$FLAMEGRAPH_PL" ]; then
    measure perl perl "$FLAMEGRAPH_PL" --minwidth 0.1 "$tmp/big.folded" > "$tmp/perl.res"
    read -r pt pm psz < "$tmp/perl.res"
    pf=$(frames "$tmp/perl.svg")
    printf '  %-14s %8.2f s %9d KB peak RSS %7d frames %7d KB SVG\n' flamegraph.pl "$pt" "$pm" "$pf" "$psz"
    awk -v ot="$ot" -v pt="$pt" -v om="$om" -v pm="$pm" 'BEGIN{
      printf "  speed: %.1fx faster (goal >= 40x)   memory: %.3f of flamegraph.pl (goal <= 0.100)\n", pt/ot, om/pm }'
    # Both draw the root ("all") as a frame; every frame has one <title>.
    if [ "$of" -eq "$pf" ]; then
        echo "  frames drawn: equal ($of)"
    else
        echo "  frames drawn: DIFFER (ours $of, flamegraph.pl $pf)"
        exit 1
    fi
else
    echo "  flamegraph.pl: skipped (set FLAMEGRAPH_PL to a copy of flamegraph.pl to compare)"
fi
