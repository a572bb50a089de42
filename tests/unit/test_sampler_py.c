/* test_sampler_py.c - CPython's own frames in the sampler's stacks
 * (harness/sampler/ph_sampler_py.c): Debian's python3.11 running
 * tests/data/python/hot_cool.py, whose hot_seventy_five does three times
 * the iterations of cool_twenty_five, is shown by its Python functions
 * with those shares; a program that looks like a CPython of a version
 * without a layout gets no Python frames and a status that says why; and
 * the 3.11 layout is CPython 3.11's own, checked with offsetof against
 * its internal headers (python3.11-dev) when they are installed.  Fake
 * CPythons 3.8, 3.10 and 3.12, laid out as those versions lay their
 * structs out (helpers/fakepy_layouts.h), are named with their own line
 * tables' lines; a 3.7 is not read and says so.  The library asks for no
 * glibc symbol version after 2.28, so it loads into the older images
 * Python 3.8 to 3.10 services run on (bullseye's 3.9: tests/66).
 *
 * Shares are by iteration counts and CPU-time sampling: a loaded machine
 * stretches the run but does not move them. */
#ifdef PH_HAVE_PY311_HEADERS
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_runtime.h>
#endif

#include "sampler_test_util.h"

#include "ph_sampler_pylayout.h"
#include "helpers/fakepy_layouts.h"

#include <elf.h>
#include <math.h>

#define PYTHON "/usr/bin/python3.11"
#define SCRIPT "tests/data/python/hot_cool.py"
#define FAKEPY "build/tests/helpers/sampler_fakepy"
#define FAKEPY313 "build/tests/helpers/sampler_fakepy313"
#define FAKEPY_DIR "build/tests/helpers/"

/* The row of 3.MINOR, or NULL. */
static const phs_py_layout *
row(unsigned minor)
{
    for (size_t i = 0; i < sizeof phs_py_layouts / sizeof *phs_py_layouts; i++)
        if (phs_py_layouts[i].minor == minor)
            return &phs_py_layouts[i];
    return NULL;
}

