# The heap mode's Python workload (tests/unit/test_sampler_py.c): known
# shares of one object size kept by two functions, garbage from a third.
# keep_three keeps 3 N tuples of three items (64 bytes each on a 64-bit
# CPython, from its object allocator), keep_one N of them (in use: 75 %
# and 25 %), churn makes 8 N and drops them.  Then SIGTERM to itself:
# the sampler's last snapshot is taken there, before the interpreter
# frees everything on its way out.  `heap_two.py N serve` (the heap
# mode's Python service, tests/68-heap.bats) says it is ready instead and
# churns a little each second until it is stopped.
import os
import signal
import sys
import time

kept = []


def keep_three(n, x):
    for _ in range(3 * n):
        kept.append((x, x, x))


def keep_one(n, x):
    for _ in range(n):
        kept.append((x, x, x))


def churn(n, x):
    for _ in range(8 * n):
        t = (x, x, x)
    return t


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    # the writer hooks the allocator within a tick of the start
    time.sleep(0.6)
    keep_three(n, None)
    keep_one(n, None)
    churn(n, None)
    print("heap_two: kept", len(kept), flush=True)
    if len(sys.argv) > 2 and sys.argv[2] == "serve":
        print("heap_two: ready", flush=True)
        while True:
            churn(1000, None)
            time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)


main()
