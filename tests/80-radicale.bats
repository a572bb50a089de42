#!/usr/bin/env bats
# Python as a real service nobody here wrote is: Debian bookworm's
# Radicale (a CalDAV server, python3.11; tests/radicale), nothing changed
# in it for profharness.  CalDAV load (calendar queries over 200 events,
# folder listings) goes to it over loopback while the flamegraph sampler
# runs; then the report speaks Python: its headline names a Python
# function (`name (file.py)`), and the samples the report itself counts
# as having no function name are at most UNNAMED_MAX % (the interpreter
# running named Python code is that code, not unnamed).  The same
# Radicale joined while it serves (attach: read from outside the process)
# is named the same way, and serves on.

load test_helper

RADC="$REPO/tests/radicale/compose.yaml"
UNNAMED_MAX=5
# CPU time the load makes Radicale use (its cgroup's): a condition, not a pace
CPU_NS=10000000000

pr() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$RADC" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

setup_file() {
    common_setup_file
    PH_RADICALE_TAG=$(cd "$REPO/tests/radicale/svc" && find . -type f -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum | sha256sum | cut -c1-16)
    export PH_RADICALE_TAG
    export BASE="http://127.0.0.1:$DEMO_PORT/u"
    export QUERY=$BATS_FILE_TMPDIR/query.xml URLS=$BATS_FILE_TMPDIR/urls
    printf '%s' '<?xml version="1.0"?><C:calendar-query xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><prop><getetag/><C:calendar-data/></prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"/></C:comp-filter></C:filter></C:calendar-query>' > "$QUERY"
    # a round: 10 calendar queries and 10 listings (one curl, its connection kept)
    : > "$URLS"
    for _ in $(seq 10); do
        printf 'url = "%s/cal/"\nrequest = "REPORT"\nheader = "Depth: 1"\nheader = "Content-Type: application/xml"\ndata = "@%s"\nuser = "u:x"\noutput = /dev/null\nnext\n' \
            "$BASE" "$QUERY" >> "$URLS"
        printf 'url = "%s/cal/"\nrequest = "PROPFIND"\nheader = "Depth: 1"\nuser = "u:x"\noutput = /dev/null\nnext\n' \
            "$BASE" >> "$URLS"
    done
    sed -i '$d' "$URLS" # no `next` after the last
    pr setup >&3 2>&1
}
teardown_file() {
    pr down radicale >/dev/null 2>&1 || true
    common_teardown_file
}
teardown() {
    common_teardown
    pr down radicale >/dev/null 2>&1 || true
}

answers() { curl -fsS -o /dev/null --max-time 10 -u u:x -X PROPFIND -H 'Depth: 0' "$BASE/" 2>/dev/null; }

# a calendar of 200 events, made anew in each run's container
calendar() {
    local i
    curl -fsS -o /dev/null -u u:x -X MKCOL -H 'Content-Type: application/xml' --data \
        '<?xml version="1.0"?><mkcol xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><set><prop><resourcetype><collection/><C:calendar/></resourcetype></prop></set></mkcol>' \
        "$BASE/cal/" || return 1
    for i in $(seq 200); do
        printf 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//profharness//test//EN\r\nBEGIN:VEVENT\r\nUID:event-%d\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260101T%02d0000Z\r\nDTEND:20260101T%02d3000Z\r\nSUMMARY:event %d with a description\r\nDESCRIPTION:a longer text\\, with commas\\, to parse\r\nLOCATION:room %d\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n' \
            "$i" $((i % 24)) $((i % 24)) "$i" "$i" |
            curl -fsS -o /dev/null -u u:x -X PUT -H 'Content-Type: text/calendar' --data-binary @- "$BASE/cal/e$i.ics" ||
            return 1
    done
}

loaded() {
    curl -fsS --max-time 60 -K "$URLS" || return 2
    [ "$(cpu_ns "$1")" -ge $(( BASE_NS + CPU_NS )) ]
}

@test "radicale × flamegraph: the headline names a Python function, at most 5 % of samples unnamed" {
    local c=${PH_TEST_PROJECT}-radicale-flamegraph sj headline unnamed
    run pr start --mode flamegraph radicale
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for answers
    calendar
    BASE_NS=$(cpu_ns "$c")
    WAIT_SECONDS=300 wait_for loaded "$c"
    run pr stop radicale
    [ "$status" -eq 0 ]
    sj=$(readlink -f "$OUT/radicale/latest")/summary.json
    headline=$(jq -r .headline "$sj")
    # the report's own figure: "N % of the samples have no function name" (none: 0)
    unnamed=$(jq -r '[.problems[] | capture("^(?<p>[0-9.]+) % of the samples have no function name") | .p][0] // "0"' "$sj")
    echo "# radicale × flamegraph: $headline; unnamed $unnamed %" >&3
    jq -r '.problems[]' "$sj" | sed 's/^/#   /' >&3
    [[ "$headline" =~ \ \([^\)]*\.py\) ]]
    awk -v u="$unnamed" -v m="$UNNAMED_MAX" 'BEGIN { exit !(u <= m) }'
}

@test "radicale × attach flamegraph: joined while serving, its Python named, serving on" {
    local c sj headline unnamed t0 stop_s dir
    run pr restore radicale
    [ "$status" -eq 0 ]
    WAIT_SECONDS=120 wait_for answers
    c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=radicale" | head -n 1)
    [ -n "$c" ]
    calendar
    run pr attach --mode flamegraph radicale
    [ "$status" -eq 0 ]
    BASE_NS=$(cpu_ns "$c")
    WAIT_SECONDS=300 wait_for loaded "$c"
    t0=$SECONDS
    run pr stop radicale
    stop_s=$((SECONDS - t0))
    [ "$status" -eq 0 ]
    # the same container serves on, its calendar still there
    [ "$(dk inspect -f '{{.State.Running}}' "$c")" = true ]
    curl -fsS -o /dev/null --max-time 10 -u u:x "$BASE/cal/e1.ics"
    dir=$(readlink -f "$OUT/radicale/latest")
    sj=$dir/summary.json
    headline=$(jq -r .headline "$sj")
    unnamed=$(jq -r '[.problems[] | capture("^(?<p>[0-9.]+) % of the samples have no function name") | .p][0] // "0"' "$sj")
    echo "# radicale × attach flamegraph (stop ${stop_s} s): $headline; unnamed $unnamed %" >&3
    # Radicale's own handlers of the load's two requests, by file:line, read
    # from outside the process
    cat "$dir"/stacks-*.folded > "$BATS_TEST_TMPDIR/all.folded"
    grep -q 'ApplicationPartReport[._A-Za-z]* (report\.py:[0-9]*)_\[p\]' "$BATS_TEST_TMPDIR/all.folded"
    grep -q 'ApplicationPartPropfind[._A-Za-z]* (propfind\.py:[0-9]*)_\[p\]' "$BATS_TEST_TMPDIR/all.folded"
    # the artifacts a started run has
    compgen -G "$dir/profile-*.pb.gz" > /dev/null
    [ -s "$dir/report-flamegraph.svg" ]
    [[ "$headline" =~ \ \([^\)]*\.py\) ]]
    awk -v u="$unnamed" -v m="$UNNAMED_MAX" 'BEGIN { exit !(u <= m) }'
}
