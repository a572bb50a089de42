#!/usr/bin/env bash
# check-rooms.sh: inside each harness/ directory, the files call each
# other one way.  A file "calls" another of its directory when it names a
# function (not static) that only that other file defines; a loop of such
# calls (a.c calls b.c, b.c calls a.c, or longer) is a file that is both a
# dispatcher and the home of the helpers what it dispatches to calls.  The
# cure is a move: the shared helpers down into a file of their own, the
# dispatcher on top (docs/internals.md lists each directory's files in
# that order where it has several layers).  Prints each loop, every file
# in it and the names that tie it, and exits 1 if there is one.  ROOT
# (default: this checkout) is the tree to check.
# harness/sampler/ is checked like the rest: what every part reads is
# ph_sampler_core.c's, below them all, and where a lower part must reach
# the sampler above it (the exec and _exit interposers, the symbolizer's
# Java frames) the top hands it a function at load.
set -u
root=${1:-"$(dirname "${BASH_SOURCE[0]}")/.."}
cd "$root" || exit 2
python3 - "$PWD" <<'PY'
import os, re, sys
root = sys.argv[1]
H = os.path.join(root, 'harness')
SKIP = set()
defn = re.compile(r'^([a-z_][a-z0-9_]*)\(')
word = re.compile(r'\b[a-z_][a-z0-9_]*\b')
comment = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
bad = 0
for d in sorted(os.listdir(H)):
    if d in SKIP or not os.path.isdir(os.path.join(H, d)):
        continue
    files = sorted(f for f in os.listdir(os.path.join(H, d)) if f.endswith('.c'))
    text, owner = {}, {}
    for f in files:
        with open(os.path.join(H, d, f), errors='replace') as fh:
            text[f] = fh.read()
        lines = text[f].split('\n')
        for i, line in enumerate(lines):
            m = defn.match(line)
            if m and i > 0 and 'static' not in lines[i - 1]:
                owner.setdefault(m.group(1), set()).add(f)
    owner = {n: next(iter(fs)) for n, fs in owner.items() if len(fs) == 1}
    calls = {f: {} for f in files}
    for f in files:
        for n in set(word.findall(comment.sub(' ', text[f]))):
            o = owner.get(n)
            if o is not None and o != f:
                calls[f].setdefault(o, []).append(n)
    # Tarjan's strongly connected components, iteratively.
    index, low, onstack, stack, loops, counter = {}, {}, set(), [], [], [0]
    for start in files:
        if start in index:
            continue
        work = [(start, iter(sorted(calls[start])))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); onstack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]; counter[0] += 1
                    stack.append(w); onstack.add(w)
                    work.append((w, iter(sorted(calls[w]))))
                elif w in onstack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); onstack.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    loops.append(sorted(comp))
    for comp in loops:
        bad = 1
        print(f'harness/{d}/: {len(comp)} files call each other in a loop: {", ".join(comp)}')
        for f in comp:
            for o in sorted(calls[f]):
                if o in comp:
                    print(f'  {f} -> {o}: {", ".join(sorted(calls[f][o]))}')
if bad:
    print('check-rooms: move the shared functions down into a file of their own (see the head of tests/check-rooms.sh)')
sys.exit(bad)
PY
