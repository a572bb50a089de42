#!/usr/bin/env bats
# A hostile or failing container cannot hurt the host, and no fault loses a
# run (issue 14).  What a profiled container puts in /opt/profiling/<svc> is
# the attacker's: planted here with `docker exec` (while it runs) or
# `docker cp` (after it stopped), then collected by the real harness.  The
# harness runs as root here; SUDO_UID/SUDO_GID make it hand files over as
# it does under sudo.

load test_helper

setup_file() {
    common_setup_file
    ph setup worker >&3 2>&1
    export PH_PROFILES=$(short_grace_profiles)
}
teardown_file() { common_teardown_file; }
# A test that failed half way leaves its container: the next starts clean.
teardown() { remove_project; }

CTR="$PH_TEST_PROJECT-worker-strace"

# Start the worker under strace; return once it serves.
start_worker() {
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
    # listening: its stop handler is in place, so a stop is a clean one
    wait_for bash -c "docker logs $CTR 2>&1 | grep -q 'listening on'"
}

# no_controls TEXT: no ESC, BEL, CR or other C0 control but newline and tab.
no_controls() {
    ! printf '%s' "$1" | LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' || false
}

@test "a completion record over 64 KiB is not loaded: the run is marked, run.json stays small" {
    start_worker
    dk stop -t 30 "$CTR" >/dev/null
    big=$BATS_TEST_TMPDIR/ph-exit.json
    { printf '{"version":1,"exit_code":0,"signal":null,"escalations":[],"pad":"'
      head -c 20000000 /dev/zero | tr '\0' x
      printf '"}\n'; } > "$big"
    dk cp "$big" "$CTR:/opt/profiling/worker/ph-exit.json"
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"no valid completion record"* ]]
    [[ "$output" != *"exited with status 0"* ]]
    meta="$OUT/worker/latest/run.json"
    [ "$(stat -c %s "$meta")" -lt 100000 ]
    jq -e '.completion == null and (.completion_problem | test("65536|64 KiB"))' "$meta"
    # the report refused it unread too, and says so
    jq -e '.problems | map(test("ph-exit.json` is [0-9]+ bytes \\(limit 65536\\)")) | any' \
        "$OUT/worker/latest/summary.json"
}

@test "a completion record that is JSON but not the shim's is refused; its strings never reach the terminal raw" {
    start_worker
    dk stop -t 30 "$CTR" >/dev/null
    printf '[0]\n' > "$BATS_TEST_TMPDIR/ph-exit.json"
    dk cp "$BATS_TEST_TMPDIR/ph-exit.json" "$CTR:/opt/profiling/worker/ph-exit.json"
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"no valid completion record"* ]]
    jq -e '.completion == null and (.completion_problem | test("object"))' "$OUT/worker/latest/run.json"

    # A well-formed record whose fields carry terminal escapes.
    start_worker
    dk stop -t 30 "$CTR" >/dev/null
    printf '{"version":1,"exit_code":3,"signal":"SIG\\u001b]0;PWNED\\u0007\\r\\u001b[2K","escalations":["\\u001b[8m"]}\n' \
        > "$BATS_TEST_TMPDIR/ph-exit.json"
    dk cp "$BATS_TEST_TMPDIR/ph-exit.json" "$CTR:/opt/profiling/worker/ph-exit.json"
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    no_controls "$output"
    [[ "$output" == *'\x1b]0;PWNED\x07'* ]]
}

@test "entry names from the container are escaped before they reach the terminal" {
    start_worker
    dk exec "$CTR" sh -c 'mkfifo "/opt/profiling/worker/$(printf "\r\033[2K\033]0;PWNED\a... all good\n\033[8m")"'
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    no_controls "$output"
    [[ "$output" == *'\r\x1b[2K\x1b]0;PWNED\x07... all good\n\x1b[8m'* ]]
}

