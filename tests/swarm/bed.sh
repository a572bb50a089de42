#!/usr/bin/env bash
# tests/swarm/bed.sh: a real multi-node Docker Swarm on this one machine,
# beside the shared dockerd and without touching it or the host's network.
#
#   tests/swarm/bed.sh up N         N dockerd, one manager and N-1 workers
#   tests/swarm/bed.sh push IMAGE…  shared Engine's images into the bed's registry
#   tests/swarm/bed.sh load IMAGE…  shared Engine's images into every node (no registry)
#   tests/swarm/bed.sh docker I ARG…  the docker CLI against node I
#   tests/swarm/bed.sh env I        `export DOCKER_HOST=…` for node I (eval it)
#   tests/swarm/bed.sh stop I [KILL]  take node I down: SIGTERM (its dockerd
#                                   stops its containers) or KILL (a crash)
#   tests/swarm/bed.sh down         remove everything `up` made (idempotent)
#   tests/swarm/bed.sh leftovers    what of the bed exists (nothing after down)
#
# or sourced (bats): the same as functions bed_up, bed_push, … .
#
# Topology.  Every node is a dockerd of its own (data root, exec root and so
# its own containerd, containerd namespaces, cgroup parent, socket,
# --iptables=false), started in a network namespace of its own with
# `nsenter --net` (`ip netns exec` remounts /sys and hides the cgroups; see
# tests/36-engine-faults.bats).  A further namespace holds a bridge; each
# node's eth0 is one end of a veth pair whose other end is a port of that
# bridge, all on one private /24 ($SWARM_BED_NET.0/24, node I at .I).  The
# bridge namespace also holds the registry (Debian's docker-registry, at
# .254:5000, its storage in the bed's directory), so that a node going down
# never takes the images with it; every node trusts it as an insecure
# registry.  No namespace has a default route: nothing leaves the bed, and a
# pull of a name the registry lacks fails at once instead of waiting on DNS.
# Swarm's overlay networks (VXLAN) run over the veth links like over a LAN.
#
# Knobs: SWARM_BED_PLAIN=1 (N Engines that form no swarm: up stops
# before `swarm init`), SWARM_BED_TMPFS=0 (the bed's directory on disk, not a tmpfs of
# at most SWARM_BED_TMPFS_SIZE, default 8g), SWARM_BED (the bed's name; default $PH_TEST_PROJECT, else phswarm:
# two beds of different names coexist), SWARM_BED_NET (the /24's first three
# octets; default 192.168.99: each bed's network is its own, so two beds may
# use the same one).  Everything lives in /tmp/phs-$SWARM_BED (short:
# containerd's socket paths are bounded) and namespaces named phs-$SWARM_BED-*.

bed__name() { echo "${SWARM_BED:-${PH_TEST_PROJECT:-phswarm}}"; }
bed_dir() { echo "/tmp/phs-$(bed__name)"; }
bed__net() { echo "${SWARM_BED_NET:-192.168.99}"; }
bed__ns() { echo "phs-$(bed__name)-$1"; }    # br, n1, n2, …
bed_node_addr() { echo "$(bed__net).$1"; }
bed_registry() { echo "$(bed__net).254:5000"; }
bed_sock() { echo "$(bed_dir)/n$1/sock"; }
bed_cgroup_parent() { echo "$(bed__name)-n$1-dockerd"; }

# The mounts at or under the bed's directory.
bed__mounts() {
    awk -v d="$(bed_dir)" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts
}

# This bed's network namespaces (and no other bed's, whatever its name).
bed__namespaces() {
    ip netns list | awk '{ print $1 }' | grep -E "^$(bed__ns '')(br|n[0-9]+)$"
}

bed__log() { echo "swarm-bed: $*" >&2; }

# bed__wait SECONDS CMD…: retry CMD until it succeeds, for up to SECONDS.
bed__wait() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

# bed_docker I ARGS…: the docker CLI against node I, bounded in time.
bed_docker() {
    local i=$1
    shift
    DOCKER_HOST="unix://$(bed_sock "$i")" timeout "${SWARM_BED_TIMEOUT:-120}" docker "$@"
}

