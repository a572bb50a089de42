/* test_rundir.c - the run-dir store without an Engine: reserved names and
 * what a container's file on one is kept as, the limits and the figures
 * of their hints, and whole runs completed from an archive made here (the
 * order: reserved names freed before service.log and run.json, run.json's
 * counts, the report, the rename, the links; a retry after a crash past
 * the rename; min_free kept by service.log and run.json), and the profile
 * a run records. */
#include "test_util.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "ph_rundir.h"

/* ---- reserved names ----------------------------------------------------- */

static void
test_reserved_names(void **state)
{
    static const char *const yes[] = { "run.json", "summary.json", "service.log", "index.html", "latest",
                                       "report.html", "report-flamegraph-1.svg", "report", "harness.folded",
                                       "harness.trace.json", "harness.anything", "tasks.json" };
    static const char *const no[] = { "strace.log", "run.json.1", "Run.json", "service.log.1", "xreport.html",
                                      "harness", "container-run.json", "latest2", "ph-exit.json", "convert.json",
                                      "summary.json~", "index.htm" };
    ph_artifact_spec arts[] = { { "strace.log*", "strace.log", "strace", 0 }, { "x*", NULL, NULL, 0 } };
    ph_profile p = { .artifacts = arts, .n_artifacts = 2 };

    (void)state;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        assert_true(ph_rundir_reserved(yes[i]));
        assert_true(ph_rundir_reserved_run_name(yes[i], &p));
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(ph_rundir_reserved(no[i]));
    /* a compat link is the artifact's own name in a run dir, but no run
     * dir may be named like it (nor like the lock or a temp entry) */
    assert_false(ph_rundir_reserved("strace.log"));
    assert_true(ph_rundir_reserved_run_name("strace.log", &p));
    assert_false(ph_rundir_reserved_run_name("strace.log", NULL));
    assert_true(ph_rundir_reserved_run_name(".lock", NULL));
    assert_true(ph_rundir_reserved_run_name(".incoming-x", NULL));
    assert_false(ph_rundir_reserved_run_name("20261122T101500Z-strace", &p));
}

static void
test_kept_name(void **state)
{
    char out[NAME_MAX + 1], longname[NAME_MAX + 1];

    (void)state;
    assert_int_equal(ph_rundir_kept_name("run.json", 1, out, sizeof out), 0);
    assert_string_equal(out, "container-run.json");
    assert_false(ph_rundir_reserved(out));
    assert_int_equal(ph_rundir_kept_name("run.json", 2, out, sizeof out), 0);
    assert_string_equal(out, "container-2-run.json");
    assert_int_equal(ph_rundir_kept_name("report.html", 17, out, sizeof out), 0);
    assert_string_equal(out, "container-17-report.html");
    /* a long name is cut to a file name's length */
    memset(longname, 'r', NAME_MAX);
    longname[NAME_MAX] = '\0';
    memcpy(longname, "report", 6);
    assert_int_equal(ph_rundir_kept_name(longname, 1, out, sizeof out), 0);
    assert_int_equal(strlen(out), NAME_MAX);
    assert_int_equal(strncmp(out, "container-report", 16), 0);
    assert_int_equal(ph_rundir_kept_name("run.json", 1, out, 8), -1);
}

/* ---- limits ------------------------------------------------------------ */

static void
test_limits_of(void **state)
{
    ph_tar_limits flags = { .max_bytes = 1000 };
    ph_profile p = { .path = "/p/strace.yaml", .collect = { .max_bytes = 5, .max_entries = 7 } };
    ph_rundir_limits l;

    (void)state;
    ph_rundir_limits_of(&flags, &p, &l);
    assert_int_equal(l.lim.max_bytes, 1000); /* the flag wins */
    assert_int_equal(l.from[PH_TAR_LIMIT_BYTES], 'f');
    assert_int_equal(l.lim.max_entries, 7);  /* then the profile */
    assert_int_equal(l.from[PH_TAR_LIMIT_ENTRIES], 'p');
    assert_int_equal(l.lim.min_free_bytes, 0); /* then the default */
    assert_int_equal(l.from[PH_TAR_LIMIT_FREE], 'd');
    assert_string_equal(l.profile_path, "/p/strace.yaml");
    ph_rundir_limits_of(NULL, NULL, &l);
    assert_int_equal(l.from[PH_TAR_LIMIT_BYTES], 'd');
    assert_string_equal(l.profile_path, "");
}

