#!/usr/bin/env bash
# bench-extract.sh: how fast ph_tar extracts archives of three shapes, on
# the disk under BENCH_DIR (default: a temp dir in /tmp): (a) one 1 GiB
# file, (b) 50,000 files of 4 KiB, (c) 2,000 files at depth 1,900.  Each
# shape runs RUNS times (5), interleaved with GNU tar on the same archive
# as a yardstick of what the disk allows; medians are printed: wall
# seconds, MB/s (archive bytes), CPU seconds, and the extractor's peak RSS
# (/usr/bin/time).  Goal: >= 100 MB/s for every shape.  It asserts nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS=${RUNS:-5}
SHAPES=${SHAPES:-"big small deep"}
[ -x /usr/bin/time ] || { echo "bench-extract: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
make -s build/libprofharness.a
drv=build/bench_extract
cc -D_GNU_SOURCE -Iharness/util -Iharness/tar -O2 -o "$drv" tests/bench/bench_extract.c build/libprofharness.a \
    $(pkg-config --libs libarchive libcurl yaml-0.1 jansson zlib) -lpthread -lm
WORK=$(mktemp -d "${BENCH_DIR:-/tmp}/ph-bench-extract.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

median() { sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }'; }
fresh() { rm -rf "$WORK/out"; mkdir "$WORK/out"; sync; }

printf '%-6s %9s %9s %8s %9s %10s   %9s %9s\n' shape MB seconds MB/s cpu_s peak_RSS tar_s tar_MB/s
for shape in $SHAPES; do
    "$drv" make "$shape" "$WORK/$shape.tar"
    : > "$WORK/ours"; : > "$WORK/cpu"; : > "$WORK/rss"; : > "$WORK/tar"
    for _ in $(seq 1 "$RUNS"); do
        fresh
        line=$(/usr/bin/time -f 'RSS %M' -o "$WORK/time" "$drv" extract "$WORK/$shape.tar" "$WORK/out")
        read -r secs mb cpu <<< "$line"
        echo "$secs" >> "$WORK/ours"; echo "$cpu" >> "$WORK/cpu"
        awk '/^RSS/ {print $2}' "$WORK/time" >> "$WORK/rss"
        fresh
        t0=$(date +%s%N); tar -C "$WORK/out" --strip-components=1 -xf "$WORK/$shape.tar"; t1=$(date +%s%N)
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }' >> "$WORK/tar"
    done
    rm -rf "$WORK/out" "$WORK/$shape.tar"
    s=$(median < "$WORK/ours"); c=$(median < "$WORK/cpu"); r=$(median < "$WORK/rss"); t=$(median < "$WORK/tar")
    awk -v shape="$shape" -v mb="$mb" -v s="$s" -v c="$c" -v r="$r" -v t="$t" 'BEGIN {
        printf "%-6s %9.1f %9.3f %8.1f %9.3f %7d kB   %9.3f %9.1f\n", shape, mb, s, mb / s, c, r, t, mb / t }'
done
echo "bench-extract: medians of $RUNS runs; MB/s = archive bytes / wall seconds; cpu_s = user + system of the extractor"
