#!/usr/bin/env bash
# test-sanitize.sh: the unit suites and the end-to-end tests against the
# sanitizer build (build-san/, `make sanitize`; what is built how is in the
# Makefile and docs/testing.md), then one line "N passed, N failed".
#
#   scripts/test-sanitize.sh [--unit] [BATS_FILE...]
#
# --unit runs the unit suites only; BATS_FILEs choose the end-to-end files
# (default tests/*.bats).  Every sanitizer report is written to a file of
# its own and counts as one failure, whatever the exit status of the
# process that made it: a test expecting exit 1 must not pass because ASan
# also exits 1.
#
# The tests name their binaries as build/...: the unit tests run from
# build-san/root, a tree of links to the repository whose build/ is
# build-san/; the harness finds ph-init and the sampler the same way
# (PH_DATA_DIR), and the bats files take the harness from $PH_BUILD.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
S=build-san
unit_only=0
if [ "${1:-}" = --unit ]; then unit_only=1; shift; fi
passed=0; failed=0
log=$(mktemp -d /tmp/profharness-sanitize.XXXXXX)
reports=$log/reports
mkdir -p "$reports"

echo "== sanitizer build ($S/)"
# build/ too: the bats files drive load with build/demo-load.
if ! { make -j2 all && make -j2 sanitize; } >"$log/build.log" 2>&1; then
    cat "$log/build.log"; echo "the sanitizer build failed"; echo "0 passed, 1 failed"; exit 1
fi
grep -E 'warning:' "$log/build.log" && { echo "the sanitizer build warns"; failed=$((failed+1)); }

rm -rf "$S/root" && mkdir -p "$S/root"
for e in * .[!.]*; do
    case $e in build | build-* | .git) continue ;; esac
    [ -e "$e" ] && ln -s "../../$e" "$S/root/$e"
done
ln -s .. "$S/root/build"

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0:print_stacktrace=1:exitcode=86:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$reports/ubsan"
export LSAN_OPTIONS="exitcode=88"

echo "== unit tests, sanitized"
(cd "$S/root" && tests/run-unit.sh build/tests/test_*) 2>&1 | tee "$log/unit.log"
line=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed' "$log/unit.log" | tail -1)
p=$(sed -E 's/^unit: ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))

if [ "$unit_only" -eq 0 ]; then
    echo "== end-to-end tests, sanitized harness (bats, real Docker Engine)"
    [ $# -gt 0 ] || set -- tests/*.bats
    PH_BUILD=$S PH_DATA_DIR=$PWD/$S/root tests/run-bats.sh "$@" 2>&1 | tee "$log/bats.log"
    line=$(grep -E '^bats: [0-9]+ passed, [0-9]+ failed' "$log/bats.log" | tail -1)
    p=$(sed -E 's/^bats: ([0-9]+) passed.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1}))
fi

echo "== sanitizer reports"
n=0
for r in "$reports"/*; do
    [ -e "$r" ] || continue
    n=$((n+1))
    echo "--- $r"; cat "$r"
done
echo "$n report(s)"
failed=$((failed + n))

if [ "$failed" -eq 0 ]; then rm -rf "$log"; else echo "logs and reports kept in $log"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