static void
test_room_and_hint_figures(void **state)
{
    char b[32];

    (void)state;
    assert_true(ph_rundir_room(1000, 100, 900));
    assert_false(ph_rundir_room(1000, 100, 901));
    assert_false(ph_rundir_room(99, 100, 0));
    assert_true(ph_rundir_room(100, 100, 0));
    assert_true(ph_rundir_room(0, PH_TAR_NO_LIMIT, 1ull << 40));
    /* lower min_free: less than the limit that stopped it */
    assert_int_equal(ph_rundir_min_free_hint(256 << 10), 128 << 10);
    assert_int_equal(ph_rundir_min_free_hint(1ull << 30), 512ull << 20);
    assert_int_equal(ph_rundir_min_free_hint(3000), 1024);
    assert_int_equal(ph_rundir_min_free_hint(1000), 500);
    assert_int_equal(ph_rundir_min_free_hint(0), 0);
    assert_true(ph_rundir_min_free_hint(262143) < 262143);
    /* raise the others: twice, never wrapping */
    assert_int_equal(ph_rundir_raise_hint(64ull << 20), 128ull << 20);
    assert_int_equal(ph_rundir_raise_hint(UINT64_MAX - 1), UINT64_MAX - 1);
    assert_string_equal(ph_rundir_size_arg(128ull << 20, b), "128MiB");
    assert_string_equal(ph_rundir_size_arg(32ull << 30, b), "32GiB");
    assert_string_equal(ph_rundir_size_arg(1000, b), "1000");
    assert_string_equal(ph_rundir_size_arg(3ull << 10, b), "3KiB");
}

static void
test_limit_hint_text(void **state)
{
    ph_rundir_limits l;
    ph_tar_limits flags = { .max_entries = 10 };
    ph_profile p = { .path = "/p/strace.yaml", .collect = { .min_free_bytes = 256 << 10 } };
    ph_error_t err = NULL;

    (void)state;
    ph_rundir_limits_of(&flags, &p, &l);
    ph_fail(&err, 0, "writing `service.log` would leave less free space");
    assert_int_equal(ph_rundir_limit_hint(&l, PH_TAR_LIMIT_FREE, 256 << 10, "stop", "worker", "abcdef", &err), -1);
    assert_non_null(strstr(err->msg, "(set in /p/strace.yaml)"));
    assert_non_null(strstr(err->hint, "--min-free 128KiB worker"));
    assert_non_null(strstr(err->hint, "min_free: 128KiB"));
    assert_null(strstr(err->hint, "256MiB"));
    ph_error_free(&err);

    /* the default, as the extraction resolved it (5 % of a small disk) */
    ph_rundir_limits_of(NULL, NULL, &l);
    ph_fail(&err, 0, "x");
    ph_rundir_limit_hint(&l, PH_TAR_LIMIT_FREE, 262144, "collect", "front", "abcdef", &err);
    assert_non_null(strstr(err->msg, "(the default)"));
    assert_non_null(strstr(err->hint, "`profharness collect --min-free 128KiB front`"));
    ph_error_free(&err);

    ph_rundir_limits_of(&flags, &p, &l);
    ph_fail(&err, 0, "x");
    ph_rundir_limit_hint(&l, PH_TAR_LIMIT_ENTRIES, 10, "stop", "worker", "abcdef", &err);
    assert_non_null(strstr(err->msg, "(set with --max-entries)"));
    assert_non_null(strstr(err->hint, "`profharness stop --max-entries 20 worker`"));
    ph_error_free(&err);

    ph_fail(&err, 0, "x");
    ph_rundir_limit_hint(&l, PH_TAR_LIMIT_BYTES, 0, "stop", "worker", "abcdef", &err);
    assert_non_null(strstr(err->msg, "(the default)"));
    assert_non_null(strstr(err->hint, "--max-bytes 32GiB worker"));
    assert_non_null(strstr(err->hint, "kept"));
    ph_error_free(&err);
}

