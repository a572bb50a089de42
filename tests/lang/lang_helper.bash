# lang_helper.bash: what the language files share (tests/66-languages*.bats:
# native, Python, VMs; one file each so that they run side by side).  A
# file sets LANGS (the services whose cells it runs) and LANG_EXTRA (more
# services its setup builds) before its setup_file.
# Languages (issue 20, "Measure"): one CPU-bound service per language
# (tests/lang/: C, C++, Rust, Go static, cgo and cgo stripped, Python 3.9, 3.11 and
# 3.13, Node, Java on a JDK and on a JRE alone), each
# spending 75 % of its work in `hot_seventy_five` and 25 % in
# `cool_twenty_five`, profiled as a new user would, with no flag beyond
# the mode, under flamegraph, perf and attach --mode perf.  For each cell:
# share = folded counts of the stacks that contain the name / all counts;
# a cell is named when hot is 75 ± 5 % and cool 25 ± 5 %, or it is the
# refusal the mode owes a runtime it cannot work on.  What is not named
# yet is in KNOWN_GAPS, each with its reason: such a cell must still be
# what the list says (a cell that starts working fails until it is taken
# off the list), never passed silently.  The whole table goes to the TAP
# output (`# ...`), so a run documents today's state.
# (The images are built from the local debian:bookworm-slim, python313's
# from debian:trixie-slim, python39's from debian:bullseye-slim, and
# tagged by their inputs' hash, tests/lang/tags.sh: built once, then
# reused; the trixie and bullseye bases too, scripts/base-image.sh.)


LANGC="$REPO/tests/lang/compose.yaml"

# The cells that are not named today, and why.  `refused: TEXT`: start or
# attach refuses, saying TEXT.  `unnamed: WHY`: the run works, the shares
# are not the workload's.  Take a cell off when work lands.
declare -gA KNOWN_GAPS=(
    [gostatic:flamegraph]="refused: is static"
    [gostaticstrip:flamegraph]="refused: is static"
    [python:perf]="refused: python3.11 has no perf support: its functions would show as _PyEval_EvalFrameDefault; use \`start --mode flamegraph\`"
    [python:attach-perf]="refused: python3.11 has no perf support: its functions would show as _PyEval_EvalFrameDefault; use \`start --mode flamegraph\`"
    [python39:perf]="refused: python3.9 has no perf support: its functions would show as _PyEval_EvalFrameDefault; use \`start --mode flamegraph\`"
    [python39:attach-perf]="refused: python3.9 has no perf support: its functions would show as _PyEval_EvalFrameDefault; use \`start --mode flamegraph\`"
    [python313:attach-perf]="refused: was started without PYTHONPERFSUPPORT=1 or -X perf: its functions would show as _PyEval_EvalFrameDefault; use \`start --mode perf\`"
    [node:attach-perf]="refused: node was started without --perf-basic-prof: its JavaScript would be unnamed; use \`start --mode perf\`"
    [javaint:perf]="refused: java runs with -Xint: every method is interpreted, which perf's map names only \`Interpreter\`"
    [javaint:attach-perf]="refused: java runs with -Xint: every method is interpreted, which perf's map names only \`Interpreter\`"
)

MODES="flamegraph perf attach-perf attach-flamegraph"
# Where the JIT's frames are held to being named too: at least
# JIT_NAMED_MIN % of the samples in JIT code (jit_named).  javajre's image
# has no jcmd: its maps come from the attach socket and the JVM's exit.
declare -gA JIT_LANGS=([java]=1 [javajre]=1)
JIT_NAMED_MIN=95
# CPU time a cell runs for, read from the container's cgroup: a
# condition, not a pace; the same work for every language (startup and
# JIT warm-up are part of it, as for any service)
CPU_NS=10000000000

# pl ARGS...: the harness on the language project.
pl() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$LANGC" -p "$PH_TEST_PROJECT" --profiles "$REPO/profiles" -o "$OUT" "$@"
}

setup_file() {
    common_setup_file
    "$REPO/scripts/base-image.sh" trixie bullseye >&3 2>&1
    eval "$("$REPO/tests/lang/tags.sh")"
    export PH_LANG_C_TAG PH_LANG_CPP_TAG PH_LANG_RUST_TAG PH_LANG_GO_TAG PH_LANG_PYTHON_TAG PH_LANG_NODE_TAG PH_LANG_JAVA_TAG
    export TABLE=$BATS_FILE_TMPDIR/table
    : > "$TABLE"
    pl setup $LANGS $LANG_EXTRA >&3 2>&1
}
teardown_file() { common_teardown_file; }

# ran_cpu CONTAINER NS: its processes have used NS of CPU time or more.
ran_cpu() {
    local n
    n=$(cpu_ns "$1" 2>/dev/null)
    [ -n "$n" ] && [ "$n" -ge "$2" ]
}

