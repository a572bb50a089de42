/* test_jattach.c - HotSpot's dynamic attach from outside the JVM
 * (harness/attach): the pure parts on exact bytes (ph_jattach.c, compiled
 * in), then build/ph-jattach against a stand-in listener that records what
 * it is sent and who sent it (helpers/jattach_fakejvm.c) and against the
 * host's own JDK (skipped where there is none): the perf map written on
 * request, -XX:+DisableAttachMechanism refused with no signal sent, a
 * flag ph-jattach cannot see refused when no socket comes, no SIGQUIT to
 * a process that is no JVM or that does not catch it (either would die of
 * it), `all` in a PID namespace of its own touching its JVM only. */
#include "test_util.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "../../harness/attach/ph_jattach.c"

#define JATTACH "build/ph-jattach"
#define FAKE "build/tests/helpers/jattach_fakejvm"
#define JAVA "/usr/bin/java"
#define JAVAC "/usr/bin/javac"
#define NOBODY 65534
#define WAIT_S 30

/* ---- pure parts ------------------------------------------------------- */

static void
test_request_bytes(void **state)
{
    static const char want[] = "1\0jcmd\0Compiler.perfmap\0\0\0";
    const char *args[] = { "Compiler.perfmap" }, *four[] = { "a", "b", "c", "d" };
    char buf[64];

    (void)state;
    assert_int_equal(ph_jattach_request(buf, sizeof buf, "jcmd", args, 1), sizeof want - 1);
    assert_memory_equal(buf, want, sizeof want - 1);
    assert_int_equal(ph_jattach_request(buf, sizeof buf, "threaddump", NULL, 0), 16);
    assert_memory_equal(buf, "1\0threaddump\0\0\0\0", 16);
    assert_int_equal(ph_jattach_request(buf, sizeof buf, "load", four, 4), -1);
    assert_int_equal(ph_jattach_request(buf, sizeof want - 2, "jcmd", args, 1), -1); /* one byte short */
    assert_int_equal(ph_jattach_request(buf, sizeof want - 1, "jcmd", args, 1), sizeof want - 1);
}

static void
test_reply_code(void **state)
{
    int code = 99;
    size_t body = 0;

    (void)state;
    assert_int_equal(ph_jattach_reply_code("0\n", 2, &code, &body), 1);
    assert_int_equal(code, 0);
    assert_int_equal(body, 2);
    assert_int_equal(ph_jattach_reply_code("-1\njava.lang.X", 14, &code, &body), 1);
    assert_int_equal(code, -1);
    assert_int_equal(body, 3);
    assert_int_equal(ph_jattach_reply_code("10", 2, &code, &body), 0);   /* more to come */
    assert_int_equal(ph_jattach_reply_code("", 0, &code, &body), 0);
    assert_int_equal(ph_jattach_reply_code("x\n", 2, &code, &body), -1);
    assert_int_equal(ph_jattach_reply_code("\n", 1, &code, &body), -1);
    assert_int_equal(ph_jattach_reply_code("-\n", 2, &code, &body), -1);
    assert_int_equal(ph_jattach_reply_code("12345678901\n", 12, &code, &body), -1);
    assert_int_equal(ph_jattach_reply_code("00000000000000000000000000000000", 32, &code, &body), -1);
}