/* ---- completing runs ---------------------------------------------------- */

typedef struct tarbuf {
    char *data;
    size_t len, cap;
} tarbuf;

static la_ssize_t
tb_write(struct archive *a, void *ud, const void *buf, size_t n)
{
    tarbuf *t = ud;

    (void)a;
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2;
        t->data = realloc(t->data, t->cap);
        assert_non_null(t->data);
    }
    memcpy(t->data + t->len, buf, n);
    t->len += n;
    return (la_ssize_t)n;
}

static void
tb_add(struct archive *a, const char *name, unsigned type, const char *content)
{
    struct archive_entry *e = archive_entry_new();
    size_t len = content ? strlen(content) : 0;

    archive_entry_set_pathname(e, name);
    archive_entry_set_filetype(e, type);
    archive_entry_set_perm(e, type == AE_IFDIR ? 0755 : 0644);
    archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)len : 0);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (type == AE_IFREG && len > 0)
        assert_int_equal(archive_write_data(a, content, len), (la_ssize_t)len);
    archive_entry_free(e);
}

/* What a hostile container leaves in /opt/profiling/svc: its artifact,
 * and files and a directory on the harness's own names. */
static void
hostile_archive(tarbuf *t)
{
    struct archive *a = archive_write_new();

    memset(t, 0, sizeof *t);
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open(a, t, NULL, tb_write, NULL), ARCHIVE_OK);
    tb_add(a, "svc", AE_IFDIR, NULL);
    tb_add(a, "svc/strace.log", AE_IFREG, "1 write(1, \"x\", 1) = 1 <0.000010>\n");
    tb_add(a, "svc/run.json", AE_IFDIR, NULL);
    tb_add(a, "svc/run.json/inside", AE_IFREG, "planted");
    tb_add(a, "svc/service.log", AE_IFREG, "not the service's output");
    tb_add(a, "svc/report.html", AE_IFREG, "<script>x</script>");
    tb_add(a, "svc/container-report.html", AE_IFREG, "taken");
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

typedef struct run_ud {
    tarbuf tar;
    size_t log_bytes;       /* what service.log gets */
    size_t meta_pad;        /* a string this long in run.json */
    int examined_saw_reserved;
    int examined;
    int plant_at;           /* examine: an empty directory at the run's name, as a racer would */
    const char *container;
} run_ud;

static int
fetch(void *ud, ph_rundir_feed_cb feed, void *feed_ud, ph_error_t *err)
{
    run_ud *u = ud;

    /* in pieces, as a stream comes */
    for (size_t o = 0; o < u->tar.len; o += 700)
        if (feed(feed_ud, u->tar.data + o, u->tar.len - o < 700 ? u->tar.len - o : 700, err) < 0)
            return -1;
    return 0;
}

