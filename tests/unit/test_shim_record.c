/* test_shim_record.c - the init shim's completion record, ph-exit.json:
 * its contents and escaping, what it says about each way a service can
 * end (the fault matrix, in every stop mode), and that nothing the service
 * plants in the artifacts dir blocks, redirects or keeps out the record.
 * ph-init runs as a subprocess, no Docker (helpers/shim_test.h).  Skipped
 * where they cannot run: strace and valgrind modes without ptrace or
 * valgrind; as non-root or without a v1 memory cgroup to create, the OOM
 * cases; as non-root, the full disk (a tmpfs in a mount namespace). */
#include "helpers/shim_test.h"

#include <dirent.h>
#include <sys/resource.h>

/* ------------------------------------------------------------- the record */

static int
is_utc_ms(const char *s)
{
    /* 2026-01-02T03:04:05.678Z */
    static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";

    if (s == NULL || strlen(s) != sizeof pat - 1)
        return 0;
    for (size_t i = 0; pat[i]; i++)
        if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
            return 0;
    return 1;
}

static void
test_record_contents_escaping_and_dir_mode(void **state)
{
    char record[700], dir[700], tmp[720];
    /* Escapes, a control byte, valid UTF-8, then bytes that are not: a
     * stray byte, an overlong NUL, a surrogate, past U+10FFFF. */
    char weird[] = "q\"b\\s\nn\tt\x01\x1f" "caf\xc3\xa9 \xff!\xc0\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xf0\x9f\x98\x80";
#define FFFD "\xef\xbf\xbd"
    const char *weird_as_json = "q\"b\\s\nn\tt\x01\x1f" "caf\xc3\xa9 " FFFD "!" FFFD FFFD "|" FFFD FFFD FFFD "|" FFFD FFFD
                                FFFD FFFD "|\xf0\x9f\x98\x80";
    char *argv[] = { SHIM, "--record", record, "--", "/bin/sh", "-c", "exit 7", weird, "", NULL };
    struct stat sb;
    mode_t old;
    json_t *j, *cmd;
    pid_t p;

    (void)state;
    snprintf(dir, sizeof dir, "%s/out/a/b", test_dir);
    snprintf(record, sizeof record, "%s/ph-exit.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", record);
    old = umask(077);
    p = spawn(argv);
    umask(old);
    assert_int_equal(wait_exit(p), 7);
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0777);
    snprintf(dir, sizeof dir, "%s/out", test_dir);
    assert_int_equal(stat(dir, &sb), 0);
    assert_int_equal(sb.st_mode & 07777, 0777);
    assert_int_equal(access(tmp, F_OK), -1);
    j = load_record(record);
    cmd = json_object_get(j, "command");
    assert_int_equal(json_array_size(cmd), 5);
    assert_string_equal(json_string_value(json_array_get(cmd, 0)), "/bin/sh");
    assert_string_equal(json_string_value(json_array_get(cmd, 2)), "exit 7");
    assert_string_equal(json_string_value(json_array_get(cmd, 3)), weird_as_json);
    assert_string_equal(json_string_value(json_array_get(cmd, 4)), "");
    assert_int_equal(jint(j, "exit_code"), 7);
    assert_true(json_is_null(json_object_get(j, "signal")));
    assert_true(json_is_false(json_object_get(j, "stop_requested")));
    assert_true(json_is_null(json_object_get(j, "stop_requested_at")));
    assert_true(json_is_null(json_object_get(j, "stop_seconds")));
    assert_true(json_is_false(json_object_get(j, "wrapper_killed")));
    assert_string_equal(jstr(j, "stop_signal"), "SIGTERM");
    assert_true(jint(j, "wrapper_pid") > 0);
    assert_true(is_utc_ms(jstr(j, "started_at")));
    assert_true(is_utc_ms(jstr(j, "ended_at")));
    assert_true(strcmp(jstr(j, "started_at"), jstr(j, "ended_at")) <= 0);
    assert_true(json_is_number(json_object_get(j, "run_seconds")));
    assert_true(json_number_value(json_object_get(j, "run_seconds")) >= 0);
    json_decref(j);
}

/* A record already there (a restarted container, a planted file) is
 * replaced by a new file, never rewritten in place: another name for the
 * old one (a hard link) keeps the old content. */