static void
test_status_parse(void **state)
{
    static const char st[] = "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\n"
                             "Uid:\t0\t999\t999\t999\nGid:\t0\t998\t998\t998\nGroups:\t4 24 998 \n"
                             "NSpid:\t4242\t8\nSigQ:\t0/63408\nSigPnd:\t0000000000000000\n"
                             "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\nSigCgt:\t2000000181005ccf\n";
    static const char noquit[] = "State:\tR (running)\nPid:\t77\nUid:\t5\t5\t5\t5\nGid:\t6\t6\t6\t6\n"
                                 "SigCgt:\t0000000000000000\n";
    ph_jattach_proc p;

    (void)state;
    assert_int_equal(ph_jattach_status_parse(st, sizeof st - 1, &p), 0);
    assert_int_equal(p.state, 'S');
    assert_int_equal(p.uid, 999); /* the effective ids, not the real */
    assert_int_equal(p.gid, 998);
    assert_int_equal(p.n_groups, 3);
    assert_int_equal(p.groups[2], 998);
    assert_int_equal(p.nspid, 8); /* its own namespace's pid: the innermost */
    assert_int_equal(p.catches_quit, 1);
    assert_int_equal(ph_jattach_status_parse(noquit, sizeof noquit - 1, &p), 0);
    assert_int_equal(p.catches_quit, 0);
    assert_int_equal(p.nspid, 77); /* no NSpid (before Linux 4.1): Pid */
    assert_int_equal(p.n_groups, 0);
    /* SigCgt 0x4 is SIGQUIT alone */
    assert_int_equal(ph_jattach_status_parse("State:\tS\nPid:\t1\nUid:\t0 0 0 0\nGid:\t0 0 0 0\nSigCgt:\t4\n", 57,
                                             &p), 0);
    assert_int_equal(p.catches_quit, 1);
    assert_int_equal(ph_jattach_status_parse("State:\tS\nPid:\t1\nUid:\t0 0 0 0\nGid:\t0 0 0 0\n", 46, &p), -1);
    assert_int_equal(ph_jattach_status_parse("State:\tS\nPid:\t1\nUid:\t0 0\nGid:\t0 0 0 0\nSigCgt:\t4\n", 51, &p), -1);
    assert_int_equal(ph_jattach_status_parse("State:\tS\nPid:\t1\nUid:\t0 0 0 0\nGid:\t0 0 0 0\nSigCgt:\tzz\n", 58,
                                             &p), -1);
}

static void
test_maps_jvm(void **state)
{
    static const char jvm[] = "7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so\n";
    static const char other[] = "7f00-7f10 r-xp 00000000 08:01 1 /usr/lib/libjvm.so.bak\n"
                                "7f00-7f10 r-xp 00000000 08:01 1 /opt/x/libjvm.sox\n"
                                "7f00-7f10 r-xp 00000000 08:01 1 /usr/bin/sleep\n";

    (void)state;
    assert_int_equal(ph_jattach_maps_jvm(jvm, sizeof jvm - 1), 1);
    assert_int_equal(ph_jattach_maps_jvm(jvm, sizeof jvm - 2), 1); /* no final newline */
    assert_int_equal(ph_jattach_maps_jvm(other, sizeof other - 1), 0);
    assert_int_equal(ph_jattach_maps_jvm("", 0), 0);
}

#define DISABLED(cmd, env) ph_jattach_attach_disabled(cmd, sizeof cmd - 1, env, sizeof env - 1)

static void
test_attach_disabled(void **state)
{
    (void)state;
    assert_int_equal(DISABLED("java\0-XX:+DisableAttachMechanism\0Main\0", ""), 1);
    assert_int_equal(DISABLED("java\0-XX:DisableAttachMechanism=true\0Main\0", ""), 1);
    assert_int_equal(DISABLED("java\0-Xmx1g\0Main\0", ""), 0);
    /* the program's own arguments are not the JVM's */
    assert_int_equal(DISABLED("java\0Main\0-XX:+DisableAttachMechanism\0", ""), 0);
    assert_int_equal(DISABLED("java\0-jar\0app.jar\0-XX:+DisableAttachMechanism\0", ""), 0);
    /* nor is a class path's value */
    assert_int_equal(DISABLED("java\0-cp\0-XX:+DisableAttachMechanism\0Main\0", ""), 0);
    assert_int_equal(DISABLED("java\0-cp\0/app\0-XX:+DisableAttachMechanism\0Main\0", ""), 1);
    /* the environment, in HotSpot's order; the last word wins */
    assert_int_equal(DISABLED("java\0Main\0", "PATH=/bin\0JAVA_TOOL_OPTIONS=-Xss1m -XX:+DisableAttachMechanism\0"), 1);
    assert_int_equal(DISABLED("java\0-XX:-DisableAttachMechanism\0Main\0",
                              "JAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism\0"), 0);
    assert_int_equal(DISABLED("java\0-XX:-DisableAttachMechanism\0Main\0",
                              "_JAVA_OPTIONS=-XX:+DisableAttachMechanism\0"), 1);
    assert_int_equal(DISABLED("java\0Main\0", "JDK_JAVA_OPTIONS=-XX:+DisableAttachMechanism\0"), 1);
    assert_int_equal(DISABLED("java\0Main\0", "XJAVA_TOOL_OPTIONS=-XX:+DisableAttachMechanism\0"), 0);
    assert_int_equal(ph_jattach_attach_disabled("java\0Main", 9, NULL, 0), 0);
}