# shares FILE...: "HOT COOL TOTAL TOP" of the folded stacks in FILEs:
# per cent of the counts whose stack holds each name, the total, and the
# most frequent leaf frame with its share.
shares() {
    cat "$@" 2>/dev/null | awk '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s); t += n
          if (index(s, "hot_seventy_five")) h += n
          if (index(s, "cool_twenty_five")) c += n
          k = split(s, a, ";"); leaf[a[k]] += n }
        END { top = "-"; tn = 0
              for (l in leaf) if (leaf[l] > tn) { tn = leaf[l]; top = l }
              if (t == 0) { printf "0 0 0 -\n"; exit }
              printf "%d %d %d %s %d%%\n", 100 * h / t + 0.5, 100 * c / t + 0.5, t, substr(top, 1, 60), 100 * tn / t + 0.5 }'
}

# jit_named FILE...: per cent (rounded down) of the JIT samples of the
# folded stacks in FILEs, those with a frame a perf map named (`_[j]`) or
# one left unnamed (perf's `[perf-N.map]`, the sampler's `[unknown]`,
# which a JVM's own unnamed native frames make stricter still), that have
# no unnamed one; -1 when there is no JIT sample.
jit_named() {
    cat "$@" 2>/dev/null | awk '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
          u = s ~ /(^|;)(\[perf-[0-9]+\.map\]|\[unknown\][^;]*)(;|$)/; j = index(s, "_[j]") > 0
          if (u || j) t += n
          if (j && !u) k += n }
        END { if (t == 0) print -1; else printf "%d\n", 100 * k / t }'
}

# The folded stacks of LANG's latest run: the perf conversion's, or the
# sampler's last snapshot (each snapshot holds the whole run so far).
run_folded() {
    readlink -f "$OUT/$1/stacks.folded"
}

# cell LANG MODE: run the cell; its result, one line, into $CELL:
# "named H/C", "unnamed H/C (top: FRAME N%)", "refused: MESSAGE",
# "failed: WHY".
cell() {
    local lang=$1 mode=$2 c h co t top note=""
    CELL=""
    if [[ "$mode" == attach-* ]]; then
        run pl restore "$lang"
        [ "$status" -eq 0 ] || { CELL="failed: restore: ${output##*$'\n'}"; return; }
        c=$(dk ps -q --filter "label=com.docker.compose.project=$PH_TEST_PROJECT" \
            --filter "label=com.docker.compose.service=$lang" | head -n 1)
        WAIT_SECONDS=150 wait_for ran_cpu "$c" 1000000000 || { CELL="failed: the restored service did not run"; return; }
        run pl attach --mode "${mode#attach-}" "$lang"
        if [ "$status" -ne 0 ]; then
            CELL="refused: $(printf '%s' "$output" | grep -m1 'error:')"
            pl down "$lang" >/dev/null 2>&1 || true
            return
        fi
        local base
        base=$(cpu_ns "$c")
        WAIT_SECONDS=150 wait_for ran_cpu "$c" $(( ${base:-0} + CPU_NS )) || note=" (short of its CPU time)"
        local t0=$SECONDS
        run pl stop "$lang"
        note=" (stop $((SECONDS - t0)) s)$note"
        # a detach never stops the service: the same container runs on, on CPU
        base=$(cpu_ns "$c")
        if [ "$status" -eq 0 ] && ! WAIT_SECONDS=60 wait_for ran_cpu "$c" $(( ${base:-0} + 100000000 )); then
            CELL="failed: the service did not keep running after stop"
            pl down "$lang" >/dev/null 2>&1 || true
            return
        fi
        pl down "$lang" >/dev/null 2>&1 || true
    else
        run pl start --mode "$mode" "$lang"
        if [ "$status" -ne 0 ]; then
            CELL="refused: $(printf '%s' "$output" | grep -m1 'error:')"
            return
        fi
        START_OUTPUT=$output
        WAIT_SECONDS=150 wait_for ran_cpu "${PH_TEST_PROJECT}-$lang-$mode" "$CPU_NS" || {
            note=" (short of its CPU time)"
            # what the container did, for the failure's report
            DIAG="start: ${START_OUTPUT##*$'\n'}; container: $(dk inspect -f '{{.State.Status}} exit {{.State.ExitCode}} oom {{.State.OOMKilled}}' "${PH_TEST_PROJECT}-$lang-$mode" 2>&1); log: $(dk logs --tail 5 "${PH_TEST_PROJECT}-$lang-$mode" 2>&1 | tr '\n' '|')"
        }
        run pl stop "$lang"
        [ -z "${DIAG:-}" ] || DIAG="$DIAG; stop ($status): $(printf '%s' "$output" | tail -3 | tr '\n' '|')"
    fi
    [ "$status" -eq 0 ] || { CELL="failed: stop: ${output##*$'\n'}"; return; }
    read -r h co t top <<< "$(shares "$(run_folded "$lang")")"
    if [ -n "${JIT_LANGS[$lang]:-}" ]; then
        local jit
        jit=$(jit_named "$(run_folded "$lang")")
        note=" (JIT $jit % named)$note"
        [ "$jit" -ge "$JIT_NAMED_MIN" ] || t=0
    fi
    if [ "$t" -gt 0 ] && [ "$h" -ge 70 ] && [ "$h" -le 80 ] && [ "$co" -ge 20 ] && [ "$co" -le 30 ]; then
        CELL="named $h/$co$note"
    else
        CELL="unnamed $h/$co (top: $top)$note"
    fi
}

