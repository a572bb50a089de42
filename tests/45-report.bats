#!/usr/bin/env bats
# Reports end to end: the demo profiled in each mode on the real Engine
# with the real profilers, `profharness report` on the run dirs, and the
# figures checked against the upstream tools (ms_print,
# callgrind_annotate, awk over the logs); compare and --fail-if on two
# callgrind runs; the index lists every run.

load test_helper

setup_file() {
    common_setup_file
    ph setup >&3 2>&1
}
teardown_file() { common_teardown_file; }

latest() { readlink -f "$OUT/$1/latest"; }

# profile SERVICE MODE REQUESTS: start, drive load, stop; prints the run dir.
profile() {
    ph start --mode "$2" "$1" >&3 2>&1
    drive_load "$3" >&3 2>&1
    ph stop "$1" >&3 2>&1
    latest "$1"
}

@test "report: massif, the peak and its top site equal ms_print's" {
    rd=$(profile front massif 30)
    run ph report "$rd"
    [ "$status" -eq 0 ]
    [[ "$output" == "front: peak heap "* ]]
    [[ "$output" == *"report: $rd/report.html"* ]]
    sum="$rd/summary.json"
    jq -e '.problems | length == 0' "$sum"
    peak=$(jq -r .massif.peak_snapshot "$sum")
    ms_print "$rd/massif.out" > "$BATS_TEST_TMPDIR/ms.txt"
    grep -q "$peak (peak)" "$BATS_TEST_TMPDIR/ms.txt"
    theirs=$(awk -v n="$peak" '$1 == n && NF == 6 { gsub(",", "", $4); print $4; exit }' "$BATS_TEST_TMPDIR/ms.txt")
    [ "$(jq -r .massif.peak_heap "$sum")" = "$theirs" ]
    pct=$(jq -r '.massif.top_sites[0].percent' "$sum" | awk '{ printf "%05.2f", $1 }')
    grep -q -- "->$pct% " "$BATS_TEST_TMPDIR/ms.txt"
    jq -e '.massif.top_sites[0].site | startswith("front_")' "$sum"
    grep -q 'id="massif"' "$rd/report.html"
}