/* ---- processes -------------------------------------------------------- */

static pid_t kids[8];
static int n_kids;

static int
teardown(void **state)
{
    while (n_kids > 0) {
        pid_t p = kids[--n_kids];
        char f[64];

        kill(p, SIGKILL);
        waitpid(p, NULL, 0);
        /* what a JVM killed so leaves in /tmp */
        snprintf(f, sizeof f, "/tmp/.java_pid%ld", (long)p);
        unlink(f);
        snprintf(f, sizeof f, "/tmp/perf-%ld.map", (long)p);
        unlink(f);
    }
    return tu_teardown(state);
}

static const char *
tp(const char *name)
{
    static char bufs[8][600];
    static int k;
    char *b = bufs[k++ % 8];

    snprintf(b, sizeof bufs[0], "%s/%s", test_dir, name);
    return b;
}

/* ARGV started with stdout and stderr to OUT, as UID (-1: ours). */
static pid_t
start(char *const argv[], const char *out, long uid)
{
    pid_t p = fork();

    assert_true(p >= 0);
    if (p == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);

        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        if (uid >= 0 && (setgid((gid_t)uid) < 0 || setuid((uid_t)uid) < 0))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    kids[n_kids++] = p;
    return p;
}

/* Still running (not a zombie: it is our child)? */
static int
alive(pid_t p)
{
    return waitpid(p, NULL, WNOHANG) == 0;
}

