/* test_sampler_sig.c - the sampler's signals beside a runtime that takes
 * every signal for itself, as the Go runtime does at its start, after the
 * sampler's constructor (workload: tests/unit/helpers/sampler_gosig.c):
 * the sampler's timer signal gets its handler back from the writer
 * thread, the service's own signals of that number still reach the
 * handler that was replaced, the sampler's own never do, and its handler
 * runs on (and fits in) a 32 KiB alternate signal stack, Go's. */
#include "sampler_test_util.h"

#define GOSIG "build/tests/helpers/sampler_gosig"

static void
test_handler_replaced_after_start_still_samples(void **state)
{
    char *args[] = { "2", NULL }, out[400];
    run_opts o = { .hz = "150", .interval = "0", .prog = GOSIG, .out = out };
    const char *folded, *st;
    const char *handler;
    double in_hot, total;
    int status;

    (void)state;
    snprintf(out, sizeof out, "%s/stdout", test_dir);
    status = finish(start_opts(&o, args));
    print_message("# %s", read_text(out));
    handler = strstr(read_text(out), "the sampler's handler ");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("status 0x%x: %s", status, read_text(out));
    folded = newest("stacks-");
    if (folded == NULL) {
        st = status_of("/sampler_gosig");
        fail_msg("no snapshot; status: %s", st ? st : "(none)");
    }
    in_hot = samples_with(folded, ";go_hot", &total, NULL);
    print_message("# %.0f of %.0f samples in go_hot\n", in_hot, total);
    /* 2.5 CPU-s at 150 Hz: ~375, less what fell before the handler was
     * taken back (one writer tick) */
    assert_true(in_hot >= 150);
    /* Small beside any alternate stack (Rust's are 8 KiB, less the
     * kernel's frame): its stacks are not on it, and no symbol is bound
     * lazily in it (the binder saves the vector state there: ~3 KiB). */
    assert_non_null(handler);
    if (atoi(handler + strlen("the sampler's handler ")) > 2048)
        fail_msg("the handler took %s", handler);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_handler_replaced_after_start_still_samples, setup, tu_teardown),
    };
    if (getenv("PH_TEST_FILTER"))
        cmocka_set_test_filter(getenv("PH_TEST_FILTER"));
    return cmocka_run_group_tests_name("sampler_sig", tests, NULL, NULL);
}
