#!/usr/bin/env bash
# run-tests.sh: every test suite, then one closing line "N passed, N failed".
# Skipped tests count as failures: a test that could not run proved nothing.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
passed=0; failed=0
log=$(mktemp -d /tmp/profharness-tests.XXXXXX)
# what the Engine holds now: what the tests add is removed at the end
tests/sweep.sh snapshot "$log/engine-before"

echo "== unit tests (C, cmocka)"
make -j2 tests-build >"$log/build.log" 2>&1 || { cat "$log/build.log"; echo "unit tests did not build"; failed=$((failed+1)); }
if [ -x build/profharness ]; then
    tests/run-unit.sh build/tests/test_* 2>&1 | tee "$log/unit.log"
    line=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed' "$log/unit.log" | tail -1)
    p=$(sed -E 's/^unit: ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))
fi

echo "== fuzz smoke (libFuzzer: each tests/fuzz target over its seeds, then a few thousand runs)"
tests/fuzz/run.sh --smoke 2>&1 | tee "$log/fuzz.log"
passed=$((passed + $(grep -c '^ok: ' "$log/fuzz.log")))
failed=$((failed + $(grep -c '^not ok: ' "$log/fuzz.log")))

echo "== test lint (checks that cannot fail)"
if tests/lint-bats.sh; then passed=$((passed+1)); echo "ok: tests/lint-bats.sh"; else failed=$((failed+1)); echo "not ok: tests/lint-bats.sh"; fi
echo "== floors (the loop over the backend, never the Engine)"
if tests/check-floors.sh; then passed=$((passed+1)); echo "ok: tests/check-floors.sh"; else failed=$((failed+1)); echo "not ok: tests/check-floors.sh"; fi

echo "== end-to-end tests (bats, real Docker Engine)"
tests/run-bats.sh tests/*.bats 2>&1 | tee "$log/bats.log"
line=$(grep -E '^bats: [0-9]+ passed, [0-9]+ failed' "$log/bats.log" | tail -1)
p=$(sed -E 's/^bats: ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))

if ls tests/browser/*.sh >/dev/null 2>&1; then
    echo "== browser tests (headless Chromium)"
    for t in tests/browser/*.sh; do
        if "$t"; then passed=$((passed+1)); echo "ok: $t"; else failed=$((failed+1)); echo "not ok: $t"; fi
    done
fi

echo "== leftovers (what the tests made in the Engine, removed)"
if tests/sweep.sh sweep "$log/engine-before"; then passed=$((passed+1)); else failed=$((failed+1)); fi

rm -rf "$log"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
