#!/usr/bin/env bash
# bench-flamegraph-overhead.sh: the cost of sampling a CPU-bound loop 30
# frames deep (tests/bench/overhead_loop.c): our sampler
# (build/libphsampler.so) vs gperftools' libprofiler vs nothing, at 100,
# 150, 250 and 1000 Hz.  Runs are interleaved (none, ours, floor, gperftools,
# none, ...) so drift hits all alike.  Medians of RUNS wall-clock times and
# of the loop's process CPU time (steadier on a shared machine; it stops at
# the end of main, before any final write), printed as ratios to none and
# ours/gperftools; and the rate each delivered (samples per CPU-second of
# the loop), since the kernel tick (CONFIG_HZ) caps SIGPROF rates: we
# switch to perf events above 250 Hz, gperftools does not.  A "floor" run
# takes the same samples the same way ours does (the timer ours reported:
# ITIMER_PROF, or a perf cpu-clock event signalling SIGPROF or SIGTRAP)
# with a handler that only counts: on a virtual machine the timer and the
# signal alone can cost more than any profiler's own work.  "above floor"
# is ours' cost per sample minus the floor's: what the sampler itself
# (unwinding, recording, its writer thread) adds to each sample.
# Then the start-up cost: the loop with no work, none and ours (at 150 Hz,
# ITIMER_PROF, and at 1000 Hz, perf events) interleaved: the main thread's
# CPU time at main()'s entry (what the service waits for) and the whole
# process's CPU from exec to exit (rusage: ours' writer building the unwind
# tables beside it counts there).
# Prints; asserts nothing.  Needs build/libphsampler.so (make).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-7}
ROUNDS=${ROUNDS:-3000}   # ~4 s of CPU a run (10 on a loaded VM): start-up and the final write are not the story
HZS=${HZS:-"100 150 250 1000"}   # 250: gperftools' ceiling, where both deliver the same rate
LIBPROFILER=${LIBPROFILER:-/usr/lib/x86_64-linux-gnu/libprofiler.so.0}
[ -f build/libphsampler.so ] || { echo "bench-flamegraph-overhead: build/libphsampler.so missing: run make" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-overhead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -fno-omit-frame-pointer -o "$tmp/loop" tests/bench/overhead_loop.c
if [ ! -f "$LIBPROFILER" ]; then
    echo "bench-flamegraph-overhead: $LIBPROFILER missing (Debian: libgoogle-perftools4); comparing with none only"
    LIBPROFILER=""
fi

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
cpu_of() { sed -n 's/^cpu_s=\([0-9.]*\).*/\1/p' "$1"; }

# gperftools' CPU profile: 64-bit words; a 5-word header, then records
# (count, depth, pcs...), ended by (0, 1, 0); then the maps text.
gperf_samples() {
    python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
w = lambda i: struct.unpack_from('<Q', d, 8 * i)[0]
i, n = 5, 0
while 8 * (i + 2) <= len(d):
    c, depth = w(i), w(i + 1)
    if c == 0 and depth == 1:
        break
    n += c
    i += 2 + depth
print(n)
PY
}

# The timer ours used, from its graph's subtitle, as overhead_loop names it.
source_of_ours() {
    local svg
    svg=$(ls "$tmp"/out/flamegraph-*.svg 2>/dev/null | head -1)
    if [ -z "$svg" ]; then echo itimer
    elif grep -q 'perf_event[^)]*SIGTRAP' "$svg"; then echo perf-sigtrap
    elif grep -q 'perf_event' "$svg"; then echo perf-sigprof
    else echo itimer; fi
}

run() { # KIND HZ -> appends "wall_ms delivered_hz cpu_ms" to $tmp/KIND
    local kind=$1 hz=$2 t0 t1 samples=0 cpu
    rm -rf "$tmp/out" && mkdir -p "$tmp/out"
    t0=$(now)
    case $kind in
    none) "$tmp/loop" "$ROUNDS" > "$tmp/stdout" ;;
    floor) OVERHEAD_FLOOR_HZ=$hz OVERHEAD_FLOOR_SOURCE=$floor_source "$tmp/loop" "$ROUNDS" > "$tmp/stdout" ;;
    ours) PH_SAMPLER_DIR="$tmp/out" PH_SAMPLER_HZ=$hz PH_SAMPLER_INTERVAL=0 LD_PRELOAD=build/libphsampler.so \
              "$tmp/loop" "$ROUNDS" > "$tmp/stdout" 2> "$tmp/stderr-ours" ;;
    gperf) CPUPROFILE="$tmp/out/gperf.prof" CPUPROFILE_FREQUENCY=$hz LD_PRELOAD=$LIBPROFILER \
              "$tmp/loop" "$ROUNDS" > "$tmp/stdout" 2> "$tmp/stderr" ;;
    esac
    t1=$(now)
    cpu=$(cpu_of "$tmp/stdout")
    case $kind in
    floor) samples=$(sed -n 's/.*floor_samples=\([0-9]*\).*/\1/p' "$tmp/stdout")
           floor_seen=$(sed -n 's/.*floor_source=//p' "$tmp/stdout") ;;
    ours) samples=$(cat "$tmp"/out/stacks-*.folded | awk '{s+=$NF} END{print s+0}'); floor_source=$(source_of_ours) ;;
    gperf) samples=$(gperf_samples "$tmp/out/gperf.prof") ;;
    esac
    echo "$(( (t1 - t0) / 1000000 )) $(awk -v s="$samples" -v c="$cpu" 'BEGIN{printf "%.0f %.0f", (c > 0) ? s / c : 0, c * 1000}')" >> "$tmp/$kind"
}

