// The sampler's Java workload (tests/unit/test_sampler_java.c): rounds of
// hot_seventy_five (3 units of work) and cool_twenty_five (1 unit) until
// the main thread has used SECS of CPU time.  Each unit is one call of a
// small step method per iteration, so a JIT inlines them (mixHot into hot,
// mixCool into cool) and the interpreter (-Xint) runs both at one cost.
// A JIT need not: its code for the two loops may differ in cost, so the
// program measures the CPU time each took and prints the split at exit
// ("HotCool: hot NS cool NS"), the truth a sampler's shares are held to.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public final class HotCool {
    static volatile long sink;

    static long mixHot(long x) {
        return x * 6364136223846793005L + 1442695040888963407L;
    }

    static long mixCool(long x) {
        return x * 2862933555777941757L + 3037000493L;
    }

    static long hot_seventy_five(long x, long n) {
        for (long i = 0; i < 3 * n; i++)
            x = mixHot(x);
        return x;
    }

    static long cool_twenty_five(long x, long n) {
        for (long i = 0; i < n; i++)
            x = mixCool(x);
        return x;
    }

    public static void main(String[] args) {
        long n = Long.parseLong(args[0]);
        long end = (long) (Double.parseDouble(args[1]) * 1e9);
        ThreadMXBean t = ManagementFactory.getThreadMXBean();
        long x = 1, hot = 0, cool = 0, now = t.getCurrentThreadCpuTime();

        while (now < end) {
            long mid;

            x = hot_seventy_five(x, n);
            mid = t.getCurrentThreadCpuTime();
            hot += mid - now;
            x = cool_twenty_five(x, n);
            now = t.getCurrentThreadCpuTime();
            cool += now - mid;
            sink = x;
        }
        System.out.println("HotCool: hot " + hot + " cool " + cool);
    }
}
