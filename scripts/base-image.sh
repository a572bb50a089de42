#!/usr/bin/env bash
# base-image.sh [SUITE...]: make sure the base image of each Debian SUITE
# (debian:SUITE-slim; bookworm when none is named) exists in the local
# Engine.  Pull it when a registry answers; otherwise build an equivalent
# minimal system with debootstrap and import it under that tag, so
# Dockerfiles that say `FROM debian:bookworm-slim` (or trixie-slim: the
# Python 3.13 service of tests/lang/) build unchanged.  An image already
# there is kept: each is built once per Engine.
# PH_BASE_IMAGE / PH_BASE_SUITE name one image and suite (the old way).
set -euo pipefail
MIRROR=${PH_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# base IMAGE SUITE
base() {
    local image=$1 suite=$2 root
    if docker image inspect "$image" >/dev/null 2>&1; then
        return 0
    fi
    if timeout 30 docker pull -q "$image" >/dev/null 2>&1; then
        echo "base-image: pulled $image" >&2
        return 0
    fi
    echo "base-image: no registry answers; bootstrapping $image with debootstrap ($suite from $MIRROR)" >&2
    command -v debootstrap >/dev/null || { echo "base-image: debootstrap missing (run scripts/install-deps.sh)" >&2; return 1; }
    [ -e "/usr/share/debootstrap/scripts/$suite" ] ||
        { echo "base-image: this debootstrap does not know $suite (a newer debootstrap package does)" >&2; return 1; }
    root=$(mktemp -d /tmp/profharness-rootfs.XXXXXX)
    # shellcheck disable=SC2064 # the path now, not at exit
    trap "rm -rf '$root' '$root.log'" EXIT
    debootstrap --variant=minbase "$suite" "$root" "$MIRROR" >"$root.log" 2>&1 || {
        echo "base-image: debootstrap failed; last lines of $root.log:" >&2; tail -n 20 "$root.log" >&2; return 1; }
    # Like the official slim image: no apt caches, sources pointing at the mirror.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import -c 'CMD ["bash"]' - "$image" >/dev/null
    rm -rf "$root" "$root.log"
    trap - EXIT
    echo "base-image: imported $image" >&2
}

if [ $# -eq 0 ]; then
    base "${PH_BASE_IMAGE:-debian:bookworm-slim}" "${PH_BASE_SUITE:-bookworm}"
    exit
fi
for suite in "$@"; do
    case $suite in
        *[!a-z]* | "") echo "base-image: not a Debian suite name: $suite" >&2; exit 2 ;;
    esac
    base "debian:$suite-slim" "$suite"
done