static void
test_record_replaced_by_rename(void **state)
{
    const char *record = tpath("ph-exit.json"), *old = tu_write("old", "the old record\n");
    char *argv[] = { SHIM, "--record", (char *)record, "--", "/bin/sh", "-c", "exit 3", NULL };
    struct stat before, after;

    (void)state;
    assert_int_equal(link(old, record), 0);
    assert_int_equal(stat(record, &before), 0);
    assert_int_equal(wait_exit(spawn(argv)), 3);
    assert_true(file_has(old, "the old record\n"));
    assert_int_equal(stat(record, &after), 0);
    assert_true(after.st_ino != before.st_ino);
    assert_int_equal(after.st_nlink, 1);
    json_decref(load_record(record));
}

/* ------------------------------------------------------ the fault matrix */

/* Each stop mode of the profiles, as the shim sees it: who gets the stop
 * signal, what it escalates with, and what runs the service. */
enum mode { M_SAMPLER, M_TRACER, M_STRACE, M_MASSIF, N_MODES };

static const struct {
    const char *name, *target, *escalate;
} modes[N_MODES] = {
    [M_SAMPLER] = { "wrapper (flamegraph: the service itself)", "wrapper", "SIGKILL" },
    [M_TRACER] = { "tracee (shim_tracer, strace's stand-in)", "tracee", "SIGKILL" },
    [M_STRACE] = { "tracee (strace -f)", "tracee", "SIGKILL" },
    [M_MASSIF] = { "wrapper (valgrind massif)", "wrapper", "SIGUSR2,SIGKILL" },
};

static int
valgrind_works(void)
{
    return system("valgrind --tool=none -q /bin/true >/dev/null 2>&1") == 0;
}

/* Whether mode M can run here; skips the test when not. */
static void
need_mode(enum mode m)
{
    if ((m == M_STRACE && !strace_works()) || (m == M_MASSIF && !valgrind_works()))
        skip();
}

/* What a test does to the running service. */
enum act {
    A_NONE,     /* it ends by itself */
    A_STOP,     /* a stop request */
    A_STOP2,    /* a stop request and a second one: escalation at once (a
                 * grace of 100 s is never waited out) */
    A_USR1,     /* SIGUSR1 through ph-init: segv and exit end on it */
    A_HUP,      /* SIGHUP through ph-init, which the service does not handle */
    A_KILL,     /* SIGKILL to the service, not through ph-init */
};

/* Run shim_service BEHAVIOUR under ph-init in mode M, in memory cgroup CG
 * when given, and do ACT to it.  Returns the record; *CODE is ph-init's
 * exit status. */
static json_t *
run_service(enum mode m, const char *behaviour, enum act act, const char *cg, int *code)
{
    const char *ready = tpath("ready"), *record = tpath("ph-exit.json");
    char massif[700], *argv[32]; /* cgroup 4 + ph-init 11 + strace 5 + service 3 + NULL */
    char cmd[2000] = "";
    int n = 0;
    pid_t p;

    snprintf(massif, sizeof massif, "--massif-out-file=%s", tpath("massif.out"));
    unlink(ready);
    unlink(record);
    if (cg) {
        argv[n++] = "/bin/sh";
        argv[n++] = "-c";
        argv[n++] = cmd;
        argv[n++] = "sh";
        snprintf(cmd, sizeof cmd, "echo $$ > %s/cgroup.procs && exec \"$@\"", cg);
    }
    argv[n++] = SHIM;
    argv[n++] = "--stop-target";
    argv[n++] = (char *)modes[m].target;
    argv[n++] = "--grace";
    argv[n++] = "100";
    argv[n++] = "--escalate";
    argv[n++] = (char *)modes[m].escalate;
    argv[n++] = "--escalate-grace";
    argv[n++] = "100";
    argv[n++] = "--record";
    argv[n++] = (char *)record;
    argv[n++] = "--";
    if (m == M_TRACER)
        argv[n++] = H("shim_tracer"), argv[n++] = "--";
    if (m == M_STRACE)
        argv[n++] = "strace", argv[n++] = "-f", argv[n++] = "-o", argv[n++] = (char *)tpath("strace.log"),
        argv[n++] = "--";
    if (m == M_MASSIF)
        argv[n++] = "valgrind", argv[n++] = "--tool=massif", argv[n++] = massif, argv[n++] = "--";
    argv[n++] = H("shim_service");
    argv[n++] = (char *)ready;
    argv[n++] = (char *)behaviour;
    argv[n] = NULL;
    p = spawn_err(argv, tpath("stderr"));
    assert_true(wait_exists(ready));
    if (act == A_USR1 || act == A_HUP)
        assert_int_equal(kill(p, act == A_USR1 ? SIGUSR1 : SIGHUP), 0);
    if (act == A_KILL)
        assert_int_equal(kill(read_pid(ready), SIGKILL), 0);
    if (act == A_STOP || act == A_STOP2)
        assert_int_equal(kill(p, SIGTERM), 0);
    if (act == A_STOP2)
        assert_int_equal(kill(p, SIGINT), 0);
    if (strcmp(behaviour, "orphan") == 0) {
        /* The child got its SIGTERM: ph-init is past the stop signal and
         * ends leftovers now; a second request hurries their SIGKILL. */
        char child[700];

        snprintf(child, sizeof child, "%s.child", ready);
        assert_true(wait_sig(child, SIGTERM));
        kill(p, SIGINT);
    }
    *code = wait_exit(p);
    return load_record(record);
}

