#!/usr/bin/env bats
# A remote Engine over TLS, as the docker CLI reaches it: a private dockerd
# with --tlsverify on 127.0.0.1 and certificates made here with openssl; the
# environment (DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, DOCKER_TLS) and Docker
# contexts made by the real `docker context create`.  The shared dockerd at
# /var/run/docker.sock is only read from (one image saved); the private one
# has its own data root, exec root, pid file, socket, containerd namespace,
# bridge and address pool, no iptables and no ip_forward changes (one
# FORWARD rule for its own subnets is added here and removed), and is
# stopped in teardown.  Never --bridge=none: dockerd then deletes the host's docker0
# (removeDefaultBridgeInterface), the shared Engine's default bridge.

load test_helper

# A free port on loopback: bind one, note it, let it go.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

make_certs() {
    local d=$1
    mkdir -p "$d/good" "$d/wrong" "$d/nocert" "$d/foreign"
    (
        cd "$d"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out good/ca.pem -days 2 \
            -subj "/CN=profharness test CA"
        openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj "/CN=localhost"
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > server.ext
        openssl x509 -req -in server.csr -CA good/ca.pem -CAkey ca-key.pem -CAcreateserial \
            -out server-cert.pem -days 2 -extfile server.ext
        openssl req -newkey rsa:2048 -nodes -keyout good/key.pem -out client.csr -subj "/CN=client"
        printf 'extendedKeyUsage=clientAuth\n' > client.ext
        openssl x509 -req -in client.csr -CA good/ca.pem -CAkey ca-key.pem -CAcreateserial \
            -out good/cert.pem -days 2 -extfile client.ext
        # A CA that signed nothing here, with the good client pair.
        openssl req -x509 -newkey rsa:2048 -nodes -keyout wrong/ca-key.pem -out wrong/ca.pem -days 2 \
            -subj "/CN=some other CA"
        cp good/cert.pem good/key.pem wrong/
        # The good CA, no client certificate.
        cp good/ca.pem nocert/
        # The good CA, a client certificate the Engine's CA did not sign.
        cp good/ca.pem foreign/
        cp wrong/ca.pem foreign/cert.pem
        cp wrong/ca-key.pem foreign/key.pem
    ) >/dev/null 2>&1
}

setup_file() {
    common_setup_file
    # Short: unix socket paths are limited to 108 bytes.
    export TLSD=$(mktemp -d /tmp/ph-tls.XXXXXX)
    export CERTS=$TLSD/certs
    make_certs "$CERTS"
    [ -s "$CERTS/good/cert.pem" ]
    [ -s "$CERTS/foreign/key.pem" ]
    export TLS_PORT=$(free_port)
    export PRIV_SOCK=$TLSD/docker.sock
    # A bridge of its own (IFNAMSIZ: 15 bytes), and networks from a pool,
    # on subnets the shared Engine's pools (172.17-31, 192.168) do not use:
    # an overlap would send the host's traffic for a published port to the
    # wrong bridge.
    export PRIV_BR=phtls$((TLS_PORT % 100000))
    ip link add name "$PRIV_BR" type bridge
    ip addr add "10.215.$((TLS_PORT % 250)).1/24" dev "$PRIV_BR"
    ip link set "$PRIV_BR" up
    # The host's FORWARD policy is DROP (the shared Engine's doing) and
    # bridged traffic passes through it, so containers of the private
    # Engine could not talk to each other: one rule for its subnets only,
    # removed in teardown.
    export PRIV_RULE="FORWARD -s 10.214.0.0/16 -d 10.214.0.0/16 -m comment --comment ph-tls-$TLS_PORT -j ACCEPT"
    iptables -w -I $PRIV_RULE
    setsid dockerd --tlsverify --tlscacert "$CERTS/good/ca.pem" --tlscert "$CERTS/server-cert.pem" \
        --tlskey "$CERTS/server-key.pem" -H "tcp://127.0.0.1:$TLS_PORT" -H "unix://$PRIV_SOCK" \
        --data-root "$TLSD/data" --exec-root "$TLSD/exec" --pidfile "$TLSD/docker.pid" \
        --bridge="$PRIV_BR" --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
        --default-address-pool "base=10.214.0.0/16,size=24" \
        --containerd-namespace "ph-tls-$$" --containerd-plugins-namespace "ph-tls-$$-plugins" \
        >"$TLSD/dockerd.log" 2>&1 </dev/null &
    export PRIV_DOCKERD=$!
    WAIT_SECONDS=90 wait_for timeout 10 docker -H "unix://$PRIV_SOCK" version >/dev/null 2>&1 || {
        tail -20 "$TLSD/dockerd.log" >&3
        return 1
    }
    # One image from the shared Engine, and a labelled container that only
    # the private Engine has: status shows it only when it talks there.
    dk save debian:bookworm-slim | timeout 300 docker -H "unix://$PRIV_SOCK" load >/dev/null
    timeout 60 docker -H "unix://$PRIV_SOCK" create --name ph-tls-one \
        --label io.profharness.project=phtls --label io.profharness.service=one \
        --label io.profharness.mode=none --label io.profharness.started=2026-01-01T00:00:00Z \
        debian:bookworm-slim true >/dev/null
    mkdir -p "$TLSD/proj"
    printf 'name: phtls\nservices:\n  one:\n    image: debian:bookworm-slim\n' > "$TLSD/proj/compose.yaml"
}

