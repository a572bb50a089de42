#!/usr/bin/env bash
# bench-flamegraph-lang.sh: what the sampler costs a Python, a Node and a
# Java service (tests/lang/: the issue 20 services, each looping on
# `hot_seventy_five` and `cool_twenty_five` forever, printing a line
# every 50 rounds), at 100 Hz, against no profiler, side by side in one
# run.  Each run is a container of the service's profiling image (the one
# `start --mode flamegraph` runs: the sampler and libdw in it), its
# program started under a shell that reads the container's CPU time
# (its cgroup's: every thread, the sampler's writer too) as the program
# prints round FROM and round TO: the CPU the same work took.  Kinds:
#   none   the program as the service runs it;
#   flags  only what the mode adds to the runtime's environment
#          (NODE_OPTIONS=--perf-basic-prof, HotSpot's perf map flags):
#          Node and Java only;
#   ours   the mode: the runtime's flags and the sampler (LD_PRELOAD) at
#          100 Hz, no periodic snapshot (PH_SAMPLER_INTERVAL=0);
#   attached  Python only: the program as `none`, read from outside by
#          build/ph-pyattach at 100 Hz (`attach --mode flamegraph`) in a
#          container of its own in the program's PID namespace
#          (SYS_PTRACE); `reader` is that container's CPU (its cgroup's)
#          over its life per CPU of the program's cgroup over the same
#          time, and per sample: times HZ, the share of a CPU it takes
#          from a program on a CPU of its own (goal: <= 3 %; the first
#          rises with the machine's load, which slows the program, not
#          the reader's wall-clock rate).
#   attach Node only: the program as the service runs it, joined as
#          `attach --mode flamegraph` joins it: build/ph-nodeinsp in a
#          container in its PID and network namespaces opens its
#          inspector and runs V8's profiler at 100 Hz (the cost is node's:
#          V8's sampling thread, in the service's cgroup; ph-nodeinsp's
#          own CPU, in its container, is not counted).  It must be
#          profiling before round FROM, else the run fails.
#          Java and C: the program as `none`, joined as `attach --mode
#          flamegraph` joins it: the tools image's ph-attach (the
#          namespace's processes) and ph-attach-sampler in a container
#          in its PID namespace (SYS_PTRACE, seccomp unconfined, as the
#          profile asks): a JVM takes the sampler as its agent (its CPU
#          is the JVM's, in the service's cgroup), anything else gets
#          `perf record -g -p` (the kernel's sampling is the service's;
#          perf's own reading of it is in the tools container, shown as
#          `tools`: that container's CPU per the program's over the same
#          time).  It must have said it joined before round FROM.
# Runs are interleaved (none, flags, ours, none, ...) so drift hits all
# alike; medians of RUNS; ratios to none (goal: ours <= 1.03); delivered:
# the sampler's samples per CPU-second of the program, from its status.
# Prints; asserts nothing.  Needs the Engine and the images of
# tests/lang (built by `profharness setup`, which this runs first).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-5}
HZ=${HZ:-100}
FROM_ROUND=${FROM_ROUND:-100}   # warm-up: the JIT, the sampler's unwind tables
TO_ROUND=${TO_ROUND:-500}       # ~4 s of CPU each
LANGS=${LANGS:-"python node java c"}
PROJECT=${PROJECT:-phbenchlang}
[ -x build/profharness ] || { echo "bench-flamegraph-lang: build/profharness missing: run make" >&2; exit 1; }
eval "$(tests/lang/tags.sh)"
export PH_LANG_C_TAG PH_LANG_CPP_TAG PH_LANG_RUST_TAG PH_LANG_GO_TAG PH_LANG_PYTHON_TAG PH_LANG_NODE_TAG PH_LANG_JAVA_TAG
tmp=$(mktemp -d /tmp/ph-bench-lang.XXXXXX)
names=()
cleanup() {
    [ ${#names[@]} -eq 0 ] || docker rm -f "${names[@]}" >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# The profiling image of each language, as setup names it.
# shellcheck disable=SC2086
build/profharness -f tests/lang/compose.yaml -p "$PROJECT" --profiles profiles -o "$tmp/out" setup $LANGS \
    > "$tmp/setup" 2>&1 || { cat "$tmp/setup" >&2; exit 1; }
# An image with a package manager runs its own image with the tools
# volume at /opt/profharness (setup says "ready (tools volume V; ...)"),
# one without gets a profiling image ("profiling image I").
declare -A IMAGE MOUNT
for l in $LANGS; do
    IMAGE[$l]=$(sed -n "s/^profharness: $l: ready (.*profiling image \([^,;]*\)[,;].*/\1/p" "$tmp/setup" | tail -1)
    MOUNT[$l]=
    if [ -z "${IMAGE[$l]}" ]; then
        vol=$(sed -n "s/^profharness: $l: ready (tools volume \([^,;]*\)[,;].*/\1/p" "$tmp/setup" | tail -1)
        IMAGE[$l]=$(sed -n "s/^profharness: $l: \(profharness-lang-[^ ]*\) .*/\1/p" "$tmp/setup" | tail -1)
        [ -z "$vol" ] || MOUNT[$l]="-v $vol:/opt/profharness:ro"
    fi
    [ -n "${IMAGE[$l]}" ] || { echo "bench-flamegraph-lang: no profiling image for $l:" >&2; cat "$tmp/setup" >&2; exit 1; }
done
# The tools image `attach` runs, named as its volume is ("tools volume
# profharness-tools-H": image profharness-tools:H).
TOOLS=$(sed -n "s/^profharness: [a-z]*: ready (tools volume profharness-tools-\([0-9a-f]*\)[,;].*/profharness-tools:\1/p" \
    "$tmp/setup" | tail -1)

# The mode's runtime environment, from profiles/flamegraph.yaml.
runtime_env() {
    sed -n "/^runtimes:/,/^[a-z]/s/^    $1: \"\\(.*\\)\"$/\\1/p" profiles/flamegraph.yaml
}
NODE_FLAGS=$(runtime_env NODE_OPTIONS)
JAVA_FLAGS=$(runtime_env JAVA_TOOL_OPTIONS)

now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# In the container: the program (its words after the script), its lines
# read as they come; at rounds FROM and TO the cgroup's CPU time in ns.
# Only the program gets LD_PRELOAD (PH_BENCH_PRELOAD): not this shell,
# not cat.
# shellcheck disable=SC2016
READER='cpu() { cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null ||
    cat /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage 2>/dev/null ||
    echo $(( $(sed -n "s/^usage_usec //p" /sys/fs/cgroup/cpu.stat) * 1000 )); }
mkdir -p /tmp/phs
env LD_PRELOAD="$PH_BENCH_PRELOAD" "$@" | while IFS= read -r l; do
    case $l in
        "lang: $PH_BENCH_FROM rounds") echo "bench-from $(cpu)" ;;
        "lang: $PH_BENCH_TO rounds") echo "bench-to $(cpu)" ;; # read on: the program runs until removed
    esac
