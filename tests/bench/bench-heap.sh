#!/usr/bin/env bash
# bench-heap.sh: the heap mode's cost and fidelity on an allocation-heavy
# program (tests/bench/heap_alloc.c: ITERS replacements in a live set of
# SLOTS small blocks, a 64 KiB buffer every 64th, 8 MiB kept from the
# start), side by side in one run: no profiler, our sampler at the mode's
# default (512 KiB) and at 4 KiB, valgrind massif and heaptrack (Debian
# `heaptrack`), gperftools' heap profiler (HEAPPROFILE, Debian
# libgoogle-perftools4: it brings tcmalloc, so it is measured against
# tcmalloc alone too) and tcmalloc's own sampling at 512 KiB
# (TCMALLOC_SAMPLE_PARAMETER, no profile written: the cost tcmalloc's
# design aims at, against tcmalloc unsampled), and two floors
# (tests/bench/heap_floor.c): an interposer that only calls through, and
# one that also keeps a 16-byte header before each block as our exact
# count does on glibc: the part of our cost that is those bytes alone.  Runs are interleaved
# (none, ours, ours 4K, massif, heaptrack, gperftools..., none, ...) so
# drift hits all alike; medians of RUNS wall
# times of the whole process (start to exit: the final snapshot, massif's
# and heaptrack's own writing included) and of the loop's CPU time (its
# thread's, steadier on a shared machine; a profiler's own threads left
# out), as ratios to none.  Then the peak
# in use: ours (the sampler's estimate) against massif's peak (its
# mem_heap_B, requested bytes as ours are).
# BASELINE_LIB=path/libphsampler.so adds that build of the sampler at the
# default rate beside ours (before/after a change, in the same run).
# Then the runtimes (LANG_RUNS runs each, interleaved, medians of the
# whole process's wall time): a JVM (tests/data/java/HeapTwo.java, 2.3
# GiB of arrays; the sampler as the heap profile loads it, the JVMTI
# agent sampling its objects), CPython and node (small objects, which
# their own heaps serve: the sampler sees their mallocs only), each
# without a profiler and in the heap mode at its default rate; a
# runtime missing on the host is left out.  The loop's own CPU time
# beside (HeapTwo's main thread, the Python loop's): start and the final
# snapshot are in the wall time only.
# Prints; asserts nothing.  Needs build/libphsampler.so (make).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-5}
ITERS=${ITERS:-3000000}
SLOTS=${SLOTS:-100000}
[ -f build/libphsampler.so ] || { echo "bench-heap: build/libphsampler.so missing: run make" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-heap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -g -o "$tmp/alloc" tests/bench/heap_alloc.c
cc -O2 -shared -fPIC -o "$tmp/floor.so" tests/bench/heap_floor.c
cc -O2 -shared -fPIC -DHEADER -o "$tmp/floor16.so" tests/bench/heap_floor.c
have_massif=0; command -v valgrind >/dev/null && have_massif=1
have_heaptrack=0; command -v heaptrack >/dev/null && have_heaptrack=1
[ "$have_massif" = 1 ] || echo "bench-heap: valgrind missing (Debian: valgrind): massif left out"
[ "$have_heaptrack" = 1 ] || echo "bench-heap: heaptrack missing (Debian: heaptrack): left out"
TCMALLOC=${TCMALLOC:-/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4}
have_gperf=0; [ -f "$TCMALLOC" ] && have_gperf=1
[ "$have_gperf" = 1 ] || echo "bench-heap: $TCMALLOC missing (Debian: libgoogle-perftools4): gperftools left out"

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# run NAME CMD...: one timed run, its wall seconds appended to $tmp/NAME
run() {
    local name=$1 t0 t1
    shift
    t0=$(now)
    "$@" > "$tmp/$name.out" 2>&1 || { echo "bench-heap: $name failed:"; cat "$tmp/$name.out"; exit 1; }
    t1=$(now)
    echo "scale=4; ($t1 - $t0) / 1000000000" | bc >> "$tmp/$name.t"
    # the loop's own CPU time: heap_alloc's, HeapTwo's main thread's, the Python loop's
    sed -n 's/^\(heap_alloc: .*, \|HeapTwo: .*, \|py: \)\([0-9.]*\) CPU-s$/\2/p' "$tmp/$name.out" >> "$tmp/$name.cpu"
}
BASELINE_LIB=${BASELINE_LIB:-}
[ -z "$BASELINE_LIB" ] || [ -f "$BASELINE_LIB" ] || { echo "bench-heap: $BASELINE_LIB missing" >&2; exit 1; }
ours() {
    local dir=$tmp/ours-$1${2:+-base} lib=${2:-$PWD/build/libphsampler.so}
    rm -rf "$dir"
    env LD_PRELOAD="$lib" PH_SAMPLER_DIR="$dir" PH_SAMPLER_HEAP="$1" PH_SAMPLER_INTERVAL=0 \
        "$tmp/alloc" "$ITERS" "$SLOTS"
}
massif() { valgrind --tool=massif --massif-out-file="$tmp/massif.out" "$tmp/alloc" "$ITERS" "$SLOTS"; }
htrack() { rm -f "$tmp"/ht.*; heaptrack -o "$tmp/ht" "$tmp/alloc" "$ITERS" "$SLOTS"; }
# (TCMALLOC_SAMPLE_PARAMETER=0: tcmalloc samples nothing)
tcm() { env LD_PRELOAD="$TCMALLOC" TCMALLOC_SAMPLE_PARAMETER="$1" "$tmp/alloc" "$ITERS" "$SLOTS"; }
gperf() { rm -f "$tmp"/gp.*; env LD_PRELOAD="$TCMALLOC" HEAPPROFILE="$tmp/gp" "$tmp/alloc" "$ITERS" "$SLOTS"; }

echo "heap bench: $ITERS replacements in a live set of $SLOTS blocks, $RUNS runs each, interleaved"
for ((i = 1; i <= RUNS; i++)); do
    run none "$tmp/alloc" "$ITERS" "$SLOTS"
    run ours512k ours 524288
    [ -z "$BASELINE_LIB" ] || run base512k ours 524288 "$(readlink -f "$BASELINE_LIB")"
    run ours4k ours 4096
    run floor env LD_PRELOAD="$tmp/floor.so" "$tmp/alloc" "$ITERS" "$SLOTS"
    run floor16 env LD_PRELOAD="$tmp/floor16.so" "$tmp/alloc" "$ITERS" "$SLOTS"
    [ "$have_massif" = 0 ] || run massif massif
    [ "$have_heaptrack" = 0 ] || run heaptrack htrack
    if [ "$have_gperf" = 1 ]; then
        run tcmalloc tcm 0
        run tcsample tcm 524288
        run gperf gperf
    fi
done

base=$(median < "$tmp/none.t")
cbase=$(median < "$tmp/none.cpu")
printf '%-24s %10s %10s %12s %10s\n' "" "wall s" "vs none" "loop CPU-s" "vs none"
for n in none ours512k base512k ours4k floor floor16 massif heaptrack tcmalloc tcsample gperf; do
    [ -f "$tmp/$n.t" ] || continue
    m=$(median < "$tmp/$n.t")
    c=$(median < "$tmp/$n.cpu")
    case $n in
    none) label="no profiler" ;;
    ours512k) label="ours, 512 KiB (default)" ;;
    base512k) label="baseline lib, 512 KiB" ;;
    ours4k) label="ours, 4 KiB" ;;
    floor) label="floor: call through" ;;
    floor16) label="floor + 16 B header" ;;
    massif) label="valgrind massif" ;;
    heaptrack) label="heaptrack" ;;
    tcmalloc) label="tcmalloc, no profiler" ;;
    tcsample) label="tcmalloc sampling 512K" ;;
    gperf) label="gperftools heap prof." ;;
    esac
    # (under valgrind the loop's thread reports no CPU time of its own)
    if [ "$(echo "$c > 0" | bc)" = 1 ]; then
        printf '%-24s %10.3f %9.2fx %12.3f %9.2fx\n' "$label" "$m" "$(echo "scale=4; $m / $base" | bc)" "$c" \
            "$(echo "scale=4; $c / $cbase" | bc)"
    else
        printf '%-24s %10.3f %9.2fx %12s %10s\n' "$label" "$m" "$(echo "scale=4; $m / $base" | bc)" "-" "-"
    fi
