#!/usr/bin/env bash
# sweep.sh: what a test run made in the Engine is removed at its end.
#
#   tests/sweep.sh snapshot DIR   note the containers, images, volumes and
#                                 networks there are now (in DIR)
#   tests/sweep.sh sweep DIR      remove what is new since and is the
#                                 tests' own; then list what is left of it
#                                 and exit 1 if anything is
#
# The tests' own: new since the snapshot AND named or labelled as the
# tests name things (the test project $PH_TEST_PROJECT and its suffixes,
# ph-unittest-*, profharness-* images and their -profiling builds, images
# no tag names any more, containers of those images).  Another run beside
# this one on the same Engine (another project) is left alone, and so is
# everything that was there before (the base image, a user's demo).
# PH_TEST_KEEP=1 keeps it all (a developer's image cache between runs).
set -u
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: tests/sweep.sh snapshot|sweep DIR" >&2; exit 2; }
project=${PH_TEST_PROJECT:-phtest}
dk() { timeout 120 docker "$@"; }

list_all() {
    dk ps -aq --no-trunc | sort -u >"$1/containers"
    dk image ls -aq --no-trunc | sort -u >"$1/images"
    dk volume ls -q | sort -u >"$1/volumes"
    dk network ls -q --no-trunc | sort -u >"$1/networks"
}

# new KIND: ids new since the snapshot
new() { comm -13 "$dir/$1" "$now/$1"; }

ours_name() {
    case "$1" in
    "$project" | "$project"[-_]* | ph-unittest* | profharness-* | *-profiling:* | *-profiling) return 0 ;;
    esac
    return 1
}

# The tests' new images: a tag of ours, or no tag at all.
our_images() {
    local id tags t
    for id in $(new images); do
        tags=$(dk image inspect -f '{{range .RepoTags}}{{.}} {{end}}' "$id" 2>/dev/null) || continue
        if [ -z "${tags// /}" ]; then echo "$id"; continue; fi
        for t in $tags; do
            if ours_name "$t"; then echo "$id"; break; fi
        done
    done
}

our_containers() {
    local id name labels image
    local imgs=" $(our_images | tr '\n' ' ') "
    for id in $(new containers); do
        read -r name image labels < <(dk inspect -f '{{.Name}} {{.Image}} {{index .Config.Labels "io.profharness.project"}}{{index .Config.Labels "com.docker.compose.project"}}' "$id" 2>/dev/null) || continue
        name=${name#/}
        if ours_name "$name" || ours_name "${labels:-none}" || [[ "$imgs" == *" $image "* ]]; then echo "$id"; fi
    done
}

our_volumes() {
    local v p
    for v in $(new volumes); do
        p=$(dk volume inspect -f '{{index .Labels "com.docker.compose.project"}}' "$v" 2>/dev/null)
        if ours_name "$v" || ours_name "${p:-none}"; then echo "$v"; fi
    done
}

our_networks() {
    local n name
    for n in $(new networks); do
        name=$(dk network inspect -f '{{.Name}}' "$n" 2>/dev/null) || continue
        if ours_name "$name"; then echo "$n"; fi
    done
}

case "$cmd" in
snapshot)
    mkdir -p "$dir" && list_all "$dir"
    ;;
sweep)
    [ -s "$dir/images" ] || { echo "sweep: no snapshot in $dir" >&2; exit 2; }
    if [ "${PH_TEST_KEEP:-0}" = 1 ]; then echo "sweep: PH_TEST_KEEP=1: what the tests made is kept"; exit 0; fi
    now=$(mktemp -d); list_all "$now"
    c=$(our_containers); [ -z "$c" ] || dk rm -f -v $c >/dev/null 2>&1
    list_all "$now"
    # images: newest first is not known, so a few passes (a child before
    # its parent; one in use by another run's container stays)
    for _ in 1 2 3; do
        i=$(our_images); [ -z "$i" ] || dk rmi -f $i >/dev/null 2>&1
        list_all "$now"
    done
    v=$(our_volumes); [ -z "$v" ] || dk volume rm $v >/dev/null 2>&1
    n=$(our_networks); [ -z "$n" ] || dk network rm $n >/dev/null 2>&1
    list_all "$now"
    left=$( { our_containers | sed 's/^/container /'; our_images | sed 's/^/image /';
              our_volumes | sed 's/^/volume /'; our_networks | sed 's/^/network /'; } )
    rm -rf "$now"
    if [ -n "$left" ]; then
        echo "sweep: the tests left these in the Engine and they could not be removed:"
        printf '  %s\n' $left
        exit 1
    fi
    echo "sweep: nothing the tests made is left in the Engine"
    ;;
*) echo "usage: tests/sweep.sh snapshot|sweep DIR" >&2; exit 2 ;;
esac
