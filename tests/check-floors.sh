#!/usr/bin/env bash
# check-floors.sh: the loop (harness/run/) talks to an orchestrator only
# through the backend (harness/backend/ph_backend.h): no Engine client, no
# Engine path, no Engine JSON there; and the floors below it never reach
# up into it.  Prints each offending line as FILE:LINE and exits 1 if
# there is one.  ROOT (default: this checkout) is the tree to check.
set -u
root=${1:-"$(dirname "${BASH_SOURCE[0]}")/.."}
cd "$root" || exit 2
bad=0
say() { [ -n "$2" ] && { printf '%s\n' "$2"; echo "check-floors: $1"; bad=1; }; }
# The Engine client and its paths.
say "run/ calls the Engine directly: go through the backend (ph_backend_ops)" \
    "$(grep -nE '#include "ph_engine|ph_engine_[a-z_]+\(|ph_engine \*|/containers/|/images/|/networks/|/volumes/' \
       harness/run/*.[ch])"
# The Engine's JSON: its keys (run.json, summary.json and the shim's
# record are the harness's own, in lower case).
say "run/ reads or writes the Engine's JSON: that is the backend's" \
    "$(grep -nE '"(Id|Names|State|Status|Labels|Config|HostConfig|Entrypoint|Cmd|Env|Image|CapAdd|SecurityOpt|PidMode|NetworkMode|RestartPolicy|Mounts|Volumes|StopSignal|StopTimeout|OOMKilled|Titles|Processes|Created)"' \
       harness/run/*.[ch])"
# Lower floors never include the loop.
say "a floor below run/ includes it" \
    "$(grep -nE '#include "ph_run' harness/backend/*.[ch] harness/image/*.[ch] harness/engine/*.[ch] \
       harness/compose/*.[ch] 2>/dev/null)"
exit $bad
