#!/usr/bin/env bash
# lint-bats.sh: checks of the test files themselves, for lines that
# assert nothing in the middle of a bats test (errexit ignores them):
#   - `! cmd`: a negated command; it must end in `|| false` or continue
#     a condition (`then`, `&&`, `\`);
#   - `[ A ] && [ B ]` in a test's body: only the last test of an `&&`
#     list is held (a failing A ends the list quietly), so a lower bound
#     before an upper one was never checked: one test per line.
# Prints each offending line as FILE:LINE and exits 1 if there is one.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
files=(tests/*.bats tests/swarm/*.bats)
status=0
bad=$(grep -nE '^\s*! ' "${files[@]}" tests/test_helper.bash |
      grep -vE '(\|\| false|then|&&|\\)\s*$')
if [ -n "$bad" ]; then
    printf '%s\n' "$bad"
    echo "lint-bats: a negated check mid-test never fails: end it with '|| false'"
    status=1
fi
bad=$(awk '
    /^@test / { body = 1; next }
    /^}/ { body = 0; next }
    body && /^[ \t]*\[\[? .*\]\]?[ \t]*&&[ \t]*\[\[? .*\]\]?[ \t]*$/ && !/\|\|/ { print FILENAME ":" FNR ": " $0 }
' "${files[@]}")
if [ -n "$bad" ]; then
    printf '%s\n' "$bad"
    echo "lint-bats: in '[ A ] && [ B ]' only B is held: one test per line"
    status=1
fi
exit $status