static void
examine(void *ud, ph_rundir *rd)
{
    run_ud *u = ud;
    struct stat st;

    u->examined++;
    if (u->plant_at > 0)
        assert_int_equal(mkdirat(u->plant_at, "P", 0755), 0);
    u->examined_saw_reserved = fstatat(ph_rundir_fd(rd), "run.json", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
                               fstatat(ph_rundir_fd(rd), "service.log", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int
service_log(void *ud, ph_rundir *rd, ph_error_t *err)
{
    run_ud *u = ud;
    char chunk[65536];
    int fd = -1, rc = 0;

    if (ph_rundir_create(rd, "service.log", &fd, err) < 0)
        return -1;
    memset(chunk, 'L', sizeof chunk);
    memcpy(chunk, "hello\n", 6);
    for (size_t o = 0; rc == 0 && o < u->log_bytes; o += sizeof chunk) {
        size_t n = u->log_bytes - o < sizeof chunk ? u->log_bytes - o : sizeof chunk;
        rc = ph_rundir_write(rd, fd, "service.log", chunk, n, err);
    }
    close(fd);
    return rc;
}

static json_t *
meta(void *ud, ph_rundir *rd)
{
    run_ud *u = ud;
    json_t *m = json_pack("{s:s, s:s, s:s, s:s}", "service", "svc", "mode", "strace", "run", "R", "container",
                          u->container);
    char *pad;

    (void)rd;
    if (u->meta_pad > 0) {
        pad = malloc(u->meta_pad + 1);
        assert_non_null(pad);
        memset(pad, 'p', u->meta_pad);
        pad[u->meta_pad] = '\0';
        json_object_set_new(m, "pad", json_string(pad));
        free(pad);
    }
    return m;
}

static char out_dir[600];

static int
open_svc(void)
{
    char path[600];
    int fd;

    snprintf(path, sizeof path, "%s/out", test_dir);
    mkdir(path, 0755);
    snprintf(out_dir, sizeof out_dir, "%s", path);
    snprintf(path, sizeof path, "%s/out/svc", test_dir);
    mkdir(path, 0755);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static json_t *
load_json_at(const char *rel)
{
    char path[600];
    json_error_t je;

    snprintf(path, sizeof path, "%s/%s", test_dir, rel);
    return json_load_file(path, 0, &je);
}

static char *
read_at(const char *rel)
{
    static char buf[4096];
    char path[600];
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "%s/%s", test_dir, rel);
    f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static int
temps_left(int svcfd)
{
    DIR *d = fdopendir(dup(svcfd));
    struct dirent *de;
    int n = 0;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        n += strncmp(de->d_name, PH_RUNDIR_TEMP_PREFIX, strlen(PH_RUNDIR_TEMP_PREFIX)) == 0;
    closedir(d);
    return n;
}

static int
exists(const char *rel)
{
    char path[600];
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", test_dir, rel);
    return lstat(path, &st) == 0;
}

static void
test_complete_hostile_names(void **state)
{
    ph_artifact_spec arts[] = { { "strace.log*", "strace.log", "strace", 0 } };
    ph_profile p = { .name = "strace", .path = "strace.yaml", .artifacts = arts, .n_artifacts = 1 };
    run_ud u = { .log_bytes = 6, .container = "cid1" };
    ph_rundir_steps steps = { &u, fetch, examine, service_log, meta };
    ph_rundir_done done;
    ph_error_t err = NULL;
    int svcfd = open_svc();
    ph_rundir_spec spec = { .svcfd = svcfd, .out_dir = out_dir, .service = "svc", .name = "R", .container = "cid1",
                            .cmd = "stop", .profile = &p, .links = 1 };
    json_t *m, *ren;
    char buf[64];
    ssize_t n;

    (void)state;
    hostile_archive(&u.tar);
    tu_capture_begin();
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
    {
        const char *said = tu_capture_end();

        /* said, once per name, escaped as the container's data */
        assert_non_null(strstr(said, "the container wrote `run.json`, a name of the harness's own: kept as "
                                     "`container-run.json`"));
        assert_non_null(strstr(said, "`service.log`"));
    }
    assert_int_equal(done.resumed, 0);
    assert_true(strlen(done.run_dir) > 10 && strcmp(done.run_dir + strlen(done.run_dir) - 10, "/out/svc/R") == 0);
    assert_int_equal(u.examined, 1);
    assert_false(u.examined_saw_reserved); /* freed before anyone looks */
    /* the container's files, kept under other names */
    assert_string_equal(read_at("out/svc/R/container-run.json/inside"), "planted");
    assert_string_equal(read_at("out/svc/R/container-service.log"), "not the service's output");
    assert_string_equal(read_at("out/svc/R/container-2-report.html"), "<script>x</script>");
    assert_string_equal(read_at("out/svc/R/container-report.html"), "taken");
    /* the harness's own */
    assert_string_equal(read_at("out/svc/R/service.log"), "hello\n");
    m = load_json_at("out/svc/R/run.json");
    assert_non_null(m);
    /* the counts of what was extracted: 5 files, their bytes */
    assert_int_equal(json_integer_value(json_object_get(m, "files")), 5);
    assert_int_equal(json_integer_value(json_object_get(m, "bytes")),
                     strlen("1 write(1, \"x\", 1) = 1 <0.000010>\n") + strlen("planted") +
                         strlen("not the service's output") + strlen("<script>x</script>") + strlen("taken"));
    assert_string_equal(json_string_value(json_object_get(m, "dir")), "R");
    ren = json_object_get(m, "renamed");
    assert_string_equal(json_string_value(json_object_get(ren, "run.json")), "container-run.json");
    assert_string_equal(json_string_value(json_object_get(ren, "report.html")), "container-2-report.html");
    json_decref(m);
    /* the report, of this run, under its final name */
    assert_true(exists("out/svc/R/report.html"));
    assert_true(exists("out/svc/R/summary.json"));
    m = load_json_at("out/svc/R/summary.json");
    assert_string_equal(json_string_value(json_object_get(m, "run")), "R");
    json_decref(m);
    assert_int_equal(done.reported, 1);
    assert_non_null(strstr(done.headline.report, "/out/svc/R/report.html"));
    /* links */
    n = readlinkat(svcfd, "latest", buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "R");
    n = readlinkat(svcfd, "strace.log", buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_string_equal(buf, "R/strace.log");
    assert_int_equal(temps_left(svcfd), 0);

    /* A retry of the same container (a harness killed after the rename):
     * its complete run is found and finished, no second copy. */
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
    assert_int_equal(done.resumed, 1);
    assert_int_equal(u.examined, 1); /* nothing extracted again */
    assert_false(exists("out/svc/R.2"));
    /* Another container whose run label is the same: a run of its own. */
    u.container = spec.container = "cid2";
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
    assert_int_equal(done.resumed, 0);
    assert_true(exists("out/svc/R.2/run.json"));
    assert_non_null(strstr(done.run_dir, "/out/svc/R.2"));
    /* snapshots of one container in one second: a copy each, no links */
    spec.links = 0;
    spec.name = "S";
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
    assert_int_equal(done.resumed, 0);
    assert_true(exists("out/svc/S.2/run.json"));
    n = readlinkat(svcfd, "latest", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    assert_string_equal(buf, "R.2");
    free(u.tar.data);
    close(svcfd);
}

static void
test_complete_links_never_cost_the_run(void **state)
{
    ph_artifact_spec arts[] = { { "strace.log*", "strace.log", "strace", 0 } };
    ph_profile p = { .name = "strace", .path = "strace.yaml", .artifacts = arts, .n_artifacts = 1 };
    run_ud u = { .log_bytes = 6, .container = "cid1" };
    ph_rundir_steps steps = { &u, fetch, NULL, service_log, meta };
    ph_rundir_done done;
    ph_error_t err = NULL;
    int svcfd = open_svc();
    ph_rundir_spec spec = { .svcfd = svcfd, .out_dir = out_dir, .service = "svc", .name = "R", .container = "cid1",
                            .cmd = "stop", .profile = &p, .links = 1 };
    struct stat st;

    (void)state;
    hostile_archive(&u.tar);
    /* directories planted where the links go */
    assert_int_equal(mkdirat(svcfd, "latest", 0755), 0);
    tu_write("out/svc/latest/keep", "k");
    assert_int_equal(mkdirat(svcfd, "strace.log", 0755), 0);
    tu_capture_begin();
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
    assert_non_null(strstr(tu_capture_end(), "is no link profharness made"));
    assert_true(exists("out/svc/R/run.json"));
    assert_true(exists("out/svc/R/report.html"));
    assert_true(exists("out/svc/latest/keep")); /* left as it was */
    assert_int_equal(fstatat(svcfd, "strace.log", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISDIR(st.st_mode));
    /* a run label that is a name of the harness's own: refused */
    spec.name = "strace.log";
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), -1);
    ph_error_free(&err);
    spec.name = "latest";
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), -1);
    ph_error_free(&err);
    assert_int_equal(temps_left(svcfd), 0);
    free(u.tar.data);
    close(svcfd);
}

static void
test_complete_never_replaces(void **state)
{
    int svcfd = open_svc();
    run_ud u = { .log_bytes = 6, .container = "cid1", .plant_at = svcfd };
    ph_rundir_steps steps = { &u, fetch, examine, service_log, meta };
    ph_rundir_done done;
    ph_error_t err = NULL;
    ph_rundir_spec spec = { .svcfd = svcfd, .out_dir = out_dir, .service = "svc", .name = "P", .container = "cid1",
                            .cmd = "stop", .links = 1 };
    DIR *d;
    int entries = 0;

    (void)state;
    hostile_archive(&u.tar);
    /* a directory appears at the run's name after it was chosen: the run
     * is not renamed over it (nothing of either is lost) */
    assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), -1);
    ph_error_free(&err);
    d = fdopendir(openat(svcfd, "P", O_RDONLY | O_DIRECTORY));
    assert_non_null(d);
    while (readdir(d) != NULL)
        entries++;
    closedir(d);
    assert_int_equal(entries, 2); /* . and .. : the planted one, empty as it was */
    assert_int_equal(temps_left(svcfd), 0);
    free(u.tar.data);
    close(svcfd);
}

/* min_free set so that the artifacts fit and what the harness adds does
 * not: nothing is left, the error is the limit's.  The free space is the
 * real disk's, which others write to meanwhile: an attempt whose failure
 * came at another write (the room changed between the statvfs and the
 * store's check) is tried again, up to five times. */
static void
check_over_min_free(size_t log_bytes, size_t meta_pad, const char *what)
{
    run_ud u = { .log_bytes = log_bytes, .meta_pad = meta_pad, .container = "cid1" };
    ph_rundir_steps steps = { &u, fetch, NULL, service_log, meta };
    ph_rundir_done done;
    ph_error_t err = NULL;
    int svcfd = open_svc();
    struct statvfs sv;
    ph_tar_limits flags = { 0 };
    ph_rundir_spec spec = { .svcfd = svcfd, .out_dir = out_dir, .service = "svc", .name = "R", .container = "cid1",
                            .cmd = "stop", .flags = &flags, .links = 1 };

    hostile_archive(&u.tar);
    for (int attempt = 0;; attempt++) {
        assert_int_equal(fstatvfs(svcfd, &sv), 0);
        /* 1 MiB of room above min_free: the archive fits, 8 MiB do not */
        flags.min_free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize - (1 << 20);
        assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), -1);
        assert_non_null(err);
        if (strstr(err->msg, what) != NULL || attempt == 4)
            break;
        fprintf(stderr, "attempt %d: %s (the disk's room changed?); again\n", attempt + 1, err->msg);
        ph_error_free(&err);
    }
    if (strstr(err->msg, what) == NULL)
        fprintf(stderr, "error: %s\n", err->msg);
    assert_non_null(strstr(err->msg, what));
    assert_non_null(strstr(err->msg, "over the limit `min_free`"));
    assert_int_equal(err->errnum, ENOSPC);
    assert_int_equal(done.stats.limit, PH_TAR_LIMIT_FREE);
    assert_int_equal(done.limit_value, flags.min_free_bytes);
    assert_int_equal(done.limits.from[PH_TAR_LIMIT_FREE], 'f');
    ph_error_free(&err);
    assert_false(exists("out/svc/R"));
    assert_false(exists("out/svc/latest"));
    assert_int_equal(temps_left(svcfd), 0);
    free(u.tar.data);
    close(svcfd);
}

