#!/usr/bin/env bats
# Java on a JRE alone, as most Java service images are: Debian bookworm's
# tomcat10 and its examples (tests/tomcat), no jcmd in the image, nothing
# changed in it for profharness.  Load goes to its example servlets and
# JSPs over loopback while perf samples it, started under perf and
# attached to; then: the time spent in JIT code no perf map names (perf's
# `[perf-N.map]` as the leaf) is at most UNNAMED_MAX % of all, and the JIT
# frames named are Tomcat's own Java methods.  The maps come from the
# JVM's attach socket (ph-jattach, before the stop) and, for a started
# run, from the map the JVM writes as it exits (DumpPerfMapAtExit), read
# from the stopped container.  Under the heap mode its Java objects
# are sampled (JVMTI) and named by Java method.

load test_helper

TOMCATC="$REPO/tests/tomcat/compose.yaml"
UNNAMED_MAX=5
# CPU time the load makes Tomcat use after it answers (its cgroup's): a
# condition, not a pace
CPU_NS=10000000000
# ... and before an attach
WARM_NS=10000000000

pt() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$TOMCATC" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

setup_file() {
    common_setup_file
    PH_TOMCAT_TAG=$(cd "$REPO/tests/tomcat/svc" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum |
        sha256sum | cut -c1-16)
    export PH_TOMCAT_TAG
    # the example pages the load asks for, 40 of each a round (one curl, its connections kept)
    export URLS=$BATS_FILE_TMPDIR/urls
    local base="http://127.0.0.1:$DEMO_PORT/examples" u
    : > "$URLS"
    for _ in $(seq 40); do
        for u in servlets/servlet/HelloWorldExample servlets/servlet/RequestInfoExample \
            servlets/servlet/RequestHeaderExample "jsp/num/numguess.jsp?guess=50" jsp/dates/date.jsp \
            jsp/jsp2/el/basic-arithmetic.jsp "jsp/jsp2/el/functions.jsp?foo=JSP+2.0" jsp/jsp2/simpletag/repeat.jsp; do
            printf 'url = "%s/%s"\noutput = /dev/null\n' "$base" "$u" >> "$URLS"
        done
    done
    pt setup >&3 2>&1
}
teardown_file() {
    pt down tomcat >/dev/null 2>&1 || true
    common_teardown_file
}
teardown() {
    common_teardown
    pt down tomcat >/dev/null 2>&1 || true
}

answers() {
    curl -fsS -o /dev/null --max-time 10 "http://127.0.0.1:$DEMO_PORT/examples/servlets/servlet/HelloWorldExample" \
        2>/dev/null
}

# loaded CONTAINER: a round of requests to the examples, then whether its
# processes have used CPU_NS more than they had when the load began
# ($BASE_NS).  A round that fails is tried again, until the deadline.
loaded() {
    curl -fsS --max-time 60 -K "$URLS" || return 2
    [ "$(cpu_ns "$1")" -ge $(( BASE_NS + CPU_NS )) ]
}

# load CONTAINER [NS]: Tomcat answers, then rounds of requests until it
# has used NS (CPU_NS) more CPU time.
load_tomcat() {
    WAIT_SECONDS=120 wait_for answers
    BASE_NS=$(cpu_ns "$1")
    CPU_NS=${2:-$CPU_NS} WAIT_SECONDS=300 wait_for loaded "$1"
}

# shares FILE: "UNNAMED ANY JIT TOMCAT STACKS": per cent of the counts
# (perf's sample periods) whose leaf is an unnamed JIT frame (perf's
# `[perf-N.map]`: where the time went, as the issue measured it), with
# such a frame anywhere in the stack, with a frame a perf map named
# (`_[j]`), with one of Tomcat's own methods among those; and the number
# of stacks.
shares() {
    awk '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s); t += n; k++
          m = split(s, f, ";")
          if (f[m] ~ /^\[perf-[0-9]+\.map\]$/) l += n
          if (s ~ /(^|;)\[perf-[0-9]+\.map\](;|$)/) u += n
          if (index(s, "_[j]")) j += n
          if (s ~ /(^|;)[^;]*org\.apache\.(catalina|coyote|tomcat|jasper)\.[^;]*_\[j\]/) a += n }
        END { if (t == 0) { print "0 0 0 0 0"; exit }
              printf "%.1f %.1f %.1f %.1f %d\n", 100 * l / t, 100 * u / t, 100 * j / t, 100 * a / t, k }' "$1"
}

# stopped_named LABEL: stop the run; its shares said and left for the
# test to hold (F the folded stacks, T their count, LEAF_UNNAMED the %
# in JIT code no map names, TOMCAT_SHARE Tomcat's methods' %).
stopped_named() {
    local l u j a
    run pt stop tomcat
    [ "$status" -eq 0 ]
    echo "$output" | grep -E 'perf-maps|ph-jattach' | sed 's/^/# /' >&3 || true
    F=$(readlink -f "$OUT/tomcat/latest/stacks.folded")
    read -r l u j a T <<< "$(shares "$F")"
    echo "# tomcat × $1: [perf-N.map] $l % as the leaf ($u % anywhere in the stack)," \
        "perf-map-named JIT $j %, Tomcat's methods $a % ($T stacks)" >&3
    LEAF_UNNAMED=$l TOMCAT_SHARE=$a
}