/* The record's fields for one case, checked with the mode and case named. */
struct expect {
    const char *outcome;
    int exit_code;          /* -1: null */
    const char *signal;     /* NULL: null */
    const char *escalations;
    int complete;
    int leftovers_signalled, leftovers_killed;
};

static int
signum(const char *name)
{
    static const struct {
        const char *name;
        int num;
    } t[] = { { "SIGHUP", SIGHUP }, { "SIGKILL", SIGKILL }, { "SIGSEGV", SIGSEGV }, { "SIGUSR2", SIGUSR2 } };

    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(name, t[i].name) == 0)
            return t[i].num;
    fail_msg("signum: %s is not in the table", name);
    return 0;
}

static void
check_record(json_t *j, int code, enum mode m, const char *behaviour, const struct expect *e)
{
    json_t *ec = json_object_get(j, "service_exit_code"), *sig = json_object_get(j, "service_signal");
    json_t *oom = json_object_get(j, "oom_kills");
    char what[200];

    snprintf(what, sizeof what, "%s, service '%s'", modes[m].name, behaviour);
    if (jstr(j, "outcome") == NULL || strcmp(jstr(j, "outcome"), e->outcome) != 0)
        fail_msg("%s: outcome %s, want %s", what, jstr(j, "outcome"), e->outcome);
    if (e->exit_code < 0 ? !json_is_null(ec) : json_integer_value(ec) != e->exit_code || !json_is_integer(ec))
        fail_msg("%s: service_exit_code %lld, want %d", what, (long long)json_integer_value(ec), e->exit_code);
    if (e->signal ? !json_is_string(sig) || strcmp(json_string_value(sig), e->signal) != 0 : !json_is_null(sig))
        fail_msg("%s: service_signal %s, want %s", what, json_string_value(sig), e->signal ? e->signal : "null");
    if (strcmp(jsigs(j, "escalations"), e->escalations) != 0)
        fail_msg("%s: escalations [%s], want [%s]", what, jsigs(j, "escalations"), e->escalations);
    if (json_is_true(json_object_get(j, "complete")) != e->complete)
        fail_msg("%s: complete is not %s", what, e->complete ? "true" : "false");
    if (jint(j, "leftovers_signalled") != e->leftovers_signalled || jint(j, "leftovers_killed") != e->leftovers_killed)
        fail_msg("%s: leftovers signalled %lld, killed %lld; want %d, %d", what, jint(j, "leftovers_signalled"),
                 jint(j, "leftovers_killed"), e->leftovers_signalled, e->leftovers_killed);
    if (!json_is_false(json_object_get(j, "wrapper_killed")) || jint(j, "leftovers_survived") != 0)
        fail_msg("%s: the profiler was killed or a leftover survived", what);
    if (!json_is_null(oom) && strcmp(e->outcome, "oom_killed") != 0 && json_integer_value(oom) != 0)
        fail_msg("%s: oom_kills %lld", what, (long long)json_integer_value(oom));
    /* ph-init's own status: the profiler's, which mirrors the service's. */
    if (code != (e->signal ? 128 + signum(e->signal) : e->exit_code))
        fail_msg("%s: ph-init exited %d", what, code);
}

/* Every way a service ends, in mode M: the record tells each apart and
 * ph-init's exit status is the service's. */
