# The Python services of the language test project (Debian's python3:
# 3.11 on bookworm, 3.13 on trixie, 3.9 on bullseye).
import sys

UNIT = 7919


def hot_seventy_five(x, units):
    for _ in range(units * UNIT):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def cool_twenty_five(x, units):
    for _ in range(units * UNIT):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
    return x


def main():
    x = 1
    rnd = 0
    while True:
        rnd += 1
        # rounds differ in length (the same for both functions within a
        # round), so a periodic timer cannot fall into step with them
        units = 1 + rnd * 7919 % 5
        x = hot_seventy_five(x, 3 * units)
        x = cool_twenty_five(x, units)
        if rnd % 50 == 0:
            print(f"lang: {rnd} rounds", flush=True)


main()