/* The 3.11 row is what CPython 3.11's headers say. */
static void
test_layout_311(void **state)
{
#ifdef PH_HAVE_PY311_HEADERS
    const phs_py_layout *L = row(11);

    (void)state;
    assert_int_equal(PY_MAJOR_VERSION * 100 + PY_MINOR_VERSION, 311);
    assert_int_equal(L->minor, 11);
    assert_int_equal(L->rt_tstate_current, offsetof(_PyRuntimeState, gilstate.tstate_current));
    assert_int_equal(L->rt_interp, offsetof(_PyRuntimeState, interpreters.main));
    assert_int_equal(L->is_threads_head, offsetof(PyInterpreterState, threads.head));
    assert_int_equal(L->ts_next, offsetof(PyThreadState, next));
    assert_int_equal(L->ts_thread_id, offsetof(PyThreadState, thread_id));
    assert_int_equal(L->ts_cframe, offsetof(PyThreadState, cframe));
    assert_int_equal(L->cf_current_frame, offsetof(_PyCFrame, current_frame));
    assert_int_equal(L->fr_code, offsetof(_PyInterpreterFrame, f_code));
    assert_int_equal(L->fr_previous, offsetof(_PyInterpreterFrame, previous));
    assert_int_equal(L->fr_prev_instr, offsetof(_PyInterpreterFrame, prev_instr));
    assert_int_equal(L->fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
    assert_int_equal(L->fr_owner, offsetof(_PyInterpreterFrame, owner));
    assert_int_equal(L->co_filename, offsetof(PyCodeObject, co_filename));
    assert_int_equal(L->co_qualname, offsetof(PyCodeObject, co_qualname));
    assert_int_equal(L->co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    assert_int_equal(L->co_linetable, offsetof(PyCodeObject, co_linetable));
    assert_int_equal(L->co_code, offsetof(PyCodeObject, co_code_adaptive));
    assert_int_equal(PHS_PY_OB_TYPE, offsetof(PyObject, ob_type));
    assert_int_equal(L->u_length, offsetof(PyASCIIObject, length));
    assert_int_equal(L->u_state, offsetof(PyASCIIObject, state));
    assert_int_equal(L->u_ascii_data, sizeof(PyASCIIObject));
    assert_int_equal(L->u_compact_data, sizeof(PyCompactUnicodeObject));
    assert_int_equal(L->b_size, offsetof(PyVarObject, ob_size));
    assert_int_equal(L->b_data, offsetof(PyBytesObject, ob_sval));
    assert_int_equal(sizeof(((_PyInterpreterFrame *)0)->is_entry), 1);
    assert_int_equal(sizeof(((PyCodeObject *)0)->co_firstlineno), 4);
#else
    (void)state;
    skip(); /* no python3.11-dev headers here */
#endif
}

/* The 3.8, 3.9, 3.10 and 3.12 rows are where the compiler puts the fields
 * of those versions' declarations (helpers/fakepy_layouts.h). */
static void
test_layout_rows(void **state)
{
    const phs_py_layout *L;

    (void)state;
    for (unsigned minor = 8; minor <= 10; minor++) {
        assert_non_null(L = row(minor));
        assert_int_equal(L->rt_tstate_current, minor == 8 ? offsetof(struct fruntime38, gilstate.tstate_current)
                                                          : offsetof(struct fruntime310, gilstate.tstate_current));
        assert_int_equal(L->ts_cframe, PHS_PY_NO_FIELD);
        assert_int_equal(L->rt_interp, minor == 8 ? offsetof(struct fruntime38, interpreters.main)
                                                  : offsetof(struct fruntime310, interpreters.main));
        assert_int_equal(L->is_threads_head, sizeof(void *)); /* struct _is: next, tstate_head */
        assert_int_equal(L->ts_next, minor == 10 ? offsetof(struct fts310, next) : offsetof(struct fts38, next));
        assert_int_equal(L->cf_current_frame, minor == 10 ? offsetof(struct fts310, frame) : offsetof(struct fts38, frame));
        assert_int_equal(L->ts_thread_id, minor == 10 ? offsetof(struct fts310, thread_id) : offsetof(struct fts38, thread_id));
        assert_int_equal(L->fr_code, minor == 10 ? offsetof(struct fframe310, f_code) : offsetof(struct fframe38, f_code));
        assert_int_equal(L->fr_previous, minor == 10 ? offsetof(struct fframe310, f_back) : offsetof(struct fframe38, f_back));
        assert_int_equal(L->fr_prev_instr, minor == 10 ? offsetof(struct fframe310, f_lasti) : offsetof(struct fframe38, f_lasti));
        assert_int_equal(L->frame_size, minor == 10 ? sizeof(struct fframe310) : sizeof(struct fframe38));
        assert_int_equal(L->co_firstlineno, offsetof(struct fcode38, co_firstlineno));
        assert_int_equal(L->co_filename, offsetof(struct fcode38, co_filename));
        assert_int_equal(L->co_qualname, offsetof(struct fcode38, co_name)); /* no qualified name before 3.11 */
        assert_int_equal(L->co_linetable, offsetof(struct fcode38, co_lnotab));
        assert_int_equal(L->co_code, sizeof(struct fcode38));
        assert_int_equal(L->code_size, sizeof(struct fcode38));
        assert_int_equal(L->u_length, offsetof(struct fstr38, length));
        assert_int_equal(L->u_state, offsetof(struct fstr38, state));
        assert_int_equal(L->u_ascii_data, offsetof(struct fstr38, data));
        assert_int_equal(L->u_compact_data, offsetof(struct fstr38, data) + 24);
        assert_int_equal(L->b_size, offsetof(struct fbytes, ob.size));
        assert_int_equal(L->b_data, offsetof(struct fbytes, ob_sval));
    }
    assert_non_null(L = row(12));
    assert_int_equal(L->rt_interp_head, offsetof(struct fruntime312, interpreters.main));
    assert_int_equal(L->rt_interp, offsetof(struct fruntime312, interpreters.main));
    assert_int_equal(L->is_threads_head, offsetof(struct finterp312, threads.head));
    assert_int_equal(L->ts_next, offsetof(struct fts312, next));
    assert_int_equal(L->is_gil, offsetof(struct finterp312, ceval.gil));
    assert_int_equal(L->is_gil_locked, offsetof(struct fgil, locked));
    assert_int_equal(L->is_gil_holder, offsetof(struct fgil, last_holder));
    assert_int_equal(L->ts_cframe, offsetof(struct fts312, cframe));
    assert_int_equal(L->cf_current_frame, offsetof(struct fcframe312, current_frame));
    assert_int_equal(L->ts_thread_id, offsetof(struct fts312, thread_id));
    assert_int_equal(L->fr_code, offsetof(struct fframe312, f_code));
    assert_int_equal(L->fr_previous, offsetof(struct fframe312, previous));
    assert_int_equal(L->fr_prev_instr, offsetof(struct fframe312, prev_instr));
    assert_int_equal(L->fr_owner, offsetof(struct fframe312, owner));
    assert_int_equal(L->co_firstlineno, offsetof(struct fcode312, co_firstlineno));
    assert_int_equal(L->co_filename, offsetof(struct fcode312, co_filename));
    assert_int_equal(L->co_qualname, offsetof(struct fcode312, co_qualname));
    assert_int_equal(L->co_linetable, offsetof(struct fcode312, co_linetable));
    assert_int_equal(L->co_code, offsetof(struct fcode312, co_code_adaptive));
    assert_int_equal(L->code_size, offsetof(struct fcode312, co_code_adaptive));
    assert_int_equal(L->u_length, offsetof(struct fstr312, a.length));
    assert_int_equal(L->u_state, offsetof(struct fstr312, a.state));
    assert_int_equal(L->u_ascii_data, offsetof(struct fstr312, data));
    assert_int_equal(L->u_compact_data, offsetof(struct fstr312, data) + 16);
    assert_null(row(7));
    assert_null(row(14));
}

/* The newest glibc version the preloaded library needs (its
 * .gnu.version_r: GLIBC_2.X, X), the versions' names into NAMES. */
static int
newest_glibc(const char *path, char *names, size_t cap)
{
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    long n;
    int newest = -1;
    const Elf64_Ehdr *eh;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    assert_true(n > (long)sizeof *eh);
    assert_non_null(b = malloc((size_t)n));
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    eh = (const Elf64_Ehdr *)(const void *)b;
    assert_int_equal(memcmp(eh->e_ident, ELFMAG, SELFMAG), 0);
    assert_true(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= (uint64_t)n);
    names[0] = '\0';
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(const void *)(b + eh->e_shoff) + i;
        const Elf64_Shdr *str = (const Elf64_Shdr *)(const void *)(b + eh->e_shoff) + sh->sh_link;
        uint64_t at = sh->sh_offset;

        if (sh->sh_type != SHT_GNU_verneed)
            continue;
        for (unsigned k = 0; k < sh->sh_info; k++) {
            const Elf64_Verneed *vn = (const Elf64_Verneed *)(const void *)(b + at);
            uint64_t aux = at + vn->vn_aux;

            for (unsigned j = 0; j < vn->vn_cnt; j++) {
                const Elf64_Vernaux *va = (const Elf64_Vernaux *)(const void *)(b + aux);
                const char *name = (const char *)b + str->sh_offset + va->vna_name;
                int major = 0, minor = 0;

                if (sscanf(name, "GLIBC_%d.%d", &major, &minor) == 2 && major == 2 && minor > newest)
                    newest = minor;
                snprintf(names + strlen(names), cap - strlen(names), " %s", name);
                aux += va->vna_next;
            }
            at += vn->vn_next;
        }
    }
    free(b);
    return newest;
}

/* Older images than ours load the sampler: glibc 2.32 to 2.34 moved
 * functions into libc under new versions, and 2.33 made stat a function;
 * a library asking for those is refused by an older loader, and the
 * service with it (bullseye, 2.31: "version `GLIBC_2.33' not found",
 * the service exits 1).  ph_sampler_glibc.h binds the old versions. */
static void
test_glibc_floor(void **state)
{
    char names[4096];
    int newest;

    (void)state;
    newest = newest_glibc("build/libphsampler.so", names, sizeof names);
    print_message("# libphsampler.so needs:%s\n", names);
    assert_true(newest >= 0);
    assert_true(newest <= 28);
}

/* The counts of FOLDED's lines holding A, then B, then C, in that order. */
static double
in_order(const char *folded, const char *a, const char *b, const char *c)
{
    double n = 0;

    for (const char *p = folded; *p;) {
        const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p);
        char *line = strndup(p, (size_t)(end - p)), *x, *y, *z;

        if ((x = strstr(line, a)) && (y = strstr(x, b)) && (z = strstr(y, c)) && strrchr(line, ' '))
            n += atof(strrchr(line, ' ') + 1);
        free(line);
        p = nl ? nl + 1 : end;
    }
    return n;
}

