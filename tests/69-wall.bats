#!/usr/bin/env bats
# The wall mode end to end (issue 21): the sampler preloaded on the wall
# clock into a real service in a container (tests/wall/svc: 25 ms of
# computing in compute_quarter, then 75 ms blocked in read(2) in
# wait_three_quarters, EINTR fatal to it), stopped gracefully.  The
# samples in the waiting function are its share of the wall time, as the
# service measures it (75 %), within 5 points; the off-CPU ones lie
# between its share blocked by the kernel's account and that, within 5
# points (75 % on an idle machine; on a busy one the service also waits
# for a CPU, which is on CPU: wanting it); the off-CPU stacks end in
# [off-cpu] under the read the service blocks in; the read never failed
# with EINTR; the pprof profile is wall/nanoseconds as `go tool pprof`
# reads it.

load test_helper

WALLC="$REPO/tests/wall/compose.yaml"

pw() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$WALLC" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

setup_file() {
    common_setup_file
    PH_WALL_TAG=$(cd "$REPO/tests/wall/svc" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
        sha256sum | cut -c1-16)
    export PH_WALL_TAG
    pw setup >&3 2>&1
}
teardown_file() { common_teardown_file; }
teardown() { common_teardown; }

# logged_at_least SERVICE KEY N: the service's last KEY=<n> line says N or more.
logged_at_least() {
    local n
    n=$(dk logs "${PH_TEST_PROJECT}-$1-wall" 2>/dev/null | sed -n "s/^$2=\\([0-9]*\\).*/\\1/p" | tail -1)
    [ -n "$n" ] && [ "$n" -ge "$3" ]
}

