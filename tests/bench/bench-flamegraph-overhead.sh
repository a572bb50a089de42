#!/usr/bin/env bash
# bench-flamegraph-overhead.sh: the cost of sampling a CPU-bound loop 30
# frames deep: our sampler vs gperftools' libprofiler vs nothing, at 100,
# 150 and 1000 Hz.  Runs are interleaved (none, ours, gperftools, ...) so
# drift hits all alike; medians of RUNS; overhead as a ratio to none; and
# the rate each delivered (samples per CPU-second), since the kernel tick
# caps SIGPROF rates.  Prints; asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-7}
ROUNDS=${ROUNDS:-4000}   # ~2.5 s a run: long enough that start-up and the final write are not the story
LIBPROFILER=${LIBPROFILER:-/usr/lib/x86_64-linux-gnu/libprofiler.so.0}
tmp=$(mktemp -d /tmp/ph-bench-overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -fno-omit-frame-pointer -o "$tmp/loop" tests/bench/overhead_loop.c
[ -f "$LIBPROFILER" ] || { echo "bench-flamegraph-overhead: $LIBPROFILER missing (Debian: libgoogle-perftools4); comparing with none only"; LIBPROFILER=""; }

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
run_none() { "$tmp/loop" "$ROUNDS" >/dev/null; }
run_ours() {
    rm -rf "$tmp/ours"; mkdir -p "$tmp/ours"
    PH_SAMPLER_DIR="$tmp/ours" PH_SAMPLER_HZ=$1 PH_SAMPLER_INTERVAL=0 LD_PRELOAD=build/libphsampler.so "$tmp/loop" "$ROUNDS" >/dev/null
}
run_gperf() {
    CPUPROFILE="$tmp/gperf.prof" CPUPROFILE_FREQUENCY=$1 LD_PRELOAD=$LIBPROFILER "$tmp/loop" "$ROUNDS" >/dev/null 2>&1
}
timed() { local t0 t1; t0=$(now); "$@"; t1=$(now); echo $(( (t1 - t0) / 1000000 )); }

printf 'bench-flamegraph-overhead: loop 30 frames deep, %s rounds, %d interleaved runs, medians\n' "$ROUNDS" "$RUNS"
for hz in 100 150 1000; do
    : > "$tmp/none"; : > "$tmp/ours.t"; : > "$tmp/gperf"
    for _ in $(seq 1 "$RUNS"); do
        timed run_none >> "$tmp/none"
        timed run_ours "$hz" >> "$tmp/ours.t"
        [ -z "$LIBPROFILER" ] || timed run_gperf "$hz" >> "$tmp/gperf"
    done
    n=$(median < "$tmp/none"); o=$(median < "$tmp/ours.t")
    samples=$(awk '{s+=$NF} END{print s+0}' "$tmp"/ours/stacks-*.folded)
    delivered=$(awk -v s="$samples" -v ms="$o" 'BEGIN{printf "%.0f", s/(ms/1000)}')
    line=$(awk -v n="$n" -v o="$o" 'BEGIN{printf "ours %+.2f%% (%d ms)", 100*(o-n)/n, o}')
    if [ -n "$LIBPROFILER" ]; then
        g=$(median < "$tmp/gperf")
        line="$line, gperftools $(awk -v n="$n" -v g="$g" -v o="$o" 'BEGIN{printf "%+.2f%% (%d ms); ours/gperftools %.3f", 100*(g-n)/n, g, o/g}')"
    fi
    printf '  %4d Hz: none %d ms; %s; ours delivered %s Hz of %d requested\n' "$hz" "$n" "$line" "$delivered" "$hz"
done