/* Its exit status, waited for; -1 when a signal ended it. */
static int
reap(pid_t p)
{
    int st;

    assert_int_equal(waitpid(p, &st, 0), p);
    for (int i = 0; i < n_kids; i++)
        if (kids[i] == p)
            kids[i] = kids[--n_kids];
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int
wait_exists(const char *path)
{
    for (int i = 0; i < WAIT_S * 100; i++) {
        if (access(path, F_OK) == 0)
            return 1;
        usleep(10 * 1000);
    }
    return 0;
}

static char *
slurp(const char *path, size_t *len)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* ph-jattach ARGS... (NULL-terminated), stdout to test_dir/jout and
 * stderr to test_dir/jerr: its exit status. */
static int
jattach(const char *a0, ...)
{
    char *argv[16] = { JATTACH };
    int n = 1, st;
    va_list ap;
    pid_t p;

    va_start(ap, a0);
    for (const char *a = a0; a != NULL && n < 15; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    fflush(NULL);
    p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        int o = open(tp("jout"), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(tp("jerr"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    assert_int_equal(waitpid(p, &st, 0), p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The stand-in JVM in MODE as nobody, answering REPLY, ready: its pid. */
static pid_t
fake(const char *mode, const char *reply)
{
    char *argv[] = { FAKE, (char *)test_dir, (char *)mode, (char *)reply, NULL };
    int fd;
    pid_t p;

    assert_int_equal(chmod(test_dir, 0777), 0);
    fd = open(tp("libjvm.so"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    close(fd);
    p = start(argv, tp("fake.out"), NOBODY);
    assert_true(wait_exists(tp("ready")));
    return p;
}

static void
trigger_gone(pid_t p)
{
    char fn[64];

    snprintf(fn, sizeof fn, "/tmp/.attach_pid%ld", (long)p);
    assert_int_equal(access(fn, F_OK), -1);
}

/* As root, to a JVM of another user: the JVM's uid and gid taken, the
 * trigger made and removed, the exact request, the answer on stdout. */
static void
test_fake_answer_as_its_user(void **state)
{
    static const char want[] = "1\0jcmd\0Compiler.perfmap\0\0\0";
    char pidtxt[32];
    size_t len;
    pid_t p;
    const char *req;

    (void)state;
    if (geteuid() != 0)
        skip(); /* needs to run the stand-in as another user */
    p = fake("answer", "0\nperf map written\n");
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach(pidtxt, "jcmd", "Compiler.perfmap", NULL), 0);
    assert_int_equal(reap(p), 0);
    req = slurp(tp("request"), &len);
    assert_int_equal(len, sizeof want - 1);
    assert_memory_equal(req, want, sizeof want - 1);
    assert_string_equal(slurp(tp("peer"), NULL), "65534 65534\n");
    assert_string_equal(slurp(tp("jout"), NULL), "perf map written\n");
    assert_string_equal(slurp(tp("fake.out"), NULL), ""); /* no thread dump: the trigger was there */
    trigger_gone(p);
}

/* A JVM just started, whose first listener's socket its VM start
 * removed: SIGQUIT again, and the second listener answers. */
static void
test_fake_first_listener_lost(void **state)
{
    char pidtxt[32];
    pid_t p;

    (void)state;
    if (geteuid() != 0)
        skip();
    p = fake("starting", "0\nperf map written\n");
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach("-t", "10", pidtxt, "jcmd", "Compiler.perfmap", NULL), 0);
    assert_int_equal(reap(p), 0);
    assert_string_equal(slurp(tp("jout"), NULL), "perf map written\n");
    assert_string_equal(slurp(tp("fake.out"), NULL), ""); /* no thread dump */
    trigger_gone(p);
}

/* A result other than 0: exit 1, the JVM's reason said. */
static void
test_fake_failure_said(void **state)
{
    char pidtxt[32];
    pid_t p;

    (void)state;
    if (geteuid() != 0)
        skip();
    p = fake("answer", "-1\njava.lang.IllegalArgumentException: Unknown diagnostic command\n");
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach(pidtxt, "jcmd", "No.such", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "`jcmd No.such` failed with result -1: "
                                                      "java.lang.IllegalArgumentException: Unknown diagnostic command"));
    reap(p);
}

/* A JVM that takes the connection and never answers: the deadline. */
static void
test_fake_mute_deadline(void **state)
{
    char pidtxt[32];
    pid_t p;

    (void)state;
    if (geteuid() != 0)
        skip();
    p = fake("mute", NULL);
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach("-t", "1", pidtxt, "jcmd", "Compiler.perfmap", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "no answer within the deadline"));
    assert_true(wait_exists(tp("request"))); /* it did connect */
}

/* SIGQUIT taken, no socket ever (attach disabled where ph-jattach does
 * not look): refused, the JVM untouched, the trigger removed. */
static void
test_fake_silent_refused(void **state)
{
    char pidtxt[32];
    pid_t p;

    (void)state;
    if (geteuid() != 0)
        skip();
    p = fake("silent", NULL);
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach("-t", "1", pidtxt, "jcmd", "Compiler.perfmap", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "no attach socket /tmp/.java_pid"));
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "-XX:+DisableAttachMechanism"));
    assert_true(alive(p));
    trigger_gone(p);
}

/* No SIGQUIT handler (-Xrs, or a JVM still starting): never signalled,
 * which would end it. */
static void
test_fake_nohandler_not_signalled(void **state)
{
    char pidtxt[32];
    pid_t p;

    (void)state;
    if (geteuid() != 0)
        skip();
    p = fake("nohandler", NULL);
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach("-t", "1", pidtxt, "jcmd", "Compiler.perfmap", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "does not catch SIGQUIT"));
    usleep(100 * 1000);
    assert_true(alive(p));
}

/* A process that is no JVM (sleep would die of SIGQUIT): refused. */
static void
test_not_a_jvm(void **state)
{
    char *argv[] = { "/bin/sleep", "60", NULL }, pidtxt[32];
    pid_t p;

    (void)state;
    p = start(argv, tp("sleep.out"), -1);
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach(pidtxt, "jcmd", "Compiler.perfmap", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "not a JVM"));
    usleep(100 * 1000);
    assert_true(alive(p));
    assert_int_equal(jattach("x", "jcmd", NULL), 2);
    assert_int_equal(jattach("-t", "0", pidtxt, "jcmd", NULL), 2);
    assert_int_equal(jattach(pidtxt, "load", "a", "b", "c", "d", NULL), 2);
}