static pid_t
run(const char *prog, const char *hz, char *const args[])
{
    static char out[400];
    run_opts o = { .hz = hz, .interval = "0", .prog = prog, .out = out };

    snprintf(out, sizeof out, "%s/output", test_dir);
    return start_opts(&o, args);
}

/* Debian's python3.11: the Python functions by name, file and line, in
 * place of the eval loop's frames, with the workload's shares. */
static void
test_hot_cool_shares(void **state)
{
    char *args[] = { SCRIPT, "1500", NULL };
    const char *folded, *st, *pp;
    double total, hot, cool, eval;
    int status;

    (void)state;
    if (access(PYTHON, X_OK) != 0)
        skip();
    status = finish(run(PYTHON, "250", args));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    st = status_of("python3.11");
    assert_non_null(st);
    assert_non_null(strstr(st, "\"python\": \"Python 3.11."));
    assert_non_null(strstr(st, ": frames read\""));
    folded = newest("stacks-");
    assert_non_null(folded);
    hot = samples_with(folded, ";main (hot_cool.py:33)_[p];hot_seventy_five (hot_cool.py:21)_[p];spin (hot_cool.py:", &total, NULL);
    cool = samples_with(folded, ";cool_twenty_five (hot_cool.py:25)_[p];spin (hot_cool.py:", NULL, NULL);
    eval = samples_with(folded, "_PyEval_EvalFrameDefault", NULL, NULL);
    print_message("# %.0f samples: hot_seventy_five %.1f %%, cool_twenty_five %.1f %%, eval loop left %.1f %%\n",
                  total, 100 * hot / total, 100 * cool / total, 100 * eval / total);
    assert_true(total >= 300);
    assert_true(fabs(100 * hot / total - 75) <= 5);
    assert_true(fabs(100 * cool / total - 25) <= 5);
    /* the eval loop's frames are replaced, not kept beside them */
    assert_true(eval / total < 0.05);
    /* the outer frames too, the module's own code first */
    assert_non_null(strstr(folded, ";<module> (hot_cool.py:41)_[p];main (hot_cool.py:"));
    /* cool_twenty_five runs in a second eval loop, called by map (C):
     * each loop's frames take its place, the C frames between stay */
    assert_true(in_order(folded, ";main (hot_cool.py:34)_[p];", ";_PyFunction_Vectorcall;",
                         ";cool_twenty_five (hot_cool.py:25)_[p];spin (hot_cool.py:") / cool > 0.9);
    /* pprof: Python functions with their file (as Python has it: the
     * main script's path made absolute) */
    pp = decoded_pprof();
    assert_non_null(strstr(pp, "\"hot_seventy_five\""));
    assert_non_null(strstr(pp, "/" SCRIPT "\""));
    assert_non_null(strstr(pprof_text(), SCRIPT ":hot_seventy_five"));
    assert_non_null(strstr(newest("flamegraph-"), "Python 3.11."));
}

