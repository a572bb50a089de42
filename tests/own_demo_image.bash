# own_demo_image.bash: the demo under an image name of this test project's
# own.  Other test runs on the same Engine rebuild profharness-demo:latest
# from their own trees (without the knobs a newer demo has); a copy of the
# demo compose file naming $OWN_IMAGE keeps this file's runs on its build.

# own_demo_image SUFFIX: set OWN_IMAGE and OWN_COMPOSE (in BATS_FILE_TMPDIR).
own_demo_image() {
    export OWN_IMAGE="profharness-demo-$PH_TEST_PROJECT$1"
    export OWN_COMPOSE=$BATS_FILE_TMPDIR/compose.yaml
    sed -e "s#image: profharness-demo:latest#image: $OWN_IMAGE:latest#" \
        -e "s#context: images/demo#context: $REPO/images/demo#" "$REPO/compose.yaml" > "$OWN_COMPOSE"
}

# ph ARGS...: as test_helper's, on $OWN_COMPOSE.
ph() {
    timeout "${PH_TIMEOUT:-900}" "$PH" -f "$OWN_COMPOSE" -p "$PH_TEST_PROJECT" \
        --profiles "${PH_PROFILES:-$REPO/profiles}" -o "$OUT" "$@"
}

# Remove $OWN_IMAGE and the profiling images built on it (on the shared Engine).
own_demo_image_remove() {
    local imgs
    imgs=$(DOCKER_HOST= timeout 60 docker images -q --filter "reference=$OWN_IMAGE:*" \
        --filter "reference=$OWN_IMAGE-profiling:*" | sort -u)
    [ -z "$imgs" ] || DOCKER_HOST= timeout 120 docker rmi -f $imgs >/dev/null 2>&1 || true
}