/* ---- the host's JDK ---------------------------------------------------- */

static const char *
classes(void)
{
    static char dir[] = "build/tests/jattach-classes";
    char cmd[400];

    if (access(JAVA, X_OK) != 0 || access(JAVAC, X_OK) != 0)
        return NULL;
    if (access("build/tests/jattach-classes/HotCool.class", R_OK) != 0) {
        snprintf(cmd, sizeof cmd, JAVAC " -d %s tests/data/java/HotCool.java", dir);
        assert_int_equal(system(cmd), 0);
    }
    return dir;
}

/* HotCool for 20 s of CPU with FLAG first, its output to test_dir/jvm.out,
 * once its SIGQUIT handler is in: its pid. */
static pid_t
jvm(const char *flag)
{
    char *argv[] = { JAVA, (char *)flag, "-cp", (char *)classes(), "HotCool", "20000", "20", NULL };
    char path[64];
    pid_t p = start(argv, tp("jvm.out"), -1);

    snprintf(path, sizeof path, "/proc/%ld/status", (long)p);
    for (int i = 0; i < WAIT_S * 100; i++) {
        ph_jattach_proc st;
        size_t len;
        const char *s = slurp(path, &len);

        if (ph_jattach_status_parse(s, len, &st) == 0 && st.catches_quit)
            return p;
        usleep(10 * 1000);
    }
    fail_msg("the JVM did not take SIGQUIT within %d s", WAIT_S);
    return -1;
}

static void
test_jvm_perfmap(void **state)
{
    char pidtxt[32], map[64];
    pid_t p;

    (void)state;
    if (classes() == NULL)
        skip();
    p = jvm("-XX:+UseSerialGC");
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    snprintf(map, sizeof map, "/tmp/perf-%ld.map", (long)p);
    unlink(map);
    /* asked again until the JIT has compiled HotCool's methods */
    for (int i = 0; i < WAIT_S * 10; i++) {
        assert_int_equal(jattach(pidtxt, "jcmd", "Compiler.perfmap", NULL), 0);
        if (strstr(slurp(map, NULL), "HotCool") != NULL)
            break;
        usleep(100 * 1000);
    }
    assert_non_null(strstr(slurp(map, NULL), "HotCool"));
    unlink(map);
    /* the listener stays: a second request goes straight to it */
    assert_int_equal(jattach(pidtxt, "jcmd", "VM.version", NULL), 0);
    assert_non_null(strstr(slurp(tp("jout"), NULL), "JDK"));
    assert_int_equal(strstr(slurp(tp("jvm.out"), NULL), "Full thread dump") == NULL, 1);
    assert_true(alive(p));
}

/* The flag where ph-jattach reads it: refused, no signal (no thread dump
 * in the JVM's output). */
