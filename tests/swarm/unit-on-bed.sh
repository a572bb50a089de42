#!/usr/bin/env bash
# tests/swarm/unit-on-bed.sh: the Engine client's Swarm unit suite
# (build/tests/bed/test_engine_swarm) on a one-node bed of its own, made
# and removed around it: for the mutants of tests/mutants/swarm.txt and by
# hand.  Root; IMAGE (default $PH_TEST_SWARM_IMAGE, else
# profharness-demo:latest) must be on the shared Engine.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export SWARM_BED=${SWARM_BED:-phsunit$$}
source tests/swarm/bed.sh
img=${1:-${PH_TEST_SWARM_IMAGE:-profharness-demo:latest}}
trap 'bed_down >/dev/null 2>&1' EXIT
bed_down >/dev/null 2>&1
bed_up 1 >/dev/null || exit 1
bed_load "$img" || exit 1
DOCKER_HOST="unix://$(bed_sock 1)" PH_TEST_SWARM_IMAGE=$img PH_TEST_SWARM_NODE="$SWARM_BED-n1" \
    timeout 600 build/tests/bed/test_engine_swarm
