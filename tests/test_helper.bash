# test_helper.bash: shared setup for the end-to-end tests.  They run the real
# harness against the real Docker Engine on the bundled demo, in a project of
# their own (so a user's demo is untouched) with artifacts in a temp dir.
# Every Engine call has a timeout; waits poll with a deadline, never sleep blindly.

# (from this file's place: test files in tests/swarm/ load it too)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# PH_BUILD: the build directory whose harness runs (build-san for
# scripts/test-sanitize.sh).
PH="$REPO/${PH_BUILD:-build}/profharness"
export PH_TEST_PROJECT=${PH_TEST_PROJECT:-phtest}
export DEMO_PORT=${DEMO_PORT:-18181}

# The demo under an image name of this test project's own.  Every run
# builds the demo from its own tree, so two runs on one Engine (other
# engineers, a user's own demo) sharing profharness-demo:latest would
# overwrite each other's image, with or without the knobs a newer demo
# has.  DEMO_COMPOSE is the demo's compose file naming DEMO_IMAGE, its
# build context made absolute; every file's runs use it.  The image stays
# for the next file (its build cache with it): `docker rmi` it to clean.
export DEMO_IMAGE="profharness-demo-$PH_TEST_PROJECT"

demo_compose() {
    DEMO_COMPOSE=$BATS_FILE_TMPDIR/demo-compose.yaml
    [ -s "$DEMO_COMPOSE" ] ||
        sed -e "s#image: profharness-demo:latest#image: $DEMO_IMAGE:latest#" \
            -e "s#context: images/demo#context: $REPO/images/demo#" "$REPO/compose.yaml" > "$DEMO_COMPOSE"
}

# ph ARGS...: the harness on the demo compose file, bounded in time.
ph() {
    demo_compose
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" \
        --profiles "${PH_PROFILES:-$REPO/profiles}" -o "$OUT" "$@"
}

# A copy of the profiles with short graces, so escalation tests take seconds.
short_grace_profiles() {
    local dir=$BATS_FILE_TMPDIR/profiles-short
    mkdir -p "$dir"
    for f in "$REPO"/profiles/*.yaml; do
        sed -E 's/^(\s*)grace: .*/\1grace: 3s/; s/^(\s*)escalate_grace: .*/\1escalate_grace: 5s/' "$f" > "$dir/$(basename "$f")"
    done
    echo "$dir"
}

dk() { timeout 60 docker "$@"; }

# setup_images SERVICE SETUP_OUTPUT: the images another Engine needs to
# run SERVICE's profiled modes, as `setup` named them in its line
# "SERVICE: ready (tools volume profharness-tools-H[, profiling image T]; ...)":
# the tools image the volume is filled from, and the profiling image when
# setup made one (the valgrind modes').  One a line; nothing when setup
# named neither.
setup_images() {
    local ready
    ready=$(sed -n "s/.*$1: ready (\([^;]*\);.*/\1/p" <<<"$2" | tail -1)
    sed -n 's/^tools volume profharness-tools-\([0-9a-f]*\).*/profharness-tools:\1/p' <<<"$ready"
    sed -n 's/.*profiling image \([^,;]*\).*/\1/p' <<<"$ready"
}

# Containers of the test project, by label.
project_containers() {
    dk ps -a --filter "label=io.profharness.project=$PH_TEST_PROJECT" --format '{{.Names}} {{.State}} {{.Label "io.profharness.mode"}}'
}