static void
test_jvm_attach_disabled(void **state)
{
    char pidtxt[32];
    pid_t p;

    (void)state;
    if (classes() == NULL)
        skip();
    p = jvm("-XX:+DisableAttachMechanism");
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach(pidtxt, "jcmd", "Compiler.perfmap", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "it runs with -XX:+DisableAttachMechanism"));
    usleep(200 * 1000);
    assert_null(strstr(slurp(tp("jvm.out"), NULL), "Full thread dump"));
    assert_true(alive(p));
}

/* The flag in an @argfile: SIGQUIT sent (a thread dump), no socket,
 * refused by the deadline, the JVM running on. */
static void
test_jvm_disabled_in_argfile(void **state)
{
    char pidtxt[32], arg[700];
    pid_t p;

    (void)state;
    if (classes() == NULL)
        skip();
    tu_write("args", "-XX:+DisableAttachMechanism\n");
    snprintf(arg, sizeof arg, "@%s", tp("args"));
    p = jvm(arg);
    snprintf(pidtxt, sizeof pidtxt, "%ld", (long)p);
    assert_int_equal(jattach("-t", "2", pidtxt, "jcmd", "Compiler.perfmap", NULL), 1);
    assert_non_null(strstr(slurp(tp("jerr"), NULL), "no attach socket"));
    assert_true(alive(p));
}

/* `all` in a PID namespace of its own (and a /tmp of its own): its JVM
 * asked, the other process there never signalled.  Asked again until the
 * map names HotCool's compiled methods (a JVM asked before it compiled
 * them writes a map without: on a loaded machine, the first answers). */
static void
test_all_in_namespace(void **state)
{
    char cmd[2000];
    const char *out;

    (void)state;
    if (classes() == NULL || geteuid() != 0 || system("unshare --pid --fork --mount-proc true 2>/dev/null") != 0)
        skip();
    /* the classes and ph-jattach copied out of /tmp first: a checkout
     * under /tmp (a fresh clone there) is hidden by the tmpfs */
    snprintf(cmd, sizeof cmd,
             "unshare --pid --fork --mount-proc sh -c '"
             "d=/run/ph-jattach-test-%ld; rm -rf $d; mkdir -p $d && cp -R %s/. $d/ && cp " JATTACH " $d/ || exit 8; "
             "mount -t tmpfs tmpfs /tmp || exit 9; "
             "sleep 60 & s=$!; " JAVA " -cp $d HotCool 20000 20 >/dev/null 2>&1 & j=$!; "
             "for i in $(seq 300); do "
             "  $d/ph-jattach all jcmd Compiler.perfmap >/dev/null 2>&1 && grep -q HotCool /tmp/perf-$j.map && break; "
             "  sleep 0.1; "
             "done; "
             "grep -q HotCool /tmp/perf-$j.map && echo map; kill -0 $s && echo sleep-alive; "
             "[ $(ls /tmp/perf-*.map | wc -l) = 1 ] && echo one-map; "
             /* the markers are the test; a JVM that ended its 20 s of
              * CPU first is no failure of the kill */
             "kill $j $s 2>/dev/null; rm -rf $d; exit 0' > %s 2>&1",
             (long)getpid(), classes(), tp("ns.out"));
    assert_int_equal(system(cmd), 0);
    out = slurp(tp("ns.out"), NULL);
    if ((strncmp(out, "map\n", 4) != 0 && strstr(out, "\nmap\n") == NULL) || strstr(out, "sleep-alive\n") == NULL ||
        strstr(out, "one-map\n") == NULL)
        fail_msg("in the namespace: %s", out);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_bytes),
        cmocka_unit_test(test_reply_code),
        cmocka_unit_test(test_status_parse),
        cmocka_unit_test(test_maps_jvm),
        cmocka_unit_test(test_attach_disabled),
        cmocka_unit_test_setup_teardown(test_fake_answer_as_its_user, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_first_listener_lost, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_failure_said, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_mute_deadline, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_silent_refused, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_fake_nohandler_not_signalled, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_jvm, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_jvm_perfmap, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_jvm_attach_disabled, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_jvm_disabled_in_argfile, tu_setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_in_namespace, tu_setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