done'

# A cgroup's CPU time in ns, from inside its container.
# shellcheck disable=SC2016
CGCPU='cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null ||
    echo $(( $(sed -n "s/^usage_usec //p" /sys/fs/cgroup/cpu.stat) * 1000 ))'
# The reader, on the namespace's python (its program, not the shell around it).
# shellcheck disable=SC2016
ATTACH='for _ in $(seq 1 100); do
    for d in /proc/[0-9]*; do
        case $(readlink "$d/exe") in */python3*) exec /ph-pyattach -F "$1" -o /tmp "${d#/proc/}" ;; esac
    done
    sleep 0.1
done'

# joined_before_from JOINER: wait for JOINER's "ph-attach: joined" (what
# every joiner says once it samples, as `attach` waits for it); the run
# fails when the program ($name) reached round FROM first.
joined_before_from() {
    local i
    for i in $(seq 1 400); do
        docker logs "$1" 2>&1 | grep -q "^ph-attach: joined" && break
        sleep 0.05
    done
    if ! docker logs "$1" 2>&1 | grep -q "^ph-attach: joined" || docker logs "$name" 2>/dev/null | grep -q '^bench-from '; then
        echo "bench-flamegraph-lang: $lang ($kind): not profiling before round $FROM_ROUND (raise FROM_ROUND):" >&2
        docker logs "$1" 2>&1 | tail -3 >&2
        exit 1
    fi
}

