#!/usr/bin/env bash
# bench-stop-concurrent.sh: stopping N services at once against stopping
# one alone.  N copies of the demo's worker run in a generated compose
# project; each round starts all N under a mode and times `stop` of all of
# them, starts one and times its stop alone, and stops all N again with
# PH_JOBS=1 (one after the other, as stops ran before they ran
# concurrently).  Rounds are interleaved; medians and ratios are printed,
# for callgrind (the slowest mode to flush) and for stops that are only
# waiting.  The goal: N at once within 1.3x of one alone.  It prints; it
# asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
N=${N:-8}
PROJECT=phbench-stop
OUT=$(mktemp -d /tmp/profharness-bench-stop.XXXXXX)
cleanup() {
    ids=$(docker ps -aq --filter label=io.profharness.project=$PROJECT)
    [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

# Two kinds of stop.  callgrind: each flush is valgrind's dump and exit,
# CPU work, so on a machine with fewer cores than services the flushes
# queue for the CPU whatever the harness does.  wait: services that ignore
# SIGTERM under strace, with a 3 s grace before the shim escalates: each
# stop is waiting, which is what overlapping stops can hide.
{
    echo "name: $PROJECT"
    echo "services:"
    for i in $(seq 1 "$N"); do
        printf '  w%d:\n    image: profharness-demo:latest\n    command: ["demo-worker"]\n' "$i"
        printf '    environment:\n      DEMO_IGNORE_SIGTERM: "${DEMO_IGNORE_SIGTERM:-0}"\n'
    done
} > "$OUT/compose.yaml"
mkdir -p "$OUT/profiles"
for f in profiles/*.yaml; do
    sed -E 's/^(\s*)grace: .*/\1grace: 3s/' "$f" > "$OUT/profiles/$(basename "$f")"
done
ph() { build/profharness -f "$OUT/compose.yaml" -p $PROJECT --profiles "$OUT/profiles" -o "$OUT/runs" "$@"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
all=$(seq -f 'w%g' 1 "$N" | tr '\n' ' ')

# The demo image (built by the demo's compose file), then the profiling image.
build/profharness -f compose.yaml -p $PROJECT -o "$OUT/runs" setup worker >/dev/null 2>&1
ph setup w1 >/dev/null 2>&1

# The workers listen once the profiler has started them (valgrind is slow to).
listening() {
    local mode=$1
    shift
    for s in "$@"; do
        docker exec "$PROJECT-$s-$mode" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090' 2>/dev/null || return 1
    done
}
# time_stop MODE JOBS SERVICE...: start them under MODE, wait until they
# listen, then the stop's wall time in ms with PH_JOBS=JOBS.
time_stop() {
    local mode=$1 jobs=$2 t0
    shift 2
    ph start --mode "$mode" "$@" >/dev/null 2>&1
    for _ in $(seq 1 600); do listening "$mode" "$@" && break; sleep 0.1; done
    t0=$(ms)
    PH_JOBS=$jobs ph stop "$@" >/dev/null 2>&1
    echo $(( $(ms) - t0 ))
}

# bench KIND MODE: RUNS interleaved rounds, then the medians and ratios.
bench() {
    local kind=$1 mode=$2 a o s
    : > "$OUT/all"; : > "$OUT/one"; : > "$OUT/seq"
    for _ in $(seq 1 "$RUNS"); do
        # shellcheck disable=SC2086
        time_stop "$mode" 8 $all >> "$OUT/all"
        time_stop "$mode" 8 w1 >> "$OUT/one"
        # shellcheck disable=SC2086
        time_stop "$mode" 1 $all >> "$OUT/seq"
    done
    a=$(median < "$OUT/all"); o=$(median < "$OUT/one"); s=$(median < "$OUT/seq")
    printf 'bench-stop-concurrent: %d demo workers, %s, %d interleaved runs, medians (%d CPUs)\n' "$N" "$kind" \
        "$RUNS" "$(nproc)"
    printf '  %-46s %7s ms\n' "stop one alone" "$o" "stop all $N at once (PH_JOBS=8)" "$a" \
        "stop all $N one after the other (PH_JOBS=1)" "$s"
    awk -v a="$a" -v o="$o" -v s="$s" -v n="$N" 'BEGIN{
      printf "  ratio: %d at once / one alone %.2f (goal <= 1.30); one after the other / one alone %.2f\n", n, a/o, s/o }'
}

bench "callgrind (flushes are CPU work)" callgrind
DEMO_IGNORE_SIGTERM=1 bench "strace, SIGTERM ignored, 3 s grace (stops are waiting)" strace
