/* test_langview.c - the language view (ph_langview): each frame name the
 * sampler and the perf conversion write for Python, V8 and HotSpot read
 * as its language's function, and recorded stacks of each runtime
 * (tests/unit/data/lang/) turned into their language frames. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "ph_langview.h"

static void
frame_is(const char *name, ph_lang want, const char *view)
{
    char out[512] = "untouched";
    ph_lang l = ph_langview_frame(name, strlen(name), out, sizeof out);

    if (l != want)
        fail_msg("%s: language %d, not %d", name, (int)l, (int)want);
    assert_string_equal(out, want == PH_LANG_NONE ? "untouched" : view);
}

static void
test_frames(void **state)
{
    (void)state;
    /* Python: the line is a detail, the function and file are the row */
    frame_is("__setattr__ (base.py:391)_[p]", PH_LANG_PYTHON, "__setattr__ (base.py)");
    frame_is("ContentLine.__setattr__ (base.py:406)_[p]", PH_LANG_PYTHON, "ContentLine.__setattr__ (base.py)");
    frame_is("<module> (?:0)_[p]", PH_LANG_PYTHON, "<module> (?)");
    /* CPython 3.12+'s perf trampolines, named from its perf map */
    frame_is("py::hot_seventy_five:/app/lang.py_[j]", PH_LANG_PYTHON, "hot_seventy_five (lang.py)");
    frame_is("py::Server.<locals>.handle:server.py_[j]", PH_LANG_PYTHON, "Server.<locals>.handle (server.py)");
    /* V8: the tag and the tier go, the location is the function's own */
    frame_is("LazyCompile:*readFile node:fs:383_[j]", PH_LANG_JS, "readFile (node:fs:383)");
    frame_is("LazyCompile:~readFile node:fs:383_[j]", PH_LANG_JS, "readFile (node:fs:383)");
    frame_is("JS:^readFile node:fs:383_[j]", PH_LANG_JS, "readFile (node:fs:383)");
    frame_is("Function:+readFile node:fs:383_[j]", PH_LANG_JS, "readFile (node:fs:383)");
    frame_is("LazyCompile:~ node:internal/main/run_main_module:1_[j]", PH_LANG_JS,
             "(anonymous) (node:internal/main/run_main_module:1)");
    frame_is("LazyCompile:+get size /app/cache.js:40_[j]", PH_LANG_JS, "get size (/app/cache.js:40)");
    frame_is("Script:~ /app/server.js_[j]", PH_LANG_JS, "(script) (/app/server.js)");
    frame_is("Eval:~ /app/plugins.js:3_[j]", PH_LANG_JS, "(eval) (/app/plugins.js:3)");
    frame_is("RegExp:^/api/(\\w+)$_[j]", PH_LANG_JS, "/^/api/(\\w+)$/ (regexp)");
    /* V8's own code is the runtime's */
    frame_is("Builtin:InterpreterEntryTrampoline_[j]", PH_LANG_NONE, NULL);
    frame_is("Stub:CEntry_Return1_DontSaveFPRegs_ArgvOnStack_NoBuiltinExit_[j]", PH_LANG_NONE, NULL);
    frame_is("BytecodeHandler:LdaSmi_[j]", PH_LANG_NONE, NULL);
    /* Java, inlined or not; HotSpot's interpreter and stubs are the VM's */
    frame_is("java.lang.Thread.run_[j]", PH_LANG_JAVA, "java.lang.Thread.run");
    frame_is("java.lang.String.hashCode_[j] (inlined)", PH_LANG_JAVA, "java.lang.String.hashCode");
    frame_is("Lcom/example/Foo;::bar_[j]", PH_LANG_JAVA, "Lcom/example/Foo;::bar");
    frame_is("long LangJava.hot_seventy_five_[j]", PH_LANG_JAVA, "LangJava.hot_seventy_five");
    frame_is("java.lang.String java.lang.String.trim_[j]", PH_LANG_JAVA, "java.lang.String.trim");
    frame_is("long LangJava.hot_seventy_five(long, long)_[j]", PH_LANG_JAVA, "LangJava.hot_seventy_five");
    frame_is("Interpreter_[j]", PH_LANG_NONE, NULL);
    frame_is("StubRoutines (1)_[j]", PH_LANG_NONE, NULL);
    frame_is("I2C/C2I adapters_[j]", PH_LANG_NONE, NULL);
    /* native frames, inlined C, kernel */
    frame_is("__open", PH_LANG_NONE, NULL);
    frame_is("python3.11+0x255792", PH_LANG_NONE, NULL);
    frame_is("memcpy_[i]", PH_LANG_NONE, NULL);
    frame_is("do_syscall_64_[k]", PH_LANG_NONE, NULL);
    frame_is("[perf-8.map]", PH_LANG_NONE, NULL);
}

/* The view of tests/unit/data/lang/NAME.folded as folded text. */
static char *
view_of(const char *name, int skip_root, int want_rc, ph_langview_info *info)
{
    char path[256], *text = NULL, *buf = NULL;
    size_t len = 0, tlen = 0;
    ph_error_t err = NULL;
    ph_folded *fo, *view = NULL;
    FILE *f, *m;
    long n;

    snprintf(path, sizeof path, "tests/unit/data/lang/%s.folded", name);
    f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    fo = ph_folded_parse(buf, (size_t)n, 0, &err);
    assert_non_null(fo);
    assert_int_equal(ph_folded_get_stats(fo)->bad_lines, 0);
    assert_int_equal(ph_langview_build(fo, skip_root, &view, info, &err), want_rc);
    if (view == NULL) {
        ph_folded_free(fo);
        free(buf);
        return NULL;
    }
    m = open_memstream(&text, &tlen);
    assert_int_equal(ph_folded_write(view, m, &err), 0);
    fclose(m);
    (void)len;
    ph_folded_free(view);
    ph_folded_free(fo);
    free(buf);
    return text;
}