done

# the peak in use: ours against massif's
for r in 524288 4096; do
    st=$(ls "$tmp"/ours-$r/sampler-status-*.json | head -1)
    ours_peak=$(jq '.heap.peak_inuse_bytes' "$st")
    samples=$(jq '.heap.samples' "$st")
    line="peak in use, ours at $r B: $ours_peak B ($samples samples)"
    if [ "$have_massif" = 1 ]; then
        m=$(sed -n 's/^mem_heap_B=//p' "$tmp/massif.out" | sort -n | tail -1)
        line="$line; massif: $m B; ours/massif $(echo "scale=4; $ours_peak / $m" | bc)"
    fi
    echo "$line"
done
# gperftools' peak: the most in use in any of its dumps (it writes one per
# GiB allocated and per 100 MB more in use: a peak between them is missed)
if [ "$have_gperf" = 1 ] && ls "$tmp"/gp.*.heap > /dev/null 2>&1; then
    g=$(for f in "$tmp"/gp.*.heap; do head -1 "$f"; done | sed -n 's/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p' | sort -n | tail -1)
    line="peak in use, gperftools: $g B, the most of its $(ls "$tmp"/gp.*.heap | wc -l) dumps"
    [ "$have_massif" = 0 ] || line="$line; gperftools/massif $(echo "scale=4; $g / $m" | bc)"
    echo "$line"