run() { # LANG KIND -> appends "cpu_ms wall_ms delivered_hz" to $tmp/LANG-KIND
    local lang=$1 kind=$2 name="$PROJECT-$1-$2-$$" ep t0 t1 from to st hz=0 i
    local -a env=(-e PH_BENCH_FROM="$FROM_ROUND" -e PH_BENCH_TO="$TO_ROUND" -e PH_BENCH_PRELOAD=)
    if [ "$kind" != none ]; then
        case $lang in
            node) env+=(-e NODE_OPTIONS="$NODE_FLAGS") ;;
            java) env+=(-e JAVA_TOOL_OPTIONS="$JAVA_FLAGS") ;;
        esac
    fi
    [ "$kind" != ours ] || env+=(-e PH_BENCH_PRELOAD=/opt/profharness/lib/libphsampler.so -e PH_SAMPLER_DIR=/tmp/phs
                                 -e PH_SAMPLER_HZ="$HZ" -e PH_SAMPLER_INTERVAL=0)
    if [ "$kind" = attach ]; then
        env=(-e PH_BENCH_FROM="$FROM_ROUND" -e PH_BENCH_TO="$TO_ROUND" -e PH_BENCH_PRELOAD=)
    fi
    ep=$(docker image inspect "${IMAGE[$lang]}" --format '{{range .Config.Entrypoint}}{{.}} {{end}}{{range .Config.Cmd}}{{.}} {{end}}')
    names+=("$name")
    t0=$(now)
    # shellcheck disable=SC2086
    docker run -d --name "$name" --network none "${env[@]}" ${MOUNT[$lang]} --entrypoint sh "${IMAGE[$lang]}" -c "$READER" sh $ep \
        > /dev/null
    if [ "$kind" = attached ]; then
        # the reader, static, from the build; its container's CPU from the start
        names+=("$name-r")
        svc0=$(docker exec "$name" sh -c "$CGCPU")
        docker run -d --name "$name-r" --network none --pid "container:$name" --cap-add SYS_PTRACE \
            -v "$PWD/build/ph-pyattach:/ph-pyattach:ro" --entrypoint sh "${IMAGE[$lang]}" -c "$ATTACH" sh "$HZ" > /dev/null
    fi
    if [ "$kind" = attach ] && [ "$lang" != node ]; then
        [ -n "$TOOLS" ] || { echo "bench-flamegraph-lang: setup named no tools volume" >&2; exit 1; }
        names+=("$name-att")
        svc0=$(docker exec "$name" sh -c "$CGCPU")
        # shellcheck disable=SC2016
        docker run -d --name "$name-att" --pid "container:$name" --network "container:$name" --cap-add SYS_PTRACE \
            --security-opt seccomp=unconfined --entrypoint sh "$TOOLS" -c '
            # once the program runs (its line reader started after it)
            for i in $(seq 100); do
                n=0; for d in /proc/[0-9]*; do n=$((n + 1)); done
                [ "$n" -lt 4 ] || break
                sleep 0.05
            done
            mkdir -p /tmp/out && exec /opt/profharness/bin/ph-attach -- /opt/profharness/bin/ph-attach-sampler /tmp/out "{pids}" "$1" cpu bench' \
            sh "$HZ" > /dev/null
        joined_before_from "$name-att"
    fi
    if [ "$kind" = attach ] && [ "$lang" = node ]; then
        names+=("$name-insp")
        # shellcheck disable=SC2016
        docker run -d --name "$name-insp" --pid "container:$name" --network "container:$name" \
            -v "$PWD/build/ph-nodeinsp:/ph-nodeinsp:ro" --entrypoint sh "${IMAGE[$lang]}" -c '
            for i in $(seq 100); do
                for d in /proc/[0-9]*; do
                    # node, once it catches SIGUSR1 (a node starting has not yet)
                    case $(readlink "$d/exe") in */node)
                        c=$(sed -n "s/^SigCgt:[[:space:]]*//p" "$d/status")
                        [ $(( 0x$c & 0x200 )) = 0 ] || exec /ph-nodeinsp /tmp "${d#/proc/}" "$1" cpu ;;
                    esac
                done
                sleep 0.05
            done; exit 1' sh "$HZ" > /dev/null
        joined_before_from "$name-insp"
    fi
    for i in $(seq 1 3000); do
        docker logs "$name" 2>/dev/null | grep -q '^bench-to ' && break
        if [ "$(docker inspect -f '{{.State.Running}}' "$name")" != true ]; then
            echo "bench-flamegraph-lang: $lang ($kind) ended early:" >&2
            docker logs "$name" 2>&1 | tail -5 >&2
            exit 1
        fi
        sleep 0.2
    done
    t1=$(now)
    from=$(docker logs "$name" 2>/dev/null | sed -n 's/^bench-from //p')
    to=$(docker logs "$name" 2>/dev/null | sed -n 's/^bench-to //p')
    [ -n "$from" ] && [ -n "$to" ] || { echo "bench-flamegraph-lang: $lang ($kind): no CPU readings" >&2; exit 1; }
    if [ "$kind" = ours ]; then
        # the status is rewritten every 5 s: wait for one with samples
        for i in $(seq 1 40); do
            st=$(docker exec "$name" sh -c 'cat /tmp/phs/sampler-status-*.json' 2>/dev/null || true)
            hz=$(printf '%s' "$st" | tr ',' '\n' | awk -F': ' '/"samples"/ { s += $2 } /"cpu_seconds"/ { c += $2 }
                 END { printf "%.0f", (c > 0 ? s / c : 0) }')
            [ "${hz:-0}" = 0 ] || break
            sleep 0.5
        done
    fi
    if [ "$kind" = attached ]; then
        local svc1 rd ns
        svc1=$(docker exec "$name" sh -c "$CGCPU")
        rd=$(docker exec "$name-r" sh -c "$CGCPU")
        # SIGTERM: the reader writes its end and says how many samples
        docker stop -t 10 "$name-r" > /dev/null 2>&1
        ns=$(docker logs "$name-r" 2>&1 | sed -n 's/^ph-pyattach: process [0-9]*: \([0-9]*\) samples written.*/\1/p')
        [ -n "$ns" ] && [ "$ns" -gt 0 ] ||
            { echo "bench-flamegraph-lang: the reader did not run:" >&2; docker logs "$name-r" 2>&1 | tail -3 >&2; exit 1; }
        # "share per-sample" : the reader's CPU per the program's, and per
        # sample (the program on a CPU of its own gets HZ per second)
        hz=$(awk -v r="$rd" -v a="$svc0" -v b="$svc1" -v n="$ns" 'BEGIN { printf "%.2f:%.0f", 100 * r / (b - a), r / n / 1000 }')
        docker rm -f "$name-r" > /dev/null 2>&1
    fi
    if [ "$kind" = attach ] && [ "$lang" != node ]; then
        local svc1 tc
        svc1=$(docker exec "$name" sh -c "$CGCPU")
        tc=$(docker exec "$name-att" sh -c "$CGCPU") ||
            { echo "bench-flamegraph-lang: $lang ($kind): the tools container ended:" >&2; docker logs "$name-att" 2>&1 | tail -5 >&2; exit 1; }
        hz=$(awk -v r="$tc" -v a="$svc0" -v b="$svc1" 'BEGIN { printf "%.2f", 100 * r / (b - a) }')
        # its end, as `stop`'s: SIGINT, the JVM's sampler stopped and its files taken, perf's end written
        docker kill -s INT "$name-att" > /dev/null 2>&1 || true
        docker wait "$name-att" > /dev/null 2>&1 || true
        docker rm -f "$name-att" > /dev/null 2>&1
    fi
    if [ "$kind" = attach ] && [ "$lang" = node ]; then
        # its end, as `stop`'s: the profile taken and the inspector closed
        docker kill -s INT "$name-insp" > /dev/null 2>&1 || true
        docker wait "$name-insp" > /dev/null 2>&1 || true
        docker rm -f "$name-insp" > /dev/null 2>&1
    fi
    docker rm -f "$name" > /dev/null 2>&1
    echo "$(( (to - from) / 1000000 )) $(( (t1 - t0) / 1000000 )) $hz" >> "$tmp/$lang-$kind"
}

