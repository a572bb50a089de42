#!/usr/bin/env bats
# The heap mode end to end on a real service in a container
# (tests/data/heap: heapwork keeps 3 MiB from keep_three_mib, 1 MiB from
# keep_one_mib and churns 100 MiB through churn_hundred_mib): the shares
# of what is in use and of what was allocated, as the sampler's unbiased
# estimates give them; the pprof profile as `go tool pprof` reads it;
# collect while it runs.  The profiles' copy samples every 4 KiB on
# average (the mode's default, 512 KiB, gives too few samples of 4 MiB
# for a share within 5 %), which also checks the rate is the profile's.
# heapleak (heapwork leak): the growth between the first snapshot and the
# last.

load test_helper

HC="$REPO/tests/data/heap/compose.yaml"

hph() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$HC" -p "$PH_TEST_PROJECT" --profiles "$HEAP_PROFILES" -o "$OUT" "$@"
}

ready() { dk logs "${PH_TEST_PROJECT}-heapwork-heap" 2>&1 | grep -q "heapwork: ready"; }

setup_file() {
    common_setup_file
    # (not profiles/ beside the demo's compose file: it would be the demo's)
    export HEAP_PROFILES=$BATS_FILE_TMPDIR/heap-profiles
    mkdir -p "$HEAP_PROFILES"
    cp "$REPO"/profiles/*.yaml "$HEAP_PROFILES/"
    sed -i 's/^\(  PH_SAMPLER_HEAP:\) .*/\1 "4096"/' "$HEAP_PROFILES/heap.yaml"
    grep -q 'PH_SAMPLER_HEAP: "4096"' "$HEAP_PROFILES/heap.yaml"
    sed -i 's/^\(  PH_HEAPPROF_INTERVAL:\) .*/\1 "4096"/' "$HEAP_PROFILES/heap.yaml"
    grep -q 'PH_HEAPPROF_INTERVAL: "4096"' "$HEAP_PROFILES/heap.yaml"
    hph setup heapwork >&3 2>&1
}
teardown_file() { common_teardown_file; }