@test "function names from a planted profile never reach the terminal raw: stop's headline, report's" {
    # callgrind, so the headline names the top function: the planted one
    run ph start --mode callgrind worker
    [ "$status" -eq 0 ]
    WAIT_SECONDS=180 wait_for bash -c "docker logs $PH_TEST_PROJECT-worker-callgrind 2>&1 | grep -q 'listening on'"
    dk stop -t 120 "$PH_TEST_PROJECT-worker-callgrind" >/dev/null
    # the title, the clipboard, a cleared screen
    evil=$'evil\e]0;PWNED\a\e]52;c;cHduZWQ=\a\e[2J'
    printf 'version: 1\ncreator: planted\nevents: Ir\nfn=%s\n1 999999999999\ntotals: 999999999999\n' "$evil" \
        > "$BATS_TEST_TMPDIR/callgrind.out.666"
    dk cp "$BATS_TEST_TMPDIR/callgrind.out.666" "$PH_TEST_PROJECT-worker-callgrind:/opt/profiling/worker/"
    run ph stop worker
    echo "$output" | cat -v
    [ "$status" -eq 0 ]
    no_controls "$output"
    [[ "$output" == *'top evil\x1b]0;PWNED\x07\x1b]52;c;cHduZWQ=\x07\x1b[2J '* ]]
    run ph report "$OUT/worker/latest/"
    echo "$output" | cat -v
    [ "$status" -eq 0 ]
    no_controls "$output"
    [[ "$output" == *'top evil\x1b]0;PWNED\x07'* ]]
    # summary.json keeps the real name, as JSON
    jq -e --arg e "$evil" '.headline | contains("top " + $e + " ")' "$OUT/worker/latest/summary.json"
}

# ph_exec_planted OUT ARGS...: the harness exec'd by a bash that first runs $PLANT
# with $1 = OUT, $2 = the worker's run id: the harness gets that bash's pid,
# from which the old temp names were derived.
ph_exec_planted() {
    local out=$1; shift
    run env ${SUDO_ENV:-} bash -c "$PLANT"'
        shift 2
        exec "$@"' _ "$out" "$run_id" \
        "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$PH_PROFILES" -o "$out" "$@"
    echo "$output"
}

@test "under sudo: only what the harness creates is handed over; a planted temp-dir link is not followed" {
    out=$BATS_TEST_TMPDIR/given
    mkdir -p "$out/worker" "$BATS_TEST_TMPDIR/victim"
    : > "$BATS_TEST_TMPDIR/victim/keep"
    start_worker
    run_id=$(dk inspect -f '{{index .Config.Labels "io.profharness.run"}}' "$CTR")
    SUDO_ENV="SUDO_UID=65534 SUDO_GID=65534" PLANT='ln -s ../../victim "$1/worker/.incoming-$2-$$"' \
        ph_exec_planted "$out" stop worker
    [ "$status" -eq 0 ]
    # nothing was written into, or given away in, the link's target
    [ "$(ls -A "$BATS_TEST_TMPDIR/victim")" = keep ]
    [ "$(stat -c %u "$BATS_TEST_TMPDIR/victim/keep")" -eq 0 ]
    [ "$(stat -c %u "$BATS_TEST_TMPDIR/victim")" -eq 0 ]
    # the output dirs existed: they stay root's; the run is the invoker's
    [ "$(stat -c %u "$out")" -eq 0 ]
    [ "$(stat -c %u "$out/worker")" -eq 0 ]
    run_dir="$out/worker/$(readlink "$out/worker/latest")"
    [ -s "$run_dir/strace.log" ]
    [ -z "$(find "$run_dir" ! -uid 65534)" ]
    [ "$(stat -c %u "$out/worker/latest")" -eq 65534 ]
    [ "$(stat -c %u "$out/worker/strace.log")" -eq 65534 ]
    # the index of runs is a file the harness wrote too (issue 19)
    [ "$(stat -c %u "$out/index.html")" -eq 65534 ]
    # the planted link is gone (it was no temp dir of a live harness)
    [ -z "$(ls -A "$out/worker" | grep '^\.incoming-' || true)" ]
    # run.json: floats at 9 significant digits (at most 12 decimals, as
    # 0.000123456789), never 17 (1.1890000000000001)
    ! grep -qE '[0-9]\.[0-9]{13,}' "$run_dir/run.json" || false
}

@test "a stale temp dir of a killed harness is removed, never merged into a new run" {
    out=$BATS_TEST_TMPDIR/stale
    mkdir -p "$out/worker"
    start_worker
    run_id=$(dk inspect -f '{{index .Config.Labels "io.profharness.run"}}' "$CTR")
    PLANT='for d in "$1/worker/.incoming-$2-$$" "$1/worker/.incoming-$2-1"; do
               mkdir -p "$d/sub"; : > "$d/sub/stale-from-a-dead-harness"; done' \
        ph_exec_planted "$out" stop worker
    [ "$status" -eq 0 ]
    run_dir="$out/worker/$(readlink "$out/worker/latest")"
    [ -s "$run_dir/strace.log" ]
    [ ! -e "$run_dir/sub" ]
    [ -z "$(ls -A "$out/worker" | grep '^\.incoming-' || true)" ]
}

