#!/usr/bin/env bats
# Collection limits (issue 14): what one stop or collect takes out of a
# container is bounded in bytes (files' full sizes, holes included),
# entries and free disk space.  Over a limit the partial temp dir is
# removed, the container kept, and the error names the limit, where it
# was set (flag, the mode's `collect:`, default) and how to raise it.  A
# flag wins over the profile.  The worker service is profiled: it needs no
# port, and what it leaves is made with docker exec.

load test_helper

setup_file() {
    common_setup_file
    ph setup worker >&3 2>&1
    export PH_PROFILES=$(short_grace_profiles)
}
teardown_file() { common_teardown_file; }
# The small disk of a test that failed half way goes too.
teardown() { ! mountpoint -q "$BATS_TEST_TMPDIR/small" || umount "$BATS_TEST_TMPDIR/small"; }

CTR="$PH_TEST_PROJECT-worker-strace"

# Runs and temp dirs of the worker, one a line.
runs() { ls -A "$OUT/worker" 2>/dev/null | grep -v -e '^\.lock$' -e '^latest$' -e '^strace\.log$' || true; }

start_worker() {
    run ph start --mode strace worker
    [ "$status" -eq 0 ]
}

@test "a sparse file over --max-bytes: exit 1, the limit and the flag named, nothing kept, the container kept" {
    start_worker
    dk exec "$CTR" truncate -s 256M /opt/profiling/worker/sparse.bin
    before=$(runs)
    run ph stop --max-bytes 64MiB worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"sparse.bin"*"over the limit \`max_bytes\` of 64 MiB (set with --max-bytes)"* ]]
    [[ "$output" == *"hint: the container "*" is kept"* ]]
    [[ "$output" == *"\`profharness stop --max-bytes 128MiB worker\`"* ]]
    [[ "$output" == *"\`collect: {max_bytes: 128MiB}\` in $PH_PROFILES/strace.yaml"* ]]
    # No run and no temp dir left; the container is still there, stopped.
    [ "$(runs)" = "$before" ]
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = exited ]

    # The default (16 GiB) takes it, holes and all.
    run ph stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    f="$OUT/worker/latest/sparse.bin"
    [ "$(stat -c %s "$f")" -eq $((256 << 20)) ]
    [ "$(stat -c %b "$f")" -lt 1024 ]   # blocks of 512 B: the holes stayed holes
    [ -z "$(dk ps -aq --filter "name=^$CTR\$")" ]
}

@test "max_entries in the mode's collect: names the profile; the flag wins over it" {
    prof=$BATS_TEST_TMPDIR/profiles
    cp -r "$PH_PROFILES" "$prof"
    printf 'collect:\n  max_entries: 5\n' >> "$prof/strace.yaml"
    PH_PROFILES=$prof start_worker
    dk exec "$CTR" sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > /opt/profiling/worker/f$i; done'
    before=$(runs)
    PH_PROFILES=$prof run ph stop worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"over the limit \`max_entries\` of 5 (set in $prof/strace.yaml)"* ]]
    [[ "$output" == *"\`profharness stop --max-entries 10 worker\`"* ]]
    [ "$(runs)" = "$before" ]
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = exited ]

    PH_PROFILES=$prof run ph stop --max-entries unlimited worker
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(cat "$OUT/worker/latest/f10")" = 10 ]
}

@test "collect and restore take the limits too; a running container is left running" {
    start_worker
    dk exec "$CTR" truncate -s 8M /opt/profiling/worker/sparse.bin
    before=$(runs)
    run ph collect --max-bytes 1MiB worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"\`profharness collect --max-bytes 2MiB worker\`"* ]]
    [ "$(runs)" = "$before" ]
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = running ]

    # restore collects first: over the limit it restores nothing.
    run ph restore --max-bytes 1MiB worker
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "$output" == *"over the limit \`max_bytes\`"* ]]
    [ "$(runs)" = "$before" ]
    [ -n "$(dk ps -aq --filter "name=^$CTR\$")" ]
    [ -z "$(dk ps -aq --filter "name=^$PH_TEST_PROJECT-worker-1\$")" ]
    run ph restore worker
    [ "$status" -eq 0 ]
    [ -f "$OUT/worker/latest/sparse.bin" ]
}

@test "a bad limit is a usage error before anything is touched" {
    start_worker
    run ph stop --max-bytes 12X worker
    [ "$status" -eq 2 ]
    [[ "$output" == *"--max-bytes: \`12X\` is not a size for \`max_bytes\`"* ]]
    run ph collect --max-entries 0 worker
    [ "$status" -eq 2 ]
    [[ "$output" == *"--max-entries: \`max_entries\` must be more than 0"* ]]
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = running ]
    run ph stop worker
    [ "$status" -eq 0 ]
}

# Issue 19: what the harness adds to a run counts against min_free too.
@test "a small disk: service.log over min_free stops the stop cleanly, the container kept, the hint's figure right" {
    [ "$(id -u)" -eq 0 ] || skip "a tmpfs needs root"
    small=$BATS_TEST_TMPDIR/small
    mkdir -p "$small"
    mount -t tmpfs -o size=5m tmpfs "$small"
    start_worker
    dk exec "$CTR" sh -c 'head -c 2000000 /dev/urandom > /opt/profiling/worker/blob.bin'
    # 4 MB of service output: what PID 1 prints is the container's log
    dk exec "$CTR" sh -c 'head -c 3000000 /dev/urandom | base64 > /proc/1/fd/1'
    run "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$PH_PROFILES" -o "$small" stop worker
    echo "$output"
    df "$small"
    [ "$status" -eq 1 ]
    [[ "$output" == *"error: "*"writing \`service.log\`"*"over the limit \`min_free\` of 256 KiB (the default)"* ]]
    [[ "$output" != *"not (all) kept"* ]]   # the limit, not a warning about the log
    [[ "$output" == *"hint: the container "*" is kept"* ]]
    [[ "$output" == *"--min-free 128KiB worker"* ]]
    # nothing left behind, the disk not full, the container kept
    [ -z "$(ls -A "$small/worker" | grep -v '^\.lock$' || true)" ]
    [ "$(df --output=avail -B1 "$small" | tail -1)" -gt $((4 << 20)) ]
    [ "$(dk inspect -f '{{.State.Status}}' "$CTR")" = exited ]
    umount "$small"
    run ph stop worker
    [ "$status" -eq 0 ]
}

@test "a profile edited between start and stop: the run is stopped and collected as it was started" {
    prof=$BATS_TEST_TMPDIR/profiles
    cp -r "$PH_PROFILES" "$prof"
    run "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$prof" -o "$OUT" start --mode strace worker
    [ "$status" -eq 0 ]
    run_id=$(dk inspect -f '{{index .Config.Labels "io.profharness.run"}}' "$CTR")
    # another artifact list and link, and no time to stop in
    sed -i -e 's/glob: "strace.log\*", latest: strace.log/glob: "nothing*", latest: edited.log/' \
        -e 's/^\(\s*\)grace: .*/\1grace: 0s/' "$prof/strace.yaml"
    grep -q 'nothing\*' "$prof/strace.yaml"
    run "$PH" -f "$DEMO_COMPOSE" -p "$PH_TEST_PROJECT" --profiles "$prof" -o "$OUT" stop worker
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"waiting up to 38 s"* ]]
    jq -e '.missing_artifacts == []' "$OUT/worker/$run_id/run.json"
    [ "$(readlink "$OUT/worker/strace.log")" = "$run_id/strace.log" ]
    [ ! -e "$OUT/worker/edited.log" ]
}
