#!/usr/bin/env bash
# run-bats.sh: run the bats files given, several at once, then print one
# line "bats: N passed, N failed".  Skipped tests count as failures (a test
# that could not run proved nothing), and so do planned tests that never
# ran, and a file that printed no plan.
#
#   tests/run-bats.sh [-j JOBS] [-f REGEX] FILE...
#
# -f REGEX runs only the tests whose names match (bats -f).
# JOBS (default $PH_TEST_JOBS, else 1) files run at once.  The files are
# independent: each gets a test project, a port range, a Swarm bed network
# and a private Engine name of its own (PH_TEST_PROJECT-NN, DEMO_PORT +
# 10*NN, SWARM_BED_NET 192.168.(100+NN)), so no two of them share a
# container, a port or a namespace.  With one job or one file, the caller's
# PH_TEST_PROJECT and DEMO_PORT are used as they are.  The longest files
# (tests/bats-durations, seconds measured on a 2-core machine) start first.
#
# Each file's TAP output is printed whole when it ends, under a line
# "== FILE (N s)", so parallel files never interleave; each test line
# carries its time (bats --timing).  Every run's durations are written to
# ${PH_TEST_DURATIONS_OUT:-/dev/null} in the format of tests/bats-durations.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jobs=${PH_TEST_JOBS:-1}
filter=()
while [ $# -gt 0 ]; do
    case $1 in
        -j) jobs=$2; shift 2 ;;
        -j*) jobs=${1#-j}; shift ;;
        -f) filter=(-f "$2"); shift 2 ;;
        --) shift; break ;;
        -*) echo "run-bats: unknown option '$1' (usage: tests/run-bats.sh [-j JOBS] [-f REGEX] FILE...)" >&2; exit 2 ;;
        *) break ;;
    esac
done
case $jobs in '' | *[!0-9]* | 0) echo "run-bats: JOBS must be a whole number above 0, not '$jobs'" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "run-bats: no bats file given" >&2; exit 2; }

logs=$(mktemp -d /tmp/profharness-bats.XXXXXX)
trap 'rm -rf "$logs"' EXIT

# Longest first: a file's seconds from tests/bats-durations, 60 when it is
# not listed (a new file is neither first nor last).
order() {
    local f d
    for f in "$@"; do
        d=$(awk -v f="$(basename "$f")" '$1 == f { print $2; exit }' "$here/bats-durations" 2>/dev/null)
        printf '%s %s\n' "${d:-60}" "$f"
    done | sort -s -k1,1nr | cut -d' ' -f2-
}

# one FILE SLOT: run FILE with slot SLOT's names into $logs/SLOT.*
one() {
    local f=$1 k=$2 t0=$SECONDS rc
    if [ "$parallel" = 1 ]; then
        local nn
        nn=$(printf '%02d' "$k")
        PH_TEST_PROJECT="${base_project}-$nn" DEMO_PORT=$((base_port + 10 * k)) \
            SWARM_BED_NET="192.168.$((100 + k))" \
            bats --tap --timing "${filter[@]}" "$f" >"$logs/$k.tap" 2>&1
    else
        bats --tap --timing "${filter[@]}" "$f" >"$logs/$k.tap" 2>&1
    fi
    rc=$?
    echo "$rc $((SECONDS - t0))" >"$logs/$k.done"
}

base_project=${PH_TEST_PROJECT:-phtest}
base_port=${DEMO_PORT:-18181}
parallel=0
[ "$jobs" -gt 1 ] && [ $# -gt 1 ] && parallel=1

mapfile -t files < <(order "$@")
n=${#files[@]}
p=0; s=0; f=0
next=0; running=0; printed=0
declare -A slot_of=()
durations=()

# report SLOT: print a finished file's output and count it
report() {
    local k=$1 file=${files[$1]} rc secs planned pk sk fk
    read -r rc secs <"$logs/$k.done"
    echo "== $file (${secs} s)"
    cat "$logs/$k.tap"
    pk=$(grep -cE '^ok [0-9]+' "$logs/$k.tap")
    sk=$(grep -cE '^ok [0-9]+ .*# skip' "$logs/$k.tap")
    fk=$(grep -cE '^not ok [0-9]+' "$logs/$k.tap")
    planned=$(sed -nE 's/^1\.\.([0-9]+)$/\1/p' "$logs/$k.tap" | head -1)
    if [ -z "$planned" ]; then
        fk=$((fk + 1)); echo "# run-bats: $file printed no plan (exit $rc)"
    elif [ $((pk + fk)) -lt "$planned" ]; then
        echo "# run-bats: $file ran $((pk + fk)) of its $planned tests (exit $rc)"
        fk=$((fk + planned - pk - fk))
    fi
    p=$((p + pk - sk)); s=$((s + sk)); f=$((f + fk))
    durations+=("$(basename "$file") $secs")
}

while [ "$printed" -lt "$n" ]; do
    while [ "$running" -lt "$jobs" ] && [ "$next" -lt "$n" ]; do
        one "${files[$next]}" "$next" &
        next=$((next + 1)); running=$((running + 1))
    done
    # wait for any file to end (wait -n), then report those done, in order of ending
    wait -n 2>/dev/null || true
    for ((k = 0; k < next; k++)); do
        if [ -e "$logs/$k.done" ] && [ -z "${slot_of[$k]:-}" ]; then
            slot_of[$k]=1
            report "$k"
            running=$((running - 1)); printed=$((printed + 1))
        fi
    done
done

printf '%s\n' "${durations[@]}" | sort >"${PH_TEST_DURATIONS_OUT:-/dev/null}"
echo "bats: $p passed, $((f + s)) failed"
[ $((f + s)) -eq 0 ]