# KINDS (e.g. "none attach"): only those, where a language has them
kinds_of() {
    local k
    if [ -n "${KINDS:-}" ]; then
        for k in $(kinds_all "$1"); do [[ " $KINDS " != *" $k "* ]] || printf '%s ' "$k"; done
        return
    fi
    kinds_all "$1"
}
kinds_all() {
    case $1 in
        python) echo "none ours attached" ;;
        node | java) echo "none flags ours attach" ;;
        *) echo "none ours attach" ;;
    esac
}

printf 'bench-flamegraph-lang: tests/lang services, rounds %d to %d, the sampler at %d Hz, %d interleaved runs, medians; load average %s\n' \
    "$FROM_ROUND" "$TO_ROUND" "$HZ" "$RUNS" "$(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq 1 "$RUNS"); do
    for l in $LANGS; do
        for k in $(kinds_of "$l"); do
            run "$l" "$k"
        done
    done
done
printf '%-8s | %9s | %9s %6s | %9s %6s %9s | %s\n' language none flags ratio ours ratio delivered "CPU of rounds $FROM_ROUND..$TO_ROUND (cgroup)"
for l in $LANGS; do
    n=$(cut -d' ' -f1 "$tmp/$l-none" | median)
    f=-; fr=-
    if [ -s "$tmp/$l-flags" ]; then
        f=$(cut -d' ' -f1 "$tmp/$l-flags" | median)
        fr=$(awk -v a="$f" -v b="$n" 'BEGIN { printf "%.3f", a / b }')
        f="$f ms"
    fi
    [ -s "$tmp/$l-ours" ] || continue
    o=$(cut -d' ' -f1 "$tmp/$l-ours" | median)
    d=$(cut -d' ' -f3 "$tmp/$l-ours" | median)
    if [ -s "$tmp/$l-attached" ]; then
        a=$(cut -d' ' -f1 "$tmp/$l-attached" | median)
        us=$(cut -d' ' -f3 "$tmp/$l-attached" | cut -d: -f2 | median)
        printf '%-8s | attached (ph-pyattach, %d Hz): %s ms, ratio %.3f; reader CPU %s %% of the program'"'"'s over its life, %s us a sample: %.2f %% of a CPU at %d Hz (medians; runs: %s)\n' \
            "$l" "$HZ" "$a" "$(awk -v a="$a" -v b="$(cut -d' ' -f1 "$tmp/$l-none" | median)" 'BEGIN { print a / b }')" \
            "$(cut -d' ' -f3 "$tmp/$l-attached" | cut -d: -f1 | median)" "$us" "$(awk -v u="$us" -v h="$HZ" 'BEGIN { print u * h / 1e4 }')" \
            "$HZ" "$(cut -d' ' -f3 "$tmp/$l-attached" | tr '\n' ' ' | sed 's/ $//')"
    fi
    printf '%-8s | %6s ms | %9s %6s | %6s ms %6.3f %6s Hz | none %s; ours %s\n' "$l" "$n" "$f" "$fr" "$o" \
        "$(awk -v a="$o" -v b="$n" 'BEGIN { print a / b }')" "$d" \
        "$(cut -d' ' -f1 "$tmp/$l-none" | tr '\n' ' ' | sed 's/ $//')" "$(cut -d' ' -f1 "$tmp/$l-ours" | tr '\n' ' ' | sed 's/ $//')"
