#!/usr/bin/env bats
# Languages, the JIT runtimes (Node, HotSpot on a JDK and on a JRE): the cells of tests/lang/lang_helper.bash (what a
# cell is, how it is held, the known gaps) for node java javajre.

load test_helper
load lang/lang_helper

LANGS="node java javajre"
LANG_EXTRA="javaint javanoagent javajrenoagent javajrenoattach"

# One test per cell, in the table's order (bats 1.8 has no generated tests).
@test "languages: node × flamegraph" { check_cell node flamegraph; }
@test "languages: node × perf" { check_cell node perf; }
@test "languages: node × attach-perf" { check_cell node attach-perf; }
@test "languages: node × attach-flamegraph" { check_cell node attach-flamegraph; }
@test "languages: java × flamegraph" { check_cell java flamegraph; }
@test "languages: java × perf" { check_cell java perf; }
@test "languages: java × attach-perf" { check_cell java attach-perf; }
@test "languages: java × attach-flamegraph" { check_cell java attach-flamegraph; }
@test "languages: javajre × flamegraph" { check_cell javajre flamegraph; }
@test "languages: javajre × perf" { check_cell javajre perf; }
@test "languages: javajre × attach-perf" { check_cell javajre attach-perf; }
@test "languages: javajre × attach-flamegraph" { check_cell javajre attach-flamegraph; }

@test "languages: the table (language × mode → shares hot/cool, or the refusal)" { lang_table; }

# A JVM started with -XX:+DisableAttachMechanism takes no agent while it
# runs: attach --mode flamegraph refuses before anything is attached (no
# tools container), says why and what works; the service runs on.
@test "languages: java -XX:+DisableAttachMechanism × attach-flamegraph: refused, and why" {
    run pl restore javajrenoattach
    [ "$status" -eq 0 ]
    c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=javajrenoattach" | head -n 1)
    [ -n "$c" ]
    run pl attach --mode flamegraph javajrenoattach
    echo "# $(printf '%s' "$output" | grep -m1 'error:')" >&3
    pl down javajrenoattach >/dev/null 2>&1 || true
    [ "$status" -ne 0 ]
    [[ "$output" == *"java was started with -XX:+DisableAttachMechanism: it takes no agent while it runs"* ]]
    [[ "$output" == *'use `start --mode flamegraph`'* ]]
    [ -z "$(dk ps -aq --filter "name=${PH_TEST_PROJECT}-javajrenoattach-attach")" ]
}

# attach --mode wall on a running Node: V8's profiler through its own
# inspector (ph-nodeinsp), as attach-flamegraph, its JavaScript thread
# sampled whether it runs or waits: the cell held as the others (75/25 of
# all the samples: the workload never waits), and the wall mode's files
# (the off-CPU and on-CPU views, pprof wall/nanoseconds) and report.  Not a
# check_cell: java's cells of this column are the test below's, held
# within main's samples.
@test "languages: node × attach-wall" {
    cell node attach-wall
    echo "# node × attach-wall: $CELL" >&3
    [[ "$CELL" == named* ]]
    d=$(dirname "$(run_folded node)")
    grep -h 'ph-nodeinsp' "$d/service.log" | sed 's/^/#   /' >&3
    grep -q "every 10000 us (100 Hz, wall)" "$d/service.log"
    ls "$d"/offcpu-*.folded
    [ -s "$(ls "$d"/oncpu-*.folded)" ]
    [ -s "$(ls "$d"/profile-*.pb.gz)" ]
    # the wall mode's report, in the JavaScript view (its headline the
    # time off the CPU when the event loop was seen waiting between ticks,
    # else the top function), its top function by self samples the workload's
    hl=$(jq -r .headline "$d/summary.json")
    echo "#   headline: $hl" >&3
    [[ "$hl" == *"(JavaScript view), "* ]]
    [ "$(jq -r .mode "$d/summary.json")" = wall ]
    [ "$(jq -r '.wall.offcpu_percent | type' "$d/summary.json")" = number ]
    [[ "$(jq -r '.flamegraph.top_self[0].name' "$d/summary.json")" == "hot_seventy_five (/opt/lang/lang.js:10)" ]]
}

