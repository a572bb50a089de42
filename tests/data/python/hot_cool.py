"""A CPU-bound Python workload for the sampler's Python frames
(tests/unit/test_sampler_py.c, tests/42-flamegraph-python.bats).

hot_seventy_five does three times the iterations of cool_twenty_five, the
same loop body, so by iteration counts they take 75 % and 25 % of the
CPU.  Rounds differ in length (the same for both functions within a
round), so a periodic timer cannot fall into step with them; the cool
one is called through C (map), a second eval loop below the first.
Argument: rounds (0: until SIGTERM)."""
import sys


def spin(n):
    x = 0
    for _ in range(n):
        x = (x * 31 + 7) % 1000003  # one-digit ints: each step costs the same
    return x


def hot_seventy_five(n):
    return spin(3 * n)


def cool_twenty_five(n):
    return spin(n)


def main(rounds):
    done = 0
    total = 0
    while rounds == 0 or done < rounds:
        n = 15000 + done * 7919 % 10007
        total += hot_seventy_five(n)
        total += sum(map(cool_twenty_five, (n,)))
        done += 1
        if done % 50 == 0:
            print("hot_cool: %d rounds" % done, flush=True)
    print("hot_cool: done, %d" % total, flush=True)


main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