@test "an uncollectable container: stop keeps it and names --discard; stop --discard removes it" {
    start_worker
    dk exec "$CTR" rm -rf /opt/profiling/worker
    run ph stop worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"stop --discard worker"* ]]
    [ -n "$(dk ps -aq --filter name="^$CTR\$")" ]
    run ph restore worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"stop --discard worker"* ]]
    run ph stop --discard worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"lost"* ]]
    [ -z "$(dk ps -aq --filter name="^$CTR\$")" ]
    run ph stop worker
    [ "$status" -eq 0 ]
    [[ "$output" == *"nothing to stop"* ]]
}

@test "an output path that is a file: stop says so and names -o; the container is untouched" {
    start_worker
    : > "$BATS_TEST_TMPDIR/afile"
    OUT=$BATS_TEST_TMPDIR/afile run ph stop worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"\`$BATS_TEST_TMPDIR/afile\` is not a directory"* ]]
    [[ "$output" == *"point -o at a directory"* ]]
    [ "$(dk inspect -f '{{.State.Running}}' "$CTR")" = true ]
    [ ! -s "$BATS_TEST_TMPDIR/afile" ]
    run ph stop worker
    [ "$status" -eq 0 ]
}

@test "a container created but never started (an interrupted start) does not block stop or restore" {
    dk create --name "$CTR" --label "io.profharness.project=$PH_TEST_PROJECT" \
        --label io.profharness.service=worker --label io.profharness.mode=strace \
        --label io.profharness.run=20000101T000000Z-strace "$DEMO_IMAGE:latest" demo-worker >/dev/null
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"never started"* ]]
    [ -z "$(dk ps -aq --filter name="^$CTR\$")" ]
}

# interrupt_collection SIG: stop the worker in the background, freeze it
# once its temp dir exists, send SIG, let it go on.  Prints its exit status.
interrupt_collection() {
    env --default-signal=INT,TERM "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" \
        --profiles "$PH_PROFILES" -o "$OUT" stop worker > "$BATS_TEST_TMPDIR/int.out" 2>&1 &
    pid=$!
    WAIT_SECONDS=120 wait_for bash -c "ls -A '$OUT/worker' | grep -q '^\.incoming-'"
    kill -STOP "$pid"
    # frozen mid-collection: the precondition of this test, not a timing bet
    ls -A "$OUT/worker" | grep -q '^\.incoming-' || { echo "collection ended before the signal"; return 1; }
    kill "-$1" "$pid"
    kill -CONT "$pid"
    wait "$pid" && rc=0 || rc=$?
    cat "$BATS_TEST_TMPDIR/int.out" >&2
    echo "$rc"
}

@test "SIGINT or SIGTERM during collection: temp dir removed, container kept, 130/143 and the retry hint" {
    start_worker
    dk exec "$CTR" sh -c 'head -c 600000000 /dev/zero > /opt/profiling/worker/big'
    before=$(ls "$OUT/worker" 2>/dev/null | grep -c strace$ || true)
    rc=$(interrupt_collection INT)
    [ "$rc" -eq 130 ]
    grep -q 'retry with `profharness stop worker`' "$BATS_TEST_TMPDIR/int.out"
    [ -z "$(ls -A "$OUT/worker" | grep '^\.incoming-' || true)" ]
    [ -n "$(dk ps -aq --filter name="^$CTR\$")" ]
    rc=$(interrupt_collection TERM)
    [ "$rc" -eq 143 ]
    [ -z "$(ls -A "$OUT/worker" | grep '^\.incoming-' || true)" ]
    [ -n "$(dk ps -aq --filter name="^$CTR\$")" ]
    [ "$(ls "$OUT/worker" | grep -c strace$ || true)" -eq "$before" ]
    # and the retry collects everything
    run ph stop worker
    [ "$status" -eq 0 ]
    [ "$(stat -c %s "$OUT/worker/latest/big")" -eq 600000000 ]
    [ -z "$(dk ps -aq --filter name="^$CTR\$")" ]
}

# Issue 19: the run dir's own names belong to the harness.