# attach --mode wall: the sampler joins the running JVM on the wall clock;
# within main's samples (the JVM's idle threads are the rest) 75/25.
@test "languages: javajre × attach-wall: the running JVM on the wall clock" {
    run pl restore javajre
    [ "$status" -eq 0 ]
    c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=javajre" | head -n 1)
    WAIT_SECONDS=150 wait_for ran_cpu "$c" 1000000000
    run pl attach --mode wall javajre
    [ "$status" -eq 0 ] || { pl down javajre >/dev/null 2>&1; false; }
    base=$(cpu_ns "$c")
    WAIT_SECONDS=150 wait_for ran_cpu "$c" $(( base + CPU_NS ))
    run pl stop javajre
    [ "$status" -eq 0 ]
    base=$(cpu_ns "$c")
    WAIT_SECONDS=60 wait_for ran_cpu "$c" $(( base + 100000000 )) # still running
    pl down javajre >/dev/null 2>&1 || true
    F=$(run_folded javajre)
    read -r h co n off <<< "$(awk '
        { k = $NF; s = $0; sub(/ [0-9]+$/, "", s); t += k; if (index(s, "[off-cpu]")) o += k
          if (!index(s, ";LangJava.main_[j];")) next
          m += k
          if (index(s, "hot_seventy_five")) h += k
          if (index(s, "cool_twenty_five")) c += k }
        END { if (m == 0) { print "0 0 0 0"; exit }
              printf "%d %d %d %d\n", 100 * h / m + 0.5, 100 * c / m + 0.5, m, 100 * o / t + 0.5 }' "$F")"
    echo "# javajre × attach-wall: $h/$co of the $n samples in LangJava.main, $off % of all off CPU" >&3
    [ "$n" -ge 500 ]
    [ "$h" -ge 70 ]
    [ "$h" -le 80 ]
    [ "$co" -ge 20 ]
    [ "$co" -le 30 ]
    [ "$off" -gt 0 ]
    [ -e "$(dirname "$F")/offcpu.folded" ] || ls "$(dirname "$F")"/offcpu-*.folded
}

# The sampler's files go into the JVM's /tmp/.profharness-attach through
# /proc/PID/root, where a symlink the service planted was followed as the
# tools container's own path: `-> /opt` had a root mkdir and cp write
# /opt/lib in the tools container (which runs with SYS_PTRACE and no
# seccomp), and the JVM, looking in its own /opt, took no agent.  Each
# path is now resolved inside the JVM's root (ph-jattach files).
@test "languages: javajre × attach-flamegraph: a symlink the service planted stays in its root" {
    run pl restore javajre
    [ "$status" -eq 0 ]
    c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
        --filter "label=com.docker.compose.service=javajre" | head -n 1)
    WAIT_SECONDS=150 wait_for ran_cpu "$c" 1000000000
    dk exec "$c" sh -c 'rm -rf /tmp/.profharness-attach && ln -s /opt /tmp/.profharness-attach'
    run pl attach --mode flamegraph javajre
    [ "$status" -eq 0 ] || { pl down javajre >/dev/null 2>&1; false; }
    tools="${PH_TEST_PROJECT}-javajre-attach-flamegraph"
    said_it() { dk logs "$tools" 2>&1 | grep -q 'the sampler runs in JVM\|cannot\|not loaded'; }
    WAIT_SECONDS=60 wait_for said_it
    said=$(dk logs "$tools" 2>&1)
    echo "# $(printf '%s' "$said" | grep -m1 'sampler runs\|cannot\|not loaded')" >&3
    planted=$(dk exec "$tools" sh -c 'ls -d /opt/lib /opt/out-* 2>/dev/null' || true)
    inside=$(dk exec "$c" sh -c 'ls /opt/lib/' 2>/dev/null || true)
    base=$(cpu_ns "$c")
    WAIT_SECONDS=150 wait_for ran_cpu "$c" $(( base + CPU_NS ))
    run pl stop javajre
    pl down javajre >/dev/null 2>&1 || true
    [ "$status" -eq 0 ]
    echo "# in the tools container: ${planted:-nothing}; in the JVM's /opt/lib: ${inside:-nothing}" >&3
    [ -z "$planted" ]
    [[ "$inside" == *libphsampler-*.so* ]]
    [[ "$said" == *"the sampler runs in JVM"* ]]
    read -r h co t top <<< "$(shares "$(run_folded javajre)")"
    echo "# $h/$co of $t samples" >&3
    [ "$h" -ge 70 ]
    [ "$h" -le 80 ]
    [ "$co" -ge 20 ]
    [ "$co" -le 30 ]
}