@test "report: callgrind, totals and the top function equal callgrind_annotate's" {
    rd=$(profile front callgrind 20)
    run ph report "$rd"
    [ "$status" -eq 0 ]
    [[ "$output" == "front: "*" instructions, top "* ]]
    sum="$rd/summary.json"
    (cd / && callgrind_annotate --auto=no "$rd/callgrind.out") > "$BATS_TEST_TMPDIR/ann.txt"
    theirs=$(awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }' "$BATS_TEST_TMPDIR/ann.txt")
    [ "$(jq -r .callgrind.totals.Ir "$sum")" = "$theirs" ]
    first=$(awk '/file:function/ { getline; getline; print; exit }' "$BATS_TEST_TMPDIR/ann.txt")
    name=$(jq -r '.callgrind.top_self[0].name' "$sum")
    ir=$(jq -r '.callgrind.top_self[0].cost.Ir' "$sum" | sed -E ':a;s/^([0-9]+)([0-9]{3})/\1,\2/;ta')
    [[ "$first" == *"$ir "*" $name "* ]]
    # every event the profile collects has its tab
    [ "$(grep -o 'id="cg-pn-' "$rd/report.html" | wc -l)" -eq "$(jq '.callgrind.events | length' "$sum")" ]
}

@test "report: strace, counts per syscall equal awk's over the log" {
    rd=$(profile front strace 40)
    run ph report front
    [ "$status" -eq 0 ]
    sum="$rd/summary.json"
    awk '{ b = $0; sub(/^[0-9]+ +[0-9:.]+ /, "", b); if (b ~ /^(---|\+\+\+|<\.\.\.)/) next; sub(/\(.*/, "", b); n[b]++ }
         END { for (s in n) print s, n[s] }' "$rd/strace.log" | sort > "$BATS_TEST_TMPDIR/awk.txt"
    jq -r '.strace.syscalls[] | "\(.name) \(.calls)"' "$sum" | sort > "$BATS_TEST_TMPDIR/ours.txt"
    diff "$BATS_TEST_TMPDIR/awk.txt" "$BATS_TEST_TMPDIR/ours.txt"
    errs=$(grep -cE ' = (-1|\?) E[A-Z0-9_]+' "$rd/strace.log" || true)
    [ "$(jq -r .strace.errors "$sum")" = "$errs" ]
    # the demo's front accepts and reads requests
    jq -e '[.strace.syscalls[].name] | index("accept4") != null or index("accept") != null' "$sum"
}

@test "report: flamegraph, samples and the top function from the folded stacks" {
    rd=$(profile front flamegraph 200)
    run ph report "$rd"
    [ "$status" -eq 0 ]
    sum="$rd/summary.json"
    folded=$(readlink -f "$OUT/front/stacks.folded")
    total=$(awk '{ s += $NF } END { print s }' "$folded")
    [ "$(jq -r '.flamegraph.samples | floor' "$sum")" = "$total" ]
    # the stack is everything before the last blank (names may have blanks)
    top=$(awk '{ c = $NF; s = $0; sub(/ [^ ]*$/, "", s); n = split(s, f, ";"); if (n > 1) self[f[n]] += c }
               END { for (k in self) print self[k] "\t" k }' "$folded" | LC_ALL=C sort -t "$(printf '\t')" -k1,1nr -k2 |
        head -1 | cut -f2-)
    [ "$(jq -r '.flamegraph.top_self[0].name' "$sum")" = "$top" ]
    jq -e '.flamegraph.sampler.requested_hz == 150' "$sum"
    grep -q ' srcdoc="&lt;!DOCTYPE html&gt;' "$rd/report.html"
}

@test "compare: two callgrind runs, --fail-if gates on instructions" {
    a=$(ls -d "$OUT"/front/*-callgrind 2>/dev/null | tail -1)
    [ -n "$a" ] || a=$(profile front callgrind 20)
    b=$(profile front callgrind 60)
    ph compare --format json "$a" "$b" > "$BATS_TEST_TMPDIR/compare.json"
    jq -e '.totals.rows[0].name == "Ir" and .totals.rows[0].b > .totals.rows[0].a' "$BATS_TEST_TMPDIR/compare.json"
    [ -s "$OUT/front/compare.html" ]
    run ph compare --fail-if 'ir>+5%' "$a" "$b"
    [ "$status" -eq 3 ]
    [[ "$output" == *"--fail-if ir>+5%: ir went from "* ]]
    run ph compare --fail-if 'ir>+100000%' front
    [ "$status" -eq 0 ]
    run ph compare --fail-if 'peak_heap>+1%' front
    [ "$status" -eq 2 ]
}

@test "index: every run, newest first, each with its report" {
    run ph report
    [ "$status" -eq 0 ]
    idx="$OUT/index.html"
    [ -s "$idx" ]
    for d in "$OUT"/front/2*; do
        grep -q "front/$(basename "$d")/report.html" "$idx"
    done
    first=$(grep -o 'front/2[^/]*/report.html' "$idx" | head -1)
    [ "$first" = "front/$(basename "$(latest front)")/report.html" ]
}

@test "report: a run dir copied out of its output dir is reported, and no index is written two levels up" {
    src=$(latest front)
    mkdir -p "$BATS_TEST_TMPDIR/top/copy"
    cp -a "$src" "$BATS_TEST_TMPDIR/top/copy/run"
    run ph report "$BATS_TEST_TMPDIR/top/copy/run"
    [ "$status" -eq 0 ]
    [[ "$output" == *"front: "* ]]
    [ -s "$BATS_TEST_TMPDIR/top/copy/run/report.html" ]
    [ ! -e "$BATS_TEST_TMPDIR/top/index.html" ]
    [[ "$output" == *"not in an output dir"* ]]
}

# user_project: a project as a user has one: the compose file, the front
# service's build context in ./front (named for it, as Radicale's is),
# and the runs of $OUT/front in contrib/profiling beside the compose file
# (the default output dir).  Prints its directory.
user_project() {
    local proj=$BATS_TEST_TMPDIR/proj
    mkdir -p "$proj/front" "$proj/contrib/profiling"
    cp "$DEMO_COMPOSE" "$proj/compose.yaml"
    echo 'FROM scratch' > "$proj/front/Dockerfile"
    cp -a "$OUT/front" "$proj/contrib/profiling/"
    echo "$proj"
}

@test "report: no -o, no --profiles: every run beside the compose file, as at stop (heap included); a build context named for the service is left alone" {
    rd=$(profile front heap 100)
    stopped=$(jq -r .headline "$rd/summary.json")
    [[ "$stopped" == "peak in use "* ]]
    proj=$(user_project)
    out=$proj/contrib/profiling
    # each run's headline as its own report gave it (at stop, or by a test above)
    for d in "$out"/front/2*/; do
        printf '%s %s\n' "$(basename "$d")" "$(jq -r .headline "$d/summary.json")"
    done | sort > "$BATS_TEST_TMPDIR/before.txt"
    [ -s "$BATS_TEST_TMPDIR/before.txt" ]
    # no argument, no -o: it crashed (exit 139)
    run bash -c "cd '$proj' && '$PH' report"
    [ "$status" -eq 0 ]
    [[ "$output" == *"index: $out/index.html"* ]]
    for d in "$out"/front/2*/; do
        printf '%s %s\n' "$(basename "$d")" "$(jq -r .headline "$d/summary.json")"
    done | sort > "$BATS_TEST_TMPDIR/after.txt"
    diff "$BATS_TEST_TMPDIR/before.txt" "$BATS_TEST_TMPDIR/after.txt"
    [ "$(jq -r .headline "$out/front/$(basename "$rd")/summary.json")" = "$stopped" ]
    # a service's name, where a directory of that name is its build context
    run bash -c "cd '$proj' && '$PH' report front"
    [ "$status" -eq 0 ]
    [[ "$output" == *"front: peak in use "* ]]
    [ "$(ls -A "$proj/front")" = Dockerfile ]
    # from elsewhere, with -f (it crashed too)
    run "$PH" -f "$proj/compose.yaml" report front
    [ "$status" -eq 0 ]
    [[ "$output" == *"index: $out/index.html"* ]]
    [ "$(ls -A "$proj/front")" = Dockerfile ]
    # a name that is neither: the error names the output dir it looked in
    run bash -c "cd '$proj' && '$PH' report hugo"
    [ "$status" -eq 2 ]
    [[ "$output" == *"\`hugo\` is neither a run dir nor a service under \`$out\`"* ]]
    [[ "$output" != *"(null)"* ]]
    # with no compose file and no -o: said, nothing written
    run bash -c "cd '$BATS_TEST_TMPDIR' && '$PH' report"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no output dir to report: no compose file"* ]]
}

@test "compare SERVICE: its two newest runs of the newest run's mode, said; SERVICE@RUN under the default output dir; a --fail-if name in neither run" {
    a=$(profile front strace 10)
    profile front flamegraph 50 >/dev/null
    b=$(profile front strace 20)
    proj=$(user_project)
    # "`front` has no run of mode any": the build context ./front was taken for the service
    run bash -c "cd '$proj' && '$PH' compare --no-html front"
    [ "$status" -eq 0 ]
    [[ "$output" == *"front's two newest strace runs: A $(basename "$a"), B $(basename "$b")"* ]]
    [[ "$output" == *"compare front (strace): $(basename "$a") -> $(basename "$b")"* ]]
    # it looked for `(null)/front/...`
    run bash -c "cd '$proj' && '$PH' compare --no-html 'front@$(basename "$a")' front@latest"
    [ "$status" -eq 0 ]
    [[ "$output" == *"compare front (strace): $(basename "$a") -> $(basename "$b")"* ]]
    [ "$(ls -A "$proj/front")" = Dockerfile ]
    # a function (here a syscall) in neither run was 0.00 % without a word
    run bash -c "cd '$proj' && '$PH' compare --no-html --fail-if 'calls[wirte]>0' front"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no syscall \`wirte\` in either run"*"did you mean \`write\`?"* ]]
}

@test "stop writes the run's report and the index, and prints the headline" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    drive_load 20
    rm -f "$OUT/index.html"
    run ph stop front
    [ "$status" -eq 0 ]
    rd=$(latest front)
    [ -s "$rd/report.html" ]
    jq -e '.mode == "strace"' "$rd/summary.json"
    # one headline for the service, then the report's path
    [[ "$output" == *"front: "*"report: $rd/report.html"* ]]
    grep -q "front/$(basename "$rd")/report.html" "$OUT/index.html"
}

# hostile COMMAND ARGS: tests/browser/hostile.mjs (headless Chromium over
# the DevTools protocol; Node 20 has WebSocket behind a flag).
hostile() {
    local flag=--experimental-websocket
    node $flag -e '' 2>/dev/null || flag=
    timeout 300 node $flag "$REPO/tests/browser/hostile.mjs" "$@"
}

@test "report: a callgrind.out planted by a strace container runs no script in the report (Chromium)" {
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    # event, function and file names that are markup and script
    hostile write-callgrind "$BATS_TEST_TMPDIR/callgrind.out.1"
    dk cp "$BATS_TEST_TMPDIR/callgrind.out.1" "$PH_TEST_PROJECT-front-strace:/opt/profiling/front/callgrind.out.1"
    drive_load 20
    run ph stop front
    [ "$status" -eq 0 ]
    rd=$(latest front)
    [ -s "$rd/callgrind.out.1" ]
    # the title stays, nothing of it runs or becomes an element, the names
    # are shown as they were written; the page allows its own script only
    hostile check-injected "$rd/report.html"
    run ph report "$rd"
    [ "$status" -eq 0 ]
    hostile check-injected "$rd/report.html"
}

@test "report: a flamegraph container's own SVG is neither shown nor linked; the host's graph zooms in its sandbox (Chromium)" {
    run ph start --mode flamegraph front
    [ "$status" -eq 0 ]
    # a sampler-like SVG with a script and a click that takes the tab away,
    # named to sort after the sampler's own
    hostile write-svg "$PH" "$BATS_TEST_TMPDIR/planted.svg"
    dk cp "$BATS_TEST_TMPDIR/planted.svg" \
        "$PH_TEST_PROJECT-front-flamegraph:/opt/profiling/front/flamegraph-99991231T235959Z-1.svg"
    drive_load 200
    run ph stop front
    [ "$status" -eq 0 ]
    rd=$(latest front)
    grep -q CONTAINER-SVG-MARKER "$rd/flamegraph-99991231T235959Z-1.svg"
    # flamegraph.svg is the harness's rendering of the stacks
    [ "$(readlink -f "$OUT/front/flamegraph.svg")" = "$rd/report-flamegraph.svg" ]
    grep -q front_checksum_payload "$rd/report-flamegraph.svg"
    ! grep -q CONTAINER-SVG-MARKER "$rd/report-flamegraph.svg" || false
    # no frame holds the planted SVG, every frame is sandboxed, a click
    # zooms the graph and leaves the tab where it is
    hostile check-flame "$rd/report.html"
}
