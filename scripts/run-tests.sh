#!/usr/bin/env bash
# run-tests.sh: every test suite, then one closing line "N passed, N failed".
# Skipped tests count as failures: a test that could not run proved nothing.
#
#   scripts/run-tests.sh          everything (`just test`)
#   scripts/run-tests.sh --fast   the edit loop (`just test-fast`): the unit
#                                 suites, the lints, each fuzz target over its
#                                 seeds, and one end-to-end run per mode (the
#                                 fault matrix's first row: start, load, a
#                                 graceful stop, every artifact whole)
#
# PH_TEST_JOBS (default 3) suites run at once: the bats files are
# independent (a project, ports and namespaces each: tests/run-bats.sh),
# and most of their time is spent waiting on containers, not computing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fast=0
case ${1:-} in
    --fast) fast=1 ;;
    "") ;;
    *) echo "run-tests: unknown option '$1' (usage: scripts/run-tests.sh [--fast])" >&2; exit 2 ;;
esac
export PH_TEST_JOBS=${PH_TEST_JOBS:-3}
passed=0; failed=0
log=$(mktemp -d /tmp/profharness-tests.XXXXXX)
t_all=$SECONDS
# what the Engine holds now: what the tests add is removed at the end
tests/sweep.sh snapshot "$log/engine-before"

# add N_PASSED N_FAILED from a line "WHAT: N passed, N failed" in FILE
add_line() {
    local line p f
    line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$2" | tail -1)
    p=$(sed -E "s/^$1: ([0-9]+) passed.*/\\1/" <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))
}
# stage NAME: a heading with the time so far
stage() { echo "== $1 (at $((SECONDS - t_all)) s)"; }

stage "images every end-to-end file uses, built once, beside the unit tests (the tools image, the demo's, the languages')"
# Each bats file builds what it needs in its setup; built here first, the
# files that run side by side find them in the Engine instead of building
# the same image at once.  Most of a build is the mirror's downloads and
# apt's unpacking, so it overlaps well with the unit suites.
tests/build-test-images.sh $([ "$fast" = 1 ] && echo --demo-only) >"$log/images.log" 2>&1 &
images_pid=$!

stage "unit tests (C, cmocka)"
make -j2 tests-build >"$log/build.log" 2>&1 || { cat "$log/build.log"; echo "unit tests did not build"; failed=$((failed+1)); }
if [ -x build/profharness ]; then
    tests/run-unit.sh build/tests/test_* 2>&1 | tee "$log/unit.log"
    add_line unit "$log/unit.log"
fi

stage "fuzz smoke (libFuzzer: each tests/fuzz target over its seeds$([ "$fast" = 1 ] || echo ", then a few thousand runs"))"
tests/fuzz/run.sh $([ "$fast" = 1 ] && echo --seeds || echo --smoke) 2>&1 | tee "$log/fuzz.log"
passed=$((passed + $(grep -c '^ok: ' "$log/fuzz.log")))
failed=$((failed + $(grep -c '^not ok: ' "$log/fuzz.log")))

stage "test lint (checks that cannot fail)"
if tests/lint-bats.sh; then passed=$((passed+1)); echo "ok: tests/lint-bats.sh"; else failed=$((failed+1)); echo "not ok: tests/lint-bats.sh"; fi
stage "floors (the loop over the backend, never the Engine)"
if tests/check-floors.sh; then passed=$((passed+1)); echo "ok: tests/check-floors.sh"; else failed=$((failed+1)); echo "not ok: tests/check-floors.sh"; fi
stage "rooms (the files of a directory call each other one way)"
if tests/check-rooms.sh; then passed=$((passed+1)); echo "ok: tests/check-rooms.sh"; else failed=$((failed+1)); echo "not ok: tests/check-rooms.sh"; fi

stage "waiting for the images"
if wait "$images_pid"; then
    echo "ok: tests/build-test-images.sh"; passed=$((passed + 1))
else
    cat "$log/images.log"
    echo "not ok: tests/build-test-images.sh"; failed=$((failed + 1))
fi

stage "end-to-end tests (bats, real Docker Engine, $PH_TEST_JOBS files at once)"
if [ "$fast" = 1 ]; then
    # one end-to-end run per mode: every mode's start, load, graceful stop
    # and whole artifacts (the matrix's first row)
    tests/run-bats.sh -f "a service that handles SIGTERM" tests/35-fault-matrix.bats 2>&1 | tee "$log/bats.log"
else
    tests/run-bats.sh tests/*.bats 2>&1 | tee "$log/bats.log"
fi
add_line bats "$log/bats.log"

if [ "$fast" = 0 ] && ls tests/browser/*.sh >/dev/null 2>&1; then
    stage "browser tests (headless Chromium)"
    for t in tests/browser/*.sh; do
        if "$t"; then passed=$((passed+1)); echo "ok: $t"; else failed=$((failed+1)); echo "not ok: $t"; fi
    done
fi

stage "leftovers (what the tests made in the Engine, removed)"
if tests/sweep.sh sweep "$log/engine-before"; then passed=$((passed+1)); else failed=$((failed+1)); fi

rm -rf "$log"
echo "(all suites: $((SECONDS - t_all)) s)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