@test "wall: off-CPU share and the waiting function, no EINTR, wall/nanoseconds" {
    run pw start --mode wall svc
    [ "$status" -eq 0 ]
    caps=$(dk inspect -f '{{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}}' "${PH_TEST_PROJECT}-svc-wall")
    [ "$caps" = "[] []" ]
    # 40 rounds of 100 ms: ~400 samples at 100 Hz (a condition, not a pace)
    WAIT_SECONDS=120 wait_for logged_at_least svc rounds 40
    run pw stop svc
    [ "$status" -eq 0 ]
    run_dir=$(readlink -f "$OUT/svc/latest")
    ! grep -q EINTR "$run_dir/service.log" || false
    line=$(grep -o 'rounds=.*' "$run_dir/service.log" | tail -1) # (service.log's lines are timestamped)
    read -r total off waiting computing <<< "$(awk '
        { n = $NF; t += n
          if (index($0, ";[off-cpu] ")) o += n
          if (index($0, ";wait_three_quarters;")) w += n
          if (index($0, ";compute_quarter")) c += n }
        END { printf "%d %d %d %d\n", t, o, w, c }' "$OUT/svc/stacks.folded")"
    want_waiting=$(printf '%s' "$line" | sed -n 's/.*waiting=\([0-9.]*\).*/\1/p')
    want_blocked=$(printf '%s' "$line" | sed -n 's/.*blocked=\([0-9.]*\).*/\1/p')
    echo "# $total samples: off CPU $off ($(( 100 * off / total )) %; blocked ${want_blocked} by the kernel's account)," \
        "wait_three_quarters $waiting ($(( 100 * waiting / total )) %; ${want_waiting} by the service's clock)," \
        "compute_quarter $computing" >&3
    [ "$total" -ge 300 ]
    awk -v w="$waiting" -v t="$total" -v want="$want_waiting" 'BEGIN { d = w / t - want; exit !(d <= 0.05 && d >= -0.05) }'
    awk -v o="$off" -v t="$total" -v lo="$want_blocked" -v hi="$want_waiting" \
        'BEGIN { s = o / t; exit !(s >= lo - 0.05 && s <= hi + 0.05) }'
    # the off-CPU view: the waiting function, blocked in the read
    [ -s "$OUT/svc/offcpu.folded" ]
    ! grep -v ';wait_three_quarters;.*read.*;\[off-cpu\] [0-9]*$' "$OUT/svc/offcpu.folded" | grep -q . || false
    [ -s "$OUT/svc/oncpu.folded" ]
    ! grep -q 'off-cpu' "$OUT/svc/oncpu.folded" || false
    # never the sampler's own frames: its stop handler waited for the
    # final snapshot as `on_stop_signal;request_and_wait;phs_nap
    # (inlined);syscall;[off-cpu]` (the fresh-clone run's one failure)
    no_sampler_frames 1 "$run_dir"/*.folded "$run_dir"/*.svg "$run_dir"/*.pb.gz
    # pprof: wall time, as go tool pprof reads it
    go tool pprof -raw "$OUT/svc/profile.pb.gz" > "$BATS_TEST_TMPDIR/pprof.txt" 2>&1
    grep -q '^PeriodType: wall nanoseconds' "$BATS_TEST_TMPDIR/pprof.txt"
    grep -q 'wait_three_quarters' "$BATS_TEST_TMPDIR/pprof.txt"
    # the report: off-CPU time is no unnamed code
    [ -s "$run_dir/report.html" ]
    jq -e '[.problems[] | select(test("no function name"))] | length == 0' "$run_dir/summary.json"
}

@test "wall: no call fails with EINTR because of the samples; a thread per root, with its share" {
    run pw start --mode wall eintr
    [ "$status" -eq 0 ]
    # 100 calls of ~30 ms each in every thread: ~3 s sampled (a condition, not a pace)
    WAIT_SECONDS=120 wait_for logged_at_least eintr calls 100 # (calls=: the fewest any thread made)
    [ "$(dk inspect -f '{{.State.Running}}' "${PH_TEST_PROJECT}-eintr-wall")" = true ]
    run pw stop eintr
    [ "$status" -eq 0 ]
    run_dir=$(readlink -f "$OUT/eintr/latest")
    ! grep EINTR "$run_dir/service.log" || false
    # 18 threads alive the whole run (16 blocking, the ticker, main): an
    # eighteenth of the samples each, within 3 points, each off CPU in its call
    awk '{ split($1, f, ";"); n[f[1]] += $NF; t += $NF } END { for (k in n) printf "%s %d %d\n", k, n[k], t }' \
        "$OUT/eintr/stacks.folded" > "$BATS_TEST_TMPDIR/threads"
    cat "$BATS_TEST_TMPDIR/threads" | sed 's/^/# /' >&3
    for t in read futex accept cond poll ppoll select epoll nanosleep clock_nsleep usleep sigtimedwait \
        recv_timeo read_timeo accept_timeo connect_timeo ticker wall-eintr; do
        awk -v t="$t" '$1 == t { found = 1; d = $2 / $3 - 1 / 18; ok = d <= 0.03 && d >= -0.03 } END { exit !(found && ok) }' \
            "$BATS_TEST_TMPDIR/threads"
    done
    [ "$(wc -l < "$BATS_TEST_TMPDIR/threads")" -eq 18 ]
    grep -q '^poll;.*;poll;\[off-cpu\] [0-9]*$' "$OUT/eintr/stacks.folded"
    grep -q '^epoll;.*;epoll_wait;\[off-cpu\] [0-9]*$' "$OUT/eintr/stacks.folded"
    # a socket with a timeout: its call held back too (ph_sampler_sock.c)
    grep -q '^connect_timeo;.*;connect;\[off-cpu\] [0-9]*$' "$OUT/eintr/stacks.folded"
    grep -q '^recv_timeo;.*;recv;\[off-cpu\] [0-9]*$' "$OUT/eintr/stacks.folded"
    no_sampler_frames 1 "$run_dir"/*.folded "$run_dir"/*.svg "$run_dir"/*.pb.gz
    # the report: per thread, its samples off CPU
    jq -e '[.flamegraph.threads[] | select(.thread == "nanosleep" and .offcpu_samples >= 0.9 * .samples)] | length == 1' \
        "$run_dir/summary.json"
    grep -q '<h3>Per thread</h3>' "$run_dir/report.html"
}

@test "wall: the demo's front to its report; the call its threads block in is named, glibc's own included" {
    # The demo's threads wait in pthread_cond_wait, whose futex wait
    # (__futex_abstimed_wait_common64) is internal to glibc: named from
    # the tools tree's debug files by build id (the service's image has
    # none), not libc.so.6+0x... as it was once the tools came as a volume.
    run ph start --mode wall front
    [ "$status" -eq 0 ]
    drive_load 100
    run ph stop front
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"% off CPU, top blocking call "* ]]
    [[ "$output" != *"top blocking call libc.so"* ]]
    grep -q '__futex_abstimed_wait_common64' "$OUT/front/offcpu.folded"
    no_sampler_frames 1 "$OUT"/front/latest/*.folded "$OUT"/front/latest/*.svg "$OUT"/front/latest/*.pb.gz
    [ -s "$OUT/front/latest/report.html" ]
    ph restore worker >/dev/null 2>&1 || true
}
