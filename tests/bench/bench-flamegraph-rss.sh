#!/usr/bin/env bash
# bench-flamegraph-rss.sh: the memory loading the sampler adds to a
# process (issue 31 item 3: <= 4 MB single-threaded, <= 8 MB with 50
# threads, Python and the JVM included), per runtime and per mode, side by
# side in one run.  Each workload does about a CPU-second of work, prints
# "ready" and holds still: C with no threads and with 50 idle ones
# (tests/bench/rss_idle.c), Python 3.11, Node and Java (the same shape,
# inline).  Kinds, interleaved (none, flamegraph, wall, heap, none, ...)
# so drift hits all alike: none; the sampler (build/libphsampler.so,
# LD_PRELOAD) at 100 Hz in the CPU mode, the wall mode
# (PH_SAMPLER_CLOCK=wall) and the heap mode (PH_SAMPLER_HEAP=524288).
# Once it is ready, a snapshot is asked for (DIR/.snapshot-request) and,
# when the status says it is written, the process is read as it is
# between two snapshots, its stacks named: VmRSS, and VmHWM (the peak: a
# snapshot's naming at its height), from /proc/PID/status.  Medians of RUNS; "+": over none.  A runtime missing
# here is left out and said.  BEFORE=path/to/libphsampler.so measures that
# library too, interleaved with LIB, in rows of its own ("(before)"): a
# change's figures side by side in one run.  Prints; asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
WAIT=${WAIT:-2}   # none: read this long after ready
# the interpreter itself, not a wrapper script (pyenv's shims) the sampler would leave
PYTHON=${PYTHON:-$(python3.11 -c 'import sys; print(sys.executable)' 2> /dev/null || true)}
NODE=${NODE:-$(command -v node || true)}
JAVA=${JAVA:-$(command -v java || true)}
LIB=${LIB:-$(pwd)/build/libphsampler.so}
BEFORE=${BEFORE:-}
[ -z "$BEFORE" ] || [ -f "$BEFORE" ] || { echo "bench-flamegraph-rss: BEFORE=$BEFORE: no such file" >&2; exit 1; }
[ -f "$LIB" ] || { echo "bench-flamegraph-rss: build/libphsampler.so missing: run make" >&2; exit 1; }
tmp=$(mktemp -d /tmp/ph-bench-rss.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O1 -g -fno-omit-frame-pointer -pthread -o "$tmp/idle" tests/bench/rss_idle.c
cat > "$tmp/idle.py" <<'PY'
import time
def hot(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
hot(10000000)
print("ready", flush=True)
while True:
    time.sleep(3600)
PY
cat > "$tmp/idle.js" <<'JS'
function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += i * i; return s; }
hot(300000000);
console.log("ready");
setInterval(() => {}, 3600000);
JS
mkdir -p "$tmp/java"
cat > "$tmp/java/Idle.java" <<'JV'
public class Idle {
    static long hot(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * i ^ (s >>> 3); return s; }
    public static void main(String[] a) throws Exception {
        System.out.println(hot(1500000000L) == 42 ? "" : "ready");
        Thread.sleep(Long.MAX_VALUE);
    }
}
JV
runtimes=("c:$tmp/idle 0" "c-50-threads:$tmp/idle 50")
if [ -n "$PYTHON" ]; then runtimes+=("python3.11:$PYTHON $tmp/idle.py"); else echo "python3.11: none here, left out"; fi
if [ -n "$NODE" ]; then runtimes+=("node:$NODE $tmp/idle.js"); else echo "node: none here, left out"; fi
if [ -n "$JAVA" ] && command -v javac > /dev/null; then
    javac -d "$tmp/java" "$tmp/java/Idle.java"
    runtimes+=("java:$JAVA -cp $tmp/java Idle")
else
    echo "java: no JDK here, left out"
fi

median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# measure KIND CMD...: "VmRSS VmHWM" (kB) of CMD once it said ready
measure() {
    local kind=$1 dir=$tmp/out pid line r lib=$LIB
    shift
    local -a env=()
    rm -rf "$dir" && mkdir -p "$dir"
    case $kind in *@before) lib=$BEFORE kind=${kind%@before} ;; esac
    case $kind in
        none) ;;
        flamegraph) env=(LD_PRELOAD="$lib" PH_SAMPLER_DIR="$dir" PH_SAMPLER_HZ=100 PH_SAMPLER_INTERVAL=0) ;;
        wall) env=(LD_PRELOAD="$lib" PH_SAMPLER_DIR="$dir" PH_SAMPLER_HZ=100 PH_SAMPLER_INTERVAL=0 PH_SAMPLER_CLOCK=wall) ;;
        heap) env=(LD_PRELOAD="$lib" PH_SAMPLER_DIR="$dir" PH_SAMPLER_HZ=100 PH_SAMPLER_INTERVAL=0 PH_SAMPLER_HEAP=524288) ;;
    esac
    mkfifo "$tmp/ready"
    env "${env[@]}" "$@" > "$tmp/ready" 2> "$tmp/stderr" &
    pid=$!
    read -r line < "$tmp/ready" || true
    rm -f "$tmp/ready"
    [ "$line" = ready ] || { echo "bench-flamegraph-rss: $* ($kind) said '$line':" >&2; cat "$tmp/stderr" >&2; exit 1; }
    if [ "$kind" = none ]; then
        sleep "$WAIT"
    else
        echo 1 > "$dir/.snapshot-request.tmp" && mv "$dir/.snapshot-request.tmp" "$dir/.snapshot-request"
        for _ in $(seq 1 200); do
            grep -qs '"snapshot_request": 1,' "$dir/sampler-status-$pid.json" && break
            sleep 0.1
        done
        grep -qs '"snapshot_request": 1,' "$dir/sampler-status-$pid.json" ||
            { echo "bench-flamegraph-rss: $* ($kind): no snapshot served in 20 s" >&2; exit 1; }
    fi
    r=$(awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } END { print r, h }' "/proc/$pid/status")
    kill -TERM "$pid"
    wait "$pid" 2> /dev/null || true
    echo "$r"
}

