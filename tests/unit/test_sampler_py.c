/* test_sampler_py.c - CPython's own frames in the sampler's stacks
 * (harness/sampler/ph_sampler_py.c): Debian's python3.11 running
 * tests/data/python/hot_cool.py, whose hot_seventy_five does three times
 * the iterations of cool_twenty_five, is shown by its Python functions
 * with those shares; a program that looks like a CPython of a version
 * without a layout gets no Python frames and a status that says why; and
 * the 3.11 layout is CPython 3.11's own, checked with offsetof against
 * its internal headers (python3.11-dev) when they are installed.
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

#include <math.h>

#define PYTHON "/usr/bin/python3.11"
#define SCRIPT "tests/data/python/hot_cool.py"
#define FAKEPY "build/tests/helpers/sampler_fakepy"
#define FAKEPY313 "build/tests/helpers/sampler_fakepy313"

/* The 3.11 row is what CPython 3.11's headers say. */
static void
test_layout_311(void **state)
{
#ifdef PH_HAVE_PY311_HEADERS
    const phs_py_layout *L = &phs_py_layouts[0];

    (void)state;
    assert_int_equal(PY_MAJOR_VERSION * 100 + PY_MINOR_VERSION, 311);
    assert_int_equal(L->minor, 11);
    assert_int_equal(L->rt_tstate_current, offsetof(_PyRuntimeState, gilstate.tstate_current));
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_311),
        cmocka_unit_test_setup_teardown(test_hot_cool_shares, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_version, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_debug_offsets_313, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_debug_offsets_not_cpythons, setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_no_python, setup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
