#!/usr/bin/env bats
# The compose oracle: for a project using the keys that change how a
# container runs (tests/compose-oracle/compose.yaml; and a base file with
# an override, tests/compose-oracle/override/), the containers
# `profharness restore` creates and those docker-compose 1.29 creates (a
# real compose implementation, Debian's package) are compared field by
# field from the Engine's inspect output: Config, HostConfig, network
# endpoints, mounts (tests/compose-oracle/normalize.jq says what is evened
# out, and why).  Then a profiled container must keep all of it plus
# exactly the profile's additions, also for a read_only service.

load test_helper

ORACLE="$REPO/tests/compose-oracle"
DCP="$PH_TEST_PROJECT-oracle-dc"
PHP="$PH_TEST_PROJECT-oracle-ph"
# Ports and the fixed subnet from the test's own port, so two runs with
# their own ports do not collide; the subnet outside the Engine's default
# pools (172.17-31, 192.168), which the project's other network draws from.
export ORACLE_PORT=$DEMO_PORT
export ORACLE_PORT2=$((DEMO_PORT + 1))
export ORACLE_NET="10.213.$((DEMO_PORT % 250))"
export ORACLE_IMAGE="$PH_TEST_PROJECT-oracle-build"

dc() { timeout 300 docker-compose -f "$ORACLE/compose.yaml" -p "$DCP" "$@"; }
phx() { timeout 900 "$PH" -f "$ORACLE/compose.yaml" -p "$PHP" --profiles "$REPO/profiles" -o "$OUT" "$@"; }
# The base + override pair (tests/compose-oracle/override/), each tool.
OV="$ORACLE/override"
dco() { timeout 300 docker-compose -f "$OV/compose.yaml" -f "$OV/override.yaml" -p "$DCP-ov" "$@"; }
phxo() {
    timeout 900 "$PH" -f "$OV/compose.yaml" -f "$OV/override.yaml" -p "$PHP-ov" --profiles "$REPO/profiles" \
        -o "$OUT" "$@"
}
# phc ARGS...: the harness with only the profiles and output given.
phc() { timeout 120 "$PH" --profiles "$REPO/profiles" -o "$OUT" "$@"; }

# normalized PROJECT-LABEL PROJECT: every container of the project, as normalize.jq has them.
normalized() {
    local ids
    ids=$(dk ps -aq --filter "label=$1=$2")
    [ -n "$ids" ] || { echo "no containers with $1=$2" >&2; return 1; }
    dk inspect $ids | jq -S --arg project "$2" -f "$ORACLE/normalize.jq"
}

# remove_ph PROJECT: the containers, networks and volumes profharness made for it.
remove_ph() {
    local ids label="label=io.profharness.project=$1"
    ids=$(dk ps -aq --filter "$label" || true)
    [ -z "$ids" ] || dk rm -f -v $ids >/dev/null 2>&1 || true
    dk network ls -q --filter "$label" | xargs -r timeout 60 docker network rm >/dev/null 2>&1 || true
    dk volume ls -q --filter "$label" | xargs -r timeout 60 docker volume rm >/dev/null 2>&1 || true
}

remove_oracle() {
    dc down -v --remove-orphans >/dev/null 2>&1 || true
    dco down -v --remove-orphans >/dev/null 2>&1 || true
    remove_ph "$PHP-build"
    dk rmi -f "$ORACLE_IMAGE:staged" "$ORACLE_IMAGE:inline" >/dev/null 2>&1 || true
    remove_ph "$PHP"
    remove_ph "$PHP-ov"
}

setup_file() {
    export OUT=$BATS_FILE_TMPDIR/out
    mkdir -p "$OUT"
    command -v docker-compose >/dev/null || { echo "docker-compose (Debian's package) is missing: scripts/install-deps.sh" >&3; return 1; }
    remove_oracle
}

teardown_file() { remove_oracle; remove_project_networks; }

