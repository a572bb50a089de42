#!/usr/bin/env bats
# The fault matrix: for every mode in profiles/*.yaml (a mode added later
# is covered without editing this file) and every way a service can end,
# `stop` either collects complete artifacts (exit 0) or says what is
# missing and why, and ph-exit.json says what happened.  Rows:
#
#   handles SIGTERM          the plain case
#   ignores SIGTERM          the shim escalates (DEMO_IGNORE_SIGTERM)
#   crashes with SIGSEGV     mid-run, before any stop (DEMO_CRASH_SIGNAL)
#   exits by itself          exit(3) before any stop (DEMO_EXIT_AFTER)
#   OOM-killed               a memory limit and a hog (DEMO_HOG_MB)
#   outlives by a child      a forked child ignores SIGTERM (DEMO_ORPHAN)
#
# The front service is profiled, its worker runs unprofiled without knobs.
# Each row prints one line per mode; docs/testing.md has the table.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
    export PH_PROFILES=$(short_grace_profiles)
    # the dependency, started once without any knob
    ph restore worker >&3 2>&1
}
teardown_file() { common_teardown_file; }

CTR_PREFIX="$PH_TEST_PROJECT-front-"

# PH_MATRIX_MODES="wall perf" narrows the columns (to chase one cell).
modes() {
    if [ -n "${PH_MATRIX_MODES:-}" ]; then echo "$PH_MATRIX_MODES"; return; fi
    for f in "$REPO"/profiles/*.yaml; do basename "$f" .yaml; done
}

# The artifact globs and kinds of MODE, from its profile.
# The profiler's own: a `report-*` glob is what the report draws from the
# stacks (report-flamegraph.svg), there only when the profiler wrote some.
artifact_specs() {
    # an `optional: true` artifact (node's .heapprofile: only a node writes
    # one) is not expected of the demo
    grep -v 'optional: *true' "$REPO/profiles/$1.yaml" |
        sed -nE 's/.*\{ *glob: *"([^"]+)".*kind: *([a-z0-9_-]+).*/\1 \2/p' | grep -v '^report-'
}

# artifact_ok KIND FILE: FILE is a whole artifact of its kind.
artifact_ok() {
    case $1 in
    strace) tail -n 1 "$2" | grep -qE '\+\+\+ (exited with [0-9]+|killed by SIG[A-Z0-9]+( \(core dumped\))?) \+\+\+$' ;;
    massif) grep -q '^snapshot=' "$2" && ms_print "$2" >/dev/null ;;
    callgrind) grep -q '^totals:' "$2" && callgrind_annotate "$2" >/dev/null ;;
    flamegraph) tail -c 200 "$2" | grep -q '</svg>' ;;
    pprof) gzip -t "$2" ;;
    # a heap view: folded lines, or none (nothing in use at the end is an answer)
    heap) awk 'NF && $NF !~ /^[0-9]+$/ { bad = 1 } END { exit bad }' "$2" ;;
    *) [ -s "$2" ] ;;
    esac
}

# check_artifacts MODE RUN_DIR: prints the globs missing or broken, one a
# line; nothing when every artifact is whole.
check_artifacts() {
    local glob kind f
    while read -r glob kind; do
        f=$(cd "$2" && ls -t $glob 2>/dev/null | head -n 1)
        if [ -z "$f" ]; then
            echo "missing $glob"
        elif ! artifact_ok "$kind" "$2/$f"; then
            echo "broken $glob"
        fi
    done < <(artifact_specs "$1")
}

state_of() { docker inspect -f '{{.State.Status}}' "$1" 2>/dev/null; }

# run_cell MODE TRIGGER [KNOB=VALUE...]: start front under MODE with the
# knobs, run TRIGGER (a function), stop, and leave in globals: STOP_STATUS,
# STOP_OUTPUT, RUN_DIR, REC (the record's path).
run_cell() {
    local mode=$1 trigger=$2; shift 2
    CTR="$CTR_PREFIX$mode"
    MISSING= OOM_KILLED=
    run env "$@" timeout 900 "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$PH_PROFILES" \
        -o "$OUT" start --mode "$mode" front
    [ "$status" -eq 0 ] || { echo "$mode: start failed: $output"; return 1; }
    "$trigger"
    local before
    before=$(readlink "$OUT/front/latest" || true)
    run ph stop front
    STOP_STATUS=$status
    STOP_OUTPUT=$output
    RUN_DIR="$OUT/front/$(readlink "$OUT/front/latest")"
    REC="$RUN_DIR/ph-exit.json"
    if [ "$(readlink "$OUT/front/latest")" = "$before" ]; then RUN_DIR=; fi
}

