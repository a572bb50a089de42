#!/usr/bin/env bash
# install-deps.sh: install what a fresh Debian bookworm machine lacks to build,
# run and test profharness. Idempotent; installs nothing already present.
set -euo pipefail

need_apt=()
pkg_missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# One package a line, with why, so that adding one never conflicts.
packages=(
    build-essential pkg-config libcurl4-openssl-dev libyaml-dev libarchive-dev
    libjansson-dev libcmocka-dev zlib1g-dev libiberty-dev libdw-dev
    libc6-dbg        # glibc's detached debug info: the sampler tests read a stripped library's names from it
    musl-tools       # musl-gcc: the sampler built a second time for musl images (libphsampler-musl.so)
    bats strace valgrind
    debootstrap      # the base image, built locally when no registry answers
    docker.io iptables ca-certificates curl
    protobuf-compiler
    libgoogle-perftools4  # the sampler's overhead benchmark compares with gperftools
    jq time
    chromium         # browser tests
    openssl          # the TLS Engine test makes its certificates
    python3          # the TLS test finds a free port; the renderer's tests read SVG with its XML parser
    iproute2         # the Engine-fault tests run a private dockerd in a network namespace (ip netns)
    util-linux       # ... and nsenter, setpriv (a user outside the docker group)
    docker-registry  # the Swarm bed's registry (tests/swarm/bed.sh runs its own, in a namespace;
                     # where systemd runs, the package also enables one of its own on :5000)
    golang-go        # `go tool pprof`: the oracle that reads the heap mode's profile (tests/68-heap.bats)
    openjdk-17-jdk-headless  # test_sampler_java runs a JVM with the sampler as its agent (java, javac, jvmti.h)
    docker-compose   # Debian's compose 1.29: the oracle of tests/60-compose-oracle.bats
    linux-perf       # the collapse tests and benchmark record real perf script output; the perf
                     # mode's tests read perf.data with the host's perf report
    clang            # the fuzz targets and the sanitizer build
    libclang-rt-14-dev  # libFuzzer, ASan, LeakSanitizer and UBSan's runtimes for clang 14
)
for p in "${packages[@]}"; do
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

# The independent OTLP receiver of tests/60-timing.bats: OpenTelemetry JS's
# generated protobuf code (package-lock.json pins it).
here=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -d "$here/tests/timing/node_modules/@opentelemetry/otlp-transformer" ]; then
    echo "install-deps: npm ci in tests/timing" >&2
    npm ci --prefix "$here/tests/timing" --ignore-scripts --no-audit --no-fund --silent >&2
fi
