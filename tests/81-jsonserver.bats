#!/usr/bin/env bats
# Node as a real service from npm nobody here wrote is: json-server
# (express and lowdb, a REST API over a JSON file; tests/jsonserver) on
# Debian's nodejs, nothing changed in it for profharness.  Searches,
# sorted pages and embedded lists go to it over loopback while the
# flamegraph sampler runs; then the report speaks JavaScript: its
# headline names a JS function as `name (file)`, V8's perf-map form
# (`LazyCompile:*name file:line`, its tier marker) cleaned away.

load test_helper

JSC="$REPO/tests/jsonserver/compose.yaml"
SVC="$REPO/tests/jsonserver/svc"
# CPU time the load makes the service use (its cgroup's): a condition, not a pace
CPU_NS=10000000000

pj() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$JSC" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

setup_file() {
    common_setup_file
    # npm installs on the host (in an image build it fails here on a
    # certificate); the lock says what, so the tag is the inputs' hash
    if ! cmp -s "$SVC/package-lock.json" "$SVC/node_modules/.package-lock.json.ph" 2>/dev/null; then
        (cd "$SVC" && rm -rf node_modules && npm ci --no-audit --no-fund --loglevel=error >&3 2>&1) || return 1
        cp "$SVC/package-lock.json" "$SVC/node_modules/.package-lock.json.ph"
    fi
    PH_JSONSERVER_TAG=$(cd "$SVC" && find . -path ./node_modules -prune -o -type f -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum | sha256sum | cut -c1-16)
    export PH_JSONSERVER_TAG
    local base="http://127.0.0.1:$DEMO_PORT" i
    export URLS=$BATS_FILE_TMPDIR/urls
    : > "$URLS"
    for i in $(seq 20); do
        printf 'url = "%s/posts?q=profiling+%d"\noutput = /dev/null\n' "$base" "$i" >> "$URLS"
        printf 'url = "%s/posts?_sort=title&_order=desc&_page=%d&_limit=20"\noutput = /dev/null\n' "$base" "$i" >> "$URLS"
        printf 'url = "%s/posts/%d?_embed=comments"\noutput = /dev/null\n' "$base" "$i" >> "$URLS"
        printf 'url = "%s/comments?postId=%d"\noutput = /dev/null\n' "$base" "$i" >> "$URLS"
    done
    pj setup >&3 2>&1
}
teardown_file() {
    pj down api >/dev/null 2>&1 || true
    common_teardown_file
}
teardown() {
    common_teardown
    pj down api >/dev/null 2>&1 || true
}

answers() { curl -fsS -o /dev/null --max-time 10 "http://127.0.0.1:$DEMO_PORT/posts/1" 2>/dev/null; }

loaded() {
    curl -fsS --max-time 60 -K "$URLS" || return 2
    [ "$(cpu_ns "$1")" -ge $(( BASE_NS + CPU_NS )) ]
}

@test "json-server × flamegraph: the headline names a JavaScript function, V8's tier marker cleaned away" {
    local c=${PH_TEST_PROJECT}-api-flamegraph sj headline
    run pj start --mode flamegraph api
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for answers
    BASE_NS=$(cpu_ns "$c")
    WAIT_SECONDS=300 wait_for loaded "$c"
    run pj stop api
    [ "$status" -eq 0 ]
    sj=$(readlink -f "$OUT/api/latest")/summary.json
    headline=$(jq -r .headline "$sj")
    echo "# json-server × flamegraph: $headline" >&3
    jq -r '.problems[]' "$sj" | sed 's/^/#   /' >&3
    # `name (file.js:N)` or `name (node:module:N)`, with no V8 prefix
    [[ "$headline" =~ \ \(([^\)]*\.js|node:[a-z_/]+)(:[0-9]+)?\) ]]
    [[ "$headline" != *LazyCompile:* && "$headline" != *"Function:"* ]]
}

# inspector_open CONTAINER: something listens on the service's 127.0.0.1:9229
inspector_open() {
    dk exec "$1" node -e "require('net').connect(9229, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))"
}