# The nodes there are (from the directories up made), in order.
bed_nodes() {
    local d n
    for d in "$(bed_dir)"/n[0-9]*; do
        [ -d "$d" ] || continue
        n=${d##*/n}
        echo "$n"
    done | sort -n
}

bed__ns_up() {
    local ns=$1
    [ -e "/run/netns/$ns" ] || ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
}

bed__registry_up() {
    local d br reg
    d=$(bed_dir)/registry
    br=$(bed__ns br)
    reg=$(bed_registry)
    mkdir -p "$d/data"
    cat > "$d/config.yml" <<EOF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $d/data
  delete:
    enabled: true
http:
  addr: $reg
EOF
    nsenter --net="/run/netns/$br" docker-registry serve "$d/config.yml" >>"$d/log" 2>&1 &
    echo $! > "$d/pid"
    disown
    bed__wait 30 nsenter --net="/run/netns/$br" curl -fs -o /dev/null "http://$reg/v2/" ||
        { bed__log "the registry did not answer at $reg (log: $d/log)"; return 1; }
}

bed__dockerd_up() {
    local i=$1 d ns
    d=$(bed_dir)/n$i
    ns=$(bed__ns "n$i")
    mkdir -p "$d"
    # a UTS namespace of its own too: the node's hostname is its name in `docker node ls`
    nsenter --net="/run/netns/$ns" unshare --uts -- \
        sh -c 'hostname "$0" && exec dockerd "$@"' "$(bed__name)-n$i" --data-root "$d/data" --exec-root "$d/x" --pidfile "$d/pid" \
        -H "unix://$d/sock" --iptables=false --ip6tables=false --cgroup-parent "$(bed_cgroup_parent "$i")" \
        --containerd-namespace "$(bed__name)-n$i" --containerd-plugins-namespace "$(bed__name)-n$i-plugins" \
        --insecure-registry "$(bed__net).0/24" \
        >>"$d/log" 2>&1 &
    echo $! > "$d/started-pid"
    disown
}

bed__answers() { bed_docker "$1" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

bed__ready_nodes() {
    bed_docker 1 node ls --format '{{.Status}} {{.Availability}}' 2>/dev/null | grep -c '^Ready Active$'
}
bed__all_ready() { [ "$(bed__ready_nodes)" -eq "$1" ]; }

# bed_up N: N nodes, node 1 the manager, the others workers, and the
# registry.  Refuses when a bed of this name exists (run down first).
bed_up() {
    local n=${1:-3} i br net d token
    [[ "$n" =~ ^[1-9][0-9]?$ ]] && [ "$n" -le 50 ] || { bed__log "up: N is 1 to 50, not '$n'"; return 2; }
    d=$(bed_dir)
    if [ -e "$d" ] || [ -n "$(bed__namespaces)" ]; then
        bed__log "a bed named $(bed__name) exists ($d): run down first, or set SWARM_BED"
        return 1
    fi
    for c in dockerd docker docker-registry ip nsenter curl; do
        command -v "$c" >/dev/null || { bed__log "$c is missing (scripts/install-deps.sh installs it)"; return 1; }
    done
    mkdir -p "$d"
    # on a tmpfs: the nodes' image layers and the registry's blobs are
    # written, read and removed in RAM, sparing the disk other work shares
    if [ "${SWARM_BED_TMPFS:-1}" != 0 ]; then
        mount -t tmpfs -o "size=${SWARM_BED_TMPFS_SIZE:-8g},mode=0755" "phs-$(bed__name)" "$d" || return 1
    fi
    br=$(bed__ns br)
    net=$(bed__net)
    # the bridge, with the registry's address on it
    bed__ns_up "$br" &&
        ip -n "$br" link add br0 type bridge &&
        ip -n "$br" addr add "$net.254/24" dev br0 &&
        ip -n "$br" link set br0 up || return 1
    for i in $(seq 1 "$n"); do
        bed__ns_up "$(bed__ns "n$i")" &&
            ip -n "$br" link add "v$i" type veth peer name eth0 netns "$(bed__ns "n$i")" &&
            ip -n "$br" link set "v$i" master br0 up &&
            ip -n "$(bed__ns "n$i")" addr add "$net.$i/24" dev eth0 &&
            ip -n "$(bed__ns "n$i")" link set eth0 up || return 1
        mkdir -p "$d/n$i"
    done
    bed__registry_up || return 1
    for i in $(seq 1 "$n"); do bed__dockerd_up "$i"; done
    for i in $(seq 1 "$n"); do
        bed__wait 120 bed__answers "$i" ||
            { bed__log "node $i's dockerd did not answer (log: $d/n$i/log)"; tail -20 "$d/n$i/log" >&2; return 1; }
    done
    # SWARM_BED_PLAIN=1: N plain Engines (several hosts, no swarm)
    [ "${SWARM_BED_PLAIN:-0}" = 0 ] || return 0
    bed_docker 1 swarm init --advertise-addr "$net.1" --listen-addr "$net.1:2377" >/dev/null || return 1
    token=$(bed_docker 1 swarm join-token -q worker) || return 1
    for i in $(seq 2 "$n"); do
        bed_docker "$i" swarm join --token "$token" --advertise-addr "$net.$i" \
            --listen-addr "$net.$i:2377" "$net.1:2377" >/dev/null || return 1
    done
    bed__wait 120 bed__all_ready "$n" ||
        { bed__log "not every node is Ready:"; bed_docker 1 node ls >&2; return 1; }
}

# bed_push IMAGE…: copy images from the Engine DOCKER_HOST names (by
# default the shared one) into node 1, then push them to the bed's registry
# as REGISTRY/IMAGE; prints each pushed reference.
bed_push() {
    local img ref reg
    reg=$(bed_registry)
    [ $# -gt 0 ] || { bed__log "push: which images?"; return 2; }
    timeout 600 docker save "$@" | SWARM_BED_TIMEOUT=600 bed_docker 1 load >/dev/null || return 1
    for img in "$@"; do
        [[ "$img" == *:* ]] || img=$img:latest
        ref=$reg/$img
        bed_docker 1 tag "$img" "$ref" && SWARM_BED_TIMEOUT=600 bed_docker 1 push -q "$ref" >/dev/null || return 1
        echo "$ref"
    done
}

# bed_load IMAGE…: the images into every node that answers, by save | load
# (where no registry is wanted).
bed_load() {
    local i tar
    [ $# -gt 0 ] || { bed__log "load: which images?"; return 2; }
    tar=$(bed_dir)/load.tar
    timeout 600 docker save -o "$tar" "$@" || { rm -f "$tar"; return 1; }
    for i in $(bed_nodes); do
        bed__answers "$i" || continue
        SWARM_BED_TIMEOUT=600 bed_docker "$i" load -i "$tar" >/dev/null || { rm -f "$tar"; return 1; }
    done
    rm -f "$tar"
}

# The processes of node I: its dockerd, containerd and shims (in its network
# namespace) and its containers' (in its cgroups).
bed__node_pids() {
    local ns cg f
    ns=$(bed__ns "n$1")
    [ ! -e "/run/netns/$ns" ] || ip netns pids "$ns" 2>/dev/null
    cg=$(bed_cgroup_parent "$1")
    for f in /sys/fs/cgroup/"$cg"/ /sys/fs/cgroup/*/"$cg"/; do
        [ -d "$f" ] && find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null
    done
}

bed__node_dead() { [ -z "$(bed__node_pids "$1")" ]; }

# bed_stop I [TERM|KILL]: take node I down.  TERM: its dockerd stops its
# containers (each gets its stop signal and grace) and exits, as a host
# shutting down.  KILL: every process of the node killed at once, as a
# crash.  Waits until the node's processes are gone.
bed_stop() {
    local i=$1 sig=${2:-TERM} pid
    case $sig in
    TERM)
        pid=$(cat "$(bed_dir)/n$i/started-pid" 2>/dev/null) || return 0
        kill -TERM "$pid" 2>/dev/null || true
        bed__wait "${SWARM_BED_STOP_WAIT:-90}" bash -c "! kill -0 $pid 2>/dev/null" || return 1
        ;;
    KILL)
        bed__wait 30 bed__kill_node "$i" || return 1
        ;;
    *) bed__log "stop: TERM or KILL, not '$sig'"; return 2 ;;
    esac
}

bed__kill_node() {
    local pids
    pids=$(bed__node_pids "$1")
    [ -n "$pids" ] || return 0
    kill -KILL $pids 2>/dev/null
    return 1    # look again: a shim may have started a process meanwhile
}

# bed_down: kill every node's processes (the bed is thrown away: no need
# to wait for graceful stops, and a worker's dockerd whose manager is gone
# takes long to stop), the registry; unmount what they left, delete the
# namespaces (the veth links and the bridge go with them), the cgroups and
# the bed's directory.  Safe to run again, or on a bed up left half-made.
bed_down() {
    local d i ns cg m pid
    d=$(bed_dir)
    # the nodes with a directory, and those whose directory is gone but not their namespace
    for i in $( (bed_nodes; bed__namespaces | sed -nE "s/^$(bed__ns n)([0-9]+)$/\1/p") | sort -un); do
        bed__wait 30 bed__kill_node "$i" || bed__log "node $i: processes left: $(bed__node_pids "$i" | tr '\n' ' ')"
    done
    if [ -e "/run/netns/$(bed__ns br)" ]; then
        for pid in $(ip netns pids "$(bed__ns br)" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
        bed__wait 30 bash -c "[ -z \"\$(ip netns pids $(bed__ns br))\" ]" || true
    fi
    # mounts a killed dockerd left (overlays, netns files, shm), deepest
    # first, then the bed's tmpfs
    bed__mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
    for ns in $(bed__namespaces); do
        ip netns del "$ns" || true    # its veth ends and the bridge go with it
    done
    cg=$(bed_cgroup_parent '[0-9]*')
    for m in /sys/fs/cgroup/$cg /sys/fs/cgroup/*/$cg; do
        [ ! -d "$m" ] || find "$m" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    if [ -n "$(bed__mounts)" ]; then
        bed__log "down: mounts left under $d, not removed"
        return 1
    fi
    rm -rf "$d"
    if [ -n "$(bed__namespaces)" ]; then
        bed__log "down: namespaces left: $(bed__namespaces | tr '\n' ' ')"
        return 1
    fi
}

# bed_leftovers: what of this bed exists (its directory, namespaces,
# processes, mounts, cgroups), one thing a line; nothing once down is done.
bed_leftovers() {
    local d i m cg
    d=$(bed_dir)
    [ ! -e "$d" ] || echo "directory $d"
    bed__namespaces | sed 's/^/namespace /'
    for i in $( (bed_nodes; bed__namespaces | sed -nE "s/^$(bed__ns n)([0-9]+)$/\1/p") | sort -un); do
        bed__node_pids "$i" | sed "s/^/node $i process /"
    done
    bed__mounts | sed 's/^/mount /'
    cg=$(bed_cgroup_parent '[0-9]*')
    for m in /sys/fs/cgroup/$cg /sys/fs/cgroup/*/$cg; do
        [ ! -d "$m" ] || echo "cgroup $m"
    done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    cmd=${1:-}
    shift || true
    case $cmd in
    up) bed_up "$@" ;;
    down) bed_down ;;
    push) bed_push "$@" ;;
    load) bed_load "$@" ;;
    docker) bed_docker "$@" ;;
    stop) bed_stop "$@" ;;
    leftovers) bed_leftovers ;;
    env) echo "export DOCKER_HOST=unix://$(bed_sock "${1:-1}")" ;;
    *)
        sed -n '2,13s/^# \{0,1\}//p' "$0" >&2
        exit 2
        ;;
    esac
fi