static void
fault_matrix(enum mode m)
{
    const char *esc = m == M_MASSIF ? "SIGUSR2" : "SIGKILL";
    const struct {
        const char *behaviour;
        enum act act;
        struct expect e;
    } cases[] = {
        { "term", A_STOP, { "stopped", 0, NULL, "", 1, 0, 0 } },
        /* The sampler dies with the service; valgrind writes on SIGUSR2;
         * a tracer outlives its tracee's SIGKILL and writes its end. */
        { "ignore", A_STOP2, { "escalated", -1, esc, esc, m != M_SAMPLER, 0, 0 } },
        { "segv", A_USR1, { "crashed", -1, "SIGSEGV", "", 1, 0, 0 } },
        { "exit", A_USR1, { "exited", 7, NULL, "", 1, 0, 0 } },
        { "term", A_HUP, { "signalled", -1, "SIGHUP", "", 1, 0, 0 } },
        { "term", A_KILL, { "killed", -1, "SIGKILL", "", m != M_SAMPLER && m != M_MASSIF, 0, 0 } },
        { "orphan-term", A_STOP, { "stopped", 0, NULL, "", 1, 1, 0 } },
        { "orphan", A_STOP, { "stopped", 0, NULL, "", 1, 1, 1 } },
    };

    need_mode(m);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int code;
        json_t *j = run_service(m, cases[i].behaviour, cases[i].act, NULL, &code);

        check_record(j, code, m, cases[i].behaviour, &cases[i].e);
        json_decref(j);
    }
    if (m == M_MASSIF) /* valgrind wrote its output on the last case's stop */
        assert_int_equal(access(tpath("massif.out"), F_OK), 0);
}

static void
test_fault_matrix_sampler(void **state)
{
    (void)state;
    fault_matrix(M_SAMPLER);
}

static void
test_fault_matrix_tracer(void **state)
{
    (void)state;
    fault_matrix(M_TRACER);
}

static void
test_fault_matrix_strace(void **state)
{
    (void)state;
    fault_matrix(M_STRACE);
}

static void
test_fault_matrix_massif(void **state)
{
    (void)state;
    fault_matrix(M_MASSIF);
}

/* A memory cgroup of its own with a 96 MiB limit, under this process's
 * (v1 here; v2 needs a delegated subtree): its path in CG, or 0 (skip). */
static int
make_oom_cgroup(char *cg, size_t len)
{
    char self[4096] = "", path[4200];
    const char *mem = NULL;
    FILE *f = fopen("/proc/self/cgroup", "r");
    int ok;

    if (f == NULL || geteuid() != 0)
        return f ? fclose(f), 0 : 0;
    while (mem == NULL && fgets(self, sizeof self, f)) {
        char *c = strstr(self, ":memory:");

        if (c) {
            c[strcspn(c, "\n")] = '\0';
            mem = c + 8;
        }
    }
    fclose(f);
    if (mem == NULL)
        return 0;
    snprintf(cg, len, "/sys/fs/cgroup/memory%s/ph-shim-oom-%d", strcmp(mem, "/") == 0 ? "" : mem, (int)getpid());
    if (mkdir(cg, 0755) < 0)
        return 0;
    snprintf(path, sizeof path, "echo %d > %s/memory.limit_in_bytes", 96 << 20, cg);
    ok = system(path) == 0;
    if (!ok)
        rmdir(cg);
    return ok;
}

/* The OOM killer ends the service: outcome oom_killed, the cgroup's
 * oom_kills counted; the profiler's output is complete only where it is
 * not the process that was killed (a tracer). */
static void
oom_case(enum mode m)
{
    char cg[4300];
    json_t *j;
    int code;

    need_mode(m);
    if (!make_oom_cgroup(cg, sizeof cg))
        skip();
    j = run_service(m, "oom", A_NONE, cg, &code);
    for (double until = now() + WAIT_S; rmdir(cg) < 0 && now() < until; nap())
        ;
    check_record(j, code, m, "oom",
                 &(struct expect){ "oom_killed", -1, "SIGKILL", "", m == M_TRACER || m == M_STRACE, 0, 0 });
    assert_true(jint(j, "oom_kills") >= 1);
    json_decref(j);
}

static void
test_oom_killed_sampler(void **state)
{
    (void)state;
    oom_case(M_SAMPLER);
}

static void
test_oom_killed_strace(void **state)
{
    (void)state;
    oom_case(M_STRACE);
}

static void
test_oom_killed_massif(void **state)
{
    (void)state;
    oom_case(M_MASSIF);
}

/* ------------------------------------------- a hostile artifacts dir */