kinds="none flamegraph wall heap"
sets=("")
[ -z "$BEFORE" ] || { kinds="$kinds flamegraph@before wall@before heap@before"; sets+=("@before"); }
printf 'bench-flamegraph-rss: %d interleaved runs, medians; load average %s\n' "$RUNS" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq 1 "$RUNS"); do
    for rt in "${runtimes[@]}"; do
        name=${rt%%:*}
        # shellcheck disable=SC2086
        for k in $kinds; do measure "$k" ${rt#*:} >> "$tmp/$name-$k"; done
    done
done
printf '%-13s | %9s | %-25s | %-25s | %-25s\n' runtime "none RSS" "flamegraph RSS (+), peak" "wall RSS (+), peak" \
    "heap RSS (+), peak"
for rt in "${runtimes[@]}"; do
    name=${rt%%:*}
    n=$(cut -d' ' -f1 "$tmp/$name-none" | median)
    for set in "${sets[@]}"; do
        printf '%-13s | %6.1f MB' "$name${set:+ (before)}" "$(echo "$n / 1024" | bc -l)"
        for k in flamegraph wall heap; do
            r=$(cut -d' ' -f1 "$tmp/$name-$k$set" | median)
            h=$(cut -d' ' -f2 "$tmp/$name-$k$set" | median)
            awk -v r="$r" -v h="$h" -v n="$n" 'BEGIN { printf " | %6.1f MB (%+5.1f), %5.1f", r / 1024, (r - n) / 1024, h / 1024 }'
        done
        echo
    done
done
echo "RSS: VmRSS after a snapshot (none: ${WAIT}s after ready); (+): over none, MB; peak: VmHWM, the snapshot's naming included"
echo "goal (issue 31): + <= 4 MB single-threaded, <= 8 MB with 50 threads"