fi

# ---- the 75/25 program (issue 31) ----------------------------------------
# tests/bench/heap_split.c: SPLIT_CALLS mallocs and frees of mixed sizes,
# the bytes 75/25 between alloc_three and alloc_one; none, ours at 512 KiB
# (and BASELINE_LIB's), the floors, heaptrack, tcmalloc alone and
# gperftools' heap profiler on it, interleaved; the loop's CPU medians;
# the split in every view of ours and of heaptrack's; the peaks against
# the program's own count and massif's.
SPLIT_CALLS=${SPLIT_CALLS:-4000000}
cc -O2 -g -o "$tmp/split" tests/bench/heap_split.c
split_ours() {
    local dir=$tmp/split-$1
    rm -rf "$dir"
    env LD_PRELOAD="$2" PH_SAMPLER_DIR="$dir" PH_SAMPLER_HEAP=524288 PH_SAMPLER_INTERVAL=0 "$tmp/split" "$SPLIT_CALLS"
}
split_ht() { rm -f "$tmp"/split-ht.*; heaptrack -o "$tmp/split-ht" "$tmp/split" "$SPLIT_CALLS"; }
split_gp() { rm -f "$tmp"/split-gp.*; env LD_PRELOAD="$TCMALLOC" HEAPPROFILE="$tmp/split-gp" "$tmp/split" "$SPLIT_CALLS"; }
splitrun() {
    local name=$1
    shift
    "$@" > "$tmp/$name.out" 2>&1 || { echo "bench-heap: $name failed:"; cat "$tmp/$name.out"; exit 1; }
    sed -n 's/^heap_split: .*, \([0-9.]*\) CPU-s$/\1/p' "$tmp/$name.out" >> "$tmp/$name.cpu"
}
echo
echo "75/25 program: $SPLIT_CALLS calls, $RUNS runs each, interleaved (loop CPU-s, medians)"
for ((i = 1; i <= RUNS; i++)); do
    splitrun split-none "$tmp/split" "$SPLIT_CALLS"
    splitrun split-ours split_ours ours "$PWD/build/libphsampler.so"
    [ -z "$BASELINE_LIB" ] || splitrun split-base split_ours base "$(readlink -f "$BASELINE_LIB")"
    splitrun split-floor env LD_PRELOAD="$tmp/floor.so" "$tmp/split" "$SPLIT_CALLS"
    splitrun split-floor16 env LD_PRELOAD="$tmp/floor16.so" "$tmp/split" "$SPLIT_CALLS"
    [ "$have_heaptrack" = 0 ] || splitrun split-heaptrack split_ht
    if [ "$have_gperf" = 1 ]; then
        splitrun split-tcmalloc env LD_PRELOAD="$TCMALLOC" TCMALLOC_SAMPLE_PARAMETER=0 "$tmp/split" "$SPLIT_CALLS"
        splitrun split-gperf split_gp
    fi
