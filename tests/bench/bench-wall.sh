#!/usr/bin/env bash
# bench-wall.sh: the wall mode's cost (issue 21: "with 50 idle threads
# beside it, the cost at 100 Hz <= 1 % of one CPU").  The workload
# (tests/bench/wall_idle.c) is the wall test service's shape on its main
# thread (a fixed ~25 ms of work, then 75 ms blocked in read) with IDLE
# threads blocked in pthread_cond_wait beside it, ROUNDS rounds.  Runs are
# interleaved (none, wall, none without the idle threads, wall without
# them, ...) so drift hits all alike; medians of RUNS of the process's CPU
# seconds over the rounds (every thread, the sampler's writer included;
# start-up and the final write left out) and of their wall seconds.  The
# cost is the CPU the sampler added per second of wall time, as a % of
# one CPU: (cpu(wall) - cpu(none)) / wall seconds; the samples the wall
# run's status counted say what it bought (threads x HZ x seconds).
# Prints; asserts nothing.  Needs build/libphsampler.so (make).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-5}
ROUNDS=${ROUNDS:-50}   # 5 s a run
IDLE=${IDLE:-50}
HZ=${HZ:-100}
[ -f build/libphsampler.so ] || { echo "bench-wall: build/libphsampler.so missing: run make" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-wall.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -pthread -o "$tmp/idle" tests/bench/wall_idle.c
cp build/libphsampler.so "$tmp/" # (a rebuild meanwhile changes nothing here)

median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# run NAME IDLE [wall]: one run; its CPU and wall seconds appended to
# $tmp/NAME.cpu and .wall, a wall run's samples to .samples
run() {
    local name=$1 idle=$2 dir=$tmp/dir-$1
    rm -rf "$dir"
    if [ "${3:-}" = wall ]; then
        env LD_PRELOAD="$tmp/libphsampler.so" PH_SAMPLER_DIR="$dir" PH_SAMPLER_CLOCK=wall PH_SAMPLER_HZ="$HZ" \
            PH_SAMPLER_INTERVAL=0 "$tmp/idle" "$ROUNDS" "$idle" > "$tmp/$name.out" 2>&1
    else
        "$tmp/idle" "$ROUNDS" "$idle" > "$tmp/$name.out" 2>&1
    fi || { echo "bench-wall: $name failed:"; cat "$tmp/$name.out"; exit 1; }
    sed -n 's/^wall_idle: cpu_s=\([0-9.]*\) .*/\1/p' "$tmp/$name.out" >> "$tmp/$name.cpu"
    sed -n 's/^wall_idle: .* wall_s=\([0-9.]*\) .*/\1/p' "$tmp/$name.out" >> "$tmp/$name.wall"
    if [ "${3:-}" = wall ]; then
        jq '.samples' "$dir"/sampler-status-*.json >> "$tmp/$name.samples"
    fi
}

echo "wall bench: $ROUNDS rounds of ~25 ms work + 75 ms in read, $IDLE idle threads or none, at $HZ Hz, $RUNS runs each, interleaved"
for ((i = 1; i <= RUNS; i++)); do
    run none "$IDLE"
    run wall "$IDLE" wall
    run none0 0
    run wall0 0 wall
done

printf '%-34s %10s %10s %10s %14s\n' "" "CPU s" "wall s" "samples" "cost, % CPU"
for pair in "none wall $IDLE" "none0 wall0 0"; do
    read -r base ours idle <<< "$pair"
    cb=$(median < "$tmp/$base.cpu")
    co=$(median < "$tmp/$ours.cpu")
    wo=$(median < "$tmp/$ours.wall")
    printf '%-34s %10.3f %10.3f %10s %14s\n' "no profiler, $idle idle threads" "$cb" "$(median < "$tmp/$base.wall")" "-" "-"
    printf '%-34s %10.3f %10.3f %10s %13.2f%%\n' "wall at $HZ Hz, $idle idle threads" "$co" "$wo" \
        "$(median < "$tmp/$ours.samples")" "$(echo "scale=4; 100 * ($co - $cb) / $wo" | bc)"
done
