// The Java service of the language test project (Debian's openjdk-17).
// A round is a call of its own (round()), so the two named methods are
// compiled as themselves; their loops hold the time.
public final class LangJava {
    static final long UNIT = 2_000_000L;
    static volatile long sink;

    static long hot_seventy_five(long x, long units) {
        for (long i = 0; i < units * UNIT; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static long cool_twenty_five(long x, long units) {
        for (long i = 0; i < units * UNIT; i++)
            x = x * 2862933555777941757L + 3037000493L;
        return x;
    }

    public static void main(String[] args) {
        long x = 1;
        for (long round = 1;; round++) {
            x = hot_seventy_five(x, 3);
            x = cool_twenty_five(x, 1);
            sink = x;
            if (round % 50 == 0)
                System.out.println("lang: " + round + " rounds");
        }
    }
}