remove_project() {
    local ids
    ids=$(dk ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT" || true)
    [ -z "$ids" ] || dk rm -f $ids >/dev/null 2>&1 || true
}

# drive_load N: drive N requests at the front service, waiting for it to
# listen.  (Not `load`: that is bats' own, which this would shadow.)
drive_load() {
    timeout 300 "$REPO/build/demo-load" -w 120 -n "${1:-50}" -c 2 "127.0.0.1:$DEMO_PORT"
}

# share NAME FOLDED: per mille of the counts (or bytes) of the folded
# stacks whose line holds NAME.
share() {
    awk -v n="$1" '{ c = $NF; t += c; if (index($0, n)) h += c } END { printf "%d", t ? 1000 * h / t : -1 }' "$2"
}

# no_sampler_frames LEAVES FILE...: no view the sampler wrote (folded
# stacks, SVG flamegraphs, pprof profiles, by FILE's suffix) holds a frame
# of the sampler's own: none named on_stop_signal, request_and_wait,
# chain, thread_start, phs_*, ph_sampler* (inlined or not), no unnamed
# frame of libphsampler, and in a pprof profile no function whose source
# is the sampler's (harness/sampler/) but, with LEAVES 1, a call the
# library interposes (the malloc a heap sample ends in, the read a wall
# sample waited in: its exported names).  Says what it found on fd 3.
no_sampler_frames() {
    local leaves=$1 f bad raw exported own='^(on_stop_signal|request_and_wait|chain|thread_start|phs_.*|ph_sampler.*)( \(inlined\))?$|libphsampler'
    shift
    exported=$(nm -D --defined-only "$REPO/${PH_BUILD:-build}/libphsampler.so" | awk '$3 !~ /^ph_sampler/ { printf " %s", $3 }')
    for f in "$@"; do
        case $f in
        # (grep finding nothing is the good case: never a failure under set -e)
        *.folded) bad=$(sed 's/ [0-9.]*$//' "$f" | tr ';' '\n' | sort -u | grep -E "$own" || true) ;;
        *.svg) bad=$( (grep -o '<title>[^<]*' "$f" || true) | sed -E 's/^<title>//; s/ \([^()]*\)$//' | sort -u |
            grep -E "$own" || true) ;;
        *.pb.gz)
            # Locations: `N: 0xADDR M=K NAME FILE:LINE s=S`, then a line
            # `NAME FILE:LINE s=S` for each function inlined there
            raw=$(timeout 120 go tool pprof -raw "$f" 2>&1) && [[ "$raw" == *$'\nLocations\n'* ]] ||
                { echo "# $f: go tool pprof -raw read no locations: $raw" >&3; return 1; }
            bad=$(printf '%s\n' "$raw" | sed -n '/^Locations/,/^Mappings/p' | awk -v leaves="$leaves" \
                -v ex="$exported " -v own="$own" '
                /^Locations|^Mappings/ { next }
                { first = $1 ~ /^[0-9]+:$/ ? 4 : 1; name = $first
                  for (i = first + 1; i < NF - 1; i++) name = name " " $i
                  file = $(NF - 1)
                  if (name ~ own || (file ~ /harness\/sampler\// && !(leaves && index(ex, " " name " "))))
                      print name " (" file ")" }' | sort -u) ;;
        *) bad="not a view" ;;
        esac
        if [ -n "$bad" ]; then
            echo "# $f holds the sampler's own frames: $(printf '%s' "$bad" | head -5 | tr '\n' ' ')" >&3
            return 1
        fi
    done
}

# wait_for CMD...: retry CMD for up to 60 s.
wait_for() {
    local deadline=$((SECONDS + ${WAIT_SECONDS:-60}))
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

# cpu_ns CONTAINER: the CPU time its processes have used, in ns (its
# cgroup's, v1 or v2), read in it (the sampler kept out of the reader).
# An image with no shell (FROM scratch) is read with the tools volume's
# static busybox, and one without that either (a FROM scratch service run
# unprofiled, to be attached to) from the host, through its first
# process's cgroup (v1's cpuacct or v2's cpu.stat).
cpu_ns_host() {
    local pid ctl path
    pid=$(dk inspect -f '{{.State.Pid}}' "$1") || return 1
    [ "${pid:-0}" -gt 0 ] || return 1
    while IFS=: read -r _ ctl path; do
        case ",$ctl," in
            *,cpuacct,*) cat "/sys/fs/cgroup/$ctl$path/cpuacct.usage"; return ;;
            ,,) [ ! -f "/sys/fs/cgroup$path/cpu.stat" ] ||
                { echo $(( $(sed -n 's/^usage_usec //p' "/sys/fs/cgroup$path/cpu.stat") * 1000 )); return; } ;;
        esac
    done < "/proc/$pid/cgroup"
    return 1
}
cpu_ns() {
    local read='cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null ||
        cat /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage 2>/dev/null ||
        echo $(( $(sed -n "s/^usage_usec //p" /sys/fs/cgroup/cpu.stat) * 1000 ))'
    local n
    # (a failed exec says why on its stdout)
    if n=$(dk exec -e LD_PRELOAD= "$1" sh -c "$read" 2>/dev/null); then
        printf '%s\n' "$n"
    elif n=$(dk exec -e LD_PRELOAD= "$1" /opt/profharness/tools/bin/busybox sh -c "$read" 2>/dev/null); then
        printf '%s\n' "$n"
    else
        cpu_ns_host "$1"
    fi
}

common_setup_file() {
    export OUT=$BATS_FILE_TMPDIR/out
    # what the harness remembers per Engine (notes said once): per file
    export XDG_CACHE_HOME=$BATS_FILE_TMPDIR/cache
    mkdir -p "$OUT"
    demo_compose
    export DEMO_COMPOSE
    remove_project
}

# The project's networks (and those of projects named after it: a file's
# private ones, P-priv), once nothing uses them: the Engine has some thirty
# address pools, and files run side by side each make their own.
remove_project_networks() {
    local n p
    for n in $(dk network ls -q --filter label=com.docker.compose.project 2>/dev/null); do
        p=$(dk network inspect -f '{{index .Labels "com.docker.compose.project"}}' "$n" 2>/dev/null) || continue
        case $p in
        "$PH_TEST_PROJECT" | "$PH_TEST_PROJECT"-* | "$PH_TEST_PROJECT"_*) dk network rm "$n" >/dev/null 2>&1 || true ;;
        esac
    done
}

common_teardown_file() {
    remove_project
    remove_project_networks
}

# After each test: when it failed, keep what it produced.  $OUT (shared by
# the file's tests) and the test's own temp dir are removed by bats at the
# end, and a rare failure is only understood from its artifacts, so they
# are copied to ${PH_TEST_KEEP:-/tmp/profharness-failed}/<file>/<test>/ and
# the place is printed.  A file that defines its own teardown() calls this.
common_teardown() {
    [ -z "${BATS_TEST_COMPLETED:-}" ] || return 0
    local name dest
    name=$(printf '%s' "$BATS_TEST_DESCRIPTION" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-100)
    dest=${PH_TEST_KEEP:-/tmp/profharness-failed}/$(basename "$BATS_TEST_FILENAME" .bats)/$name
    rm -rf "$dest" && mkdir -p "$dest" || return 0
    [ ! -d "${OUT:-}" ] || cp -a "$OUT" "$dest/out" 2>/dev/null || true
    [ ! -d "${BATS_TEST_TMPDIR:-}" ] || cp -a "$BATS_TEST_TMPDIR" "$dest/test-tmp" 2>/dev/null || true
    local c
    for c in $(dk ps -a --filter "label=io.profharness.project=$PH_TEST_PROJECT" --format '{{.Names}}' 2>/dev/null); do
        dk logs "$c" > "$dest/$c.log" 2>&1 || true
    done
    echo "# kept the failed test's artifacts in $dest" >&3
}
teardown() { common_teardown; }
