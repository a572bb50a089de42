#!/usr/bin/env bats
# The harness timing itself: --timings tables, OpenTelemetry export checked
# by an independent OTLP receiver on loopback (tests/timing/receiver.js:
# OpenTelemetry JS's generated protobuf code, and the OTLP/JSON rules), and
# the flamechart of a tracing-flame file.  Commands here only read from the
# shared Engine (ping, list by label).

load test_helper

setup_file() {
    common_setup_file
    [ -d "$REPO/tests/timing/node_modules/@opentelemetry/otlp-transformer" ] || {
        echo "tests/timing/node_modules is missing: run scripts/install-deps.sh" >&3
        return 1
    }
    export PROJ=$BATS_FILE_TMPDIR/proj
    mkdir -p "$PROJ"
    printf 'name: %s\nservices:\n  one:\n    image: debian:bookworm-slim\n' "$PH_TEST_PROJECT" > "$PROJ/compose.yaml"
    # Nothing from the caller's environment decides where spans go.
    unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_SDK_DISABLED TRACEPARENT TRACESTATE \
        OTEL_EXPORTER_OTLP_PROTOCOL OTEL_SERVICE_NAME OTEL_RESOURCE_ATTRIBUTES OTEL_EXPORTER_OTLP_HEADERS PH_TIMINGS
}

teardown() { stop_receiver; }
teardown_file() { common_teardown_file; }

# start_receiver [MODE]: RX_PORT, RX_OUT (one JSON line per request).
start_receiver() {
    RX_OUT=$BATS_TEST_TMPDIR/received.jsonl
    local portfile=$BATS_TEST_TMPDIR/rx.port
    rm -f "$RX_OUT" "$portfile"
    node "$REPO/tests/timing/receiver.js" "$portfile" "$RX_OUT" "${1:-ok}" 3>&- &
    RX_PID=$!
    WAIT_SECONDS=30 wait_for test -s "$portfile"
    RX_PORT=$(cat "$portfile")
}

stop_receiver() {
    [ -z "${RX_PID:-}" ] || { kill "$RX_PID" 2>/dev/null; wait "$RX_PID" 2>/dev/null || true; }
    RX_PID=
}

phs() { timeout 120 "$PH" -f "$PROJ/compose.yaml" -o "$BATS_TEST_TMPDIR/out" "$@"; }

# The spans of the only request, one per line, as jq sees them.
spans() { jq -c '.spans[]' "$RX_OUT"; }

# The tree checks every export must pass: one trace, one root, every parent
# present, children within their parents' time.
check_one_tree() {
    local want_parent=${1:-}
    [ "$(wc -l < "$RX_OUT")" -eq 1 ]
    jq -e '.error == null' "$RX_OUT"
    jq -e '[.spans[].traceId] | unique | length == 1' "$RX_OUT"
    jq -e --arg p "$want_parent" '[.spans[] | select(.parentSpanId == $p)] | length == 1' "$RX_OUT"
    jq -e '(.spans | map({key: .spanId, value: .}) | from_entries) as $by
           | [.spans[] | select(.parentSpanId != "" and ($by[.parentSpanId] | not))] | length == 0' "$RX_OUT" ||
        [ -n "$want_parent" ]
    jq -e '(.spans | map({key: .spanId, value: .}) | from_entries) as $by
           | [.spans[] | select($by[.parentSpanId]) | . as $c | $by[.parentSpanId] as $p
              | select(($c.start | tonumber) < ($p.start | tonumber) or ($c.end | tonumber) > ($p.end | tonumber))]
           | length == 0' "$RX_OUT"
    jq -e '[.spans[] | select((.end | tonumber) < (.start | tonumber))] | length == 0' "$RX_OUT"
}

@test "every stage arrives as a span over OTLP/protobuf, one tree that nests" {
    start_receiver
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT run phs --timings status
    [ "$status" -eq 0 ]
    [[ "$output" == *"GET /containers/json"* ]]
    jq -e '.path == "/v1/traces" and .method == "POST" and .contentType == "application/x-protobuf"' "$RX_OUT"
    check_one_tree ""
    # As many spans as the table has stages.
    stages=$(printf '%s\n' "$output" | sed -n '/SELF  CATEGORY/,/^$/p' | grep -vc -e 'SELF  CATEGORY' -e '^$')
    [ "$(jq '.spans | length' "$RX_OUT")" -eq "$stages" ]
    jq -e '.resource["service.name"] == "profharness" and .scope.name == "profharness"' "$RX_OUT"
    jq -e '.spans[] | select(.parentSpanId == "") | .name == "status" and .kind == 1
           and .attributes["profharness.command"] == "status" and .status.code == 0' "$RX_OUT"
    # Engine calls are CLIENT spans named by their endpoint template.
    jq -e '[.spans[] | select(.name == "GET /containers/json")][0]
           | .kind == 3 and .attributes["profharness.category"] == "engine"
             and .attributes["http.response.status_code"] == "200" and .attributes["profharness.bytes_in"] > 0' \
        "$RX_OUT"
}

