/* timing_cost.c - what the timing layer costs (tests/bench/bench-timing.sh).
 *
 * 1. A stage begun and ended, not recording (the library outside a
 *    command) and recording (inside one), in ns per stage; and what the
 *    tables, folded file and trace cost per stage afterwards.
 * 2. An Engine call (GET /_ping, the cheapest there is: the worst case)
 *    with and without recording, in blocks that alternate so drift hits
 *    both alike; medians of the blocks' per-call times.
 * Prints figures; asserts nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ph_engine.h"
#include "ph_timing.h"
#include "ph_timing_out.h"

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
stages(int n)
{
    double t0 = now();

    for (int i = 0; i < n; i++)
        ph_stage_end(ph_stage_begin("engine", "GET /containers/{id}/json", 0));
    return (now() - t0) / n;
}

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000, blocks = argc > 2 ? atoi(argv[2]) : 15, per = 20;
    double off[64], on[64], post, t0;
    ph_error_t err = NULL;
    ph_engine *e;
    FILE *null = fopen("/dev/null", "w");

    if (blocks > 64)
        blocks = 64;
    printf("stage, not recording: %.1f ns\n", stages(n));
    /* A command has tens of stages, not thousands: time commands of 100
     * stages, recorded, written out every way, freed. */
    {
        double rec = 0, tab = 0, fold = 0, trace = 0, tree = 0;
        int cmds = n / 100;

        for (int c = 0; c < cmds; c++) {
            ph_timing_start("bench");
            rec += stages(100);
            ph_timing_finish(0, NULL);
            t0 = now();
            ph_timing_print(null, ph_timing_root(), 0, &err);
            tab += now() - t0;
            t0 = now();
            ph_timing_write_folded(null, ph_timing_root(), &err);
            fold += now() - t0;
            t0 = now();
            json_decref(ph_timing_trace_json(ph_timing_root()));
            trace += now() - t0;
            t0 = now();
            json_decref(ph_timing_tree_json(ph_timing_root()));
            tree += now() - t0;
            ph_timing_reset();
        }
        post = (tab + fold + trace + tree) / cmds / 100;
        printf("stage, recording:     %.1f ns\n", rec / cmds);
        printf("afterwards, per stage: tables %.0f ns, folded %.0f ns, trace %.0f ns, tree %.0f ns (%.0f ns in all)\n",
               tab / cmds / 100, fold / cmds / 100, trace / cmds / 100, tree / cmds / 100, post);
    }

    e = ph_engine_new(&err);
    if (e == NULL || ph_engine_ping(e, &err) < 0) {
        fprintf(stderr, "timing_cost: no Engine: %s\n", err ? err->msg : "?");
        return 1;
    }
    for (int b = 0; b < blocks; b++) {
        for (int rec = 0; rec < 2; rec++) {
            if (rec)
                ph_timing_start("bench");
            t0 = now();
            for (int i = 0; i < per; i++) {
                json_t *out = NULL; /* "OK" is no JSON: the answer is not asked for */

                if (ph_engine_request(e, "GET", "/_ping", NULL, NULL, NULL, &err) < 0) {
                    fprintf(stderr, "timing_cost: %s\n", err->msg);
                    return 1;
                }
                json_decref(out);
            }
            (rec ? on : off)[b] = (now() - t0) / per;
            if (rec) {
                ph_timing_finish(0, NULL);
                ph_timing_reset();
            }
        }
    }
    {
        double moff = median(off, blocks), mon = median(on, blocks);

        printf("GET /_ping, not recording: %.0f us (median of %d blocks of %d)\n", moff / 1e3, blocks, per);
        printf("GET /_ping, recording:     %.0f us\n", mon / 1e3);
        printf("difference: %+.1f us (%+.2f%%)\n", (mon - moff) / 1e3, 100 * (mon - moff) / moff);
    }
    ph_engine_free(e);
    fclose(null);
    return 0;
}