/* Debian's python3.11 running ARGS to its end at 250 Hz: its newest
 * folded stacks, *TOTAL samples, *FREED of them with a frame whose code
 * was gone before it was named. */
static const char *
run_to_end(char *args[], double *total, double *freed)
{
    const char *folded;
    int status = finish(run(PYTHON, "250", args));

    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    folded = newest("stacks-");
    assert_non_null(folded);
    *freed = samples_with(folded, "[python: code freed]", total, NULL);
    return folded;
}

/* A program that ends within the writer's tick (250 ms): its code
 * objects are freed as the interpreter finalizes, before the exit's
 * drain would name them.  Each sample is still named, with its line (some
 * 15 samples: too few for the 75/25 split, only its frames). */
static void
test_short_run_named(void **state)
{
    char *args[] = { SCRIPT, "20", NULL };
    const char *folded;
    double total, hot, cool, freed, spin;

    (void)state;
    if (access(PYTHON, X_OK) != 0)
        skip();
    folded = run_to_end(args, &total, &freed);
    hot = samples_with(folded, ";hot_seventy_five (hot_cool.py:21)_[p];spin (hot_cool.py:", NULL, NULL);
    cool = samples_with(folded, ";cool_twenty_five (hot_cool.py:25)_[p];spin (hot_cool.py:", NULL, NULL);
    spin = samples_with(folded, ";spin (hot_cool.py:1", NULL, NULL); /* its loop's lines, 16 and 17 */
    print_message("# %.0f samples: %.0f hot, %.0f cool, %.0f on spin's loop lines, %.0f with code freed\n", total, hot,
                  cool, spin, freed);
    assert_true(total >= 5);
    assert_true(freed == 0);
    assert_true(hot + cool >= 0.7 * total); /* the rest: the interpreter's start, main's own lines */
    assert_true(hot >= 1);
    assert_true(spin >= 0.7 * total);
}

