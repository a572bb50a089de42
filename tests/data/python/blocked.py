"""A Python workload that is off CPU nearly all the time, for the wall
clock's Python frames (tests/unit/test_sampler_py.c): one thread blocks in
time.sleep, one in select.select on a pipe nobody writes, and the main
thread waits for them in join.  Each thread blocks from its first line,
so the sampler never sees it run Python code holding the GIL first.
Argument: seconds to run."""
import os
import select
import sys
import threading
import time


def waits_in_sleep(until):
    while time.monotonic() < until:
        time.sleep(0.05)


def waits_in_select(until):
    r, _ = os.pipe()
    while time.monotonic() < until:
        select.select([r], [], [], 0.05)


def main(seconds):
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=f, args=(until,)) for f in (waits_in_sleep, waits_in_select)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2)
