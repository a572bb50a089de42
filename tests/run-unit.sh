#!/usr/bin/env bash
# run-unit.sh: run each cmocka test binary given, then print one line
# "unit: N passed, N failed" from their summaries.  A binary that crashes or
# prints no summary counts as one failure.
set -u
passed=0; failed=0
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END{print s+0}')
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then f=1; echo "unit: $t printed no summary (exit $rc)"; fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "unit: $t exited $rc"; fi
    passed=$((passed + p)); failed=$((failed + f))
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