/* The samples after the writer's last tick are drained once the
 * interpreter has freed its code: a line first sampled there (the last
 * 200 ms of late_lines.py, past the first second's short ticks) is named
 * from the code object as an earlier drain kept it. */
static void
test_late_line_named_after_free(void **state)
{
    char *args[] = { "tests/data/python/late_lines.py", "1.5", NULL };
    const char *folded;
    double total, freed, late, first;

    (void)state;
    if (access(PYTHON, X_OK) != 0)
        skip();
    folded = run_to_end(args, &total, &freed);
    first = late = 0;
    for (int line = 13; line <= 15; line++) { /* each phase's loop: its while, for and body lines */
        char a[64], b[64];

        snprintf(a, sizeof a, ";work (late_lines.py:%d)_[p]", line);
        snprintf(b, sizeof b, ";work (late_lines.py:%d)_[p]", line + 4);
        first += samples_with(folded, a, NULL, NULL);
        late += samples_with(folded, b, NULL, NULL);
    }
    print_message("# %.0f samples: %.0f at the first phase's line, %.0f at the late one, %.0f with code freed\n",
                  total, first, late, freed);
    assert_true(first >= 0.7 * total);
    assert_true(late >= 20);
    assert_true(freed == 0);
}

/* The wall clock (PH_SAMPLER_CLOCK=wall): a Python thread blocked in a
 * call that released the GIL (time.sleep, select.select, Thread.join) is
 * not the GIL's holder, and still has its Python frames: its off-CPU
 * samples carry the Python function it waits in (the thread's own state
 * found in the interpreter's list of threads). */
