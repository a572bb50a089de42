#!/usr/bin/env python3
"""flame_compare.py: render folded inputs with flamegraph.pl and with
`profharness flamegraph`, and compare the frames each draws.

A frame is (depth, name, samples), depth counted from the root, samples as
the tooltip prints them (flamegraph.pl rounds them to integers, so they
agree within 0.5); frames at one depth are compared in left-to-right order,
so merging, pruning and sibling order all count.  Colours, pixels and text layout do
not.

usage: flame_compare.py [-v] [--opts "ARGS"] FLAMEGRAPH_PL PROFHARNESS FILE...
Prints one line per input that differs (with -v: the first difference),
then "agree N of M".  Exit status 0 when all agree, 1 otherwise.
"""
import html
import re
import subprocess
import sys

FRAME = re.compile(r'<title>(.*?)</title>\s*<rect x="([-\d.]+)" y="([-\d.]+)" width="([-\d.]+)"', re.S)


def frames(svg):
    """{depth: [(name, samples), ...] left to right}, or None without frames."""
    found = []
    for title, x, y, w in FRAME.findall(svg):
        title = html.unescape(title)
        name, _, info = title.rpartition(' (')
        m = re.match(r'([\d,]+(?:\.\d+)?) ', info)
        if not m:
            continue
        samples = float(m.group(1).replace(',', ''))
        found.append((float(y), float(x), name, samples))
    if not found:
        return None
    base = max(f[0] for f in found)
    out = {}
    for y, x, name, samples in sorted(found, key=lambda f: (f[0], f[1])):
        out.setdefault(round((base - y) / 16), []).append((name, samples))
    return out


def same(fa, fb):
    return fa is not None and fb is not None and fa[0] == fb[0] and abs(fa[1] - fb[1]) <= 0.5 + 1e-6


def first_difference(a, b):
    for d in sorted(set(a) | set(b)):
        la, lb = a.get(d, []), b.get(d, [])
        for i in range(max(len(la), len(lb))):
            fa = la[i] if i < len(la) else None
            fb = lb[i] if i < len(lb) else None
            if not same(fa, fb):
                return f'depth {d}, frame {i}: flamegraph.pl {fa}, profharness {fb}'
    return None


def main(argv):
    verbose = False
    opts = []
    while argv and argv[0].startswith('-'):
        if argv[0] == '-v':
            verbose = True
            argv = argv[1:]
        elif argv[0] == '--opts':
            opts = argv[1].split()
            argv = argv[2:]
        else:
            break
    pl, ph, inputs = argv[0], argv[1], argv[2:]
    agree = 0
    for path in inputs:
        ref = subprocess.run(['perl', pl] + opts + [path], capture_output=True, text=True, errors='replace')
        ours = subprocess.run([ph, 'flamegraph'] + opts + [path], capture_output=True, text=True, errors='replace')
        fa, fb = frames(ref.stdout), frames(ours.stdout)
        if fa is None and fb is None and ref.returncode == 2 and ours.returncode == 2:
            agree += 1
            continue
        if fa is not None and fb is not None and first_difference(fa, fb) is None:
            agree += 1
            continue
        why = first_difference(fa or {}, fb or {}) if fa and fb else \
            f'flamegraph.pl exit {ref.returncode} ({"frames" if fa else "no frames"}), ' \
            f'profharness exit {ours.returncode} ({"frames" if fb else "no frames"})'
        print(f'differ: {path}' + (f': {why}' if verbose else ''))
    print(f'agree {agree} of {len(inputs)}')
    return 0 if agree == len(inputs) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