# First, while nothing else of this file publishes ORACLE_PORT/ORACLE_PORT2.
@test "oracle: -f base -f override merges as docker-compose 1.29 merges" {
    export ORACLE_INHERITED=from-shell
    unset ORACLE_UNSET
    dco up -d >&3 2>&1
    normalized com.docker.compose.project "$DCP-ov" > "$BATS_TEST_TMPDIR/compose.json"
    dco down -v >&3 2>&1
    run phxo restore
    echo "$output"
    [ "$status" -eq 0 ]
    normalized io.profharness.project "$PHP-ov" > "$BATS_TEST_TMPDIR/restore.json"
    remove_ph "$PHP-ov"
    # The comparison means something: each rule's result is there.
    jq -e '.app.HostConfig.PortBindings["80/udp"] | map(.HostPort) | sort
           == ([env.ORACLE_PORT, env.ORACLE_PORT2] | sort)' "$BATS_TEST_TMPDIR/restore.json"
    jq -e '.app.Config.Env as $e
           | ["KEEP=base", "REPLACED=override", "FILE_ONLY=file", "ORACLE_INHERITED=from-shell", "ORACLE_UNSET"]
           | all(. as $v | $e | index([$v]) != null)' "$BATS_TEST_TMPDIR/restore.json"
    jq -e '.app.Config.Env | map(select(startswith("ORACLE_UNSET="))) == []' "$BATS_TEST_TMPDIR/restore.json"
    jq -e '.app.Config.Labels == {"org.example.layer": "base", "org.example.extra": "1"}
           and .app.HostConfig.Dns == ["192.0.2.53", "192.0.2.54"]
           and .other.Config.User == "1000" and .other.Config.Cmd == ["sleep", "infinity"]' \
        "$BATS_TEST_TMPDIR/restore.json"
    run diff -u "$BATS_TEST_TMPDIR/compose.json" "$BATS_TEST_TMPDIR/restore.json"
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "oracle: restore creates what docker-compose 1.29 creates, field by field" {
    dc up -d >&3 2>&1
    normalized com.docker.compose.project "$DCP" > "$BATS_FILE_TMPDIR/compose.json"
    dc down -v >&3 2>&1
    run phx restore
    [ "$status" -eq 0 ]
    normalized io.profharness.project "$PHP" > "$BATS_FILE_TMPDIR/restore.json"
    # The comparison means something: the keys are there, in both.
    jq -e '.web.HostConfig.Ulimits | length == 2' "$BATS_FILE_TMPDIR/restore.json"
    jq -e '.web.Networks.PROJECT_front.IPAMConfig.IPv4Address | endswith(".10")' "$BATS_FILE_TMPDIR/restore.json"
    jq -e '.sidecar.HostConfig.NetworkMode == "container:<db>" and .sidecar.HostConfig.VolumesFrom == ["<web>:ro"]' \
        "$BATS_FILE_TMPDIR/restore.json"
    jq -e '[.web.Mounts[].Destination] == ["/anon", "/cache", "/data", "/data-rw", "/run/secrets/token"]' \
        "$BATS_FILE_TMPDIR/restore.json"
    run diff -u "$BATS_FILE_TMPDIR/compose.json" "$BATS_FILE_TMPDIR/restore.json"
    echo "$output"
    [ "$status" -eq 0 ]
}

# changed BEFORE AFTER SERVICE: the paths (as jq paths) where the service differs.
changed() {
    jq -n --slurpfile a "$1" --slurpfile b "$2" --arg s "$3" '
        ($a[0][$s]) as $x | ($b[0][$s]) as $y
        | [($x, $y) | paths(scalars)] | unique
        | map(. as $p | select(($x | getpath($p)) != ($y | getpath($p)))) | map(.[0:2] | join(".")) | unique'
}

@test "oracle: a profiled container keeps all of it, plus exactly the profile's additions" {
    [ -s "$BATS_FILE_TMPDIR/restore.json" ]
    run phx start --mode flamegraph web
    [ "$status" -eq 0 ]
    [[ "$output" == *"restart: unless-stopped"*"not restarted by the Engine"* ]]
    normalized io.profharness.project "$PHP" > "$BATS_FILE_TMPDIR/profiled.json"
    before="$BATS_FILE_TMPDIR/restore.json" after="$BATS_FILE_TMPDIR/profiled.json"
    changed "$before" "$after" web > "$BATS_FILE_TMPDIR/changed.json"
    cat "$BATS_FILE_TMPDIR/changed.json"
    # What a profile may change, and nothing else: the command (the shim and
    # the wrap before the service's own), the image (a profiling image, for
    # the modes the tools tree does not serve), the stop protocol, the
    # environment (the profile's), the restart policy, which the Engine
    # must not apply mid-run, and the mounts, by two added below.
    jq -e '. - ["Config.Cmd", "Config.Entrypoint", "Config.Env", "Config.Image", "Config.StopSignal",
                "Config.StopTimeout", "HostConfig.RestartPolicy"] | map(select(startswith("Mounts.") | not)) == []' \
        "$BATS_FILE_TMPDIR/changed.json"
    # The mounts: the service's all kept, plus the tools volume read-only
    # and an anonymous volume for the artifacts.
    jq -e -n --slurpfile a "$before" --slurpfile b "$after" '
        ($b[0].web.Mounts - $a[0].web.Mounts) as $new
        | ($a[0].web.Mounts - $b[0].web.Mounts) == []
        and ($new | map(.Destination) | sort) == ["/opt/profharness", "/opt/profiling"]
        and ([$new[] | select(.Destination == "/opt/profharness")][0]
             | .RW == false and .Type == "volume" and (.Name | startswith("profharness-tools-")))
        and ([$new[] | select(.Destination == "/opt/profiling")][0] | .RW == true and .Name == "anonymous")'
    # The environment: the service's, plus the profile's variables.  An
    # image with no PATH (debootstrap's) gets the Engine's default one in the
    # profiling image from its builder: what every container of it runs with
    # anyway, so not a difference in effect.
    jq -e -n --slurpfile a "$before" --slurpfile b "$after" '
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" as $default
        | ($b[0].web.Config.Env - $a[0].web.Config.Env
           | map(select(. != $default or ($a[0].web.Config.Env | any(startswith("PATH="))))) | map(split("=")[0]) | sort)
            == ["JAVA_TOOL_OPTIONS", "LD_PRELOAD", "NODE_OPTIONS", "PH_SAMPLER_DIR", "PH_SAMPLER_HZ", "PH_SAMPLER_INTERVAL",
                "PH_SAMPLER_TITLE", "PYTHONPERFSUPPORT"]
        and ($a[0].web.Config.Env - $b[0].web.Config.Env) == []'
    # The command: the shim, then what the service runs.
    jq -e -n --slurpfile a "$before" --slurpfile b "$after" '
        $b[0].web.Config.Entrypoint[0] == "/opt/profharness/bin/ph-init"
        and $b[0].web.Config.Entrypoint[-3:] == ($a[0].web.Config.Entrypoint + $a[0].web.Config.Cmd)'
    jq -e '.web.HostConfig.RestartPolicy.Name == "no"' "$after"
    run phx stop web
    [ "$status" -eq 0 ]
    [ -s "$OUT/web/latest/ph-exit.json" ]
}

