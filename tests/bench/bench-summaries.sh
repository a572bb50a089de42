#!/usr/bin/env bash
# bench-summaries.sh: the report's parsers on large inputs (gen_artifacts.c:
# a CG_MB MB callgrind.out as --dump-instr=yes writes it, a massif.out of
# MASSIF_SNAPSHOTS snapshots, an ST_MB MB strace -f -tt -T log), side by
# side in one run with the upstream tools:
#   `profharness report RUN_DIR` (parse, summary.json, report.html with its
#   flamegraph) against `callgrind_annotate --auto=no` and `ms_print`;
#   the strace report's throughput.
# Wall time and peak RSS are the medians of RUNS runs (/usr/bin/time).
# Prints ratios; asserts nothing (not a test).  Goals: >= 20x faster than
# the Perl tools, peak RSS <= 64 MB whatever the input's size, the strace
# summary at >= 200 MB/s.
#
# KINDS=callgrind,massif,strace picks some.  Each kind's figures are then
# checked against the tool's (Ir totals, peak heap, the syscall count).
# Needs valgrind (callgrind_annotate, ms_print), cc, jq and /usr/bin/time.
# Disk: about CG_MB + ST_MB + 100 MB in a temp dir, removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
CG_MB=${CG_MB:-512}
ST_MB=${ST_MB:-512}
MASSIF_SNAPSHOTS=${MASSIF_SNAPSHOTS:-20000}
KINDS=${KINDS:-callgrind,massif,strace}
PH=$(readlink -f "${PROFHARNESS:-build/profharness}")
for t in callgrind_annotate ms_print cc /usr/bin/time; do
    command -v "$t" >/dev/null || { echo "bench-summaries: $t missing (scripts/install-deps.sh)" >&2; exit 1; }
done
[ -x "$PH" ] || { echo "bench-summaries: $PH not built (run make)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-summaries.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cc -O2 -o "$tmp/gen" tests/bench/gen_artifacts.c
runs=$tmp/out/bench
mkdir -p "$runs/1-callgrind" "$runs/2-massif" "$runs/3-strace"
"$tmp/gen" callgrind "$CG_MB" > "$runs/1-callgrind/callgrind.out"
"$tmp/gen" massif "$MASSIF_SNAPSHOTS" > "$runs/2-massif/massif.out"
"$tmp/gen" strace "$ST_MB" > "$runs/3-strace/strace.log"
size_mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.0f", b / 1048576 }'; }
echo "bench-summaries: callgrind.out $(size_mb "$runs/1-callgrind/callgrind.out") MB," \
     "massif.out $MASSIF_SNAPSHOTS snapshots ($(size_mb "$runs/2-massif/massif.out") MB)," \
     "strace.log $(size_mb "$runs/3-strace/strace.log") MB; $RUNS runs each, medians"

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# measure NAME CMD...: RUNS runs from /, output thrown away; prints
# "median-seconds median-peak-KB".
measure() {
    local name=$1 t m; shift
    : > "$tmp/$name.t"; : > "$tmp/$name.m"
    for _ in $(seq 1 "$RUNS"); do
        if ! (cd / && /usr/bin/time -f '%e %M' -o "$tmp/$name.time" "$@" > /dev/null 2> "$tmp/$name.err"); then
            echo "bench-summaries: $name failed:" >&2; cat "$tmp/$name.err" >&2; return 1
        fi
        read -r t m < "$tmp/$name.time"
        echo "$t" >> "$tmp/$name.t"; echo "$m" >> "$tmp/$name.m"
    done
    echo "$(median < "$tmp/$name.t") $(median < "$tmp/$name.m")"
}
row() { printf '  %-34s %8.2f s %9d KB peak RSS\n' "$1" "$2" "$3"; }

# One kind: ours against the Perl tool, in turns.
compare() {
    local kind=$1 file=$2 tool=$3 ot om pt pm
    read -r ot om < <(measure "ours-$kind" "$PH" -o "$tmp/out" --profiles "$PWD/profiles" report --no-index "$runs/$kind")
    read -r pt pm < <(measure "$tool" $tool "$file")
    row "profharness report ($kind)" "$ot" "$om"
    row "$tool" "$pt" "$pm"
    awk -v ot="$ot" -v pt="$pt" -v om="$om" 'BEGIN {
        printf "  speed: %.1fx faster (goal >= 20x)   our peak RSS: %.1f MB (goal <= 64 MB)\n", pt / (ot > 0 ? ot : 0.01), om / 1024 }'
}

# check WHAT OURS THEIRS: the figures are the tools' own
check() {
    if [ "$2" = "$3" ]; then echo "  check: $1 equal ($2)"; else echo "  check: $1 DIFFER (ours $2, theirs $3)"; fail=1; fi
}
fail=0
if [[ ",$KINDS," == *,callgrind,* ]]; then
    echo "callgrind"
    compare 1-callgrind "$runs/1-callgrind/callgrind.out" "callgrind_annotate --auto=no"
    check "Ir totals" "$(jq -r .callgrind.totals.Ir "$runs/1-callgrind/summary.json")" \
        "$(cd / && callgrind_annotate --auto=no --show=Ir "$runs/1-callgrind/callgrind.out" |
           awk '/PROGRAM TOTALS/ { gsub(",", "", $1); t = $1 } END { print t }')"
fi
if [[ ",$KINDS," == *,massif,* ]]; then
    echo "massif"
    compare 2-massif "$runs/2-massif/massif.out" "ms_print"
    peak=$(jq -r .massif.peak_snapshot "$runs/2-massif/summary.json")
    check "peak heap" "$(jq -r .massif.peak_heap "$runs/2-massif/summary.json")" \
        "$(cd / && ms_print "$runs/2-massif/massif.out" | awk -v n="$peak" '$1 == n && NF == 6 { gsub(",", "", $4); h = $4 } END { print h }')"
fi
if [[ ",$KINDS," == *,strace,* ]]; then
    echo "strace"
    read -r st sm < <(measure ours-strace "$PH" -o "$tmp/out" --profiles "$PWD/profiles" report --no-index "$runs/3-strace")
    row "profharness report (strace)" "$st" "$sm"
    awk -v s="$st" -v b="$(stat -c %s "$runs/3-strace/strace.log")" -v m="$sm" 'BEGIN {
        printf "  throughput: %.0f MB/s (goal >= 200 MB/s)   our peak RSS: %.1f MB (goal <= 64 MB)\n", b / 1048576 / (s > 0 ? s : 0.01), m / 1024 }'
    check "syscalls" "$(jq -r .strace.calls "$runs/3-strace/summary.json")" \
        "$(awk '{ b = $0; sub(/^[0-9]+ +[0-9:.]+ /, "", b); if (b !~ /^(---|\+\+\+|<\.\.\.)/) n++ } END { print n }' "$runs/3-strace/strace.log")"
fi
exit $fail