# The language view each runtime's report speaks (issue 28): its headline
# names the workload's own function in that language, not the interpreter.
declare -gA LANG_VIEWS=([python]=Python [python39]=Python [python313]=Python [node]=JavaScript [java]=Java
                        [javajre]=Java)

# view_headline LANG: a named cell of a language runtime: the headline of
# its run (summary.json, as stop printed it) is in the language's view,
# its top function hot_seventy_five.
view_headline() {
    local view=${LANG_VIEWS[$1]:-} hl
    [ -n "$view" ] && [[ "$CELL" == named* ]] || return 0
    hl=$(jq -r .headline "$(dirname "$(run_folded "$1")")/summary.json")
    echo "#   headline: $hl" >&3
    [[ "$hl" == *"($view view), top "*hot_seventy_five* ]]
}

# check_cell LANG MODE: run it, record it in the table, and hold it to
# what it must be: named, or exactly the known gap; a named language
# runtime's headline in its language (view_headline).
check_cell() {
    local key="$1:$2" gap
    gap=${KNOWN_GAPS[$key]:-}
    DIAG=""
    cell "$1" "$2"
    printf '%s\t%s\t%s\n' "$1" "$2" "$CELL" >> "$TABLE"
    echo "# $1 × $2: $CELL${gap:+ (known gap: ${gap})}" >&3
    [ -z "$DIAG" ] || echo "#   $DIAG" >&3
    case $gap in
        "")
            [[ "$CELL" == named* ]] ;;
        refused:*)
            [[ "$CELL" == refused:* ]] && [[ "$CELL" == *"${gap#refused: }"* ]] ;;
        unnamed:*)
            # still a gap: it ran and did not name; when it does, take it off the list
            [[ "$CELL" == unnamed* ]] ;;
    esac || return 1
    view_headline "$1"
}

# Java beyond the perf map (not cells of the table).  Shares here are
# within the samples of the Java code (stacks holding an anchor), so the
# JVM's own threads (more of them under -Xint) do not move them.
# java_cell SERVICE ANCHOR LABEL [MODE]: run SERVICE under MODE
# (flamegraph, attach-flamegraph); its folded stacks into $F and its
# status files into $ST; hot and cool (per cent of the samples whose stack
# holds ANCHOR) must be the workload's.
java_cell() {
    local h c n mode=${4:-flamegraph}
    cell "$1" "$mode"
    F=$(run_folded "$1")
    ST=$(cat "$(dirname "$F")"/sampler-status-*.json)
    read -r h c n <<< "$(awk -v a="$2" '
        { n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
          if (!index(s, a)) next
          t += n
          if (index(s, "hot_seventy_five")) h += n
          if (index(s, "cool_twenty_five")) c += n }
        END { if (t == 0) { print "0 0 0"; exit }
              printf "%d %d %d\n", 100 * h / t + 0.5, 100 * c / t + 0.5, t }' "$F")"
    echo "# $3 × $mode: $CELL; $h/$c of the $n samples with $2" >&3
    [ "$n" -ge 500 ] && [ "$h" -ge 70 ] && [ "$h" -le 80 ] && [ "$c" -ge 20 ] && [ "$c" -le 30 ]
}

# lang_table: the cells of this file as a table on the TAP output; every
# cell ran.
lang_table() {
    [ -s "$TABLE" ]
    {
        printf '# %-10s' language
        for mode in $MODES; do printf ' | %-34s' "$mode"; done
        printf '\n'
        for lang in $LANGS; do
            printf '# %-10s' "$lang"
            for mode in $MODES; do
                v=$(awk -F'\t' -v l="$lang" -v m="$mode" '$1 == l && $2 == m { print $3 }' "$TABLE")
                printf ' | %-34s' "$(printf '%s' "${v:-not run}" | cut -c1-34)"
            done
            printf '\n'
        done
    } >&3
    # every cell of the table's languages ran (LANG_EXTRA's cells are
    # their own tests')
    [ "$(awk -F'\t' -v ls=" $LANGS " 'index(ls, " " $1 " ")' "$TABLE" | wc -l)" -eq \
      $(( $(echo $LANGS | wc -w) * $(echo $MODES | wc -w) )) ]
}