@test "heap: in use 75 / 25 / 0, the churn ~96 % of what was allocated; pprof read by go tool pprof" {
    run hph start --mode heap heapwork
    [ "$status" -eq 0 ]
    caps=$(dk inspect -f '{{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}}' ${PH_TEST_PROJECT}-heapwork-heap)
    [ "$caps" = "[] []" ]
    wait_for ready
    run hph stop heapwork
    echo "$output"
    [ "$status" -eq 0 ]
    d="$OUT/heapwork"
    for v in inuse_space inuse_objects peak_inuse_space peak_inuse_objects alloc_space alloc_objects; do
        [ -s "$d/$v.folded" ]
    done
    # the snapshot at SIGTERM is the last word: none at exit after it
    [ "$(ls "$d"/latest/heap-*.pb.gz | wc -l)" -eq 1 ]
    three=$(share ";keep_three_mib;" "$d/inuse_space.folded")
    one=$(share ";keep_one_mib;" "$d/inuse_space.folded")
    churn=$(share ";churn_hundred_mib;" "$d/inuse_space.folded")
    alloc=$(share ";churn_hundred_mib;" "$d/alloc_space.folded")
    peak3=$(share ";keep_three_mib;" "$d/peak_inuse_space.folded")
    echo "# in use: keep_three_mib $three, keep_one_mib $one, churn $churn; allocated: churn $alloc; peak: keep_three_mib $peak3 (per mille)" >&3
    [ "$three" -ge 700 ]
    [ "$three" -le 800 ]
    [ "$one" -ge 200 ]
    [ "$one" -le 300 ]
    [ "$churn" -le 10 ]
    # 100 of 104 MiB: 962 per mille
    [ "$alloc" -ge 940 ]
    [ "$alloc" -le 980 ]
    [ "$peak3" -ge 650 ]
    [ "$peak3" -le 800 ]
    # the leaf is the function the service called
    grep -q ';keep_three_mib;posix_memalign ' "$d/inuse_space.folded"
    # and no frame is the sampler's own (its stop handler, a new thread's
    # stack noted): only the allocation calls it interposes, as leaves
    no_sampler_frames 1 "$d"/latest/*.folded "$d"/latest/*.svg "$d"/latest/*.pb.gz
    grep -q ';keep_one_mib;aligned_alloc ' "$d/inuse_space.folded"
    # in use is about 4 MiB (the estimate, within 10 %)
    total=$(awk '{ t += $NF } END { printf "%d", t }' "$d/inuse_space.folded")
    [ "$total" -ge 3774873 ]
    [ "$total" -le 4613734 ]
    # pprof: Go's heap profile's sample types, read by go tool pprof
    run timeout 120 go tool pprof -raw "$d/heap.pb.gz"
    [ "$status" -eq 0 ]
    [[ "$output" == *"alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]"* ]]
    [[ "$output" == *"PeriodType: space bytes"* ]]
    [[ "$output" == *"Period: 4096"* ]]
    run timeout 120 go tool pprof -sample_index=inuse_space -top -nodecount=40 "$d/heap.pb.gz"
    [ "$status" -eq 0 ]
    pct=$(printf '%s\n' "$output" | awk '$NF == "keep_three_mib" { sub("%", "", $5); printf "%d", $5 }')
    echo "# go tool pprof: keep_three_mib $pct % of inuse_space (cum)" >&3
    [ "$pct" -ge 70 ]
    [ "$pct" -le 80 ]
    # the status says what was sampled
    jq -e '.samples > 0 and .reason == "" and .heap.mean_bytes == 4096 and .heap.peak_inuse_bytes >= .heap.inuse_bytes' \
        "$d"/latest/sampler-status-*.json
    # the service's own SIGTERM handler ended it, after the final snapshot
    jq -e '.exit_code == 0' "$d/latest/ph-exit.json"
    # the report: the heap section, its headline (the peak and its top
    # site), the sites in summary.json; no problem said
    grep -q 'id="heap"' "$d/latest/report.html"
    jq -e '.heap as $h | (.headline | test("^peak in use [0-9.]+ MiB \\(keep_three_mib [0-9.]+ %\\)")) and
           $h.top_sites[0].site == "keep_three_mib" and $h.top_sites[1].site == "keep_one_mib" and
           ($h.top_sites | map(select(.site == "churn_hundred_mib"))[0].alloc_bytes) > 0.9 * $h.alloc_bytes and
           (.problems | length) == 0' "$d/latest/summary.json"
}

@test "heap: a view with nothing in it (nothing in use at the end) is no problem in the report" {
    # the first test's run, with nothing in use at the end
    src=$(readlink -f "$OUT/heapwork/latest")
    [ -d "$src" ]
    dst="$OUT/heapwork/$(basename "$src")-empty"
    cp -a "$src" "$dst"
    : > "$(ls "$dst"/inuse_space-*.folded)"
    : > "$(ls "$dst"/inuse_objects-*.folded)"
    run hph report --no-index "$dst"
    echo "$output"
    [ "$status" -eq 0 ]
    jq -e '(.problems | length) == 0 and .heap.inuse_bytes == 0 and (.headline | contains(" 0 B in use at the end"))' \
        "$dst/summary.json"
}

@test "heap: collect writes a snapshot while the service runs" {
    run hph start --mode heap heapwork
    [ "$status" -eq 0 ]
    wait_for ready
    run hph collect heapwork
    echo "$output"
    [ "$status" -eq 0 ]
    snap=$(ls -d "$OUT/heapwork"/*-snapshot-* | sort | tail -1)
    ls -l "$snap"
    three=$(share ";keep_three_mib;" "$(ls "$snap"/inuse_space-*.folded | tail -1)")
    [ "$three" -ge 700 ]
    [ "$three" -le 800 ]
    ls "$snap"/heap-*.pb.gz
    run hph stop heapwork
    [ "$status" -eq 0 ]
}

# The KiB heapleak has said it leaked, 0 before it says.
leaked() {
    local n
    n=$(dk logs "${PH_TEST_PROJECT}-heapleak-heap" 2>&1 | sed -n 's/^heapwork: leaked \([0-9]*\) KiB$/\1/p' | tail -1)
    echo "${n:-0}"
}

@test "heap: what grew from the first snapshot to the last is the leak's, not the constant set's nor the churn's" {
    hph setup heapleak >&3 2>&1
    run hph start --mode heap heapleak
    [ "$status" -eq 0 ]
    leaking() { dk logs "${PH_TEST_PROJECT}-heapleak-heap" 2>&1 | grep -q "heapwork: leaking"; }
    wait_for leaking
    # the process's first snapshot: collect's (the interval is 120 s)
    run hph collect heapleak
    echo "$output"
    [ "$status" -eq 0 ]
    l0=$(leaked)
    grown() { [ "$(leaked)" -ge $((l0 + 16384)) ]; }
    wait_for grown
    run hph stop heapleak
    echo "$output"
    [ "$status" -eq 0 ]
    d="$OUT/heapleak/latest"
    [ "$(ls "$d"/inuse_space-*.folded | wc -l)" -eq 2 ]
    g="$d/report-inuse_space_growth.folded"
    [ -s "$g" ]
    [ -s "$d/report-inuse_space_growth.svg" ]
    leak=$(share ";leak_steadily;" "$g")
    constant=$(share ";constant_set;" "$g")
    churn=$(share ";churn_steadily;" "$g")
    echo "# growth: leak_steadily $leak, constant_set $constant, churn_steadily $churn (per mille); $(jq -r .headline "$d/summary.json")" >&3
    [ "$leak" -ge 900 ]
    [ "$constant" -le 40 ]
    # (the constant set is in use, seen, at the end: it just did not grow)
    for f in "$d"/inuse_space-*.folded; do
        echo "# $(basename "$f"): $(grep ';constant_set;' "$f")" >&3
        [ "$(share ";constant_set;" "$f")" -ge 10 ]
    done
    [ "$churn" -le 10 ]
    # 16 MiB leaked between the two at least (the estimate, within 10 %)
    jq -e '.heap.growth as $g | $g.bytes >= 0.9 * 16777216 and $g.top_sites[0].site == "leak_steadily" and
           ($g.from | startswith("inuse_space-")) and $g.from != $g.to and
           (.headline | test("; grown [0-9.]+ MiB \\(leak_steadily [0-9.]+ %\\)$")) and (.problems | length) == 0' \
        "$d/summary.json"
    grep -q 'Grown since the first snapshot' "$d/report.html"
}

@test "heap: the demo's front at the mode's own rate, to its report" {
    ph setup front >&3 2>&1
    run ph start --mode heap front
    [ "$status" -eq 0 ]
    drive_load 300
    run ph stop front
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"peak in use "* ]]
    d="$OUT/front/latest"
    jq -e '.samples > 0 and .heap.mean_bytes == 524288' "$d"/sampler-status-*.json
    no_sampler_frames 1 "$d"/*.folded "$d"/*.svg "$d"/*.pb.gz
    jq -e '(.headline | startswith("peak in use ")) and (.heap.top_sites | length) > 0 and (.problems | length) == 0' \
        "$d/summary.json"
    echo "# $(jq -r .headline "$d/summary.json")" >&3
}

# said_first TEXT REPORT: the report says TEXT before any figure (the
# first card).
said_first() {
    local note card
    note=$(grep -bo "$1" "$2" | head -1 | cut -d: -f1)
    card=$(grep -bo 'in use at the peak' "$2" | head -1 | cut -d: -f1)
    [ -n "$note" ] && [ -n "$card" ] && [ "$note" -lt "$card" ]
}

# heap_run SERVICE READY: SERVICE set up, started in the heap mode, and
# stopped once its log says READY (a build and a JVM's start: 180 s).
heap_run() {
    hph setup "$1" >&3 2>&1
    run hph start --mode heap "$1"
    [ "$status" -eq 0 ]
    WAIT_SECONDS=180 wait_for eval 'dk logs "${PH_TEST_PROJECT}-'"$1"'-heap" 2>&1 | grep -q "'"$2"'"'
    run hph stop "$1"
    echo "$output"
    [ "$status" -eq 0 ]
}

# The sum of the counts of FILE's lines that hold NAME.
bytes_with() {
    awk -v n="$1" 'index($0, n) { t += $NF } END { printf "%d", t }' "$2"
}

# A JVM: its Java objects sampled through JVMTI by class (`new C`)
# under the Java method that made them, the shares HeapTwo keeps (75 %
# byte[] from keepBytes, 25 % long[] from keepLongs); the report says
# first what it sees of the JVM's heap and names a Java method of the
# program in the headline, not the JVM's os::malloc.
@test "heap: a JVM's Java objects by class and Java stack, said first; the headline names the program's method" {
    heap_run heapjava "HeapTwo: ready"
    b=$(bytes_with ';HeapTwo.keepBytes_[j];new byte[]_[j] ' "$OUT/heapjava/inuse_space.folded")
    l=$(bytes_with ';HeapTwo.keepLongs_[j];new long[]_[j] ' "$OUT/heapjava/inuse_space.folded")
    c=$(bytes_with ';HeapTwo.churnObjects_[j];new java.lang.Object[]_[j] ' "$OUT/heapjava/alloc_space.folded")
    d="$OUT/heapjava/latest"
    echo "# in use: byte[] $b B, long[] $l B; allocated: Object[] $c B" >&3
    pm=$(( 1000 * b / (b + l) ))
    [ "$pm" -ge 700 ]
    [ "$pm" -le 800 ]
    # 32 MiB kept, within 10 %; 256 MiB churned at least
    [ $((b + l)) -ge 30198989 ]
    [ $((b + l)) -le 36909875 ]
    [ "$c" -ge 241591910 ]
    jq -e '.runtimes[0].runtime == "java" and .runtimes[0].objects' "$d"/heap-*.json
    echo "# $(jq -r .headline "$d/summary.json")" >&3
    jq -e '(.headline | test("^Java objects sampled \\(JVMTI\\); Java objects at the peak [0-9.]+ MiB \\(HeapTwo\\.[a-zA-Z]+ [0-9.]+ % of them\\)")) and
           (.heap.top_classes | map(.class) | index("new byte[]_[j]")) != null and (.problems | length) == 0' \
        "$d/summary.json"
    said_first 'its Java objects are sampled through JVMTI' "$d/report.html"
}

# CPython: its objects through its own allocator (PyMem_SetAllocator),
# by Python function: heap_two.py's keep_three and keep_one 75 / 25 in
# use; said first, the headline naming keep_three.
@test "heap: CPython's objects by Python stack, said first; the headline names the program's function" {
    heap_run heappython "heap_two: ready"
    t=$(bytes_with ';keep_three (heap_two.py:' "$OUT/heappython/inuse_space.folded")
    o=$(bytes_with ';keep_one (heap_two.py:' "$OUT/heappython/inuse_space.folded")
    echo "# in use: keep_three $t B, keep_one $o B" >&3
    pm=$(( 1000 * t / (t + o) ))
    [ "$pm" -ge 700 ]
    [ "$pm" -le 800 ]
    d="$OUT/heappython/latest"
    jq -e '.runtimes[0].runtime == "python" and .runtimes[0].objects' "$d"/heap-*.json
    echo "# $(jq -r .headline "$d/summary.json")" >&3
    jq -e '(.headline | test("^CPython objects sampled \\(PyMem_SetAllocator\\); Python objects at the peak [0-9.]+ MiB \\(keep_three \\(heap_two\\.py\\) [0-9.]+ % of them\\)")) and
           (.problems | length) == 0' "$d/summary.json"
    said_first 'its objects are sampled through its object allocator' "$d/report.html"
}

# Node 18: V8's JavaScript objects through its own sampling heap
# profiler (the mode's preload in NODE_OPTIONS starts it over the
# in-process inspector at PH_HEAPPROF_INTERVAL; written at the exit that
# heap_two.js's SIGTERM handler makes), by JS function: keepThree and
# keepOne 75 / 25 of what is live at the exit; said first, the headline
# naming keepThree.
@test "heap: node's JavaScript objects by JS stack (V8's sampling heap profiler), said first; the headline names the program's function" {
    heap_run heapnode "heap_two: ready"
    d="$OUT/heapnode/latest"
    ls "$d"/*.heapprofile
    # sampled at the profile's interval (4 KiB here): hundreds of samples
    [ "$(jq '.samples | length' "$d"/*.heapprofile)" -ge 2000 ]
    t=$(jq '[.. | objects | select(.callFrame.functionName? == "keepThree") | .selfSize] | add' "$d"/*.heapprofile)
    o=$(jq '[.. | objects | select(.callFrame.functionName? == "keepOne") | .selfSize] | add' "$d"/*.heapprofile)
    echo "# live at the exit: keepThree $t B, keepOne $o B" >&3
    pm=$(( 1000 * t / (t + o) ))
    [ "$pm" -ge 700 ]
    [ "$pm" -le 800 ]
    jq -e '.runtimes[0].runtime == "node" and .runtimes[0].objects' "$d"/heap-*.json
    echo "# $(jq -r .headline "$d/summary.json")" >&3
    jq -e '(.headline | test("^V8 objects sampled \\(HeapProfiler\\); JavaScript objects live at the exit [0-9.]+ MiB \\(keepThree \\(/opt/heap/heap_two\\.js:9\\) [0-9.]+ % of them\\)")) and
           .heap.v8.top_sites[0].site == "keepThree (/opt/heap/heap_two.js:9)" and
           .heap.v8.top_sites[1].site == "keepOne (/opt/heap/heap_two.js:13)" and
           (.heap.v8.top_sites[0].bytes / (.heap.v8.top_sites[0].bytes + .heap.v8.top_sites[1].bytes)) > 0.7 and
           (.problems | length) == 0' "$d/summary.json"
    said_first 'JavaScript objects (V8' "$d/report.html"
    said_first 'sampled by V8' "$d/report.html"
}

# A node with no SIGTERM handler of its own: the preload writes V8's
# profile, then SIGTERM's default action ends it as it would have
# without the mode (the service dies of the signal).
@test "heap: a node without a SIGTERM handler still writes its JavaScript objects, then dies of the signal" {
    heap_run heapnodebare "heap_two: ready"
    d="$OUT/heapnodebare/latest"
    ls "$d"/*.heapprofile
    jq -e '.service_signal == "SIGTERM"' "$d/ph-exit.json"
    jq -e '.heap.v8.top_sites[0].site == "keepThree (/opt/heap/heap_two.js:9)" and
           (.heap.v8.top_sites[0].bytes / (.heap.v8.top_sites[0].bytes + .heap.v8.top_sites[1].bytes)) > 0.7 and
           (.problems | length) == 0' "$d/summary.json"
    echo "# $(jq -r .headline "$d/summary.json")" >&3
}