printf 'bench-flamegraph-overhead: loop 30 frames deep, %s rounds, %d interleaved runs, medians; load average %s\n' \
    "$ROUNDS" "$RUNS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%7s | %-5s | %8s | %8s %6s %9s %7s %7s | %8s %6s %9s %7s | %10s\n' "" "" none ours ratio delivered us/smp ">floor" \
    gperf ratio delivered us/smp ours/gperf
floor_source=itimer
for hz in $HZS; do
    : > "$tmp/none"; : > "$tmp/ours"; : > "$tmp/gperf"; : > "$tmp/floor"
    for _ in $(seq 1 "$RUNS"); do
        run none "$hz"
        run ours "$hz"
        run floor "$hz"
        [ -z "$LIBPROFILER" ] || run gperf "$hz"
    done
    for col in 1 3; do
        what=wall; [ $col = 3 ] && what=cpu
        n=$(cut -d' ' -f$col "$tmp/none" | median)
        o=$(cut -d' ' -f$col "$tmp/ours" | median); od=$(cut -d' ' -f2 "$tmp/ours" | median)
        f=$(cut -d' ' -f$col "$tmp/floor" | median); fd=$(cut -d' ' -f2 "$tmp/floor" | median)
        if [ -n "$LIBPROFILER" ]; then
            g=$(cut -d' ' -f$col "$tmp/gperf" | median); gd=$(cut -d' ' -f2 "$tmp/gperf" | median)
        else
            g=0; gd=0
        fi
        # us/smp: the time added per sample delivered, which compares
        # profilers that deliver different rates (gperftools stays at the
        # kernel tick when asked for more).  >floor: ours' us/smp minus
        # the floor's, at the rate each delivered.
        awk -v hz="$hz" -v what="$what" -v n="$n" -v o="$o" -v od="$od" -v f="$f" -v fd="$fd" -v g="$g" -v gd="$gd" '
            function us(t, d) { return d > 0 ? (t - n) * 1000 / (d * t / 1000) : 0 }
            BEGIN{
            printf "%4d Hz | %-5s | %6d ms | %6d ms %6.3f %6d Hz %7.1f %7.1f | ", hz, what, n, o, o / n, od, us(o, od),
                   us(o, od) - us(f, fd)
            if (g > 0) printf "%6d ms %6.3f %6d Hz %7.1f | %10.3f\n", g, g / n, gd, us(g, gd), o / g
            else printf "%8s %6s %9s %7s | %10s\n", "-", "-", "-", "-", "-" }'
    done
    n=$(cut -d' ' -f3 "$tmp/none" | median); f=$(cut -d' ' -f3 "$tmp/floor" | median)
    fd=$(cut -d' ' -f2 "$tmp/floor" | median); o=$(cut -d' ' -f3 "$tmp/ours" | median)
    awk -v n="$n" -v f="$f" -v fd="$fd" -v o="$o" -v src="$floor_seen" 'BEGIN{
        printf "        | floor | %s, a handler that only counts: cpu %d ms, ratio %.3f, %d Hz, %.1f us/smp; ours/floor %.3f\n",
               src, f, f / n, fd, (fd > 0 ? (f - n) * 1000 / (fd * f / 1000) : 0), o / f }'
done
# start-up: "start_ms total_ms" of one run of the loop with no work; the
# arguments are the command, `env` first so the settings reach the loop only
startup() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
before = cpu()  # not always 0 here
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
print('%.3f %.3f' % (float(out.split('start_s=')[1].split()[0]) * 1000, (cpu() - before) * 1000))
PY
}
: > "$tmp/s-none"; : > "$tmp/s-150"; : > "$tmp/s-1000"
for _ in $(seq 1 $((RUNS * 3))); do
    startup env "$tmp/loop" 0 >> "$tmp/s-none"
    for hz in 150 1000; do
        rm -rf "$tmp/out" && mkdir -p "$tmp/out"
        startup env PH_SAMPLER_DIR="$tmp/out" PH_SAMPLER_HZ=$hz PH_SAMPLER_INTERVAL=0 \
            LD_PRELOAD=build/libphsampler.so "$tmp/loop" 0 >> "$tmp/s-$hz"
    done
done
for k in none 150 1000; do
    awk -v k="$k" -v a="$(cut -d' ' -f1 "$tmp/s-$k" | median)" -v b="$(cut -d' ' -f2 "$tmp/s-$k" | median)" \
        -v na="$(cut -d' ' -f1 "$tmp/s-none" | median)" -v nb="$(cut -d' ' -f2 "$tmp/s-none" | median)" 'BEGIN{
        printf "start-up %-9s | cpu at main() %6.2f ms (+%5.2f) | whole process %6.2f ms (+%5.2f)\n",
               (k == "none" ? "none" : "ours " k), a, a - na, b, b - nb }'
done
echo "ratio: median / median with no profiler; delivered: samples per CPU-second of the loop (median); requested: first column"
echo "us/smp: microseconds added per delivered sample (median time over none / samples): the cost at equal rates"
echo ">floor: ours' us/smp minus the floor's: the sampler's own cost per sample above the timer and the signal"
echo "floor: the loop taking the same samples the same way (timer and signal delivery, no unwinding): what no"
echo "       signal-based profiler can go below here"
echo "start-up: $((RUNS * 3)) runs each of the loop with no work, medians; (+...): over none"
echo "wall - cpu: start-up and the final write (ours: unwind tables, symbols, and debug info when the loop or libc has it"
echo "            under /usr/lib/debug, read once; PH_SAMPLER_DEBUGINFO=0 skips that)"
grep -h 'ph-sampler' "$tmp/stderr-ours" 2>/dev/null | head -1 || true