# Wait until the profiled container has ended by itself.
wait_exited() {
    WAIT_SECONDS=300 wait_for bash -c "[ \"\$(docker inspect -f '{{.State.Status}}' $CTR)\" = exited ]"
}

# Load for two seconds once the service answers: long enough for every
# profiler to have something to write (the sampler's first SVG needs
# samples), short of any interval.
trigger_load() { timeout 300 "$REPO/build/demo-load" -w 120 -d 2 -c 2 "127.0.0.1:$DEMO_PORT" >/dev/null; }
# Requests until the knob ends the service (after 50), then wait for it.
trigger_crash() {
    timeout 600 "$REPO/build/demo-load" -w 120 -n 100 -c 1 "127.0.0.1:$DEMO_PORT" >/dev/null 2>&1 || true
    wait_exited
}
# The memory the front container's cgroup is charged, in MiB, read inside
# it: cgroup v2's memory.current, else v1's memory.usage_in_bytes.
ctr_mem_mib() {
    local b
    b=$(dk exec "$CTR" cat /sys/fs/cgroup/memory.current 2>/dev/null ||
        dk exec "$CTR" cat /sys/fs/cgroup/memory/memory.usage_in_bytes 2>/dev/null) &&
        [[ "$b" =~ ^[0-9]+$ ]] || { echo "# $mode: cannot read $CTR's memory use from its cgroup" >&3; return 1; }
    echo $((b >> 20))
}
# The front answers: demo-load's wait request, then one more.  A request
# that fails once the service answered is retried once, and said (seen
# once in a CI run, wall mode, not reproduced in 300 tries here): the
# row is about the OOM kill, not about one request.
front_answers() {
    local try out
    for try in 1 2; do
        out=$(timeout 900 "$REPO/build/demo-load" -w 600 -n 1 -c 1 "127.0.0.1:$DEMO_PORT" 2>&1) && return 0
        echo "# $mode: request $try failed: $out" >&3
        echo "# $mode: $CTR is $(state_of "$CTR"); its log ends: $(dk logs --tail 5 "$CTR" 2>&1 | tr '\n' '|')" >&3
    done
    echo "# $mode: the front never answered" >&3
    return 1
}
# A few requests (each a wait request and one more) to the front; a
# failure is no error here, the service may be the one being killed.
hog_requests() { timeout 300 "$REPO/build/demo-load" -n 1 -c 1 "127.0.0.1:$DEMO_PORT" >/dev/null 2>&1 || true; }
# With DEMO_HOG_MB=8, every request keeps 8 MiB more.  By condition, not
# pace, so that every mode gets there however slow (valgrind): the
# service answers; the hog has allocated (the cgroup's charge grew 32 MiB
# since the first answer); then a limit 48 MiB above what the container
# holds, which the Engine can set on cgroup v1 and v2 alike; then requests
# until the kernel kills it (a few suffice; 100 bound the loop).
trigger_oom() {
    local first used limit i
    front_answers || return 1
    first=$(ctr_mem_mib)
    used=$first
    for i in $(seq 50); do
        [ "$used" -lt $((first + 32)) ] || break
        hog_requests
        used=$(ctr_mem_mib)
    done
    [ "$used" -ge $((first + 32)) ] ||
        { echo "# $mode: the hog did not allocate: $first MiB, then $used MiB after 50 requests" >&3; return 1; }
    limit=$((used + 48))
    echo "# $mode: the hog grew the container from $first to $used MiB; limit $limit MiB" >&3
    dk update --memory "${limit}m" --memory-swap "${limit}m" "$CTR" >/dev/null
    [ "$(dk inspect -f '{{.HostConfig.Memory}}' "$CTR")" = $((limit << 20)) ]
    for i in $(seq 100); do
        [ "$(state_of "$CTR")" = running ] || break
        hog_requests
    done
    wait_exited
    OOM_KILLED=$(dk inspect -f '{{.State.OOMKilled}}' "$CTR")
}

