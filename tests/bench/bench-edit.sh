#!/usr/bin/env bash
# bench-edit.sh: edit, then profile again.  One line of the demo's source
# is changed (in a copy: a string the program carries, so the binary and
# its image really change), then the time of
#   profharness start --build --mode M      (every service of the demo)
# is set against what the same change costs without profiling:
#   docker compose build && docker compose up -d
# both from the project stopped, per mode, interleaved; medians side by
# side and their ratio (goal: <= 1.2x for every mode).  Then the disk the
# profiling images and tools volumes take, before the first edit and
# after all of them (at least ten; goal: no growth).  It prints; it
# asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-3}
MODES=${MODES:-"strace perf flamegraph heap wall massif callgrind"}
# one project for both (its network made once: the Engine's address
# pools are few, and creating one is not what is measured)
PROJECT=phbench-edit
CPROJECT=$PROJECT
export DEMO_PORT=${DEMO_PORT:-18190}
OUT=$(mktemp -d /tmp/profharness-bench-edit.XXXXXX)
IMAGE=$PROJECT-demo
ROOT=$PWD

if docker compose version >/dev/null 2>&1; then
    dc() { docker compose -f "$OUT/compose.yaml" -p $CPROJECT "$@"; }
elif command -v docker-compose >/dev/null; then
    dc() { docker-compose -f "$OUT/compose.yaml" -p $CPROJECT "$@"; }
else
    echo "bench-edit: neither \`docker compose\` nor docker-compose (apt-get install docker-compose)" >&2
    exit 1
fi
ph() { "$ROOT/build/profharness" -f "$OUT/compose.yaml" -p $PROJECT -o "$OUT/runs" "$@"; }
down_all() {
    ph stop >/dev/null 2>&1 || true
    ph down >/dev/null 2>&1 || true
    dc rm -sf >/dev/null 2>&1 || true
}
# The images there were before: every image the edits make (each edit's
# build leaves the one before it untagged, with its layers) goes at the end.
IMAGES_BEFORE=$(mktemp /tmp/profharness-bench-edit-images.XXXXXX)
docker image ls -aq --no-trunc | sort -u >"$IMAGES_BEFORE"
cleanup() {
    down_all
    ids=$(docker ps -aq --filter label=io.profharness.project=$PROJECT)
    [ -z "$ids" ] || docker rm -f $ids >/dev/null 2>&1 || true
    dc down >/dev/null 2>&1 || true
    docker network rm ${PROJECT}_default >/dev/null 2>&1 || true
    tags=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E "^$IMAGE(-profiling)?:" || true)
    [ -z "$tags" ] || docker rmi -f $tags >/dev/null 2>&1 || true
    # what the edits left untagged (another's tagged image is not ours)
    # (twice: a parent layer goes once the child that held it has gone)
    for _ in 1 2; do
        for id in $(docker image ls -aq --no-trunc | sort -u | comm -13 "$IMAGES_BEFORE" -); do
            [ -n "$(docker image inspect -f '{{join .RepoTags ""}}' "$id" 2>/dev/null)" ] ||
                docker rmi "$id" >/dev/null 2>&1 || true
        done
    done
    rm -rf "$OUT" "$IMAGES_BEFORE"
}
trap cleanup EXIT

ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }

# The demo, in a copy the edits go to, under an image name of its own.
cp -r images/demo "$OUT/demo"
sed -e "s#image: profharness-demo:latest#image: $IMAGE:latest#" -e "s#context: images/demo#context: $OUT/demo#" \
    -e "/^name:/d" compose.yaml > "$OUT/compose.yaml" # -p names it; docker-compose 1.29 knows no `name:`
EDITS=0
edit() { # one line: a string the program keeps, so its image changes
    EDITS=$((EDITS + 1))
    echo "const char front_edit_$EDITS[] __attribute__((used)) = \"edit $EDITS\";" >> "$OUT/demo/front.c"
}

# Disk of what profiling adds: the demo's profiling images, the tools
# images and the tools volumes (their own bytes, as `docker system df -v`
# counts them: an image's unique size, a volume's size).
prof_disk() {
    docker system df -v 2>/dev/null | awk -v img="$IMAGE-profiling" '
        /^Images space usage/ { sec = "i"; next }
        /^Containers space usage/ || /^Build cache/ { sec = ""; next }
        /^Local Volumes space usage/ { sec = "v"; next }
        function bytes(s,   n, u) { n = s + 0; u = s; sub(/^[0-9.]+/, "", u)
            return n * (u == "kB" ? 1e3 : u == "MB" ? 1e6 : u == "GB" ? 1e9 : 1) }
        sec == "i" && ($1 == img || $1 == "profharness-tools") { n_img++; b += bytes($(NF-1)) }
        sec == "v" && $1 ~ /^profharness-tools-/ { n_vol++; b += bytes($NF) }
        END { printf "%d image(s), %d volume(s), %.0f MB\n", n_img, n_vol, b / 1e6 }'
}

# Warm: the images once, so the first timed run is an edit like the others.
ph setup >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }
dc build >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }
disk0=$(prof_disk)
PH_EDITS=0

for i in $(seq 1 "$RUNS"); do
    for m in $MODES; do
        down_all
        edit
        t0=$(ms); ph start --build --mode "$m" >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }; t1=$(ms)
        echo $((t1 - t0)) >> "$OUT/ours-$m"
        PH_EDITS=$((PH_EDITS + 1))
        down_all
        edit
        t0=$(ms); { dc build && dc up -d; } >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }; t1=$(ms)
        echo $((t1 - t0)) >> "$OUT/compose-$m"
    done
done
down_all
while [ "$PH_EDITS" -lt 10 ]; do # at least ten edits profharness built
    edit; ph start --build --mode strace >/dev/null 2>&1; down_all; PH_EDITS=$((PH_EDITS + 1))
done
disk1=$(prof_disk)

printf 'bench-edit: one line of the demo edited, then its two services started; %d interleaved runs per mode, medians\n' "$RUNS"
printf '  %-11s %22s %30s %7s\n' mode "profharness start --build" "compose build && up -d" ratio
for m in $MODES; do
    o=$(median < "$OUT/ours-$m"); c=$(median < "$OUT/compose-$m")
    awk -v m="$m" -v o="$o" -v c="$c" 'BEGIN{ printf "  %-11s %19d ms %27d ms %6.2fx\n", m, o, c, o / c }'
done
printf '  disk of profiling images and tools volumes: before the first edit  %s\n' "$disk0"
printf '  %47s %s\n' "after $PH_EDITS edits started by profharness" "$disk1"
