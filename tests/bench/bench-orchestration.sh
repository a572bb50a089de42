#!/usr/bin/env bash
# bench-orchestration.sh: how long profharness takes to get a service running
# under strace (start -> running) and to stop it with its artifacts on disk
# (stop -> artifacts), against the docker CLI sequence a user would otherwise
# type: `docker run ...; docker stop ...; docker cp ...; docker rm`.
# Runs are interleaved; medians are printed, then ratios (ours / theirs).
# It prints; it asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-5}
PROJECT=phbench
OUT=$(mktemp -d /tmp/profharness-bench.XXXXXX)
ph() { build/profharness -f compose.yaml -p $PROJECT -o "$OUT/ours" "$@"; }
cleanup() {
    ids=$(docker ps -aq --filter label=io.profharness.project=$PROJECT; docker ps -aq --filter name=phbench-cli)
    [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

ph setup worker >/dev/null 2>&1
image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -m1 '^profharness-demo-profiling:')
net=${PROJECT}_default
docker network inspect "$net" >/dev/null 2>&1 || docker network create "$net" >/dev/null

wait_running() { # the service listens: its port accepts (inside the container network)
    for _ in $(seq 1 200); do
        docker exec "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/9090' 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

: > "$OUT/ours_start"; : > "$OUT/ours_stop"; : > "$OUT/cli_start"; : > "$OUT/cli_stop"
: > "$OUT/init_start"; : > "$OUT/init_stop"
for i in $(seq 1 "$RUNS"); do
    # ours
    t0=$(ms); ph start --mode strace worker >/dev/null 2>&1; wait_running phbench-worker-strace; t1=$(ms)
    ph stop worker >/dev/null 2>&1; t2=$(ms)
    echo $((t1 - t0)) >> "$OUT/ours_start"; echo $((t2 - t1)) >> "$OUT/ours_stop"
    # the seed's way: strace is PID 1, docker stop, docker cp
    for variant in cli init; do
        flag=""; [ $variant = init ] && flag=--init
        dir="$OUT/$variant-$i"
        t0=$(ms)
        docker run -d $flag --name phbench-cli --network "$net" --cap-add SYS_PTRACE --security-opt seccomp=unconfined \
            "$image" bash -c 'mkdir -p /opt/profiling/worker && exec strace -f -tt -T -e trace=all -s 256 -o /opt/profiling/worker/strace.log -- demo-worker' >/dev/null
        wait_running phbench-cli; t1=$(ms)
        docker stop phbench-cli >/dev/null; docker cp phbench-cli:/opt/profiling/worker "$dir" ; docker rm phbench-cli >/dev/null; t2=$(ms)
        echo $((t1 - t0)) >> "$OUT/${variant}_start"; echo $((t2 - t1)) >> "$OUT/${variant}_stop"
    done
done

os=$(median < "$OUT/ours_start"); ot=$(median < "$OUT/ours_stop")
cs=$(median < "$OUT/cli_start"); ct=$(median < "$OUT/cli_stop")
is=$(median < "$OUT/init_start"); it=$(median < "$OUT/init_stop")
printf 'bench-orchestration: strace mode, demo worker, %d interleaved runs, medians\n' "$RUNS"
printf '  %-44s %8s %8s\n' "" "start" "stop"
printf '  %-44s %6s ms %6s ms\n' "profharness (start / stop+collect)" "$os" "$ot"
printf '  %-44s %6s ms %6s ms\n' "docker run; docker stop; docker cp (seed)" "$cs" "$ct"
printf '  %-44s %6s ms %6s ms\n' "same with docker run --init" "$is" "$it"
awk -v os="$os" -v ot="$ot" -v cs="$cs" -v ct="$ct" -v is="$is" -v it="$it" 'BEGIN{
  printf "  ratio vs seed:   start %.2f  stop %.2f  total %.2f\n", os/cs, ot/ct, (os+ot)/(cs+ct);
  printf "  ratio vs --init: start %.2f  stop %.2f  total %.2f\n", os/is, ot/it, (os+ot)/(is+it) }'