static void
test_service_log_keeps_min_free(void **state)
{
    (void)state;
    check_over_min_free(8 << 20, 0, "service.log");
}

static void
test_run_json_keeps_min_free(void **state)
{
    (void)state;
    check_over_min_free(6, 8 << 20, "run.json");
}

/* The report is held to min_free like the artifacts (report graphs, finding 1): room
 * for the artifacts and run.json, none for the report's graphs (a 90 kB
 * stacks file draws several MB): the run completes, the warning names
 * the limit and the retry, and nothing of the report is left.  Before,
 * the report was written past min_free. */
static void
test_report_keeps_min_free(void **state)
{
    run_ud u = { .log_bytes = 6, .container = "cid1" };
    ph_rundir_steps steps = { &u, fetch, NULL, service_log, meta };
    ph_rundir_done done;
    ph_error_t err = NULL;
    int svcfd = open_svc();
    struct statvfs sv;
    ph_tar_limits flags = { 0 };
    ph_rundir_spec spec = { .svcfd = svcfd, .out_dir = out_dir, .service = "svc", .name = "R", .container = "cid1",
                            .cmd = "stop", .flags = &flags, .links = 1 };
    struct archive *a = archive_write_new();
    char *folded = malloc(1100 * 12 * 8 + 64), *p = folded;
    const char *said = NULL;

    (void)state;
    for (int i = 0; i < 1100; i++) { /* 13,200 frames a pixel wide */
        for (int d = 0; d < 12; d++)
            p += sprintf(p, "%sf%x", d ? ";" : "", i * 12 + d);
        p += sprintf(p, " 1\n");
    }
    memset(&u.tar, 0, sizeof u.tar);
    archive_write_set_format_pax_restricted(a);
    assert_int_equal(archive_write_open(a, &u.tar, NULL, tb_write, NULL), ARCHIVE_OK);
    tb_add(a, "svc", AE_IFDIR, NULL);
    tb_add(a, "svc/stacks-1.folded", AE_IFREG, folded);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    for (int attempt = 0; attempt < 5; attempt++) {
        char *dump;
        if (attempt > 0) {
            assert_int_equal(system("rm -rf \"$PH_T\"/out/svc/R \"$PH_T\"/out/svc/latest") >= 0, 1);
            fprintf(stderr, "attempt %d: the disk's room changed?; again\n", attempt + 1);
        }
        setenv("PH_T", test_dir, 1);
        assert_int_equal(fstatvfs(svcfd, &sv), 0);
        /* 2 MiB of room above min_free: the artifact and run.json fit */
        flags.min_free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize - (2 << 20);
        tu_capture_begin();
        assert_int_equal(ph_rundir_complete(&spec, &steps, &done, &err), 0);
        dump = strdup(tu_capture_end());
        said = strstr(dump, "over the limit `min_free`") ? "yes" : NULL;
        if (said != NULL) {
            assert_non_null(strstr(dump, "no report for "));
            assert_non_null(strstr(dump, "retry with `profharness report "));
            free(dump);
            break;
        }
        fprintf(stderr, "%s", dump);
        free(dump);
    }
    assert_non_null(said);
    assert_false(done.reported);
    assert_true(exists("out/svc/R/stacks-1.folded"));
    assert_true(exists("out/svc/R/run.json"));
    assert_false(exists("out/svc/R/report.html"));
    assert_false(exists("out/svc/R/report-flamegraph.svg"));
    assert_false(exists("out/svc/R/report-flamegraph.svg.tmp"));
    assert_int_equal(temps_left(svcfd), 0);
    free(folded);
    free(u.tar.data);
    close(svcfd);
}