teardown_file() {
    if [ -n "${PRIV_DOCKERD:-}" ]; then
        kill "$PRIV_DOCKERD" 2>/dev/null || true
        WAIT_SECONDS=60 wait_for bash -c "! kill -0 $PRIV_DOCKERD 2>/dev/null" || kill -9 "$PRIV_DOCKERD" 2>/dev/null || true
    fi
    [ -z "${PRIV_BR:-}" ] || ip link del "$PRIV_BR" 2>/dev/null || true
    [ -z "${PRIV_RULE:-}" ] || iptables -w -D $PRIV_RULE 2>/dev/null || true
    # Whatever the daemon left mounted under its own roots, then its files.
    if [ -n "${TLSD:-}" ] && [ -d "$TLSD" ]; then
        grep -o " $TLSD/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
        rm -rf "$TLSD"
    fi
    common_teardown_file
}

# The harness on the little compose file, with the caller's environment.
phs() {
    timeout 120 "$PH" -f "$TLSD/proj/compose.yaml" -o "$TLSD/out" "$@"
}

@test "DOCKER_TLS_VERIFY with DOCKER_CERT_PATH reaches the TLS Engine" {
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$CERTS/good run phs status
    [ "$status" -eq 0 ]
    [[ "$output" =~ one\ +none\ +created\ +2026-01-01T00:00:00Z ]]
    # The shared Engine has no such container: it is the private one that answered.
    DOCKER_HOST= run phs status
    [ "$status" -eq 0 ]
    [[ "$output" =~ one\ +-\ +absent ]]
    # localhost is in the certificate too; no port means 2375 (docker's rule), so give it.
    DOCKER_HOST=tcp://localhost:$TLS_PORT DOCKER_TLS_VERIFY=yes DOCKER_CERT_PATH=$CERTS/good run phs status
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]]
}

@test "a wrong CA fails clearly, naming the CA file" {
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$CERTS/wrong run phs status
    [ "$status" -eq 1 ]
    [[ "$output" == *"is not trusted: its certificate does not verify against the CA \`$CERTS/wrong/ca.pem\`"* ]]
    [[ "$output" == *"hint: the TLS material is in DOCKER_CERT_PATH=$CERTS/wrong"* ]]
    # DOCKER_TLS alone is TLS without verification, as for docker: it works.
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS=1 DOCKER_CERT_PATH=$CERTS/wrong run phs status
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]]
}

@test "no client certificate, or one the Engine's CA did not sign, is refused by name" {
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$CERTS/nocert run phs status
    [ "$status" -eq 1 ]
    [[ "$output" == *"refused the TLS connection (it wants a client certificate, and none was sent)"* ]]
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$CERTS/foreign run phs status
    [ "$status" -eq 1 ]
    [[ "$output" == *"does not accept the client certificate \`$CERTS/foreign/cert.pem\`"* ]]
}

@test "plain HTTP to the TLS port says the Engine speaks TLS; a missing CA is bad input" {
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT run phs status
    [ "$status" -eq 1 ]
    [[ "$output" == *"Client sent an HTTP request to an HTTPS server"* ]]
    [[ "$output" == *"hint: that Engine speaks TLS: set DOCKER_TLS_VERIFY=1"* ]]
    DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$TLSD/none run phs status
    [ "$status" -eq 2 ]
    [[ "$output" == *"DOCKER_TLS_VERIFY is set, but there is no CA certificate \`$TLSD/none/ca.pem\`"* ]]
}