static void
test_wall_blocked_threads_python_frames(void **state)
{
    static char out[400];
    char *args[] = { "tests/data/python/blocked.py", "2", NULL };
    run_opts o = { .hz = "100", .interval = "0", .prog = PYTHON, .out = out, .clock = "wall" };
    const char *folded;
    double total, off, sleep_py, select_py, join_py;
    int status;

    (void)state;
    if (access(PYTHON, X_OK) != 0)
        skip();
    snprintf(out, sizeof out, "%s/output", test_dir);
    status = finish(start_opts(&o, args));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    folded = newest("stacks-");
    assert_non_null(folded);
    off = samples_with(folded, ";[off-cpu]", &total, NULL);
    sleep_py = samples_with(folded, ";waits_in_sleep (blocked.py:16)_[p];", NULL, NULL);
    select_py = samples_with(folded, ";waits_in_select (blocked.py:22)_[p];", NULL, NULL);
    /* main waits in join (line 31); on a loaded machine, seen in CI and
     * on the old code too, it may still wait for the GIL back in
     * Thread.start (line 29, take_gil) for the whole run: either way a
     * blocked thread with its Python function */
    join_py = samples_with(folded, ";<module> (blocked.py:35)_[p];main (blocked.py:", NULL, NULL);
    print_message("# %.0f samples, %.0f off CPU: in time.sleep %.0f, in select %.0f, in main %.0f with the Python "
                  "function\n", total, off, sleep_py, select_py, join_py);
    assert_true(off > 0.9 * total);
    /* each of the three threads for most of the 2 s (100 Hz each) */
    assert_true(sleep_py > 100 && select_py > 100 && join_py > 100);
}

/* A CPython whose version has no layout: no Python frame, no wrong name,
 * and the status, the graph and the profile say so. */
static void
test_unknown_version(void **state)
{
    char *args[] = { "1.0", NULL };
    const char *folded, *st;
    double total, eval;
    int status;

    (void)state;
    status = finish(run(FAKEPY, "250", args));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    st = status_of("sampler_fakepy");
    assert_non_null(st);
    assert_non_null(strstr(st, "\"python\": \"Python 3.15.0: frames not read (unknown version)\""));
    folded = newest("stacks-");
    assert_non_null(folded);
    assert_null(strstr(folded, "_[p]"));
    eval = samples_with(folded, ";main;_PyEval_EvalFrameDefault", &total, NULL);
    assert_true(total > 0 && eval / total > 0.9);
    assert_non_null(strstr(newest("flamegraph-"), "Python 3.15.0: frames not read (unknown version)"));
    assert_non_null(strstr(pprof_text(), "Python 3.15.0: frames not read (unknown version)"));
}

/* A CPython 3.13 is read by the offsets it publishes in _PyRuntime's
 * _Py_DebugOffsets: the fake's structs are laid out nowhere near
 * CPython's, and its frames are named all the same, in place of the eval
 * loop's frame, stopping at the loop's shim frame, with the lines its
 * location table gives. */
static void
test_debug_offsets_313(void **state)
{
    char *args[] = { "1.0", NULL };
    const char *folded, *st;
    double total, named;
    int status;

    (void)state;
    status = finish(run(FAKEPY313, "250", args));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    st = status_of("sampler_fakepy313");
    assert_non_null(st);
    assert_non_null(strstr(st, "\"python\": \"Python 3.13.5: frames read\""));
    folded = newest("stacks-");
    assert_non_null(folded);
    /* hot_fake's line from its location table: the first instruction of
     * an entry has that entry's line, not the one before's */
    named = samples_with(folded, ";main;main (fake313.py:20)_[p];hot_fake (fake313.py:13)_[p]", &total, NULL);
    print_message("# %.0f samples, %.0f named main;hot_fake\n", total, named);
    assert_true(total > 0 && named / total > 0.9);
    assert_null(strstr(folded, "_PyEval_EvalFrameDefault"));
}

/* Run the fake CPython NAME for a CPU-second: its status says STATUS;
 * its folded stacks. */
static const char *
run_fake(const char *name, const char *status)
{
    char prog[200], quoted[200];
    char *args[] = { "1.0", NULL };
    const char *st, *folded;
    int status_;

    snprintf(prog, sizeof prog, FAKEPY_DIR "%s", name);
    status_ = finish(run(prog, "250", args));
    assert_true(WIFEXITED(status_) && WEXITSTATUS(status_) == 0);
    st = status_of(name);
    assert_non_null(st);
    snprintf(quoted, sizeof quoted, "\"python\": \"%s\"", status);
    if (strstr(st, quoted) == NULL)
        print_message("# status: %s\n", st);
    assert_non_null(strstr(st, quoted));
    folded = newest("stacks-");
    assert_non_null(folded);
    return folded;
}

