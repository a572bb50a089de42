#!/usr/bin/env bash
# lint-bats.sh: checks of the test files themselves.  A line that starts
# with `! cmd` asserts nothing in the middle of a bats test (errexit
# ignores a negated command), so each such line must end in `|| false`
# or continue a condition (`then`, `&&`, `\`).  Prints each offending
# line as FILE:LINE and exits 1 if there is one.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bad=$(grep -nE '^\s*! ' tests/*.bats tests/swarm/*.bats tests/test_helper.bash |
      grep -vE '(\|\| false|then|&&|\\)\s*$')
[ -z "$bad" ] && exit 0
printf '%s\n' "$bad"
echo "lint-bats: a negated check mid-test never fails: end it with '|| false'"
exit 1