static void
test_python(void **state)
{
    ph_langview_info in;
    char *v = view_of("python", 1, 1, &in);

    (void)state;
    /* the three lines of __setattr__ are one function; the interpreter's
     * frames between and above the Python ones are gone, the VM's start
     * below them too; a blocked thread stays blocked; a stack with no
     * Python frame stays native */
    assert_string_equal(v, "thread-249;_bootstrap (threading.py);_bootstrap_inner (threading.py);run (threading.py);"
                           "process_request_thread (socketserver.py);__setattr__ (base.py) 12\n"
                           "thread-422;_bootstrap (threading.py);_bootstrap_inner (threading.py);run (threading.py);"
                           "process_request_thread (socketserver.py);__setattr__ (base.py) 4\n"
                           "thread-422;_bootstrap (threading.py);_bootstrap_inner (threading.py);run (threading.py);"
                           "process_request_thread (socketserver.py);xml_propfind_response (propfind.py);"
                           "make_clark (xmlutils.py) 3\n"
                           "thread-423;_bootstrap (threading.py);_bootstrap_inner (threading.py);run (threading.py);"
                           "process_request_thread (socketserver.py);xml_propfind_response (propfind.py) 2\n"
                           "MainThread;<module> (__main__.py);serve_forever (socketserver.py);[off-cpu] 10\n"
                           "thread-250;clone;start_thread;python3.11+0x255792;python3.11+0x12a4f0 2\n");
    assert_int_equal(in.lang, PH_LANG_PYTHON);
    assert_true(in.total == 33 && in.with_lang == 31 && in.per_lang[PH_LANG_PYTHON] == 31);
    assert_string_equal(ph_langview_lang_name(in.lang), "Python");
    free(v);
}

static void
test_node(void **state)
{
    ph_langview_info in;
    char *v = view_of("node", 1, 1, &in);
    const char *head = "node;<anonymous> (node:internal/main/run_main_module:1);"
                       "(anonymous) (node:internal/modules/cjs/loader:1);";
    char want[2048];

    (void)state;
    /* the optimized and the interpreted readFile are one row; V8's
     * builtins and stubs are the time of the function that called them */
    snprintf(want, sizeof want,
             "%shandle (/app/server.js:12);readFile (node:fs:383) 5\n"
             "%shandle (/app/server.js:12);/^/api/(\\w+)$/ (regexp) 1\n"
             "%s(eval) (/app/plugins.js:3) 1\n"
             "%s(script) (/app/server.js);get size (/app/cache.js:40) 1\n"
             "node;uv_run;uv__io_poll;epoll_wait 5\n",
             head, head, head, head);
    assert_string_equal(v, want);
    assert_int_equal(in.lang, PH_LANG_JS);
    assert_true(in.with_lang == 8 && in.total == 13);
    free(v);
}

static void
test_java(void **state)
{
    ph_langview_info in;
    char *v = view_of("java", 1, 1, &in);
    const char *mid = ";java.lang.Thread.run;org.apache.tomcat.util.threads.TaskThread$WrappingRunnable.run;"
                      "org.apache.catalina.core.ApplicationFilterChain.doFilter;HelloWorldExample.doGet";
    char want[2048];

    (void)state;
    snprintf(want, sizeof want,
             "http-nio-8080-exec-1%s;java.lang.String.hashCode 4\n"
             "http-nio-8080-exec-2%s;java.lang.String.hashCode 2\n"
             "http-nio-8080-exec-3%s;java.io.PrintWriter.println 3\n"
             "GC Thread#0;start_thread;thread_native_entry(Thread*);GangWorker::loop();G1ParTask::work(unsigned int) 6\n",
             mid, mid, mid);
    assert_string_equal(v, want);
    assert_int_equal(in.lang, PH_LANG_JAVA);
    free(v);
}

/* A native service: no view, and nothing in the way of today's */
static void
test_native(void **state)
{
    ph_langview_info in;
    ph_error_t err = NULL;
    const char *text = "main;_start;main;work;memcpy_[i] 5\nmain;_start;main;read;do_syscall_64_[k] 2\n";
    ph_folded *fo = ph_folded_parse(text, strlen(text), 0, &err), *view = (ph_folded *)&in;

    (void)state;
    assert_int_equal(ph_langview_build(fo, 1, &view, &in, &err), 0);
    assert_null(view);
    assert_int_equal(in.lang, PH_LANG_NONE);
    assert_true(in.total == 7 && in.with_lang == 0);
    ph_folded_free(fo);
    /* without a thread as the root, the root is a frame like any */
    text = "a (x.py:1)_[p];b (y.py:2)_[p];PyObject_Call 3\n";
    fo = ph_folded_parse(text, strlen(text), 0, &err);
    assert_int_equal(ph_langview_build(fo, 0, &view, &in, &err), 1);
    assert_int_equal(ph_folded_n_stacks(view), 1);
    assert_int_equal(ph_folded_get_stack(view, 0).depth, 2);
    assert_string_equal(ph_folded_name(view, ph_folded_get_stack(view, 0).frames[0], NULL), "a (x.py)");
    ph_folded_free(view);
    ph_folded_free(fo);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_python),
        cmocka_unit_test(test_node),
        cmocka_unit_test(test_java),
        cmocka_unit_test(test_native),
    };
    return cmocka_run_group_tests_name("langview", tests, NULL, NULL);
}
