# profharness recipes.  On a fresh machine run them through scripts/just,
# which installs `just` itself; every recipe installs what else it needs.
set shell := ["bash", "-euo", "pipefail", "-c"]
# each argument reaches the command as typed, one word ("$@"): a --fail-if
# 'x>+20%' is never split at `>` by the shell
set positional-arguments

ph := "build/profharness"

# list the recipes
default:
    @just --list

# install build and test dependencies (Debian packages, just)
deps:
    scripts/install-deps.sh

# build the harness, the init shim, the sampler and the demo's load driver
build: deps
    make -j2 all build/demo-load

# install under PREFIX (bin/, lib/profharness/, share/profharness/); DESTDIR stages
install PREFIX="/usr/local": build
    make install PREFIX="$1"

# remove what `just install PREFIX` put there
uninstall PREFIX="/usr/local":
    make uninstall PREFIX="$1"

# remove profiling images no container uses (the newest of each kept)
prune: build
    {{ph}} prune

# make sure a Docker Engine answers and the base image exists
engine: deps
    scripts/engine-up.sh
    scripts/base-image.sh

# build service images and their profiling images
setup *SERVICES: build engine
    {{ph}} setup "$@"

# restart SERVICES (default: all) under strace
profile-strace *SERVICES: build engine
    {{ph}} start --mode strace "$@"

# restart SERVICES under valgrind massif (heap)
profile-valgrind *SERVICES: build engine
    {{ph}} start --mode massif "$@"

alias profile-massif := profile-valgrind

# restart SERVICES under valgrind callgrind (instructions)
profile-callgrind *SERVICES: build engine
    {{ph}} start --mode callgrind "$@"

# restart SERVICES with the built-in sampler (flamegraphs; no capabilities)
profile-flamegraph *SERVICES: build engine
    {{ph}} start --mode flamegraph "$@"

# restart SERVICES with the built-in heap sampler (in-use, peak and allocated bytes; no capabilities)
profile-heap *SERVICES: build engine
    {{ph}} start --mode heap "$@"

# restart SERVICES with the built-in sampler on the wall clock (every thread,
# running or blocked: all, off-CPU and on-CPU stacks; no capabilities)
profile-wall *SERVICES: build engine
    {{ph}} start --mode wall "$@"

# restart SERVICES under perf record -g (CPU stacks: perf.data, flamegraph, pprof)
profile-perf *SERVICES: build engine
    {{ph}} start --mode perf "$@"

# attach strace to running SERVICES without restarting them (stop-profiling detaches)
profile-attach-strace *SERVICES: build engine
    {{ph}} attach --mode strace "$@"

# attach perf to running SERVICES without restarting them (stop-profiling detaches)
profile-attach-perf *SERVICES: build engine
    {{ph}} attach --mode perf "$@"

# stop profiled SERVICES gracefully and collect into contrib/profiling/<service>/
stop-profiling *SERVICES: build
    {{ph}} stop "$@"

# run SERVICES without profiling (collects any profiled run first)
profile-restore *SERVICES: build engine
    {{ph}} restore "$@"

# stop SERVICES, whatever runs them: restore's removed, compose's own kept, a profiled run collected first
profile-down *SERVICES: build engine
    {{ph}} down "$@"

# copy the artifacts there are now, without stopping
collect *SERVICES: build
    {{ph}} collect "$@"

# (re)write the reports of runs (default: all) and the index; print each headline
report *ARGS: build
    {{ph}} report "$@"

# compare two runs: `just compare front` (its two newest runs of one mode), or A B; --fail-if EXPR for CI
compare *ARGS: build
    {{ph}} compare "$@"

# service, mode, state, since, run dir
status: build
    {{ph}} status

# follow a service's output (Ctrl-C to leave)
logs SERVICE: build
    {{ph}} logs -f "$1"

# drive load at the demo's front service (loopback only)
load *ARGS: build
    build/demo-load "$@"

# the whole loop on the bundled demo: every mode, load, graceful stop, results
demo: build engine
    scripts/demo.sh

# every test: C unit tests, end-to-end on the real Engine, the browser check
# (PH_TEST_JOBS files at once, default 3)
test: build engine
    scripts/run-tests.sh

