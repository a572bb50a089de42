#!/usr/bin/env bash
# install-deps.sh: install what a fresh Debian bookworm machine lacks to build,
# run and test profharness. Idempotent; installs nothing already present.
set -euo pipefail

need_apt=()
pkg_missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# libc6-dbg: glibc's detached debug info; the sampler tests read a stripped
# library's names and lines from it, as users with -dbgsym packages would.
# clang + libclang-rt-14-dev: the fuzz targets and the sanitizer build
# (libFuzzer, ASan, LeakSanitizer and UBSan's runtimes, the minimal one
# included, are all in libclang-rt-14-dev on bookworm).
for p in build-essential pkg-config libcurl4-openssl-dev libyaml-dev libarchive-dev \
         libjansson-dev libcmocka-dev zlib1g-dev libiberty-dev libdw-dev libc6-dbg bats strace valgrind \
         clang libclang-rt-14-dev \
         debootstrap docker.io iptables ca-certificates curl protobuf-compiler \
         libgoogle-perftools4 jq time chromium; do
    pkg_missing "$p" && need_apt+=("$p")
done
# npm may come with a nodejs that is not Debian's: ask for it only when absent.
command -v npm >/dev/null 2>&1 || need_apt+=(npm)

if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "install-deps: apt-get install ${need_apt[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >&2
fi

if ! command -v just >/dev/null 2>&1; then
    # Debian bookworm has no `just` package; the npm package rust-just ships the binary.
    echo "install-deps: npm install -g rust-just" >&2
    npm install -g --silent rust-just >&2
fi