/* The fake CPython NAME: its status says STATUS, and nearly all its
 * samples are STACK (its Python frames in place of the eval loop's). */
static void
fake_named(const char *name, const char *status, const char *stack)
{
    const char *folded = run_fake(name, status);
    double total, named;

    named = samples_with(folded, stack, &total, NULL);
    print_message("# %s: %.0f samples, %.0f named %s\n", name, total, named, stack);
    assert_true(total > 0 && named / total > 0.9);
    assert_null(strstr(folded, "_PyEval_EvalFrameDefault"));
}

/* The fake CPython NAME is not read: its status says STATUS, no Python
 * frame, its two eval loop calls kept native. */
static void
fake_not_read(const char *name, const char *status)
{
    const char *folded = run_fake(name, status);

    assert_null(strstr(folded, "_[p]"));
    assert_non_null(strstr(folded, ";main;_PyEval_EvalFrameDefault;_PyEval_EvalFrameDefault"));
}

/* 3.10: no Py_Version, the version from its PY_VERSION string; the frame
 * objects' chain, one eval loop call per frame; the line from 3.10's
 * co_linetable (a pair of no bytes moves the line too). */
static void
test_frames_310(void **state)
{
    (void)state;
    fake_named("sampler_fakepy310", "Python 3.10.12: frames read",
               ";main;main (fake310.py:20)_[p];hot_fake (fake310.py:12)_[p]");
}

/* A thread that does not hold the GIL, caught while starting another:
 * up to 3.11 the child's state is made by the parent, with the parent's
 * thread_id, and is newest in the list; its frames are the parent's own
 * state's, the oldest with its thread_id.  (Seen on real 3.11 in wall
 * mode under load: the main thread's first sample took the child's
 * frameless state, and its stack, repeated while it waited in join, had
 * no Python frame.) */
static void
test_frames_starting_a_thread(void **state)
{
    (void)state;
    fake_named("sampler_fakepy310_prealloc", "Python 3.10.12: frames read",
               ";main;main (fake310.py:20)_[p];hot_fake (fake310.py:12)_[p]");
}

/* 3.8: its runtime state's layout, and the line from co_lnotab. */
static void
test_frames_38(void **state)
{
    (void)state;
    fake_named("sampler_fakepy38", "Python 3.8.18: frames read",
               ";main;main (fake38.py:20)_[p];hot_fake (fake38.py:12)_[p]");
}

/* 3.12: the GIL behind the main interpreter's ceval.gil, cframe's current
 * frame, the entry frame owned by the C stack ending one eval loop's
 * frames (and never named itself), the outer loop's frames after it. */
static void
test_frames_312(void **state)
{
    (void)state;
    fake_named("sampler_fakepy312", "Python 3.12.4: frames read",
               ";main;<module> (fake312.py:30)_[p];main (fake312.py:20)_[p];hot_fake (fake312.py:12)_[p]");
}

/* 3.7 (before 3.8, no row): not read, and said so. */
static void
test_unknown_37(void **state)
{
    (void)state;
    fake_not_read("sampler_fakepy37", "Python 3.7.3: frames not read (unknown version)");
}

/* A 3.10 saying it is a 3.9: its frame objects are not 3.9's size
 * (PyFrame_Type's tp_basicsize), so nothing is read with 3.9's offsets. */
static void
test_size_not_the_versions(void **state)
{
    (void)state;
    fake_not_read("sampler_fakepy310_as39",
                  "Python 3.9.18: frames not read (its code or frame objects are not of this version's size)");
}

/* Offsets that do not carry CPython's cookie are not read. */
static void
test_debug_offsets_not_cpythons(void **state)
{
    char *args[] = { "1.0", NULL };
    const char *folded, *st;
    int status;

    (void)state;
    status = finish(run(FAKEPY313 "_bad", "250", args));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    st = status_of("sampler_fakepy313_bad");
    assert_non_null(st);
    assert_non_null(strstr(st, "\"python\": \"Python 3.13.5: frames not read (its _Py_DebugOffsets are not as expected)\""));
    folded = newest("stacks-");
    assert_non_null(folded);
    assert_null(strstr(folded, "_[p]"));
    assert_non_null(strstr(folded, ";main;_PyEval_EvalFrameDefault"));
}

