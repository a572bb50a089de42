// The sampler's off-CPU Java workload (tests/unit/test_sampler_java.c):
// the main thread sleeps in short naps for SECS seconds of wall-clock
// time, inside waits_in_sleep, so the wall clock's samples of it are off
// CPU, blocked in Thread.sleep.
public final class Sleeper {
    static void waits_in_sleep(long until) throws InterruptedException {
        while (System.nanoTime() < until)
            Thread.sleep(20);
    }

    public static void main(String[] args) throws InterruptedException {
        waits_in_sleep(System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9));
    }
}
