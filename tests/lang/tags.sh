#!/usr/bin/env bash
# tags.sh: print `export PH_LANG_<DIR>_TAG=<hash>` for each language
# directory here, the hash of its files (names and contents), so the
# compose file's image tags change exactly when a language's inputs do.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for d in "$here"/*/; do
    name=$(basename "$d")
    hash=$(cd "$d" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
    printf 'export PH_LANG_%s_TAG=%s\n' "$(printf %s "$name" | tr a-z A-Z)" "$hash"
done