/* An artifact's `latest` is its newest file by mtime (a profiler that
 * rotates its log, a sampler's numbered snapshots), whatever the order of
 * the names; of two with one mtime, the larger name; never a link or a
 * directory, however new. */
static void
test_newest_match_by_mtime(void **state)
{
    static const struct {
        const char *name;
        time_t mtime;
    } files[] = { { "stacks-9.folded", 1000 }, { "stacks-1.folded", 3000 }, { "stacks-5.folded", 2000 } };
    char got[NAME_MAX + 1];
    int dirfd = open(test_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    (void)state;
    assert_true(dirfd >= 0);
    assert_false(ph_rundir_newest_match(dirfd, "stacks-*.folded", got, sizeof got));
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct timespec ts[2] = { { files[i].mtime, 0 }, { files[i].mtime, 0 } };
        tu_write(files[i].name, "main 1\n");
        assert_int_equal(utimensat(dirfd, files[i].name, ts, 0), 0);
    }
    assert_int_equal(symlinkat("stacks-9.folded", dirfd, "stacks-link.folded"), 0);
    assert_int_equal(mkdirat(dirfd, "stacks-dir.folded", 0755), 0);
    assert_true(ph_rundir_newest_match(dirfd, "stacks-*.folded", got, sizeof got));
    assert_string_equal(got, "stacks-1.folded");
    {
        struct timespec ts[2] = { { 3000, 0 }, { 3000, 0 } };
        assert_int_equal(utimensat(dirfd, "stacks-5.folded", ts, 0), 0);
    }
    assert_true(ph_rundir_newest_match(dirfd, "stacks-*.folded", got, sizeof got));
    assert_string_equal(got, "stacks-5.folded");
    close(dirfd);
}