done
[ "$have_massif" = 0 ] || valgrind --tool=massif --massif-out-file="$tmp/split-massif.out" "$tmp/split" "$SPLIT_CALLS" \
    > /dev/null 2>&1
sm=
[ "$have_massif" = 0 ] || sm=$(sed -n 's/^mem_heap_B=//p' "$tmp/split-massif.out" | sort -n | tail -1)
sbase=$(median < "$tmp/split-none.cpu")
for n in split-none split-ours split-base split-floor split-floor16 split-heaptrack split-tcmalloc split-gperf; do
    [ -f "$tmp/$n.cpu" ] || continue
    c=$(median < "$tmp/$n.cpu")
    printf '%-24s %10.3f CPU-s %8.3fx\n' "${n#split-}" "$c" "$(echo "scale=4; $c / $sbase" | bc)"
done
true_peak=$(sed -n 's/^heap_split: .*, peak \([0-9]*\) B, .*/\1/p' "$tmp/split-none.out")
for n in ours base; do
    [ -d "$tmp/split-$n" ] || continue
    st=$(ls "$tmp"/split-$n/sampler-status-*.json | head -1)
    p=$(jq '.heap.peak_inuse_bytes' "$st")
    line="$n: peak $p B, the program's own $true_peak B ($(echo "scale=4; $p / $true_peak" | bc)x)"
    if [ "$have_massif" = 1 ]; then
        m=$(sed -n 's/^mem_heap_B=//p' "$tmp/split-massif.out" | sort -n | tail -1)
        line="$line, massif $m B ($(echo "scale=4; $p / $m" | bc)x)"
    fi
    echo "$line"
    for v in alloc_space inuse_space peak_inuse_space; do
        awk -v v=$v '{ n = $NF } /;alloc_three/ { a += n } /;alloc_one/ { b += n }
            END { printf "  %-18s alloc_three %5.1f %% of the two\n", v, 100 * a / (a + b) }' \
            "$tmp"/split-$n/$v-*.folded
    done
done

# heaptrack's view of the same run (its last): the peak (the sum of its
# stacks at the peak, heaptrack_print's peak cost) and the split there,
# in what is left at the end (its `leaked`) and in the calls (its
# `allocations`: alloc_three makes 3 of every 4, of the same sizes)
if [ "$have_heaptrack" = 1 ] && ls "$tmp"/split-ht.* > /dev/null 2>&1; then
    hf=$(ls "$tmp"/split-ht.* | head -1)
    for cost in peak leaked allocations; do
        heaptrack_print -f "$hf" -F "$tmp/split-ht-$cost.txt" --flamegraph-cost-type "$cost" > /dev/null 2>&1 || true
    done
    hp=$(awk '{ s += $NF } END { printf "%d", s }' "$tmp/split-ht-peak.txt")
    line="heaptrack: peak $hp B, the program's own $true_peak B ($(echo "scale=4; $hp / $true_peak" | bc)x)"
    [ "$have_massif" = 0 ] || line="$line, massif $sm B ($(echo "scale=4; $hp / $sm" | bc)x)"
    echo "$line"
    for cost in allocations leaked peak; do
        awk -v v=$cost '{ n = $NF } /;alloc_three/ { a += n } /;alloc_one/ { b += n }
            END { if (a + b > 0) printf "  %-18s alloc_three %5.1f %% of the two\n", v, 100 * a / (a + b) }' \
            "$tmp/split-ht-$cost.txt"
    done
