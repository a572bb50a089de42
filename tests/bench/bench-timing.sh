#!/usr/bin/env bash
# bench-timing.sh: what the timing layer costs.  The library's figures come
# from tests/bench/timing_cost.c (a stage on and off, the writers per stage,
# an Engine call with and without recording); then whole commands, timed
# from outside: `status` with the timing on (the default) and with
# PH_TIMINGS=off, interleaved, medians in ms.
# It prints; it asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-21}
tmp=$(mktemp -d /tmp/profharness-bench-timing.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cc -D_GNU_SOURCE -O2 $(for d in util timing flame tar engine; do printf -- '-Iharness/%s ' $d; done) \
    $(pkg-config --cflags jansson libcurl) -o "$tmp/timing_cost" tests/bench/timing_cost.c build/libprofharness.a \
    $(pkg-config --libs libcurl yaml-0.1 libarchive jansson zlib) -lpthread -lm
"$tmp/timing_cost" 100000 15

printf 'name: phbenchtiming\nservices:\n  one:\n    image: debian:bookworm-slim\n' > "$tmp/compose.yaml"
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
wall() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000 )); }
for i in $(seq "$RUNS"); do
    wall build/profharness -f "$tmp/compose.yaml" -o "$tmp/out" status >> "$tmp/on"
    PH_TIMINGS=off wall build/profharness -f "$tmp/compose.yaml" -o "$tmp/out" status >> "$tmp/off"
done
echo "profharness status, timing on:  $(median < "$tmp/on") us (median of $RUNS)"
echo "profharness status, timing off: $(median < "$tmp/off") us"

# Instructions, which do not drift with the machine's load: the same
# command under callgrind with the timing on and off.
if command -v valgrind >/dev/null 2>&1; then
    for cmd in status "stop one"; do
        for mode in on off; do
            setting=; [ "$mode" = on ] || setting=off
            PH_TIMINGS=$setting valgrind --tool=callgrind \
                --callgrind-out-file="$tmp/cg.$mode" build/profharness -f "$tmp/compose.yaml" -o "$tmp/out" $cmd \
                >/dev/null 2>"$tmp/cg.$mode.log" || true
        done
        on=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.on.log")
        off=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.off.log")
        echo "profharness $cmd, instructions: timing on $on, off $off ($(awk -v a="$on" -v b="$off" 'BEGIN { printf "%+.3f%%", 100 * (a - b) / b }'))"
    done
fi
