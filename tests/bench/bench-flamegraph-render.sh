#!/usr/bin/env bash
# bench-flamegraph-render.sh: our renderer against flamegraph.pl on the
# shared benchmark input (200,000 stacks, 3,000 names, 75 MB), same pruning
# (minwidth 0.1 px), wall time (median of RUNS) and peak RSS, as ratios,
# and the number of frames each draws.  flamegraph.pl is not part of this
# project: point FLAMEGRAPH_PL at a copy; without it that comparison is
# skipped and said so.  Prints; asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
gen=../shared/bench/gen_folded.py
[ -f "$gen" ] || { echo "bench-flamegraph-render: $gen not found"; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-render.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 "$gen" --stacks 200000 --names 3000 --seed 42 > "$tmp/big.folded"
echo "bench-flamegraph-render: input $(du -m "$tmp/big.folded" | cut -f1) MB, $(wc -l < "$tmp/big.folded") lines"

median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
# measure NAME CMD...: RUNS runs, median seconds and median peak KB.
measure() {
    local name=$1; shift
    : > "$tmp/$name.t"; : > "$tmp/$name.m"
    for _ in $(seq 1 "$RUNS"); do
        /usr/bin/time -f '%e %M' -o "$tmp/$name.time" "$@" > "$tmp/$name.svg" 2>/dev/null
        read -r t m < "$tmp/$name.time"
        echo "$t" >> "$tmp/$name.t"; echo "$m" >> "$tmp/$name.m"
    done
    echo "$(median < "$tmp/$name.t") $(median < "$tmp/$name.m") $(grep -c '<title>' "$tmp/$name.svg")"
}
read -r ot om of < <(measure ours build/profharness flamegraph --minwidth 0.1 "$tmp/big.folded")
printf '  %-14s %8.2f s %9d KB %7d frames\n' profharness "$ot" "$om" "$of"
if [ -n "${FLAMEGRAPH_PL:-}" ] && [ -x "$FLAMEGRAPH_PL" ]; then
    read -r pt pm pf < <(measure perl perl "$FLAMEGRAPH_PL" --minwidth 0.1 "$tmp/big.folded")
    printf '  %-14s %8.2f s %9d KB %7d frames\n' flamegraph.pl "$pt" "$pm" "$pf"
    awk -v ot="$ot" -v pt="$pt" -v om="$om" -v pm="$pm" 'BEGIN{
      printf "  speed: %.1fx faster   memory: %.3f of flamegraph.pl\n", pt/ot, om/pm }'
    # flamegraph.pl counts the root as a frame too; titles include "all".
    [ "$of" -eq "$pf" ] && echo "  frames drawn: equal ($of)" || echo "  frames drawn: DIFFER (ours $of, flamegraph.pl $pf)"
else
    echo "  flamegraph.pl: skipped (set FLAMEGRAPH_PL to a copy of flamegraph.pl to compare)"
fi
