#!/usr/bin/env bash
# bench-stop-concurrent.sh: stopping N services at once against stopping
# one alone, under callgrind (the slowest mode to flush).  N copies of the
# demo's worker run in a generated compose project; each round starts all
# N under callgrind and times `stop` of all of them, then starts one and
# times its stop alone, and the same N again with PH_JOBS=1 (one after
# the other, as before stops ran concurrently).  Runs are interleaved;
# medians and ratios are printed.  The goal: N at once within 1.3x of one
# alone.  It prints; it asserts nothing.
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

{
    echo "name: $PROJECT"
    echo "services:"
    for i in $(seq 1 "$N"); do
        printf '  w%d:\n    image: profharness-demo:latest\n    command: ["demo-worker"]\n' "$i"
    done
} > "$OUT/compose.yaml"
ph() { build/profharness -f "$OUT/compose.yaml" -p $PROJECT -o "$OUT/runs" "$@"; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
all=$(seq -f 'w%g' 1 "$N" | tr '\n' ' ')

# The demo image and its profiling image (built by `just setup`).
build/profharness -f compose.yaml -p $PROJECT -o "$OUT/runs" setup worker >/dev/null 2>&1
ph setup >/dev/null 2>&1

# time_stop ARGS...: start them under callgrind, wait until the workers
# listen (valgrind is slow to start), then the stop's wall time in ms.
listening() {
    for s in "$@"; do
        docker exec "$PROJECT-$s-callgrind" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090' 2>/dev/null || return 1
    done
}
time_stop() {
    local jobs=$1 t0
    shift
    ph start --mode callgrind "$@" >/dev/null 2>&1
    for _ in $(seq 1 600); do listening "$@" && break; sleep 0.1; done
    t0=$(ms)
    PH_JOBS=$jobs ph stop "$@" >/dev/null 2>&1
    echo $(( $(ms) - t0 ))
}

: > "$OUT/all"; : > "$OUT/one"; : > "$OUT/seq"
for _ in $(seq 1 "$RUNS"); do
    # shellcheck disable=SC2086
    time_stop 8 $all >> "$OUT/all"
    time_stop 8 w1 >> "$OUT/one"
    # shellcheck disable=SC2086
    time_stop 1 $all >> "$OUT/seq"
done
a=$(median < "$OUT/all"); o=$(median < "$OUT/one"); s=$(median < "$OUT/seq")
printf 'bench-stop-concurrent: %d demo workers under callgrind, %d interleaved runs, medians\n' "$N" "$RUNS"
printf '  %-46s %7s ms\n' "stop one alone" "$o" "stop all $N at once (PH_JOBS=8)" "$a" \
    "stop all $N one after the other (PH_JOBS=1)" "$s"
awk -v a="$a" -v o="$o" -v s="$s" -v n="$N" 'BEGIN{
  printf "  ratio: %d at once / one alone %.2f (goal <= 1.30); one after the other / one alone %.2f\n", n, a/o, s/o }'