done
for l in $LANGS; do
    [ -s "$tmp/$l-attach" ] || continue
    n=$(cut -d' ' -f1 "$tmp/$l-none" | median)
    a=$(cut -d' ' -f1 "$tmp/$l-attach" | median)
    case $l in
        node) how="its inspector, V8 profiler at $HZ Hz" tools= ;;
        java) how="its agent, the sampler at $HZ Hz" tools="; tools $(cut -d' ' -f3 "$tmp/$l-attach" | median) %" ;;
        *) how="perf record -p at $HZ Hz" tools="; tools $(cut -d' ' -f3 "$tmp/$l-attach" | median) %" ;;
    esac
    printf '%-8s | %6s ms | attached (%s) %6s ms %6.3f%s | attached %s\n' "$l" "$n" "$how" "$a" \
        "$(awk -v x="$a" -v y="$n" 'BEGIN { print x / y }')" "$tools" "$(cut -d' ' -f1 "$tmp/$l-attach" | tr '\n' ' ' | sed 's/ $//')"
done
echo "ratio: median CPU / median CPU with no profiler (goal: ours <= 1.03, attached <= 1.03); flags: the mode's runtime flags alone;"
echo "tools: the attach's tools container's CPU per the program's over the same time, median (perf's reading of its samples)"
echo "delivered: the sampler's samples per CPU-second of the program (its status), median"