# verdict MODE COND...: record one mode's result; COND are [[ ]]-free
# shell tests run in order; the first to fail names the problem.
FAILS=0
verdict() {
    local mode=$1 what; shift
    for what in "$@"; do
        if ! eval "$what" >/dev/null 2>&1; then
            echo "# $mode: FAILED: $what" >&3
            echo "$STOP_OUTPUT" | sed 's/^/#   /' >&3
            [ -n "$RUN_DIR" ] && [ -f "$REC" ] && sed 's/^/#   /' "$REC" >&3
            FAILS=$((FAILS + 1))
            remove_front
            return 0
        fi
    done
    echo "# $mode: ok (stop exit $STOP_STATUS; $(jq -c "$REC_SUMMARY" "$REC" 2>/dev/null)${MISSING:+; missing: $MISSING})" >&3
}

remove_front() {
    local ids
    ids=$(dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT" --filter label=io.profharness.service=front)
    [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
}

# Every artifact whole, and each `latest:` link beside the runs points at it.
complete() {
    local latest
    [ -z "$(check_artifacts "$1" "$RUN_DIR")" ] || return 1
    for latest in $(sed -nE 's/.*latest: *([^,} ]+).*/\1/p' "$REPO/profiles/$1.yaml"); do
        [ -e "$OUT/front/$latest" ] || return 1  # (its content: check_artifacts above)
        [ "$(readlink -f "$OUT/front/$latest")" = "$(readlink -f "$RUN_DIR")/$(basename "$(readlink "$OUT/front/$latest")")" ] || return 1
    done
}
collected() { [ "$STOP_STATUS" -eq 0 ] && [ -n "$RUN_DIR" ] && [ -z "$(state_of "$CTR")" ]; }
rec() { jq -e "$1" "$REC"; }
# The record's fields a cell is judged on (harness/shim/ph_init_record.c;
# wrapper_pid is not fixed and not asserted).
REC_SUMMARY='{outcome, complete, exit_code, service_exit_code, service_signal, escalations,
              leftovers_signalled, leftovers_killed, leftovers_survived, oom_kills}'
# No process left behind, and no OOM kill where none was provoked.
clean_end='(.leftovers_survived == 0) and (.oom_kills == 0 or .oom_kills == null)'
# stop told what happened in one line from the outcome ("profharness:
# [warning: ]front: STORY"), and STORY has TEXT.
said() { printf '%s\n' "$STOP_OUTPUT" | grep -E '^profharness: (warning: )?front: ' | grep -qF -- "$1"; }
# The record's `complete` is true exactly when every artifact is whole.
complete_truthful() {
    local whole=false
    # A conversion that found no sample (a service OOM-killed before it
    # ran in user space) draws nothing: what is missing then is no part
    # of what the profiler wrote, which may still be whole.
    if [[ "$STOP_OUTPUT" == *"recorded no samples, so there is no profile to draw"* ]]; then
        [ -n "$(check_artifacts "$1" "$RUN_DIR" | grep -v -e ' stacks.folded$' -e ' profile.pb.gz$' -e ' flamegraph.svg$')" ] ||
            whole=true
    else
        [ -n "$(check_artifacts "$1" "$RUN_DIR")" ] || whole=true
    fi
    if [ "$whole" = false ]; then
        rec ".complete == false"
    else
        # Whole files may still be another process's: under the OOM killer
        # a sampler's child (the hog's `cat`) can write its views while the
        # service's own sampler is killed.  Saying "may be incomplete" then
        # is the truth; saying complete of a cut profile never is.
        rec ".complete == true" || [[ "$STOP_OUTPUT" == *"may be incomplete"* ]]
    fi
}

# A crash or a SIGKILL may keep the profiler from writing (a sampler that
# never reached its first write, valgrind killed outright): then what is
# missing is named, in the output and in run.json, and what is cut short is
# said to be possibly incomplete, never silently passed off as whole.
missing_named() {
    local m
    MISSING=$(check_artifacts "$1" "$RUN_DIR" | sed -n 's/^missing //p' | tr '\n' ' ')
    if check_artifacts "$1" "$RUN_DIR" | grep -q '^broken'; then
        [[ "$STOP_OUTPUT" == *"may be incomplete"* ]] || return 1
    fi
    for m in $MISSING; do
        [[ "$STOP_OUTPUT" == *"\`$m\`"* ]] || return 1
        jq -e --arg m "$m" '.missing_artifacts | index($m)' "$RUN_DIR/run.json" || return 1
    done
}

# matrix_row TRIGGER "KNOB=V ..." COND...: the cell of every mode.
matrix_row() {
    local trigger=$1 knobs=$2 mode; shift 2
    for mode in $(modes); do
        run_cell "$mode" "$trigger" $knobs
        verdict "$mode" "$@"
    done
    [ "$FAILS" -eq 0 ]
}

@test "matrix: a service that handles SIGTERM" {
    matrix_row trigger_load "" 'collected' 'complete $mode' \
        'rec ".exit_code == 0 and .signal == null and .escalations == [] and .stop_requested"' \
        'rec ".outcome == \"stopped\" and .complete and .service_exit_code == 0 and .service_signal == null
             and .leftovers_signalled == 0 and $clean_end"' \
        'said "stopped on SIGTERM in "'
}

@test "matrix: a service that ignores SIGTERM" {
    matrix_row trigger_load DEMO_IGNORE_SIGTERM=1 'collected' 'complete $mode' '[[ "$STOP_OUTPUT" == *escalated* ]]' \
        'rec "(.escalations | length) >= 1 and .stop_requested"' \
        'rec ".outcome == \"escalated\" and .service_signal == .escalations[-1] and .service_exit_code == null
             and $clean_end"' \
        'said "the service ignored SIGTERM; escalated to $(jq -r ".escalations | join(\" then \")" "$REC") after 3.00 s"'
}

# valgrind 3.19 itself, now and then: it reports the program's fatal
# signal, re-raises it to die by it, is not killed in time and panics
# ("main(): signal was supposed to be fatal"), exiting 1 (seen once in
# three fresh-clone runs, massif; the same row passed on the rerun).  The
# service did crash; the record then says it exited with 1.
valgrind_segv_panic() {
    case $1 in massif | callgrind) ;; *) return 1 ;; esac
    grep -q 'Process terminating with default action of signal 11 (SIGSEGV)' "$RUN_DIR/service.log" &&
        grep -q 'main(): signal was supposed to be fatal' "$RUN_DIR/service.log" &&
        rec '.exit_code == 1 and (.stop_requested | not)'
}