/* The artifacts dir is writable by the service: whatever it plants there
 * must neither block ph-init nor redirect the record.  Each test runs
 * `ph-init --record D/ph-exit.json -- sh -c SCRIPT` (D = test_dir/art,
 * $D in SCRIPT), SCRIPT being the service that plants, then exiting 3;
 * ph-init's stderr goes to test_dir/stderr. */
static const char *
art(const char *name)
{
    static char bufs[4][700];
    static int k;
    char *b = bufs[k++ % 4];

    snprintf(b, sizeof bufs[0], "%s/art%s%s", test_dir, name[0] ? "/" : "", name);
    return b;
}

static int
run_hostile(const char *script)
{
    char record[700], env[800];
    char *argv[] = { SHIM, "--record", record, "--", "/bin/sh", "-c", (char *)script, NULL };

    snprintf(record, sizeof record, "%s", art("ph-exit.json"));
    snprintf(env, sizeof env, "%s", art(""));
    setenv("D", env, 1);
    setenv("T", test_dir, 1);
    return wait_exit(spawn_err(argv, tpath("stderr")));
}

/* Whether PATH is a regular file holding a record with exit_code 3. */
static int
is_record(const char *path)
{
    struct stat sb;
    json_t *j;
    int ok;

    if (lstat(path, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1)
        return 0;
    j = load_record(path);
    ok = jint(j, "exit_code") == 3;
    json_decref(j);
    return ok;
}

/* How many entries of test_dir/art begin with PREFIX. */
static int
count_entries(const char *prefix)
{
    DIR *d = opendir(art(""));
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* A FIFO at the temporary name made ph-init block in open() for ever. */
static void
test_record_not_blocked_by_a_fifo(void **state)
{
    (void)state;
    assert_int_equal(run_hostile("mkfifo \"$D/ph-exit.json.tmp\" \"$D/ph-exit.json\" && exit 3"), 3);
    assert_true(is_record(art("ph-exit.json")));
}

/* A symlink or a hard link at either name: the record goes neither
 * through it nor to what it points at. */
static void
test_record_not_written_through_planted_links(void **state)
{
    const char *victim = tu_write("victim", "the service's target\n");
    static const char *const scripts[] = {
        "ln -s \"$T/victim\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln \"$T/victim\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln -s \"$T/victim\" \"$D/ph-exit.json\" && exit 3",
        "ln -s \"$T/nonexistent\" \"$D/ph-exit.json.tmp\" && exit 3",
        "ln -s \"$T/victim\" \"$D/ph-exit.json.tmp\" && ln -s \"$T/victim\" \"$D/ph-exit.json\" && exit 3",
    };

    (void)state;
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        char cmd[800];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", art(""));
        assert_int_equal(system(cmd), 0);
        if (run_hostile(scripts[i]) != 3)
            fail_msg("case %zu: wrong exit status", i);
        if (!file_has(victim, "the service's target\n") || access(tpath("nonexistent"), F_OK) == 0)
            fail_msg("case %zu (%s): the record was written through the link", i, scripts[i]);
        if (!is_record(art("ph-exit.json")))
            fail_msg("case %zu (%s): no record in place", i, scripts[i]);
    }
}

/* A directory at the record's name is moved aside, not lost, and the
 * record takes its place. */
static void
test_record_replaces_a_planted_directory(void **state)
{
    char moved[700];
    DIR *d;
    struct dirent *e;
    int found = 0;

    (void)state;
    assert_int_equal(run_hostile("mkdir -p \"$D/ph-exit.json/sub\" && echo data > \"$D/ph-exit.json/sub/f\" && exit 3"),
                     3);
    assert_true(is_record(art("ph-exit.json")));
    assert_true(file_has(tpath("stderr"), "ph-exit.json"));
    d = opendir(art(""));
    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "ph-exit.json.", 13) == 0) {
            snprintf(moved, sizeof moved, "%s/%s/sub/f", art(""), e->d_name);
            found |= file_has(moved, "data\n");
        }
    closedir(d);
    assert_true(found);
}

/* The service replaces the artifacts dir by a symlink to another: the
 * record stays in the directory ph-init made, and says so on stderr. */
static void
test_record_dir_replaced_by_a_symlink(void **state)
{
    char moved[700];

    (void)state;
    assert_int_equal(mkdir(tpath("elsewhere"), 0755), 0);
    assert_int_equal(run_hostile("mv \"$D\" \"$T/moved\" && ln -s \"$T/elsewhere\" \"$D\" && exit 3"), 3);
    assert_int_equal(access(tpath("elsewhere/ph-exit.json"), F_OK), -1);
    snprintf(moved, sizeof moved, "%s/moved/ph-exit.json", test_dir);
    assert_true(is_record(moved));
    assert_true(file_has(tpath("stderr"), "moved or replaced"));
}