fi
# gperftools': the most in use in any of its dumps (its last run's)
if [ "$have_gperf" = 1 ] && ls "$tmp"/split-gp.*.heap > /dev/null 2>&1; then
    g=$(for f in "$tmp"/split-gp.*.heap; do head -1 "$f"; done | sed -n 's/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p' | sort -n | tail -1)
    line="gperftools: peak $g B, the most of its $(ls "$tmp"/split-gp.*.heap | wc -l) dumps ($(echo "scale=4; $g / $true_peak" | bc)x the program's own)"
    [ "$have_massif" = 0 ] || line="$line, massif $sm B ($(echo "scale=4; $g / $sm" | bc)x)"
    echo "$line"
fi

# ---- the runtimes ----------------------------------------------------------
LANG_RUNS=${LANG_RUNS:-$RUNS}
lib=$PWD/build/libphsampler.so
heapmode() { env LD_PRELOAD="$lib" PH_SAMPLER_DIR="$tmp/lang-$1" PH_SAMPLER_HEAP=524288 PH_SAMPLER_INTERVAL=0 "${@:2}"; }
lang_cmd=()
have_java=0
if command -v java >/dev/null && command -v javac >/dev/null; then
    javac -d "$tmp/classes" tests/data/java/HeapTwo.java && have_java=1
else
    echo "bench-heap: no java and javac: the JVM row left out"
fi
py=$(command -v python3 || true)
# (a wrapper script, pyenv's shim, would be the one preloaded: the interpreter itself)
[ -z "$py" ] || py=$("$py" -c 'import sys; print(sys.executable)')
node=$(command -v node || true)
PYWORK='import time
t = time.process_time()
keep = []
for i in range(1500000):
    d = {"k": i, "v": [i, str(i)]}
    if i % 8 == 0:
        keep.append(d)
    if len(keep) > 100000:
        keep = keep[50000:]
print("py: %.3f CPU-s" % (time.process_time() - t))'
JSWORK='let keep = [];
for (let i = 0; i < 3000000; i++) {
    const o = { k: i, v: [i, String(i)] };
    if (i % 8 === 0) keep.push(o);
    if (keep.length > 100000) keep = keep.slice(50000);
}
console.log("js: done");'
echo
echo "runtimes: $LANG_RUNS runs each, interleaved; the heap mode at 512 KiB against no profiler (wall s, medians)"
for ((i = 1; i <= LANG_RUNS; i++)); do
    if [ "$have_java" = 1 ]; then
        run java-none java -cp "$tmp/classes" HeapTwo 4
        run java-heap heapmode java-$i env JAVA_TOOL_OPTIONS="-agentpath:$lib" java -cp "$tmp/classes" HeapTwo 4
    fi
    if [ -n "$py" ]; then
        run py-none "$py" -c "$PYWORK"
        run py-heap heapmode py-$i "$py" -c "$PYWORK"
    fi
    if [ -n "$node" ]; then
        run node-none "$node" -e "$JSWORK"
        run node-heap heapmode node-$i "$node" -e "$JSWORK"
    fi
done
printf '%-8s %10s %10s %8s %12s %12s %8s  %s\n' "" "none s" "heap s" "vs none" "loop none" "loop heap" \
    "vs none" "what the heap mode saw"
for r in java py node; do
    [ -f "$tmp/$r-none.t" ] || continue
    a=$(median < "$tmp/$r-none.t")
    b=$(median < "$tmp/$r-heap.t")
    seen=$(jq -r '[.runtimes[] | .brief] | if length == 0 then "malloc only" else join("; ") end' \
        "$(ls "$tmp"/lang-$r-1/heap-*.json | head -1)")
    ca=-; cb=-; cr=-
    if [ -s "$tmp/$r-none.cpu" ]; then # (node prints none)
        ca=$(median < "$tmp/$r-none.cpu")
        cb=$(median < "$tmp/$r-heap.cpu")
        cr=$(printf '%.2fx' "$(echo "scale=4; $cb / $ca" | bc)")
    fi
    printf '%-8s %10.3f %10.3f %7.2fx %12s %12s %8s  %s\n' "$r" "$a" "$b" "$(echo "scale=4; $b / $a" | bc)" \
        "$ca" "$cb" "$cr" "$seen"
done
