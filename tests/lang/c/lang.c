/* lang.c: the C service of the language test project (tests/lang/README).
 * Forever: hot_seventy_five does 3 units of work, cool_twenty_five 1, so
 * by work counts 75 % of the CPU is in the one and 25 % in the other.
 * noipa: neither is inlined, cloned nor folded into the other. */
#include <stdint.h>
#include <stdio.h>
#include <signal.h>

#define UNIT 2000000u

static volatile uint64_t sink;

__attribute__((noipa)) static uint64_t
hot_seventy_five(uint64_t x, unsigned units)
{
    for (uint64_t i = 0; i < (uint64_t)units * UNIT; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

__attribute__((noipa)) static uint64_t
cool_twenty_five(uint64_t x, unsigned units)
{
    for (uint64_t i = 0; i < (uint64_t)units * UNIT; i++)
        x = x * 2862933555777941757ull + 3037000493ull;
    return x;
}

int
main(void)
{
    uint64_t x = 1;

    setvbuf(stdout, NULL, _IOLBF, 0);
    for (unsigned long round = 1;; round++) {
        x = hot_seventy_five(x, 3);
        x = cool_twenty_five(x, 1);
        sink = x;
        if (round % 50 == 0)
            printf("lang: %lu rounds\n", round);
    }
}