/* The artifacts dir is a symlink already when ph-init starts (left by the
 * service in an earlier life of the container): no record through it. */
static void
test_record_dir_a_symlink_at_start(void **state)
{
    (void)state;
    assert_int_equal(mkdir(tpath("elsewhere"), 0755), 0);
    assert_int_equal(symlink(tpath("elsewhere"), art("")), 0);
    assert_int_equal(run_hostile("exit 3"), 3);
    assert_int_equal(access(tpath("elsewhere/ph-exit.json"), F_OK), -1);
    assert_true(file_has(tpath("stderr"), "cannot open the record's directory"));
}

/* Entries at every name a simple scheme would try next (500 each: far
 * past any retry limit; more only cost the disk's metadata time). */
static void
test_record_despite_many_planted_names(void **state)
{
    char path[700];

    (void)state;
    assert_int_equal(mkdir(art(""), 0777), 0);
    assert_int_equal(mkdir(art("ph-exit.json.tmp"), 0777), 0);
    for (int i = 0; i < 500; i++) {
        snprintf(path, sizeof path, "%s/ph-exit.json.tmp.%d", art(""), i);
        assert_int_equal(mkdir(path, 0777), 0);
        snprintf(path, sizeof path, "%s/ph-exit.json.tmp%d", art(""), i);
        assert_int_equal(mkdir(path, 0777), 0);
    }
    assert_int_equal(run_hostile("exit 3"), 3);
    assert_true(is_record(art("ph-exit.json")));
    assert_int_equal(count_entries("ph-exit.json"), 1 + 1 + 2 * 500); /* no temporary left */
}

/* A full disk: the record cannot be written; ph-init says so, leaves no
 * partial file, and still exits with the command's status.  As root, on
 * a tiny tmpfs in a mount namespace of its own. */
static void
test_record_on_a_full_disk(void **state)
{
    char cmd[2000];
    const char *mnt = tpath("full");
    int rc;

    (void)state;
    if (geteuid() != 0 || system("unshare --mount true >/dev/null 2>&1") != 0)
        skip();
    assert_int_equal(mkdir(mnt, 0755), 0);
    snprintf(cmd, sizeof cmd,
             "unshare --mount sh -c 'mount -t tmpfs -o size=64k none %s || exit 90; "
             "dd if=/dev/zero of=%s/fill bs=4k >/dev/null 2>&1; "
             "%s --record %s/ph-exit.json -- /bin/sh -c \"exit 3\" 2> %s; rc=$?; "
             "ls -A %s > %s; exit $rc'",
             mnt, mnt, SHIM, mnt, tpath("stderr"), mnt, tpath("listing"));
    rc = system(cmd);
    assert_true(WIFEXITED(rc));
    if (WEXITSTATUS(rc) == 90)
        skip();
    assert_int_equal(WEXITSTATUS(rc), 3);
    assert_true(file_has(tpath("stderr"), "cannot write the record"));
    assert_true(file_has(tpath("stderr"), "No space left on device"));
    assert_true(file_has(tpath("listing"), "fill\n"));
    assert_false(file_has(tpath("listing"), "ph-exit"));
}

int
main(void)
{
    /* Crashing services and tracers that mirror them dump no core here. */
    struct rlimit no_core = { 0, 0 };
    setrlimit(RLIMIT_CORE, &no_core);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_record_contents_escaping_and_dir_mode, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_replaced_by_rename, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_fault_matrix_sampler, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_fault_matrix_tracer, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_fault_matrix_strace, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_fault_matrix_massif, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_oom_killed_sampler, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_oom_killed_strace, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_oom_killed_massif, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_blocked_by_a_fifo, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_not_written_through_planted_links, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_replaces_a_planted_directory, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_dir_replaced_by_a_symlink, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_dir_a_symlink_at_start, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_despite_many_planted_names, tu_setup, shim_teardown),
        cmocka_unit_test_setup_teardown(test_record_on_a_full_disk, tu_setup, shim_teardown),
    };
    /* PH_TEST_FILTER=NAME runs one test (the mutation check does). */
    if (getenv("PH_TEST_FILTER"))
        cmocka_set_test_filter(getenv("PH_TEST_FILTER"));
    return cmocka_run_group_tests_name("shim_record", tests, NULL, NULL);
}