@test "json-server × attach flamegraph: joined through its inspector while serving, named, serving on, the inspector closed" {
    local c sj headline t0 stop_s dir
    run pj restore api
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for answers
    c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=api" | head -n 1)
    [ -n "$c" ]
    ! inspector_open "$c" || false
    run pj attach --mode flamegraph api
    [ "$status" -eq 0 ]
    BASE_NS=$(cpu_ns "$c")
    WAIT_SECONDS=300 wait_for loaded "$c"
    t0=$SECONDS
    run pj stop api
    stop_s=$((SECONDS - t0))
    [ "$status" -eq 0 ]
    # the same container serves on, its inspector closed again
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    answers
    ! inspector_open "$c" || false
    dir=$(readlink -f "$OUT/api/latest")
    sj=$dir/summary.json
    headline=$(jq -r .headline "$sj")
    echo "# json-server × attach flamegraph (stop ${stop_s} s): $headline" >&3
    grep -h 'ph-nodeinsp' "$dir/service.log" | sed 's/^/#   /' >&3
    # Chrome DevTools' profile kept; the folded stacks name json-server's
    # own JavaScript (express, lowdb, lodash under node_modules), by file:line
    [ "$(jq '.nodes | length' "$dir/profile.cpuprofile")" -gt 10 ]
    grep -q 'JS:[^;]* /srv/node_modules/[^;]*:[0-9][0-9]*_\[j\]' "$dir/stacks.folded"
    [ -s "$dir/profile.pb.gz" ]
    [ -s "$dir/flamegraph.svg" ]
    [[ "$headline" =~ \ \(([^\)]*\.js|node:[a-z_/]+)(:[0-9]+)?\) ]]
}

# attach --mode wall while json-server waits for requests: V8 samples its
# JavaScript thread on the wall clock, running or not, and a thread
# waiting in the event loop is V8's (idle): off the CPU, `[off-cpu]`, the
# wall mode's views and report (summary.json's wall.offcpu_percent).  One
# request before, none during: most samples are its waiting.
@test "json-server × attach wall: an idle server's waiting is off-CPU, the inspector closed again" {
    local c dir sj off t0 stop_s v
    run pj restore api
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for answers
    c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=api" | head -n 1)
    [ -n "$c" ]
    run pj attach --mode wall api
    [ "$status" -eq 0 ]
    sampling() { dk logs "${PH_TEST_PROJECT}-api-attach-wall" 2>&1 | grep -q "V8's profiler samples"; }
    WAIT_SECONDS=60 wait_for sampling
    answers
    sleep 5 # idle: the samples of it waiting are what this holds
    t0=$SECONDS
    run pj stop api
    stop_s=$((SECONDS - t0))
    [ "$status" -eq 0 ]
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    answers
    ! inspector_open "$c" || false
    dir=$(readlink -f "$OUT/api/latest")
    sj=$dir/summary.json
    v=$OUT/api # the latest of each artifact, as the wall mode's
    off=$(awk '{ n = $NF; t += n } /;\[off-cpu\] [0-9]+$/ { o += $NF } END { if (t) printf "%d %d\n", 100 * o / t, t }' \
        "$v/stacks.folded")
    echo "# json-server × attach wall (stop ${stop_s} s): ${off% *} % of ${off#* } samples off-CPU; $(jq -r .headline "$sj")" >&3
    grep -h 'ph-nodeinsp' "$dir/service.log" | sed 's/^/#   /' >&3
    [ "${off% *}" -gt 50 ]
    # the off-CPU view is those samples, the on-CPU one the rest
    [ -s "$v/offcpu.folded" ]
    ! grep -v ';\[off-cpu\] [0-9]*$' "$v/offcpu.folded" || false
    ! grep -q ';\[off-cpu\] ' "$v/oncpu.folded" || false
    [ "$(jq '.wall.offcpu_percent > 50' "$sj")" = true ]
    [ -s "$v/profile.pb.gz" ]
    [ "$(jq '.nodes | length' "$dir/profile.cpuprofile")" -gt 1 ]
}