@test "tomcat × perf: its Java methods named, the JVM's map from its attach socket and its exit" {
    run pt start --mode perf tomcat
    [ "$status" -eq 0 ]
    load_tomcat "${PH_TEST_PROJECT}-tomcat-perf"
    stopped_named perf
    ls "$(dirname "$F")"/perf-maps/perf-*.map
    [ "$T" -gt 100 ]
    awk -v l="$LEAF_UNNAMED" -v m="$UNNAMED_MAX" 'BEGIN { exit !(l <= m) }'
    awk -v a="$TOMCAT_SHARE" 'BEGIN { exit !(a >= 1) }'
    grep -Eq 'org\.apache\.(catalina|coyote)\.[^;]*_\[j\]' "$F"
}

# attached MODE: Tomcat restored (its container into $C) and attached to
# under MODE as a running service is: warm, its JSPs compiled and its JIT
# settled (the map names code that is there when it is asked for; code
# the JVM has compiled again since and freed stays unnamed), not in its
# first seconds; then loaded.
attached() {
    run pt restore tomcat
    [ "$status" -eq 0 ]
    C=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=tomcat" | head -n 1)
    load_tomcat "$C" "$WARM_NS"
    run pt attach --mode "$1" tomcat
    [ "$status" -eq 0 ]
    load_tomcat "$C"
}

@test "tomcat × attach --mode perf: its Java methods named, the JVM's map from its attach socket" {
    attached perf
    stopped_named attach-perf
    # detached, not restarted: the same container still runs
    [ "$(dk inspect -f '{{.State.Running}} {{.RestartCount}}' "$C")" = "true 0" ]
    ls "$(dirname "$F")"/perf-maps/perf-*.map
    [ "$T" -gt 100 ]
    awk -v l="$LEAF_UNNAMED" -v m="$UNNAMED_MAX" 'BEGIN { exit !(l <= m) }'
    awk -v a="$TOMCAT_SHARE" 'BEGIN { exit !(a >= 1) }'
    grep -Eq 'org\.apache\.(catalina|coyote)\.[^;]*_\[j\]' "$F"
}

@test "tomcat × attach --mode flamegraph: the sampler joins the running JVM; Tomcat's methods named, the Java view's headline, still serving after the stop" {
    local d f hl j a t
    attached flamegraph
    run pt stop tomcat
    [ "$status" -eq 0 ]
    # the same container, never restarted, still answering
    [ "$(dk inspect -f '{{.State.Running}} {{.RestartCount}}' "$C")" = "true 0" ]
    answers
    d=$(readlink -f "$OUT/tomcat/latest")
    f=$(readlink -f "$OUT/tomcat/stacks.folded")
    hl=$(jq -r .headline "$d/summary.json")
    read -r j a t <<< "$(awk '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s); t += n
          if (index(s, "_[j]")) j += n
          if (s ~ /(^|;)[^;]*org\.apache\.(catalina|coyote|tomcat|jasper)\.[^;]*_\[j\]/) a += n }
        END { if (t == 0) { print "0 0 0"; exit }
              printf "%.1f %.1f %d\n", 100 * j / t, 100 * a / t, t }' "$f")"
    echo "# tomcat × attach --mode flamegraph: $hl" >&3
    echo "#   Java frames in $j % of $t samples, Tomcat's methods in $a %" >&3
    [ -s "$OUT/tomcat/flamegraph.svg" ]
    [ -s "$OUT/tomcat/profile.pb.gz" ]
    [ "$t" -gt 100 ]
    awk -v a="$a" 'BEGIN { exit !(a >= 10) }'
    [[ "$hl" == *"(Java view), top "* ]]
    [[ "$hl" != *"::"* ]]
}

@test "tomcat × heap: its Java objects by class and Java method, said first; the headline names a Java method, not the JVM's os::malloc" {
    local d
    run pt start --mode heap tomcat
    [ "$status" -eq 0 ]
    load_tomcat "${PH_TEST_PROJECT}-tomcat-heap"
    run pt stop tomcat
    [ "$status" -eq 0 ]
    d=$(readlink -f "$OUT/tomcat/latest")
    echo "# tomcat × heap: $(jq -r .headline "$d/summary.json")" >&3
    jq -r '.heap.top_classes[:3][] | "#   \(.class) \(.peak_inuse_bytes)"' "$d/summary.json" >&3 || true
    # was: "peak in use 52.2 MiB (os::malloc(unsigned long, MEMFLAGS, NativeCallStack const&) 100.0 %)"
    jq -e '(.headline | test("^Java objects sampled \\(JVMTI\\); Java objects at the peak [0-9.]+ [KMG]?i?B \\([A-Za-z_$][A-Za-z0-9_$.]*\\.[A-Za-z_$<][A-Za-z0-9_$<>]* [0-9.]+ % of them\\)")) and
           (.headline | contains("os::malloc") | not) and (.heap.top_classes | length) > 0' "$d/summary.json"
}