@test "a context made by docker context create: --context, DOCKER_CONTEXT, docker context use" {
    export DOCKER_CONFIG=$TLSD/dockercfg
    unset DOCKER_HOST DOCKER_CONTEXT
    dk context create phtls \
        --docker "host=tcp://127.0.0.1:$TLS_PORT,ca=$CERTS/good/ca.pem,cert=$CERTS/good/cert.pem,key=$CERTS/good/key.pem"
    # The docker CLI itself sees the container there: the context is right.
    run dk --context phtls ps -a --filter label=io.profharness.project=phtls --format '{{.Names}}'
    [ "$output" = ph-tls-one ]

    run phs --context phtls status
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]]
    # --context wins over DOCKER_HOST, as for docker.
    DOCKER_HOST=unix:///nonexistent.sock run phs --context phtls status
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]]
    DOCKER_CONTEXT=phtls run phs status
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]]
    # DOCKER_HOST wins over DOCKER_CONTEXT.
    DOCKER_HOST=unix:///var/run/docker.sock DOCKER_CONTEXT=phtls run phs status
    [[ "$output" =~ one\ +-\ +absent ]]
    # currentContext, written by `docker context use`.
    dk context use phtls
    run phs -v status
    [ "$status" -eq 0 ]
    [[ "$output" == *created* ]]
    [[ "$output" == *"engine: tcp://127.0.0.1:$TLS_PORT (context \`phtls\`, TLS), chosen by currentContext in $DOCKER_CONFIG/config.json"* ]]
    run phs --context default status
    [[ "$output" =~ one\ +-\ +absent ]]
    run phs --context nope status
    [ "$status" -eq 2 ]
    [[ "$output" == *"Docker context \`nope\` (--context) does not exist"* ]]
    [[ "$output" == *"docker context ls"* ]]
}

@test "a context without its client key is refused by the Engine, by name" {
    export DOCKER_CONFIG=$TLSD/dockercfg2
    dk context create halfway --docker "host=tcp://127.0.0.1:$TLS_PORT,ca=$CERTS/good/ca.pem"
    run phs --context halfway status
    [ "$status" -eq 1 ]
    [[ "$output" == *"context \`halfway\`, TLS) refused the TLS connection (it wants a client certificate"* ]]
    [[ "$output" == *"the TLS material of context \`halfway\` is in $DOCKER_CONFIG/contexts/tls/"* ]]
}

@test "a whole profiling run over TLS: start under strace, load, stop, artifacts" {
    # The images come from the shared Engine (setup builds what it lacks
    # there, where builds can reach Debian's mirror); the private one has
    # no way out, so they are carried over with docker save | docker load.
    run ph setup front
    [ "$status" -eq 0 ]
    imgs=$(setup_images front "$output")
    [ -n "$imgs" ]
    # shellcheck disable=SC2086
    timeout 600 docker save "$DEMO_IMAGE:latest" $imgs | timeout 600 docker -H "unix://$PRIV_SOCK" load >/dev/null

    export DOCKER_HOST=tcp://127.0.0.1:$TLS_PORT DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$CERTS/good
    run ph start --mode strace front
    [ "$status" -eq 0 ]
    drive_load 20
    run ph --timings stop front
    [ "$status" -eq 0 ]
    # Every Engine call went over TLS to the private Engine, and is timed.
    [[ "$output" == *"POST /containers/{id}/kill"* || "$output" == *"POST /containers/{id}/stop"* ]]
    [[ "$output" == *"GET /containers/{id}/archive"* ]]
    log="$OUT/front/strace.log"
    [ -s "$log" ]
    grep -qE 'accept4?\(' "$log"
    tail -n 1 "$log" | grep -q '+++ exited with 0 +++'
    jq -e '.exit_code == 0 and (.escalations | length) == 0' "$OUT/front/latest/ph-exit.json"
    # The containers are the private Engine's; the shared one has none.
    run timeout 60 docker -H "unix://$PRIV_SOCK" ps -a --filter "label=io.profharness.project=$PH_TEST_PROJECT" \
        --format '{{.Label "io.profharness.service"}} {{.State}}'
    [[ "$output" == *"worker running"* ]]
    [ -z "$(unset DOCKER_HOST DOCKER_TLS_VERIFY DOCKER_CERT_PATH; project_containers)" ]
    run ph stop worker
    ids=$(timeout 60 docker -H "unix://$PRIV_SOCK" ps -aq --filter "label=io.profharness.project=$PH_TEST_PROJECT")
    [ -z "$ids" ] || timeout 120 docker -H "unix://$PRIV_SOCK" rm -f $ids >/dev/null
}