/* ---- the started profile ------------------------------------------------ */

static void
test_profile_record(void **state)
{
    const char *text = "name: strace\nwrap: [strace, -o, \"{out}/strace.log\", --]\n"
                       "stop: {signal: SIGINT, grace: 7s}\n"
                       "artifacts:\n  - {glob: \"strace.log*\", latest: strace.log, kind: strace}\n";
    const char *path = tu_write("strace.yaml", text);
    ph_profile p, back;
    ph_error_t err = NULL;
    char *rec;

    (void)state;
    assert_int_equal(ph_profile_load(path, &p, &err), 0);
    rec = ph_rundir_profile_record(&p);
    assert_non_null(rec);
    assert_non_null(strstr(rec, "SIGINT"));
    /* the file changes: the record does not */
    tu_write("strace.yaml", "name: strace\nwrap: [true]\nartifacts: [{glob: other}]\n");
    assert_int_equal(ph_rundir_profile_load(rec, "strace", &back, &err), 0);
    assert_string_equal(back.stop_signal, "SIGINT");
    assert_int_equal(back.stop_grace_ns, 7000000000LL);
    assert_int_equal(back.n_artifacts, 1);
    assert_string_equal(back.artifacts[0].latest, "strace.log");
    assert_string_equal(back.path, path); /* where it was set: the file started with */
    ph_profile_free(&back);
    /* a record read as another mode, or no profile at all: refused */
    assert_int_equal(ph_rundir_profile_load(rec, "massif", &back, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_rundir_profile_load("[1, 2]", "strace", &back, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_rundir_profile_load(rec, "../x", &back, &err), -1);
    ph_error_free(&err);
    assert_int_equal(ph_rundir_profile_load(text, "strace", &back, &err), -1); /* bare YAML */
    ph_error_free(&err);
    free(rec);
    ph_profile_free(&p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserved_names),
        cmocka_unit_test(test_kept_name),
        cmocka_unit_test(test_limits_of),
        cmocka_unit_test(test_room_and_hint_figures),
        cmocka_unit_test(test_limit_hint_text),
        cmocka_unit_test_setup_teardown(test_complete_hostile_names, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_complete_links_never_cost_the_run, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_complete_never_replaces, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_service_log_keeps_min_free, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_run_json_keeps_min_free, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_report_keeps_min_free, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_newest_match_by_mtime, tu_setup, tu_teardown),
        cmocka_unit_test_setup_teardown(test_profile_record, tu_setup, tu_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
