#!/usr/bin/env bash
# check-floors.sh: the floors of docs/architecture.md hold in the code.
# Each harness/ directory is described there ("- **run/** — ...
# Includes backend, image, ..."), and every project header a file of it
# reaches, directly or through other headers, is its own floor's or one
# the page says it includes (a header that pulls the Engine client into
# run/ is caught where it is included).  And the loop (harness/run/)
# talks to an orchestrator only through the backend: no Engine path or
# Engine JSON there, and none in compose/ either.  Prints each offender
# (FILE:LINE, the chain of includes) and exits 1 if there is one.  ROOT
# (default: this checkout) is the tree to check.
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
# record are the harness's own, in lower case).  Neither the loop nor the
# compose model builds it: a service's create body is the Engine
# backend's (ph_backend_engine_compose.c).
engine_keys='"(Id|Names|State|Status|Labels|Config|HostConfig|Entrypoint|Cmd|Env|Image|CapAdd|SecurityOpt|PidMode|NetworkMode|RestartPolicy|Mounts|Volumes|StopSignal|StopTimeout|OOMKilled|Titles|Processes|Created)"'
say "run/ reads or writes the Engine's JSON: that is the backend's" \
    "$(grep -nE "$engine_keys" harness/run/*.[ch])"
say "compose/ builds the Engine's JSON: that is the Engine backend's" \
    "$(grep -nE "$engine_keys" harness/compose/*.[ch])"
# Every floor's includes, through headers, against the page.
say "a floor reaches one docs/architecture.md does not give it (or the page lacks a floor)" \
    "$(python3 - "$PWD" <<'PY'
import os, re, sys
root = sys.argv[1]
H = os.path.join(root, 'harness')
dirs = sorted(d for d in os.listdir(H) if os.path.isdir(os.path.join(H, d)))
doc = open(os.path.join(root, 'docs/architecture.md')).read()
allowed, bad = {}, []
# "- **NAME/** — text" up to the next item or paragraph
for m in re.finditer(r'^- \*\*([a-z]+)/\*\* — (.*?)(?=^- \*\*|^\S|\Z)', doc, re.S | re.M):
    name, text = m.group(1), re.sub(r'\([^)]*\)', '', ' '.join(m.group(2).split()))
    if 'May include any floor' in text:
        allowed[name] = set(dirs)
    elif 'Includes no other floor' in text or 'libc only' in text:
        allowed[name] = set()
    else:
        s = re.search(r'(?:Includes|Built with a few files of) ([^.]*)\.', text)
        if s is None:
            bad.append(f'docs/architecture.md: `{name}/` does not say what it includes')
            continue
        allowed[name] = {w for w in re.split(r',\s*|\s+', s.group(1)) if w in dirs}
for d in dirs:
    if d not in allowed:
        bad.append(f'docs/architecture.md: harness/{d}/ is not described (its floor, what it includes)')
where = {}
for d in dirs:
    for f in os.listdir(os.path.join(H, d)):
        if f.endswith('.h'):
            where.setdefault(f, d)
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
cache = {}
def includes(path):
    if path not in cache:
        with open(path, errors='replace') as fh:
            cache[path] = [(m.group(1), n) for n, line in enumerate(fh, 1) for m in [inc.match(line)] if m]
    return cache[path]
for d in dirs:
    if d not in allowed:
        continue
    ok = allowed[d] | {d}
    for f in sorted(os.listdir(os.path.join(H, d))):
        if not f.endswith(('.c', '.h')):
            continue
        seen, todo = set(), [(os.path.join(H, d, f), [])]
        while todo:
            path, chain = todo.pop()
            for h, n in includes(path):
                hd = where.get(os.path.basename(h))
                if hd is None or h in seen:
                    continue
                seen.add(h)
                via = chain + [f'{os.path.relpath(path, root)}:{n}']
                if hd not in ok:
                    bad.append(f'harness/{d}/{f}: reaches {hd}/ ({h}) through {" -> ".join(via)}; '
                               f'{d}/ includes {", ".join(sorted(allowed[d])) or "no other floor"}')
                    continue
                todo.append((os.path.join(H, hd, os.path.basename(h)), via))
print('\n'.join(bad))
PY
)"
exit $bad
