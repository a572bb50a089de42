#!/usr/bin/env bats
# Attach: profile the running demo without restarting it.  A tools
# container joins the service's PID namespace; stop detaches and
# collects; the service keeps its container, its uptime and its port.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

front_id() { dk inspect -f '{{.Id}} {{.State.StartedAt}}' "${PH_TEST_PROJECT}-front-1"; }
tools_state() { dk inspect -f '{{.State.Status}}' "${PH_TEST_PROJECT}-front-attach-$1" 2>/dev/null; }
tools_exited() { [ "$(tools_state "$1")" = exited ]; }
traces() { dk logs "$1" 2>&1 | grep -q 'attached'; } # strace in container $1 has its processes

@test "attach strace to the demo under load; stop detaches: same container, still serving, a clean strace.log" {
    run ph restore front
    [ "$status" -eq 0 ]
    drive_load 5
    before=$(front_id)
    # load runs while strace attaches and while it traces
    drive_load 600 > "$BATS_TEST_TMPDIR/load.txt" &
    loader=$!
    run ph --timings attach --mode strace front
    [ "$status" -eq 0 ]
    [[ "$output" == *"front"*"strace"*"$OUT/front/"*"-strace"* ]]
    # attach is timed like every command: a stage per service, its Engine calls under it
    [[ "$output" =~ harness\ +-\ +attach\ front ]]
    # the tools container: in front's PID namespace, SYS_PTRACE only, no network
    svc=$(dk inspect -f '{{.Id}}' "${PH_TEST_PROJECT}-front-1")
    tc=${PH_TEST_PROJECT}-front-attach-strace
    [ "$(dk inspect -f '{{.HostConfig.PidMode}}' "$tc")" = "container:$svc" ]
    [ "$(dk inspect -f '{{.HostConfig.CapAdd}}' "$tc")" = "[SYS_PTRACE]" ]
    [ "$(dk inspect -f '{{.HostConfig.NetworkMode}}' "$tc")" = none ]
    [ "$(dk inspect -f '{{.HostConfig.Privileged}}' "$tc")" = false ]
    wait "$loader"
    grep -q ' 0 errors' "$BATS_TEST_TMPDIR/load.txt"
    # new connections while attached: accepted under strace
    drive_load 20
    run ph stop front
    [ "$status" -eq 0 ]
    # the service was not restarted, nor even signalled
    [ "$(front_id)" = "$before" ]
    [ "$(dk inspect -f '{{.State.Running}}' "${PH_TEST_PROJECT}-front-1")" = true ]
    drive_load 5
    ! dk inspect "$tc" >/dev/null 2>&1 || false
    # the usual run dir, latest and the compatibility link
    run_dir=$(readlink -f "$OUT/front/latest")
    [[ "$(basename "$run_dir")" =~ ^[0-9]{8}T[0-9]{6}Z-strace$ ]]
    log="$OUT/front/strace.log"
    [ "$(readlink -f "$log")" = "$run_dir/strace.log" ]
    # its syscalls: the demo accepts, reads requests, answers
    grep -qE 'accept4?\(' "$log"
    grep -qE '(recvfrom|read)\(' "$log"
    grep -qE '(sendto|write)\(' "$log"
    # strace detached on SIGINT and wrote its end: whole lines, not killed
    [ "$(tail -c 1 "$log" | od -An -c | tr -d ' ')" = '\n' ]
    ! grep -q 'killed by' "$log" || false
    ! grep -q '+++ exited' "$log" || false
    jq -e '.stop_requested and .stop_signal == "SIGINT" and (.escalations | length) == 0 and .complete' \
        "$run_dir/ph-exit.json"
    jq -e '.mode == "strace" and .service == "front"' "$run_dir/run.json"
    # the report: whose container was joined, detached, no problem made of
    # the calls strace let go of; the headline on stderr
    jq -e --arg svc "$svc" '.attached_to == $svc' "$run_dir/run.json"
    jq -e --arg svc "$svc" '.attached_to == $svc and .stopped == "detached (SIGINT)" and (.problems | length) == 0
        and .strace.calls > 0' "$run_dir/summary.json"
    grep -q 'which kept running' "$run_dir/report.html"
    [[ "$output" == *"front: "*" syscalls in "* ]]
    [[ "$output" != *"it says what is missing"* ]]
    grep -q 'strace (attached)' "$OUT/index.html"
}

@test "attach perf: perf.data of the running demo, symbols from the files it maps, the hot function on top" {
    command -v perf >/dev/null || skip "perf is not installed on the host (scripts/install-deps.sh installs linux-perf)"
    before=$(front_id)
    run ph attach --mode perf front
    [ "$status" -eq 0 ]
    tc=${PH_TEST_PROJECT}-front-attach-perf
    dk inspect -f '{{.HostConfig.SecurityOpt}}' "$tc" | grep -q 'seccomp=unconfined'
    [[ "$(dk inspect -f '{{.HostConfig.CapAdd}}' "$tc")" != *SYS_ADMIN* ]]
    drive_load 300
    run ph stop front
    [ "$status" -eq 0 ]
    [ "$(front_id)" = "$before" ]
    run_dir=$(readlink -f "$OUT/front/latest")
    [[ "$(basename "$run_dir")" =~ -perf$ ]]
    [ -s "$run_dir/symfs/usr/local/bin/demo-front" ]
    perf report --symfs "$run_dir/symfs" -i "$run_dir/perf.data" --stdio --no-children --sort symbol 2>/dev/null |
        grep -v '^#' | grep -m1 '%' | grep -q front_checksum_payload
}

