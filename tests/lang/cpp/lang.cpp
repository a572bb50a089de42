// lang.cpp: the C++ service of the language test project.  The work is a
// function template whose step (a functor) is inlined into it; the two
// named entry points instantiate it with different steps, 3 units and 1.
#include <cstdint>
#include <cstdio>

namespace {

constexpr std::uint64_t UNIT = 2000000u;
volatile std::uint64_t sink;

template <std::uint64_t A, std::uint64_t C> struct lcg {
    inline std::uint64_t operator()(std::uint64_t x) const { return x * A + C; }
};

template <typename Step> inline std::uint64_t
spin(std::uint64_t x, unsigned units, Step step)
{
    for (std::uint64_t i = 0; i < units * UNIT; i++)
        x = step(x);
    return x;
}

} // namespace

__attribute__((noipa)) std::uint64_t
hot_seventy_five(std::uint64_t x, unsigned units)
{
    return spin(x, units, lcg<6364136223846793005ull, 1442695040888963407ull>{});
}

__attribute__((noipa)) std::uint64_t
cool_twenty_five(std::uint64_t x, unsigned units)
{
    return spin(x, units, lcg<2862933555777941757ull, 3037000493ull>{});
}

int
main()
{
    std::uint64_t x = 1;

    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    for (unsigned long round = 1;; round++) {
        x = hot_seventy_five(x, 3);
        x = cool_twenty_five(x, 1);
        sink = x;
        if (round % 50 == 0)
            std::printf("lang: %lu rounds\n", round);
    }
}
