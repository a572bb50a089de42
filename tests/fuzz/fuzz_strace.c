/* fuzz_strace.c - libFuzzer target for the strace log parser: any bytes
 * in two chunks, then every query the report makes. */
#include <stddef.h>
#include <stdint.h>

#include "ph_strace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_error_t err = NULL;
    ph_strace *st = ph_strace_new(&err);
    size_t cut = size > 0 ? data[0] % (size + 1) : 0;

    if (st == NULL)
        return 0;
    ph_strace_feed(st, (const char *)data, cut, &err);
    ph_strace_feed(st, (const char *)data + cut, size - cut, &err);
    ph_strace_finish(st, &err);
    ph_error_free(&err);
    for (size_t i = 0; i < ph_strace_n_syscalls(st); i++)
        (void)ph_strace_get_syscall(st, i).name[0];
    for (size_t i = 0; i < ph_strace_n_errnos(st); i++)
        (void)ph_strace_get_errno(st, i).name[0];
    for (size_t i = 0; i < ph_strace_n_threads(st); i++) {
        const ph_strace_thread *t = ph_strace_get_thread(st, i);
        int64_t o, w;
        (void)ph_strace_timeline(st, t->timeline, &o, &w);
    }
    for (size_t i = 0; i < ph_strace_n_slowest(st); i++)
        (void)ph_strace_get_slowest(st, i)->text[0];
    for (size_t i = 0; i < ph_strace_n_signals(st); i++)
        (void)ph_strace_get_signal(st, i).name[0];
    ph_strace_free(st);
    return 0;
}