@test "oracle: read_only service profiled; its artifacts still land, the extra volume goes with it" {
    run phx start --mode flamegraph db
    [ "$status" -eq 0 ]
    normalized io.profharness.project "$PHP" > "$BATS_FILE_TMPDIR/profiled-db.json"
    jq -e '.db.HostConfig.ReadonlyRootfs == true' "$BATS_FILE_TMPDIR/profiled-db.json"
    # What a read-only service gets: an anonymous volume for the artifacts,
    # beside the tools volume (read-only, as every mode the tree serves).
    jq -e -n --slurpfile a "$BATS_FILE_TMPDIR/restore.json" --slurpfile b "$BATS_FILE_TMPDIR/profiled-db.json" '
        ($b[0].db.Mounts - $a[0].db.Mounts | map(select(.Destination != "/opt/profharness")))
            == [{"Destination": "/opt/profiling", "Name": "anonymous", "Propagation": "", "RW": true,
                 "Source": null, "Type": "volume"}]
        and ([$b[0].db.Mounts[] | select(.Destination == "/opt/profharness")][0] | .RW == false)'
    vol=$(dk inspect "$PHP-db-flamegraph" --format '{{range .Mounts}}{{if eq .Destination "/opt/profiling"}}{{.Name}}{{end}}{{end}}')
    [ -n "$vol" ]
    run phx stop db
    [ "$status" -eq 0 ]
    [ -s "$OUT/db/latest/ph-exit.json" ]
    jq -e '.exit_code != null' "$OUT/db/latest/ph-exit.json"
    ! dk volume inspect "$vol" >/dev/null 2>&1 || false
}

@test "oracle: build sends target, args, labels and dockerfile_inline to the Engine's builder" {
    # restore builds a missing image, then runs it (the container exits at once)
    run timeout 900 "$PH" -f "$ORACLE/builder/compose.yaml" -p "$PHP-build" --profiles "$REPO/profiles" -o "$OUT" \
        restore staged inline
    [ "$status" -eq 0 ]
    # target: the first stage, with its build arg
    [ "$(dk run --rm "$ORACLE_IMAGE:staged" cat /stage)" = "first hello" ]
    [ "$(dk image inspect -f '{{index .Config.Labels "org.example.built-by"}}' "$ORACLE_IMAGE:staged")" = profharness ]
    [ "$(dk run --rm "$ORACLE_IMAGE:inline" cat /stage)" = "inline" ]
}

@test "oracle: the command line names files, profiles and projects as docker compose does" {
    local dir=$BATS_TEST_TMPDIR/cli
    mkdir -p "$dir/sub"
    printf 'services:\n  a:\n    image: debian:bookworm-slim\n  dbg:\n    image: debian:bookworm-slim\n    profiles: [debug]\n' > "$dir/docker-compose.yml"
    printf 'services:\n  b:\n    image: debian:bookworm-slim\n' > "$dir/extra.yaml"
    # -f repeated: merged in order; status lists every service
    run phc -f "$dir/docker-compose.yml" -f "$dir/extra.yaml" -p "$PHP-cli" status
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\na '*$'\nb '* ]]
    # no -f: docker-compose.yml found from a sub-folder (status only reads)
    cd "$dir/sub"
    run phc -p "$PHP-cli" status
    cd "$REPO"
    [ "$status" -eq 0 ]
    [[ "$output" == *$'\na '*$'\ndbg '* ]]
    # a project name compose would refuse is refused, not rewritten
    run phc -f "$dir/docker-compose.yml" -p 'My Proj!' status
    [ "$status" -eq 2 ]
    [[ "$output" == *"-p \`My Proj!\` is not a valid project name"* ]]
    # a folder without a compose file: said, with the way out
    mkdir -p "$BATS_TEST_TMPDIR/empty"
    cd "$BATS_TEST_TMPDIR/empty"
    run phc status
    cd "$REPO"
    [ "$status" -eq 2 ]
    [[ "$output" == *"no compose file in"*"-f FILE"* ]]
}
