#!/usr/bin/env bash
# base-image.sh: make sure the base image (debian:bookworm-slim by default)
# exists in the local Engine. Pull it when a registry answers; otherwise build
# an equivalent minimal bookworm with debootstrap and import it under that tag,
# so Dockerfiles that say `FROM debian:bookworm-slim` build unchanged.
set -euo pipefail
IMAGE=${PH_BASE_IMAGE:-debian:bookworm-slim}
SUITE=${PH_BASE_SUITE:-bookworm}
MIRROR=${PH_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    exit 0
fi
if timeout 30 docker pull -q "$IMAGE" >/dev/null 2>&1; then
    echo "base-image: pulled $IMAGE" >&2
    exit 0
fi
echo "base-image: no registry answers; bootstrapping $IMAGE with debootstrap ($SUITE from $MIRROR)" >&2
command -v debootstrap >/dev/null || { echo "base-image: debootstrap missing (run scripts/install-deps.sh)" >&2; exit 1; }
root=$(mktemp -d /tmp/profharness-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 || {
    echo "base-image: debootstrap failed; last lines of $root.log:" >&2; tail -n 20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# Like the official slim image: no apt caches, sources pointing at the mirror.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import -c 'CMD ["bash"]' - "$IMAGE" >/dev/null
echo "base-image: imported $IMAGE" >&2