@test "a container's run.json directory and service.log: kept under other names, the run complete and said" {
    start_worker
    dk exec "$CTR" sh -c 'mkdir -p /opt/profiling/worker/run.json/x &&
        echo planted > /opt/profiling/worker/service.log &&
        printf "<b>theirs</b>" > /opt/profiling/worker/report.html &&
        : > "/opt/profiling/worker/harness.$(printf "\033]0;PWNED\a")"'
    run_id=$(dk inspect -f '{{index .Config.Labels "io.profharness.run"}}' "$CTR")
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    run_dir="$OUT/worker/$run_id"
    [ -f "$run_dir/run.json" ]
    jq -e '.renamed["run.json"] == "container-run.json" and .renamed["service.log"] == "container-service.log"' \
        "$run_dir/run.json"
    [ -d "$run_dir/container-run.json/x" ]
    [ "$(cat "$run_dir/container-service.log")" = planted ]
    [ "$(cat "$run_dir/container-report.html")" = "<b>theirs</b>" ]
    # the service's own output, and the harness's report
    grep -q 'listening on' "$run_dir/service.log"
    [ -s "$run_dir/report.html" ]
    ! grep -q 'theirs' "$run_dir/report.html" || false
    # said in one line each, the container's name escaped
    [[ "$output" == *"the container wrote \`run.json\`, a name of the harness's own: kept as \`container-run.json\`"* ]]
    [[ "$output" == *'harness.\x1b]0;PWNED\x07'* ]]
    no_controls "$output"
    [ -z "$(dk ps -aq --filter name="^$CTR\$")" ]
}

@test "a harness killed after the run is in place: the retry completes that run, no second copy" {
    preload=$BATS_TEST_TMPDIR/crash-after-rename.so
    # SIGKILL right after the temp dir is renamed into place: the instant
    # between the rename and the container's removal, made certain
    cat > "$BATS_TEST_TMPDIR/crash.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int renameat2(int a, const char *from, int b, const char *to, unsigned flags)
{
    int (*real)(int, const char *, int, const char *, unsigned) = dlsym(RTLD_NEXT, "renameat2");
    int r = real(a, from, b, to, flags);
    if (r == 0 && strncmp(from, ".incoming-", 10) == 0 && to[0] != '.')
        kill(getpid(), SIGKILL);
    return r;
}
C
    cc -shared -fPIC -o "$preload" "$BATS_TEST_TMPDIR/crash.c" -ldl
    # a run id is the start's second: the test before may have left a run
    # of the same second, which this stop would rightly put at .2 (CI did)
    rm -rf "$OUT/worker"
    start_worker
    run_id=$(dk inspect -f '{{index .Config.Labels "io.profharness.run"}}' "$CTR")
    run env LD_PRELOAD="$preload" "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$PH_PROFILES" \
        -o "$OUT" stop worker
    echo "$output"
    [ "$status" -eq 137 ]
    [ -d "$OUT/worker/$run_id" ]
    [ -n "$(dk ps -aq --filter name="^$CTR\$")" ]   # the container was kept
    # in place means complete
    [ -f "$OUT/worker/$run_id/run.json" ]
    [ -f "$OUT/worker/$run_id/service.log" ]
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ ! -e "$OUT/worker/$run_id.2" ]
    [ "$(readlink "$OUT/worker/latest")" = "$run_id" ]
    [ -z "$(dk ps -aq --filter name="^$CTR\$")" ]
}

@test "a directory planted at latest or at a compat link: warned and left, the run keeps its run.json and report" {
    rm -f "$OUT/worker/latest" "$OUT/worker/strace.log"   # the links of earlier tests
    mkdir -p "$OUT/worker/latest/mine" "$OUT/worker/strace.log"
    start_worker
    run_id=$(dk inspect -f '{{index .Config.Labels "io.profharness.run"}}' "$CTR")
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ -f "$OUT/worker/$run_id/run.json" ]
    [ -s "$OUT/worker/$run_id/report.html" ]
    [[ "$output" == *"latest\` is no link profharness made (a directory)"* ]]
    [[ "$output" == *"strace.log\` is no link profharness made (a directory)"* ]]
    [ -d "$OUT/worker/latest/mine" ]
    [ -z "$(dk ps -aq --filter name="^$CTR\$")" ]
    rm -rf "$OUT/worker/latest" "$OUT/worker/strace.log"
}

@test "a container made by hand with profharness's labels: its outdir label is not trusted" {
    dk run -d --name "$CTR" --label "io.profharness.project=$PH_TEST_PROJECT" \
        --label io.profharness.service=worker --label io.profharness.mode=strace \
        --label io.profharness.run=20000101T000000Z-strace --label io.profharness.outdir=/etc \
        "$DEMO_IMAGE:latest" sleep 600 >/dev/null
    run ph status
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" != *" /etc"* ]]
    [[ "$output" == *"$OUT/worker/20000101T000000Z-strace (not profharness's labels: not collected)"* ]]
    run ph stop worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"says its run goes to \`/etc\`"*"not collected"* ]]
    [ -n "$(dk ps -aq --filter name="^$CTR\$")" ]
    [ ! -e "$OUT/worker/20000101T000000Z-strace" ]
}