@test "matrix: a service that crashes with SIGSEGV mid-run" {
    matrix_row trigger_crash "DEMO_CRASH_AFTER=50 DEMO_CRASH_SIGNAL=SEGV" 'collected' 'missing_named $mode' \
        'rec "(.exit_code == 139 or .signal == \"SIGSEGV\") and (.stop_requested | not)" || valgrind_segv_panic $mode' \
        'rec ".outcome == \"crashed\" and .service_signal == \"SIGSEGV\" and .service_exit_code == null
             and .complete and $clean_end" || valgrind_segv_panic $mode' \
        'said "the service crashed (SIGSEGV) before the stop" || valgrind_segv_panic $mode'
}

@test "matrix: a service that exits by itself before stop" {
    matrix_row trigger_crash DEMO_EXIT_AFTER=50 'collected' 'complete $mode' \
        'rec ".exit_code == 3 and .signal == null and (.stop_requested | not)"' \
        'rec ".outcome == \"exited\" and .service_exit_code == 3 and .service_signal == null and .complete
             and $clean_end"' \
        'said "the service exited by itself with status 3 before the stop"'
}

@test "matrix: a service that is OOM-killed" {
    matrix_row trigger_oom DEMO_HOG_MB=8 '[ "$OOM_KILLED" = true ]' 'collected' 'missing_named $mode' \
        'jq -e ".oom_killed == true" "$RUN_DIR/run.json"' '[[ "$STOP_OUTPUT" == *"OOM killer"* ]]' \
        'rec "(.exit_code == 137 or .signal == \"SIGKILL\") and (.stop_requested | not)"' \
        'rec ".outcome == \"oom_killed\" and .service_signal == \"SIGKILL\" and .oom_kills >= 1
             and .leftovers_survived == 0"' \
        'complete_truthful $mode' \
        'said "the kernel'"'"'s OOM killer killed the service"'
}

@test "matrix: a service whose forked child outlives it" {
    matrix_row trigger_load DEMO_ORPHAN=1 'collected' 'complete $mode' \
        'rec ".exit_code == 0 and .leftovers_signalled >= 1 and .stop_requested"' \
        'rec ".outcome == \"stopped\" and .service_exit_code == 0 and .complete and .leftovers_killed >= 1
             and $clean_end"' \
        'said "stopped on SIGTERM in "' 'said "leftover process stopped (1 with SIGKILL)"'
}
