#!/usr/bin/env bash
# soak.sh: run one test command N times in a row next to a CPU hog and say
# which runs failed, keeping each failed run's whole output.  A flaky test
# shows itself here rather than in somebody's CI.
#
#   tests/soak.sh [-n RUNS] [--hogs K] [--keep DIR] -- COMMAND [ARG...]
#
# RUNS defaults to 20; K busy loops (default: one per CPU) run at normal
# priority for the whole soak, so the tests get about half the machine.
# Every run's output goes to DIR/run-I.log (default: a new dir under /tmp);
# the logs of passing runs are removed unless PH_SOAK_KEEP_ALL=1.  One line
# per run on stdout, then "soak: P of N runs passed", exit 0 only if all did.
set -uo pipefail
runs=20
hogs=$(nproc 2>/dev/null || echo 2)
keep=
while [ $# -gt 0 ]; do
    case $1 in
        -n) runs=$2; shift 2 ;;
        --hogs) hogs=$2; shift 2 ;;
        --keep) keep=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "soak: unknown option '$1' (usage: tests/soak.sh [-n RUNS] [--hogs K] [--keep DIR] -- COMMAND...)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "soak: no command given (usage: tests/soak.sh [-n RUNS] [--hogs K] [--keep DIR] -- COMMAND...)" >&2; exit 2; }
case $runs$hogs in *[!0-9]*) echo "soak: RUNS and K must be whole numbers" >&2; exit 2 ;; esac
[ -n "$keep" ] || keep=$(mktemp -d /tmp/profharness-soak.XXXXXX)
mkdir -p "$keep" || exit 1

pids=()
cmd_pid=
# On exit, the hogs go, and so does a run still going (its whole process
# group: a test suite leaves no bats or harness behind).
stop_all() {
    [ -z "$cmd_pid" ] || kill -TERM -- "-$cmd_pid" 2>/dev/null
    [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null
    wait 2>/dev/null
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 1 "$hogs"); do
    ( trap - INT TERM; while :; do :; done ) &
    pids+=($!)
done

passed=0
cmd="$*"; [ ${#cmd} -le 80 ] || cmd="${cmd:0:77}..."
echo "soak: $runs runs of '$cmd' next to $hogs busy loop(s); logs in $keep"
for i in $(seq 1 "$runs"); do
    t0=$(date +%s)
    setsid "$@" >"$keep/run-$i.log" 2>&1 &
    cmd_pid=$!
    wait "$cmd_pid"
    rc=$?
    cmd_pid=
    secs=$(( $(date +%s) - t0 ))
    load=$(cut -d' ' -f1 /proc/loadavg)
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        echo "run $i: ok in ${secs} s (load $load)"
        [ "${PH_SOAK_KEEP_ALL:-0}" = 1 ] || rm -f "$keep/run-$i.log"
    else
        echo "run $i: FAILED (exit $rc) in ${secs} s (load $load); log: $keep/run-$i.log"
        grep -E '^(not ok|\[  FAILED  \]|\[  ERROR   \])' "$keep/run-$i.log" | head -20 | sed 's/^/    /'
    fi
done
echo "soak: $passed of $runs runs passed"
[ "$passed" -eq "$runs" ]