@test "OTLP/JSON, the signal's own endpoint, service name, resource attributes and headers" {
    start_receiver
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:$RX_PORT/custom/traces \
        OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9/ignored \
        OTEL_EXPORTER_OTLP_PROTOCOL=http/json OTEL_SERVICE_NAME=ph-ci \
        OTEL_RESOURCE_ATTRIBUTES='deployment.environment=ci,team=a%2Cb' \
        OTEL_EXPORTER_OTLP_HEADERS='authorization=Bearer%20t0k,x-ph-test=1' run phs stop one
    [ "$status" -eq 0 ]
    jq -e '.path == "/custom/traces" and .contentType == "application/json"' "$RX_OUT"
    check_one_tree ""
    jq -e '.resource["service.name"] == "ph-ci" and .resource["deployment.environment"] == "ci"
           and .resource.team == "a,b"' "$RX_OUT"
    jq -e '.headers.authorization == "Bearer t0k" and .headers["x-ph-test"] == "1"' "$RX_OUT"
    jq -e '.spans[] | select(.parentSpanId == "") | .name == "stop" and .attributes["profharness.args"] == "one"' \
        "$RX_OUT"
}

@test "TRACEPARENT makes the command join the caller's trace" {
    start_receiver
    TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 TRACESTATE='ci=job7' \
        OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT run phs status
    [ "$status" -eq 0 ]
    check_one_tree 00f067aa0ba902b7
    jq -e '[.spans[].traceId] | unique == ["4bf92f3577b34da6a3ce929d0e0e4736"]' "$RX_OUT"
    jq -e '.spans[] | select(.parentSpanId == "00f067aa0ba902b7") | .name == "status" and .traceState == "ci=job7"' \
        "$RX_OUT"
    # A malformed one starts a trace of its own.
    rm -f "$RX_OUT"
    TRACEPARENT=00-XYZ OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT run phs status
    [ "$status" -eq 0 ]
    check_one_tree ""
}

@test "a failed command's span is ERROR with its message; the exit status is the command's" {
    start_receiver
    DOCKER_HOST=unix:///nonexistent.sock OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT run phs status
    [ "$status" -eq 1 ]
    [[ "$output" == *"cannot reach the Docker Engine"* ]]
    check_one_tree ""
    jq -e '.spans[] | select(.parentSpanId == "") | .status.code == 2
           and (.status.message | contains("cannot reach the Docker Engine at unix:///nonexistent.sock"))' "$RX_OUT"
    jq -e '.spans[] | select(.name == "GET /_ping") | .status.code == 2
           and (.status.message | contains("Couldn'"'"'t connect"))' "$RX_OUT"
}

@test "an unreachable, failing or silent collector costs one warning, never the command" {
    # Nothing listens on port 9 of loopback.
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9 run phs status
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c 'OpenTelemetry')" -eq 1 ]
    [[ "$output" == *"OpenTelemetry: the spans were not exported to http://127.0.0.1:9/v1/traces"* ]]
    [[ "$output" == *"one "*"absent"* ]]

    start_receiver fail
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT OTEL_EXPORTER_OTLP_PROTOCOL=http/json run phs status
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c 'OpenTelemetry')" -eq 1 ]
    [[ "$output" == *"answered HTTP 500: {\"code\":13,\"message\":\"receiver told to fail\"}"* ]]
    stop_receiver

    # A collector that never answers: the export's own timeout ends it.
    start_receiver hang
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT OTEL_EXPORTER_OTLP_TIMEOUT=500 run phs status
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -c 'OpenTelemetry')" -eq 1 ]
    [[ "$output" == *"Operation timed out"* ]]
}

@test "no endpoint, or OTEL_SDK_DISABLED, exports nothing; a bad setting is one warning" {
    start_receiver
    run phs status
    [ "$status" -eq 0 ]
    OTEL_SDK_DISABLED=true OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT run phs status
    [ "$status" -eq 0 ]
    [[ "$output" != *OpenTelemetry* ]]
    # The command has returned, and the export is part of it: nothing came.
    [ ! -e "$RX_OUT" ]
    OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RX_PORT run phs status
    [ "$status" -eq 0 ]
    [[ "$output" == *"OpenTelemetry: no export: OTEL_EXPORTER_OTLP_PROTOCOL=\`grpc\`"* ]]
    [ ! -e "$RX_OUT" ]
}

