#!/usr/bin/env bash
# build-test-images.sh [--demo-only]: build, once, the images that several
# end-to-end files need, before they run side by side (scripts/run-tests.sh):
# the tools image and volume and the demo's images (`setup` of the demo),
# and, unless --demo-only, trixie's and bullseye's base images and the language services
# of tests/lang (the 66-languages files and 67-unnamed).  Each file still runs its
# own `setup`, which then finds them built (the Engine's build cache: the
# demo image's name is each file's own, its layers the same).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
demo_only=0
[ "${1:-}" != --demo-only ] || demo_only=1
project=${PH_TEST_PROJECT:-phtest}-images
tmp=$(mktemp -d /tmp/ph-test-images.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
PH=$PWD/build/profharness

sed -e "s#image: profharness-demo:latest#image: profharness-demo-$project:latest#" \
    -e "s#context: images/demo#context: $PWD/images/demo#" compose.yaml >"$tmp/compose.yaml"
echo "build-test-images: the demo's images and the tools volume"
timeout 1800 "$PH" -f "$tmp/compose.yaml" -p "$project" -o "$tmp/out" setup

[ "$demo_only" = 0 ] || exit 0
echo "build-test-images: the language services (tests/lang)"
scripts/base-image.sh trixie bullseye
eval "$(tests/lang/tags.sh)"
timeout 3600 "$PH" -f tests/lang/compose.yaml -p "$project-lang" -o "$tmp/out" setup