# the edit loop's tests (a few minutes): the unit suites, the lints, the fuzz
# targets over their seeds, one end-to-end run per mode
test-fast: build engine
    scripts/run-tests.sh --fast

# the three-node Swarm bed's test (up to 17 min): a registry, 3 replicas one per node profiled under strace and flamegraph, a node killed, a node lost mid-run
test-swarm: build engine
    tests/run-bats.sh tests/swarm/*.bats

# a Swarm of private dockerd on this machine, by hand: `just swarm-bed up 3`, … `down` (docs/swarm-bed.md)
swarm-bed *ARGS: deps
    tests/swarm/bed.sh "$@"

# fuzz one target (tests/fuzz/fuzz_TARGET.c) for SECONDS; corpus and crashes in build-fuzz/
fuzz TARGET SECONDS="60": deps
    tests/fuzz/run.sh "$@"

# every fuzz target over its seeds, then a few thousand runs
fuzz-smoke: deps
    tests/fuzz/run.sh --smoke

# unit suites and end-to-end tests against the ASan/UBSan build (build-san/)
test-sanitize: build engine
    scripts/test-sanitize.sh

# the unit suites RUNS times in a row next to a busy loop per CPU; a flaky test shows here
soak-unit RUNS="20": build
    make -j2 tests-build
    tests/soak.sh -n "$1" -- tests/run-unit.sh build/tests/test_*

# the end-to-end suite RUNS times in a row next to a busy loop per CPU
soak-e2e RUNS="5": build engine
    tests/soak.sh -n "$1" -- tests/run-bats.sh tests/*.bats

# the mutation check: one-line bugs from tests/mutants/*.txt, each must be caught
mutants *MODULES: deps
    tests/mutants.sh "$@"

# start->running and stop->artifacts against the docker CLI; 8 stops at once against one alone;
# edit one line, then `start --build` per mode against `docker compose build && up -d`
bench-orchestration: build engine
    tests/bench/bench-orchestration.sh
    tests/bench/bench-stop-concurrent.sh
    tests/bench/bench-edit.sh

# the flamegraph renderer against flamegraph.pl (set FLAMEGRAPH_PL to compare)
bench-render: build
    tests/bench/bench-flamegraph-render.sh

# what the harness's own timing costs: per stage, per Engine call, per command
bench-timing: build engine
    tests/bench/bench-timing.sh

# tar extraction: one big file, many small ones, a deep tree (medians, MB/s, peak RSS; GNU tar beside)
bench-extract: build
    tests/bench/bench-extract.sh

# perf script collapsing against stackcollapse-perf.pl (set FLAMEGRAPH_DIR to compare)
bench-collapse: build
    tests/bench/bench-collapse.sh

# the report's parsers on 500 MB inputs against callgrind_annotate and ms_print
bench-summaries: build
    tests/bench/bench-summaries.sh

# the heap mode's cost against no profiler, massif and heaptrack, and its peak against massif's
bench-heap: build
    tests/bench/bench-heap.sh

# the wall mode's CPU cost at 100 Hz with 50 idle threads, as a % of one CPU
bench-wall: build
    tests/bench/bench-wall.sh

# sampler overhead against gperftools and none, then the renderer, then
# the sampler in the Python, Node and Java services of tests/lang (Engine),
# then the RSS it adds per runtime and mode, and the wall mode's cost
bench-flamegraph: build engine
    tests/bench/bench-flamegraph-overhead.sh
    tests/bench/bench-flamegraph-render.sh
    tests/bench/bench-flamegraph-lang.sh
    tests/bench/bench-flamegraph-rss.sh
    tests/bench/bench-wall.sh

# the renderer and the collapser against flamegraph.pl and
# stackcollapse-perf.pl on the peers' own test data.  Needs copies of
# github.com/brendangregg/FlameGraph and github.com/jonhoo/inferno (not part
# of this project): FLAMEGRAPH_DIR=… INFERNO_DIR=… just test-peers
test-peers: build
    @[ -n "${FLAMEGRAPH_DIR:-}" ] && [ -n "${INFERNO_DIR:-}" ] || { echo "test-peers: set FLAMEGRAPH_DIR and INFERNO_DIR to copies of FlameGraph and inferno" >&2; exit 2; }
    bats tests/peers/