@test "--timings prints the stages and the categories; sorted; PH_TIMINGS; stop prints one line" {
    run phs --timings status
    [ "$status" -eq 0 ]
    [[ "$output" == *"SELF  CATEGORY         I/O  STAGE"* ]]
    [[ "$output" =~ harness\ +-\ +status ]]
    [[ "$output" =~ engine\ +[0-9]+\ B\ +\ \ GET\ /_ping ]]
    [[ "$output" == *"SELF       %        I/O  CATEGORY"* ]]
    [[ "$output" =~ 100\.0\ +[0-9.]+\ (B|KiB|MiB)\ +total\ \(wall\) ]]
    # The status table is data on stdout; the timings are on stderr.
    out=$(phs --timings status 2>/dev/null)
    [[ "$out" != *CATEGORY* ]]
    PH_TIMINGS=sorted run phs status
    [[ "$output" == *"SELF  CATEGORY"* ]]
    run phs --timings=nonsense status
    [ "$status" -eq 2 ]
    PH_TIMINGS=yes run phs status
    [ "$status" -eq 2 ]
    # stop: one line by default, not the tables.
    run phs stop one
    [ "$status" -eq 0 ]
    [[ "$output" =~ stop:\ [0-9.]+\ (us|ms|s)\ \((engine|harness) ]]
    [[ "$output" != *CATEGORY* ]]
    run phs status
    [[ "$output" != *"status:"* ]]
}

@test "a plain project's commands ask no GET /info: whether it is a stack is one listing of its services" {
    for cmd in status stop "restore one"; do
        # shellcheck disable=SC2086 # the command's words
        run phs --timings $cmd
        echo "$cmd: $output"
        [ "$status" -eq 0 ]
        ! grep -q 'GET /info' <<<"$output" || false
        [ "$(grep -c 'GET /services' <<<"$output")" -eq 1 ]
    done
}

@test "flamegraph --flamechart draws a tracing-flame file in time order" {
    # tests/timing/tracing.folded is written to tracing-flame's format
    # specification (see its header).  Like inferno's --flamechart the
    # lines are not sorted and only consecutive identical frames merge, so
    # the two threads alternate as they ran and demo::handle appears twice.
    # Unlike inferno, which reverses the lines (jonhoo/inferno#236, open),
    # time runs left to right, as in flamegraph.pl --flamechart.
    run "$PH" flamegraph --flamechart "$REPO/tests/timing/tracing.folded"
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/chart.svg"
    [[ "$output" == *">Flame Chart<"* ]]
    lanes=$(grep -o '<title>ThreadId([0-9])-[a-z]* ([0-9,]* samples[^<]*</title><rect x="[0-9.]*"' \
                "$BATS_TEST_TMPDIR/chart.svg" | sed -E 's/<title>([^ ]*) \(([0-9,]*) samples.*x="([0-9.]*)"/\3 \1 \2/' |
                sort -n | cut -d' ' -f2- | tr '\n' '|')
    [ "$lanes" = "ThreadId(1)-main 1,299,711|ThreadId(2)-flusher 52,100|ThreadId(1)-main 7,031|ThreadId(2)-flusher 300,700|ThreadId(1)-main 994,120|" ]
    [ "$(grep -c '<title> demo::handle:src/main.rs:30 (' "$BATS_TEST_TMPDIR/chart.svg")" -eq 2 ]
    # As a flamegraph, identical stacks merge.
    run "$PH" flamegraph "$REPO/tests/timing/tracing.folded"
    [[ "$output" == *"<title> demo::handle:src/main.rs:30 (2,190,570 samples"* ]]
}

# check_tables OUTPUT COMMAND: both tables, the command as the root stage.
check_tables() {
    [[ "$1" == *"SELF  CATEGORY         I/O  STAGE"* ]]
    [[ "$1" =~ harness\ +-\ +$2 ]]
    [[ "$1" == *"SELF       %        I/O  CATEGORY"* ]]
    [[ "$1" =~ 100\.0\ +[0-9.]+\ (B|KiB|MiB)\ +total\ \(wall\) ]]
}

# check_run_dir DIR COMMAND: run.json keeps the whole tree so far with its
# trace id; harness.folded is tracing-flame's format; the Chrome trace
# loads and its events nest.
check_run_dir() {
    local dir=$1 cmd=$2
    jq -e --arg c "$cmd" '.timing.name == $c and .timing.category == "harness" and (.trace_id | test("^[0-9a-f]{32}$"))' \
        "$dir/run.json"
    # The service's own stage carries service, mode, run id, container id.
    jq -e '[.. | objects | select(.name? == "stop worker")][0].attributes
           | ."profharness.service" == "worker" and ."profharness.mode" == "strace"
             and (."profharness.run.id" | endswith("-strace")) and (."container.id" | length) == 64' "$dir/run.json"
    jq -e '[.. | objects | select(.category? == "collect" and .bytes_out? > 0)] | length >= 1' "$dir/run.json"
    jq -e '[.. | objects | select(.concurrent? == true)] | length >= 2' "$dir/run.json"
    grep -qE "^ThreadId\(1\)-main; $cmd [0-9]+$" "$dir/harness.folded"
    grep -qE "^ThreadId\(1\)-main; $cmd(; [^;]+)*; stop worker; stream and extract [^;]+; GET /containers/\{id\}/archive [0-9]+$" \
        "$dir/harness.folded"
    ! grep -vE '^ThreadId\([0-9]+\)[^ ]*(; [^;]+)* [0-9]+$' "$dir/harness.folded" || false
    python3 - "$dir/harness.trace.json" "$cmd" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
assert ev[0]["name"] == sys.argv[2], ev[0]
lanes, nested = {}, 0
for e in ev:
    lanes.setdefault((e["pid"], e["tid"]), []).append(e)
for es in lanes.values():
    es.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in es:
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        # inside its enclosing event, or after it: never across its end
        assert not stack or e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + 0.002, (e, stack[-1])
        nested += len(stack) >= 2
        stack.append(e)
assert nested > 0, "no event nests two deep"
assert len(lanes) >= 2, "the extractor's thread has no lane of its own"
PY
}

@test "start and stop of the demo: tables with categories, I/O, concurrency; every run dir keeps the timings" {
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
    # A start over a profiled run stops and collects it first.
    run ph --timings start --mode strace worker
    echo "$output"
    [ "$status" -eq 0 ]
    check_tables "$output" start
    [[ "$output" =~ harness\ +-\ +\ +start\ worker ]]
    [[ "$output" =~ image\ +-\ +\ +service\ image\ profharness-demo- ]]
    [[ "$output" =~ profiler\ +-\ +\ +the\ strace\ profiler\ flushes\ and\ exits ]]
    [[ "$output" =~ engine\ +[0-9.]+\ (B|KiB)\ +\|\|\ POST\ /containers/\{id\}/wait ]]
    [[ "$output" =~ collect\ +[0-9.]+\ (B|KiB|MiB)\ +\|\|\ extract:\ write\ the\ files ]]
    [[ "$output" =~ [0-9.]+\ (B|KiB|MiB)\ +profiler$'\n' || "$output" =~ \ +-\ +profiler$'\n' ]]
    first=$(readlink -f "$OUT/worker/latest")
    check_run_dir "$first" start

    run ph --timings stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    check_tables "$output" stop
    [[ "$output" =~ harness\ +-\ +\ +stop\ worker ]]
    [[ "$output" =~ host\ +-\ +\ +rename\ into\ place ]]
    [[ "$output" =~ host\ +-\ +\ +link\ and\ give\ the\ files\ to\ the\ invoker ]]
    [[ "$output" =~ host\ +-\ +\ +write\ run\.json\ and\ the\ harness\ timings ]]
    [[ "$output" =~ engine\ +[0-9.]+\ (B|KiB|MiB)\ +GET\ /containers/\{id\}/archive ]]
    # The run's report and the index, with the bytes written.
    [[ "$output" =~ report\ +[0-9.]+\ (B|KiB|MiB)\ +write\ report\.html\ and\ summary\.json ]]
    [[ "$output" =~ report\ +[0-9.]+\ (B|KiB|MiB)\ +write\ the\ index\ of\ runs ]]
    second=$(readlink -f "$OUT/worker/latest")
    [ "$second" != "$first" ]
    check_run_dir "$second" stop
    # Every run dir has them; no old flat stage list.
    for d in "$OUT"/worker/*-strace; do
        [ -s "$d/run.json" ]
        [ -s "$d/harness.folded" ]
        [ -s "$d/harness.trace.json" ]
        jq -e 'has("stages") | not' "$d/run.json"
    done

    # By default, stop prints one summary line and no table.
    run ph start --mode strace worker
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep -cE '^stop: [0-9.]+ (us|ms|s) \(.*profiler [0-9.]+ (us|ms|s)')" -eq 1 ]
    [[ "$output" != *CATEGORY* ]]
    [[ "$output" != *"stage timings"* ]]
}