/* A program with no CPython: nothing said of Python. */
static void
test_no_python(void **state)
{
    char *args[] = { "split", "0.3", NULL };
    const char *st;

    (void)state;
    assert_int_equal(finish(start("250", args)), 0);
    st = status_of("sampler_work");
    assert_non_null(st);
    assert_non_null(strstr(st, "\"python\": \"\""));
    assert_null(strstr(newest("stacks-"), "_[p]"));
}

/* ---- the heap mode ------------------------------------------------------ */

/* The sum of FOLDED's counts whose stack holds NAME, in MiB. */
static double
mib_with(const char *folded, const char *name)
{
    return samples_with(folded, name, NULL, NULL) / 1048576;
}

/* CPython's objects through its object allocator, by Python stack:
 * heap_two.py keeps 3 N and N tuples of 64 bytes from keep_three and
 * keep_one (N = 200,000: 36.6 and 12.2 MiB), churns 8 N.  At 32 KiB a
 * sample, keep_one's are about 390 samples: the share's standard
 * deviation is about 1.1 points, the bound 5. */
static void
test_heap_objects(void **state)
{
    char *args[] = { "tests/data/python/heap_two.py", "200000", NULL };
    char *in, *alloc, cmd[600];
    double three, one, churn_in, churn;
    pid_t p;

    (void)state;
    if (access(PYTHON, X_OK) != 0)
        skip();
    setenv("PH_SAMPLER_HEAP", "32K", 1);
    p = run(PYTHON, "250", args);
    unsetenv("PH_SAMPLER_HEAP");
    finish(p); /* (its own SIGTERM ends it) */
    in = heap_folded("inuse_space");
    alloc = heap_folded("alloc_space");
    assert_non_null(in);
    assert_non_null(alloc);
    three = mib_with(in, ";keep_three (heap_two.py:");
    one = mib_with(in, ";keep_one (heap_two.py:");
    churn_in = mib_with(in, ";churn (heap_two.py:");
    churn = mib_with(alloc, ";churn (heap_two.py:");
    print_message("# in use: keep_three %.1f MiB, keep_one %.1f MiB, churn %.1f MiB; allocated: churn %.1f MiB\n",
                  three, one, churn_in, churn);
    assert_true(fabs(100 * three / (three + one) - 75) <= 5);
    assert_true(fabs(three + one - 48.8) <= 0.1 * 48.8);
    assert_true(churn_in < 0.02 * (three + one));
    /* allocated: what the allocator was asked, 97.7 MiB of tuples at most
     * (CPython's free list of small tuples hands some of them out again:
     * 48 MiB here) */
    assert_true(churn > 0.25 * 97.7 && churn <= 1.1 * 97.7);
    /* the tuples' leaf is the interpreter's function under the Python
     * one, never the sampler's hook */
    assert_non_null(strstr(in, "keep_three (heap_two.py:20)_[p];PyTuple_New"));
    assert_null(strstr(in, "py_malloc"));
    /* said: the objects are seen */
    snprintf(cmd, sizeof cmd, "jq -e '.runtimes[0].runtime == \"python\" and .runtimes[0].objects' %s/heap-*.json >/dev/null",
             outdir);
    assert_int_equal(system(cmd), 0);
    free(in);
    free(alloc);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_311),
        cmocka_unit_test(test_layout_rows),
        cmocka_unit_test(test_glibc_floor),
        cmocka_unit_test_setup_teardown(test_hot_cool_shares, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_short_run_named, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_late_line_named_after_free, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_heap_objects, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_version, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_debug_offsets_313, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_debug_offsets_not_cpythons, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_no_python, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_frames_310, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_frames_38, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_frames_starting_a_thread, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_frames_312, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_wall_blocked_threads_python_frames, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_37, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_size_not_the_versions, setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
