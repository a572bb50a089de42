// The heap mode's Java workload (tests/unit/test_sampler_java.c): known
// shares of two classes from two methods, kept in use, and garbage from a
// third.  keepBytes keeps 24 MiB of byte[] and keepLongs 8 MiB of long[]
// (in use: 75 % and 25 %); churnObjects allocates 256 MiB of Object[]
// and drops it (allocated, not in use once collected).  Arrays of 1 KiB:
// far below the sampling interval, so the estimates are the sampler's,
// not a few whole objects'.  `HeapTwo SCALE serve` (the heap mode's
// Java service, tests/68-heap.bats) then says it is ready and churns
// 1 MiB a second until it is stopped.
import java.util.ArrayList;

public final class HeapTwo {
    static final ArrayList<Object> kept = new ArrayList<>();
    static volatile Object sink;

    static void keepBytes(int mib) {
        for (int i = 0; i < mib * 1024; i++)
            kept.add(new byte[1024 - 16]);
    }

    static void keepLongs(int mib) {
        for (int i = 0; i < mib * 1024; i++)
            kept.add(new long[(1024 - 16) / 8]);
    }

    static void churnObjects(int mib) {
        for (int i = 0; i < mib * 1024; i++)
            sink = new Object[(1024 - 16) / 4];
    }

    public static void main(String[] args) throws Exception {
        int scale = args.length > 0 ? Integer.parseInt(args[0]) : 1;

        keepBytes(24 * scale);
        keepLongs(8 * scale);
        churnObjects(256 * scale);
        sink = null;
        // collected now, so what is in use at the exit is what is kept
        System.gc();
        Thread.sleep(300);
        System.out.println("HeapTwo: kept " + kept.size() + ", "
                           + String.format("%.3f", java.lang.management.ManagementFactory.getThreadMXBean()
                                                       .getCurrentThreadCpuTime() / 1e9) + " CPU-s");
        if (args.length > 1 && args[1].equals("serve")) {
            System.out.println("HeapTwo: ready");
            for (;;) {
                churnObjects(1);
                Thread.sleep(1000);
            }
        }
    }
}
