"""A Python program whose last 200 ms run a line of a function that ran
before only at other lines (tests/unit/test_sampler_py.c): once it ends,
the interpreter frees that function's code before the sampler's last
drain reads it, so the late line is named only from the code object as
an earlier drain kept it.  Argument: seconds of the first phase."""
import sys
import time


def work(first_s):
    x = 0
    end = time.monotonic() + first_s
    while time.monotonic() < end:
        for _ in range(1000):
            x = (x * 31 + 7) % 1000003  # the first phase
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        for _ in range(1000):
            x = (x * 37 + 11) % 999983  # the late line
    return x


work(float(sys.argv[1]) if len(sys.argv) > 1 else 1.5)