@test "attach: twice, to a service under a restart mode, to one that does not run, and with massif: refused" {
    run ph restore front
    [ "$status" -eq 0 ]
    run ph attach --mode strace front
    [ "$status" -eq 0 ]
    run ph attach --mode perf front
    [ "$status" -eq 2 ]
    [[ "$output" == *"\`front\` is already attached to under strace"*"one profiler at a time"* ]]
    [[ "$output" == *"hint: stop it first: \`profharness stop front\`"* ]]
    # only the first tools container is there
    [ "$(project_containers | grep -c -- '-front-attach-')" -eq 1 ]
    run ph stop front
    [ "$status" -eq 0 ]

    run ph start --mode strace front
    [ "$status" -eq 0 ]
    run ph attach --mode strace front
    [ "$status" -eq 2 ]
    [[ "$output" == *"\`front\` is already being profiled under strace"* ]]
    run ph stop front
    [ "$status" -eq 0 ]

    # front is not running now (stop removed its profiled container)
    run ph attach --mode strace front
    [ "$status" -eq 2 ]
    [[ "$output" == *"\`front\` is not running: there is nothing to attach to"* ]]
    [[ "$output" == *"profharness restore front"* ]]

    run ph attach --mode massif front
    [ "$status" -eq 2 ]
    [[ "$output" == *"mode \`massif\` cannot attach to a running service: valgrind must start the process"* ]]
    run ph attach --mode heap front
    [ "$status" -eq 2 ]
    [[ "$output" == *"cannot attach"*"LD_PRELOAD"* ]]
    # a mode that attaches still needs a running service
    run ph attach --mode flamegraph front
    [ "$status" -eq 2 ]
    [[ "$output" == *"\`front\` is not running: there is nothing to attach to"* ]]
    # no tools container left (printed, so a failure says which)
    left=$(project_containers | grep -- '-attach-' || true)
    echo "tools containers left: ${left:-none}"
    [ -z "$left" ]
}

# A profiler that starts and then cannot join: here the service's
# process is traced already (someone's strace or gdb on it from the host:
# a process has one tracer), so attach's strace gets EPERM from ptrace and ends.
# attach waits for what the profile says its command prints once in
# (`attach.ready`), so it fails there, with strace's own reason, and
# leaves nothing behind.
@test "attach: a profiler that ends before it joins fails attach with its reason; the service untouched, nothing left" {
    run ph restore front
    [ "$status" -eq 0 ]
    run ph setup front
    [ "$status" -eq 0 ]
    tools=$(setup_images front "$output" | head -1)
    [[ "$tools" == profharness-tools:* ]]
    before=$(front_id)
    blocker=${PH_TEST_PROJECT}-blocker
    # from the host's PID namespace, so attach's own strace sees it not
    dk run -d --name "$blocker" --pid host --cap-add SYS_PTRACE --network none --entrypoint strace "$tools" \
        -o /dev/null -p "$(dk inspect -f '{{.State.Pid}}' "${PH_TEST_PROJECT}-front-1")" > /dev/null
    wait_for traces "$blocker"
    run ph attach --mode strace front
    echo "$output"
    dk rm -f "$blocker" > /dev/null
    [ "$status" -eq 2 ]
    [[ "$output" == *"attach strace to \`front\`: strace ended (exit "*") before it joined the service: "*"Operation not permitted"* ]]
    [[ "$output" == *"the service was not touched, and its tools container is removed"* ]]
    [ "$(front_id)" = "$before" ]
    left=$(project_containers | grep -- '-attach-' || true)
    echo "tools containers left: ${left:-none}"
    [ -z "$left" ]
    # untraced again, it joins, and is not refused as attached already
    run ph attach --mode strace front
    [ "$status" -eq 0 ]
    run ph stop front
    [ "$status" -eq 0 ]
}

@test "attach: the service exits while attached; stop collects what strace wrote and says why its end is missing" {
    run ph restore front
    [ "$status" -eq 0 ]
    run ph attach --mode strace front
    [ "$status" -eq 0 ]
    drive_load 20
    dk stop -t 20 "${PH_TEST_PROJECT}-front-1"
    # the tools container ends with the service's PID namespace
    wait_for tools_exited strace
    run ph stop front
    [ "$status" -eq 0 ]
    [[ "$output" == *"the service exited while strace was attached"* ]]
    log="$OUT/front/strace.log"
    grep -qE 'accept4?\(' "$log"
    # it saw the demo's SIGTERM and its exit
    grep -q -- '--- SIGTERM' "$log"
    grep -q 'exit_group(0)' "$log"
    # no tools container left (printed, so a failure says which)
    left=$(project_containers | grep -- '-attach-' || true)
    echo "tools containers left: ${left:-none}"
    [ -z "$left" ]
    run ph restore front
    [ "$status" -eq 0 ]
}