# Interpreted methods by name: under -Xint every method is interpreted,
# which the perf map names `Interpreter` only; the sampler's JVMTI agent
# names them through AsyncGetCallTrace, with the workload's shares.
@test "languages: java -Xint × flamegraph: interpreted methods by name" {
    java_cell javaint ';LangJava.main_[j];' 'java -Xint'
    grep -q ';LangJava.main_\[j\];LangJava.hot_seventy_five_\[j\] ' "$F"
    [[ "$ST" == *'"java": "Java: frames read through AsyncGetCallTrace'* ]]
}

# The same JVM joined while it runs: the sampler loaded as its agent over
# the attach socket names the interpreted methods as at start.
@test "languages: java -Xint × attach-flamegraph: interpreted methods by name" {
    java_cell javaint ';LangJava.main_[j];' 'java -Xint' attach-flamegraph
    grep -q ';LangJava.main_\[j\];LangJava.hot_seventy_five_\[j\] ' "$F"
    [[ "$ST" == *'"java": "Java: frames read through AsyncGetCallTrace'* ]]
}

# perf names an interpreted method `Interpreter` only (the perf map's one
# entry for the interpreter; -Xint compiles nothing): start and attach
# refuse before anything is restarted or attached, naming the mode that
# names them (KNOWN_GAPS).  Not in the table's count: javaint is no row of it.
@test "languages: java -Xint × perf: refused, and why" { check_cell javaint perf; }
@test "languages: java -Xint × attach-perf: refused, and why" { check_cell javaint attach-perf; }

# A JVM that does not load the agent (its wrapper takes -agentpath out):
# the perf map's names, as before the agent, and the status says why.
@test "languages: java without the agent × flamegraph: the perf map's names, and why" {
    java_cell javanoagent '_[j]' 'java without the agent'
    grep -q 'hot_seventy_five(long, long)_\[j\]' "$F"
    [ "$(grep -c 'LangJava.hot_seventy_five_\[j\]' "$F")" = 0 ]
    [[ "$ST" == *'"java": "Java: frames not read (the JVM did not load the sampler as its agent'* ]]
}

# On the JRE alone (no jcmd), a JVM that does not load the agent: the
# sampler names JIT frames from the perf map.  At its exit the JVM writes
# the map itself (DumpPerfMapAtExit); while it runs, a snapshot (`collect`)
# has a map only when the JVM is asked for one over its attach socket
# (ph-jattach, before the snapshot): every JIT frame named in both, the
# workload's shares.
@test "languages: javajre without the agent × flamegraph collect: the perf map from the attach socket" {
    local snap h c t top jit jit_stop
    run pl start --mode flamegraph javajrenoagent
    [ "$status" -eq 0 ]
    WAIT_SECONDS=150 wait_for ran_cpu "${PH_TEST_PROJECT}-javajrenoagent-flamegraph" "$CPU_NS"
    run pl collect javajrenoagent
    [ "$status" -eq 0 ]
    snap=$(ls -d "$OUT/javajrenoagent"/*-snapshot-* | sort | tail -1)
    jit=$(jit_named "$snap"/stacks-*.folded)
    read -r h c t top <<< "$(shares "$snap"/stacks-*.folded)"
    run pl stop javajrenoagent
    [ "$status" -eq 0 ]
    jit_stop=$(jit_named "$(run_folded javajrenoagent)")
    echo "# javajre without the agent × flamegraph: collect $h/$c (top: $top), JIT $jit % named; stop: JIT $jit_stop % named" >&3
    [ "$jit" -ge "$JIT_NAMED_MIN" ]
    [ "$jit_stop" -ge "$JIT_NAMED_MIN" ]
    [ "$h" -ge 70 ]
    [ "$h" -le 80 ]
    [ "$c" -ge 20 ]
    [ "$c" -le 30 ]
}

# A JVM started with -XX:+DisableAttachMechanism has no attach socket:
# the stop says so (ph-jattach, not signalled), and the perf map the JVM
# writes at its exit is read from the stopped container and carried in
# the run's perf-maps/, so perf's frames are named all the same.
@test "languages: javajre -XX:+DisableAttachMechanism × perf: the map written at exit, the refusal said" {
    cell javajrenoattach perf
    local said=$output
    F=$(run_folded javajrenoattach)
    jit=$(jit_named "$F")
    echo "# javajre -XX:+DisableAttachMechanism × perf: $CELL; JIT $jit % named" >&3
    [[ "$said" == *"-XX:+DisableAttachMechanism"* ]]
    ls "$(dirname "$F")"/perf-maps/perf-*.map
    [[ "$CELL" == named* ]]
    [ "$jit" -ge "$JIT_NAMED_MIN" ]
}
