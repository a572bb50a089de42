#!/usr/bin/env python3
"""gen_folded.py: synthetic folded stacks for the renderer's and the
collapser's benchmarks (tests/bench/bench-flamegraph-render.sh,
gen-perf-script.sh).

Prints N distinct stacks, one "root;f;g;... COUNT" line each, of depth
MIN..MAX over a vocabulary of V names.  A real profile is a tree: most
stacks share long prefixes with others (the same callers, a different
leaf), so each new stack starts from a prefix of one made before and
grows new frames from there; a few start afresh.  Names are drawn with a
heavy head (a few hot functions, a long tail), and counts the same way.
The same seed gives the same output.

  gen_folded.py [--stacks N] [--names V] [--min-depth A] [--max-depth B]
                [--seed S] [--perf-script FILE [--perf-max-repeat R]]

--perf-script FILE also writes the stacks as `perf script` text (leaf
first, one sample per stack, or up to R samples of its count), for the
collapse benchmark.
"""
import argparse
import random
import sys

AREAS = ("net", "db", "http", "json", "alloc", "sched", "io", "crypto", "cache", "rpc",
         "proto", "util", "log", "fs", "mm", "str", "hash", "tls", "zlib", "queue")
ROOTS = (("_start", "__libc_start_main", "main"),
         ("start_thread", "worker_main"),
         ("clone3", "start_thread", "io_loop"))


def vocabulary(n):
    """N names of varied shape and length: C, C++ templates, long ones."""
    out = []
    for i in range(n):
        area = AREAS[i % len(AREAS)]
        shape = i % 11
        if shape == 0:
            out.append("%s::Session<%s::Ctx%d>::handle_%d" % (area, area, i % 17, i))
        elif shape == 3:
            out.append("%s_%s_%d" % (area, "slow_path_" * (1 + i % 3), i))
        elif shape == 7:
            out.append("%s::detail::%s_%d(int, char const*)" % (area, area, i))
        else:
            out.append("%s_%d" % (area, i))
    return out


def hot_index(rnd, n):
    """Mostly the head of the vocabulary, sometimes anywhere."""
    if rnd.random() < 0.6:
        return min(n - 1, int(rnd.expovariate(1.0 / max(1.0, n / 40.0))))
    return rnd.randrange(n)


def main():
    ap = argparse.ArgumentParser(description="synthetic folded stacks")
    ap.add_argument("--stacks", type=int, default=200_000)
    ap.add_argument("--names", type=int, default=3000)
    ap.add_argument("--min-depth", type=int, default=10)
    ap.add_argument("--max-depth", type=int, default=40)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--perf-script", default=None)
    ap.add_argument("--perf-max-repeat", type=int, default=1)
    a = ap.parse_args()
    if a.stacks < 1 or a.names < 1 or not 1 <= a.min_depth <= a.max_depth:
        ap.error("need --stacks >= 1, --names >= 1 and 1 <= --min-depth <= --max-depth")

    rnd = random.Random(a.seed)
    names = vocabulary(a.names)
    made = []          # the stacks so far, as tuples of name indices
    seen = set()
    perf = open(a.perf_script, "w") if a.perf_script else None
    clock = 5000.0
    out = sys.stdout
    tries = 0
    while len(made) < a.stacks:
        tries += 1
        if tries > 50 * a.stacks:
            sys.exit("gen_folded: cannot make %d distinct stacks from %d names" % (a.stacks, a.names))
        depth = rnd.randint(a.min_depth, a.max_depth)
        if made and rnd.random() < 0.88:
            base = made[rnd.randrange(len(made))]
            frames = list(base[:rnd.randint(1, min(len(base), depth - 1 if depth > 1 else 1))])
        else:
            frames = []
        while len(frames) < depth:
            frames.append(hot_index(rnd, a.names))
        key = tuple(frames)
        if key in seen:
            continue
        seen.add(key)
        made.append(key)
        root = ROOTS[key[0] % len(ROOTS)]
        count = 1 + int(rnd.expovariate(0.7) ** 1.6)
        out.write(";".join(root + tuple(names[f] for f in key)) + " %d\n" % count)
        if perf is not None:
            for _ in range(min(count, a.perf_max_repeat)):
                clock += 0.0005
                perf.write("svc 4242/4243 [001] %.6f: 10101010 cpu-clock:pppH: \n" % clock)
                for f in reversed(key):
                    perf.write("\t    %x %s+0x%x (/usr/bin/svc)\n" % (0x400000 + f * 64 + rnd.randrange(64),
                                                                      names[f], rnd.randrange(2048)))
                for r in reversed(root):
                    perf.write("\t    7f00%08x %s+0x2a (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
                               % (rnd.getrandbits(32), r))
                perf.write("\n")
    if perf is not None:
        perf.close()


if __name__ == "__main__":
    main()
