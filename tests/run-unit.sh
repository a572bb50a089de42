#!/usr/bin/env bash
# run-unit.sh: run each cmocka test binary given, then print one line
# "unit: N passed, N failed" from their summaries.  A binary that crashes or
# prints no summary counts as one failure.
#
#   tests/run-unit.sh [-j JOBS] BINARY...
#
# JOBS (default $PH_TEST_JOBS, else 1) binaries run at once, each one's
# output printed whole when it ends; the slowest (the sampler's, which run
# real workloads for seconds) start first.  The suites that use the Engine
# name what they make by their pid, so they may run side by side.  The
# JVM's suites (test_sampler_java, test_jattach) run last, one at a time,
# once the others have ended: a JVM's shares and its attach handshake are
# what a loaded machine moves most (at load 7 on 2 cores the interpreter's
# shares moved 6-8 points toward the hot method; an attach timed out).
set -u
jobs=${PH_TEST_JOBS:-1}
while [ $# -gt 0 ]; do
    case $1 in
        -j) jobs=$2; shift 2 ;;
        -j*) jobs=${1#-j}; shift ;;
        --) shift; break ;;
        -*) echo "run-unit: unknown option '$1' (usage: tests/run-unit.sh [-j JOBS] BINARY...)" >&2; exit 2 ;;
        *) break ;;
    esac
done
case $jobs in '' | *[!0-9]* | 0) echo "run-unit: JOBS must be a whole number above 0, not '$jobs'" >&2; exit 2 ;; esac

logs=$(mktemp -d /tmp/profharness-unit.XXXXXX)
trap 'rm -rf "$logs"' EXIT

# The sampler's suites first: they take most of the time; the JVM's last.
mapfile -t bins < <(printf '%s\n' "$@" |
                    awk '{ alone = $0 ~ /test_sampler_java|test_jattach/
                           print (alone ? 2 : index($0, "test_sampler") ? 0 : 1), NR, $0 }' |
                    sort -k1,1n -k2,2n | cut -d' ' -f3-)
alone_from=$(printf '%s\n' "${bins[@]}" | grep -nE 'test_sampler_java|test_jattach' | head -n 1 | cut -d: -f1)
alone_from=$(( ${alone_from:-$(( ${#bins[@]} + 1 ))} - 1 ))
n=${#bins[@]}
passed=0; failed=0; next=0; running=0; done_n=0
declare -A seen=()

one() {
    local t=$1 k=$2 rc
    "$t" >"$logs/$k.out" 2>&1
    rc=$?
    echo "$rc" >"$logs/$k.done"
}

count() {
    local k=$1 t=${bins[$1]} rc p f
    rc=$(cat "$logs/$k.done")
    cat "$logs/$k.out"
    p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$logs/$k.out" | awk '{s+=$1} END{print s+0}')
    f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$logs/$k.out" | awk '{s+=$1} END{print s+0}')
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; echo "unit: $t printed no summary (exit $rc)"; fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "unit: $t exited $rc"; fi
    passed=$((passed + p)); failed=$((failed + f))
}

while [ "$done_n" -lt "$n" ]; do
    while [ "$running" -lt "$jobs" ] && [ "$next" -lt "$n" ]; do
        # the JVM's suites alone: none started while another runs
        [ "$next" -ge "$alone_from" ] && [ "$running" -gt 0 ] && break
        one "${bins[$next]}" "$next" &
        next=$((next + 1)); running=$((running + 1))
    done
    wait -n 2>/dev/null || true
    for ((k = 0; k < next; k++)); do
        if [ -e "$logs/$k.done" ] && [ -z "${seen[$k]:-}" ]; then
            seen[$k]=1; count "$k"
            running=$((running - 1)); done_n=$((done_n + 1))
        fi
    done
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
