/* test_cdp.c - a Node inspector session's pure parts (harness/nodeinsp,
 * ph_cdp.c compiled in): WebSocket frames on exact bytes (RFC 6455's
 * own examples), the replies a session reads, and V8's CPU profile folded
 * as the start mode names Node's frames, on a profile recorded from
 * tests/lang/node and on hostile ones (deep and cyclic trees, ids that
 * name nothing or twice, huge strings, separators in names, nesting). */
#include "test_util.h"

#include "../../harness/nodeinsp/ph_cdp.c"
#include "ph_langview.h"
#include "ph_stackset.h"

#include <dirent.h>
#include <sys/stat.h>
#include <zlib.h>

/* ---- WebSocket ---------------------------------------------------------- */

static void
test_ws_encode_rfc(void **state)
{
    /* RFC 6455 5.7: "Hello", masked with 37 fa 21 3d */
    static const uint8_t want[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
    const uint8_t mask[4] = { 0x37, 0xfa, 0x21, 0x3d };
    uint8_t out[64], big[70000 + PH_CDP_WS_HEADER_MAX];
    static char payload[70000];

    (void)state;
    assert_int_equal(ph_cdp_ws_encode(PH_CDP_WS_TEXT, "Hello", 5, mask, out, sizeof out), sizeof want);
    assert_memory_equal(out, want, sizeof want);
    /* 126..65535: a 16-bit length; more: 64-bit */
    assert_int_equal(ph_cdp_ws_encode(PH_CDP_WS_TEXT, payload, 300, mask, big, sizeof big), 2 + 2 + 4 + 300);
    assert_int_equal(big[1], 0x80 | 126);
    assert_int_equal(big[2] << 8 | big[3], 300);
    assert_int_equal(ph_cdp_ws_encode(PH_CDP_WS_TEXT, payload, 70000, mask, big, sizeof big), 2 + 8 + 4 + 70000);
    assert_int_equal(big[1], 0x80 | 127);
    assert_int_equal(big[7] << 16 | big[8] << 8 | big[9], 70000);
    /* no room: nothing written past CAP */
    assert_int_equal(ph_cdp_ws_encode(PH_CDP_WS_TEXT, "Hello", 5, mask, out, 10), -1);
}

static void
test_ws_decode(void **state)
{
    /* RFC 6455 5.7: an unmasked "Hello", then a masked one */
    uint8_t plain[] = { 0x81, 0x05, 'H', 'e', 'l', 'l', 'o' };
    uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
    uint8_t frag[] = { 0x01, 0x03, 'H', 'e', 'l' };
    uint8_t len16[4 + 300] = { 0x81, 126, 0x01, 0x2c };
    uint8_t huge[10] = { 0x81, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    uint8_t rsv[] = { 0xc1, 0x00 }, op[] = { 0x83, 0x00 }, ctl[] = { 0x89, 126, 0, 200 };
    ph_cdp_ws_frame f;
    char why[128];

    (void)state;
    assert_int_equal(ph_cdp_ws_decode(plain, sizeof plain, 100, &f, why, sizeof why), 1);
    assert_true(f.fin);
    assert_int_equal(f.opcode, PH_CDP_WS_TEXT);
    assert_int_equal(f.header, 2);
    assert_int_equal(f.len, 5);
    assert_memory_equal(plain + f.header, "Hello", 5);
    assert_int_equal(ph_cdp_ws_decode(masked, sizeof masked, 100, &f, why, sizeof why), 1);
    assert_int_equal(f.header, 6);
    assert_memory_equal(masked + f.header, "Hello", 5);
    assert_int_equal(ph_cdp_ws_decode(frag, sizeof frag, 100, &f, why, sizeof why), 1);
    assert_false(f.fin);
    /* every cut short of the whole frame asks for more */
    for (size_t n = 0; n < sizeof plain; n++)
        assert_int_equal(ph_cdp_ws_decode(plain, n, 100, &f, why, sizeof why), 0);
    assert_int_equal(ph_cdp_ws_decode(len16, sizeof len16, 1000, &f, why, sizeof why), 1);
    assert_int_equal(f.len, 300);
    assert_int_equal(ph_cdp_ws_decode(len16, sizeof len16 - 1, 1000, &f, why, sizeof why), 0);
    /* past the bound: refused at the header, before any payload comes */
    assert_int_equal(ph_cdp_ws_decode(len16, 4, 299, &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "300 bytes"));
    assert_int_equal(ph_cdp_ws_decode(huge, sizeof huge, 1u << 30, &f, why, sizeof why), -1);
    assert_int_equal(ph_cdp_ws_decode(rsv, sizeof rsv, 100, &f, why, sizeof why), -1);
    assert_int_equal(ph_cdp_ws_decode(op, sizeof op, 100, &f, why, sizeof why), -1);
    assert_int_equal(ph_cdp_ws_decode(ctl, sizeof ctl, 1000, &f, why, sizeof why), -1);
}

/* Each length at the edges of the three encodings, encoded then decoded:
 * 125 is the last in the 7-bit field (126 and 127 there mean a longer
 * length follows), 65535 the last of the 16-bit one. */
static void
test_ws_length_edges(void **state)
{
    static const size_t lens[] = { 125, 126, 127, 65535, 65536 };
    static const size_t heads[] = { 2, 4, 4, 4, 10 };
    const uint8_t mask[4] = { 1, 2, 3, 4 };
    static uint8_t payload[65536], out[65536 + PH_CDP_WS_HEADER_MAX];
    ph_cdp_ws_frame f;
    char why[128];

    (void)state;
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        ssize_t n = ph_cdp_ws_encode(PH_CDP_WS_TEXT, payload, lens[k], mask, out, sizeof out);

        assert_int_equal(n, (ssize_t)(heads[k] + 4 + lens[k]));
        assert_int_equal(ph_cdp_ws_decode(out, (size_t)n, sizeof payload, &f, why, sizeof why), 1);
        assert_int_equal(f.header, heads[k] + 4);
        assert_int_equal(f.len, lens[k]);
        assert_memory_equal(out + f.header, payload, lens[k]);
    }
}

/* A control frame is never fragmented (RFC 6455 5.5): a ping, a pong or
 * a close without FIN is refused, however short. */
static void
test_ws_control_in_pieces(void **state)
{
    uint8_t ping[] = { 0x09, 0x00 }, pong[] = { 0x0a, 0x01, 'x' }, close_[] = { 0x08, 0x00 };
    uint8_t whole[] = { 0x89, 0x00 };
    ph_cdp_ws_frame f;
    char why[128];

    (void)state;
    assert_int_equal(ph_cdp_ws_decode(whole, sizeof whole, 100, &f, why, sizeof why), 1);
    assert_int_equal(ph_cdp_ws_decode(ping, sizeof ping, 100, &f, why, sizeof why), -1);
    assert_non_null(strstr(why, "in pieces"));
    assert_int_equal(ph_cdp_ws_decode(pong, sizeof pong, 100, &f, why, sizeof why), -1);
    assert_int_equal(ph_cdp_ws_decode(close_, sizeof close_, 100, &f, why, sizeof why), -1);
}

/* ---- replies ------------------------------------------------------------ */

static void
test_replies(void **state)
{
    static const char list[] =
        "[ {\n  \"description\": \"node.js instance\",\n  \"id\": \"69\",\n"
        "  \"webSocketDebuggerUrl\": \"ws://127.0.0.1:9229/697954d3-e378-4a49-89c0-5278d8b259b1\"\n} ]";
    static const char bad_url[] = "[{\"webSocketDebuggerUrl\": \"ws://127.0.0.1:9229/a b\"}]";
    static const char ok[] = "{\"id\":3,\"result\":{}}";
    static const char err[] = "{\"id\":4,\"error\":{\"code\":-32000,\"message\":\"Profiler is not enabled\\n\"}}";
    static const char ev[] = "{\"method\":\"Runtime.consoleAPICalled\",\"params\":{\"id\":9}}";
    static const char prof[] = "{\"id\":5,\"result\":{\"profile\":{\"nodes\":[],\"samples\":[]}}}";
    static const char *const key[] = { "result", "profile", NULL };
    char path[128], msg[64];
    long long id;
    int error;
    size_t off, len;

    (void)state;
    assert_int_equal(ph_cdp_ws_path(list, strlen(list), path, sizeof path), 0);
    assert_string_equal(path, "/697954d3-e378-4a49-89c0-5278d8b259b1");
    assert_int_equal(ph_cdp_ws_path(list, strlen(list), path, 10), -1);
    assert_int_equal(ph_cdp_ws_path(bad_url, strlen(bad_url), path, sizeof path), -1);
    assert_int_equal(ph_cdp_ws_path("[]", 2, path, sizeof path), -1);
    assert_int_equal(ph_cdp_reply(ok, strlen(ok), &id, &error, msg, sizeof msg), 0);
    assert_int_equal(id, 3);
    assert_false(error);
    assert_int_equal(ph_cdp_reply(err, strlen(err), &id, &error, msg, sizeof msg), 0);
    assert_int_equal(id, 4);
    assert_true(error);
    assert_string_equal(msg, "Profiler is not enabled\n");
    /* an event's params.id is not its id */
    assert_int_equal(ph_cdp_reply(ev, strlen(ev), &id, &error, msg, sizeof msg), 0);
    assert_int_equal(id, -1);
    assert_int_equal(ph_cdp_reply("{\"id\":", 6, &id, &error, msg, sizeof msg), -1);
    assert_int_equal(ph_cdp_find(prof, strlen(prof), key, &off, &len), 0);
    assert_int_equal(len, strlen("{\"nodes\":[],\"samples\":[]}"));
    assert_memory_equal(prof + off, "{\"nodes\":[],\"samples\":[]}", len);
    assert_int_equal(ph_cdp_find(ok, strlen(ok), key, &off, &len), -1);
}

/* ---- the profile -------------------------------------------------------- */

/* fold_text: PROFILE folded into *OUT (malloc'd): ph_cdp_fold's return. */
static int
fold_text(const char *profile, size_t n, int wall, char **out, ph_cdp_fold_stats *st, char *why, size_t why_len)
{
    ph_cdp_fold_opts o = { .root = "node", .wall = wall };
    size_t len = 0;
    FILE *m = open_memstream(out, &len);
    int rc;

    assert_non_null(m);
    rc = ph_cdp_fold(profile, n, &o, m, st, why, why_len);
    fclose(m);
    return rc;
}

#define NODE(id, fn, url, line, kids)                                                                                 \
    "{\"id\":" #id ",\"callFrame\":{\"functionName\":\"" fn "\",\"scriptId\":\"1\",\"url\":\"" url                 \
    "\",\"lineNumber\":" #line ",\"columnNumber\":4},\"hitCount\":0,\"children\":[" kids "]}"

/* the shape of tests/lang/node's profile (recorded by ph-nodeinsp) */
static const char lang_profile[] =
    "{\"nodes\":[" NODE(1, "(root)", "", -1, "2,3,7") "," NODE(2, "(program)", "", -1, "") ","
    NODE(3, "processImmediate", "node:internal/timers", 430, "4") ","
    NODE(4, "tick", "file:///opt/lang/lang.js", 24, "5,6") ","
    NODE(5, "hot_seventy_five", "file:///opt/lang/lang.js", 9, "") ","
    NODE(6, "cool_twenty_five", "file:///opt/lang/lang.js", 15, "") ","
    NODE(7, "(idle)", "", -1, "") ",\n" NODE(8, "", "/opt/lang/lang.js", 0, "9") ","
    NODE(9, "writev", "", -1, "") "],"
    "\"startTime\":1,\"endTime\":2,\"samples\":[5,5,5,6,2,7,7,5,9],\"timeDeltas\":[1,2,3,4,5,6,7,8]}";

static void
test_fold_lang(void **state)
{
    ph_cdp_fold_stats st;
    char *out = NULL, why[160];

    (void)state;
    assert_int_equal(fold_text(lang_profile, strlen(lang_profile), 0, &out, &st, why, sizeof why), 0);
    assert_string_equal(out,
                        "node;(program) 1\n"
                        "node;JS:processImmediate node:internal/timers:431_[j];JS:tick /opt/lang/lang.js:25_[j];"
                        "JS:hot_seventy_five /opt/lang/lang.js:10_[j] 4\n"
                        "node;JS:processImmediate node:internal/timers:431_[j];JS:tick /opt/lang/lang.js:25_[j];"
                        "JS:cool_twenty_five /opt/lang/lang.js:16_[j] 1\n"
                        "node;JS: /opt/lang/lang.js:1_[j];writev 1\n");
    assert_int_equal(st.samples, 9);
    assert_int_equal(st.idle, 2);
    assert_int_equal(st.kept, 7);
    assert_int_equal(st.nodes, 9);
    free(out);
    /* wall: the idle samples kept, off the CPU */
    assert_int_equal(fold_text(lang_profile, strlen(lang_profile), 1, &out, &st, why, sizeof why), 0);
    assert_non_null(strstr(out, "node;(idle);[off-cpu] 2\n"));
    assert_int_equal(st.kept, 9);
    free(out);
}

/* A waiting Node's profile: V8 samples its JavaScript thread whether it
 * runs or waits; the samples of the event loop waiting are (idle), V8's
 * and Node's native work (program), the collector (garbage collector). */
static const char wait_profile[] =
    "{\"nodes\":[" NODE(1, "(root)", "", -1, "2,3,4,5") "," NODE(2, "(program)", "", -1, "") ","
    NODE(3, "(garbage collector)", "", -1, "") "," NODE(4, "(idle)", "", -1, "") ","
    NODE(5, "tick", "file:///opt/lang/lang.js", 24, "6,7") ","
    NODE(6, "hot_seventy_five", "file:///opt/lang/lang.js", 9, "") ","
    NODE(7, "cool_twenty_five", "file:///opt/lang/lang.js", 15, "") "],"
    "\"samples\":[6,4,6,4,6,2,4,3,7,4]}";

/* test_dir/KIND-20260101T000000Z-42-1.EXT whole (gunzipped), malloc'd. */
static char *
set_file(const char *kind, const char *ext, size_t *len)
{
    char path[600], *buf = malloc(1 << 20);
    gzFile g;
    int n;

    snprintf(path, sizeof path, "%s/%s-20260101T000000Z-42-1.%s", test_dir, kind, ext);
    assert_non_null(buf);
    if ((g = gzopen(path, "rb")) == NULL) {
        free(buf);
        return NULL;
    }
    n = gzread(g, buf, (1 << 20) - 1);
    gzclose(g);
    assert_true(n >= 0);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* Both modes of one profile: flamegraph keeps what ran, (program) and the
 * collector included, and leaves (idle) out; wall keeps every sample, the
 * idle ones as [off-cpu], and writes the wall mode's files: the
 * off-CPU view exactly the idle samples, the on-CPU view the rest,
 * pprof's type wall/nanoseconds (cpu for the CPU clock, no views). */
static void
test_fold_wall_files(void **state)
{
    ph_cdp_fold_stats st;
    char *out = NULL, why[160], *f;
    size_t len;
    ph_error_t e = NULL;
    ph_stackset_opts so = { .stamp = "20260101T000000Z", .pid = 42, .wall = 1, .period_ns = 10000000,
                            .title = "api (wall)", .subtitle = "node" };

    (void)state;
    assert_int_equal(fold_text(wait_profile, strlen(wait_profile), 0, &out, &st, why, sizeof why), 0);
    assert_string_equal(out, "node;(program) 1\n"
                             "node;(garbage collector) 1\n"
                             "node;JS:tick /opt/lang/lang.js:25_[j];JS:hot_seventy_five /opt/lang/lang.js:10_[j] 3\n"
                             "node;JS:tick /opt/lang/lang.js:25_[j];JS:cool_twenty_five /opt/lang/lang.js:16_[j] 1\n");
    assert_int_equal(st.idle, 4);
    assert_int_equal(st.kept, 6);
    free(out);

    assert_int_equal(fold_text(wait_profile, strlen(wait_profile), 1, &out, &st, why, sizeof why), 0);
    assert_int_equal(st.kept, 10);
    assert_int_equal(ph_stackset_write(test_dir, out, strlen(out), &so, &e), 0);
    assert_non_null(f = set_file("stacks", "folded", &len));
    assert_string_equal(f, out);
    free(f);
    assert_non_null(f = set_file("offcpu", "folded", &len));
    assert_string_equal(f, "node;(idle);[off-cpu] 4\n");
    free(f);
    assert_non_null(f = set_file("oncpu", "folded", &len));
    assert_non_null(strstr(f, "node;(program) 1\n"));
    assert_non_null(strstr(f, "node;(garbage collector) 1\n"));
    assert_non_null(strstr(f, "JS:hot_seventy_five /opt/lang/lang.js:10_[j] 3\n"));
    assert_null(strstr(f, "(idle)"));
    free(f);
    assert_non_null(f = set_file("flamegraph", "svg", &len));
    assert_non_null(strstr(f, "api (wall)"));
    free(f);
    assert_non_null(f = set_file("profile", "pb.gz", &len));
    assert_non_null(memmem(f, len, "wall", 4));
    assert_non_null(memmem(f, len, "nanoseconds", 11));
    assert_non_null(memmem(f, len, "(idle)", 6));
    free(f);
    free(out);

    /* the CPU clock: no views, pprof's type cpu */
    tu_rmdir();
    tu_mkdtemp();
    so.wall = 0;
    so.title = "api (flamegraph)";
    assert_int_equal(fold_text(wait_profile, strlen(wait_profile), 0, &out, &st, why, sizeof why), 0);
    assert_int_equal(ph_stackset_write(test_dir, out, strlen(out), &so, &e), 0);
    assert_null(set_file("offcpu", "folded", &len));
    assert_non_null(f = set_file("profile", "pb.gz", &len));
    assert_null(memmem(f, len, "wall", 4));
    assert_non_null(memmem(f, len, "cpu", 3));
    free(f);
    free(out);
}

/* A file that cannot take its place (a directory of that name is in the
 * way) is an error naming it, and leaves no temporary file beside it
 * (the old writer left `stacks-...folded.tmp`). */
static void
test_stackset_failed_write_leaves_nothing(void **state)
{
    static const char folded[] = "node;main;work 3\n";
    ph_stackset_opts so = { .stamp = "20260101T000000Z", .pid = 42, .wall = 0, .period_ns = 10000000,
                            .title = "api (flamegraph)" };
    char path[600];
    ph_error_t e = NULL;
    DIR *d;
    struct dirent *de;
    int others = 0;

    (void)state;
    snprintf(path, sizeof path, "%s/stacks-20260101T000000Z-42-1.folded", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/stacks-20260101T000000Z-42-1.folded/in-the-way", test_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(ph_stackset_write(test_dir, folded, strlen(folded), &so, &e), -1);
    assert_non_null(e);
    assert_non_null(strstr(e->msg, "stacks-20260101T000000Z-42-1.folded"));
    ph_error_free(&e);
    assert_non_null(d = opendir(test_dir));
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
            strcmp(de->d_name, "stacks-20260101T000000Z-42-1.folded") != 0) {
            print_message("# left: %s\n", de->d_name);
            others++;
        }
    closedir(d);
    assert_int_equal(others, 0);
}

/* The start mode's names for the same frames (ph_langview): the same
 * view of them, `hot_seventy_five (/opt/lang/lang.js:10)`. */
static void
test_fold_langview_names(void **state)
{
    char out[256];
    static const char f[] = "JS:hot_seventy_five /opt/lang/lang.js:10_[j]", anon[] = "JS: /opt/lang/lang.js:1_[j]";

    (void)state;
    assert_int_equal(ph_langview_frame(f, strlen(f), out, sizeof out), PH_LANG_JS);
    assert_string_equal(out, "hot_seventy_five (/opt/lang/lang.js:10)");
    assert_int_equal(ph_langview_frame(anon, strlen(anon), out, sizeof out), PH_LANG_JS);
    assert_string_equal(out, "(anonymous) (/opt/lang/lang.js:1)");
    assert_int_equal(ph_langview_frame("writev", 6, out, sizeof out), PH_LANG_NONE);
}

static void
test_fold_hostile(void **state)
{
    ph_cdp_fold_stats st;
    char *out = NULL, why[160];
    /* a child and a sample naming no node, a second parent, a self-loop */
    static const char bad_ids[] = "{\"nodes\":[" NODE(1, "(root)", "", -1, "2,99") "," NODE(2, "a", "x.js", 0, "3,2") ","
                                  NODE(3, "b", "x.js", 1, "") "," NODE(4, "c", "x.js", 2, "3") "],"
                                  "\"samples\":[3,42,-7]}";
    static const char twice[] = "{\"nodes\":[" NODE(1, "(root)", "", -1, "") "," NODE(1, "a", "", 0, "") "],\"samples\":[1]}";
    /* a cycle: 2 -> 3 -> 2, never reaching the root */
    static const char cycle[] = "{\"nodes\":[" NODE(2, "a", "x.js", 0, "3") "," NODE(3, "b", "x.js", 0, "2") "],"
                                "\"samples\":[3]}";
    /* separators and control bytes in a name */
    static const char seps[] = "{\"nodes\":[" NODE(1, "a;b\\nc\\u0000d 5", "x.js", 0, "") "],\"samples\":[1]}";
    static const char *const broken[] = {
        "", "[]", "{", "{\"nodes\":{}}", "{\"nodes\":[{\"callFrame\":{}}]}", "{\"samples\":[1.5e3]}",
        "{\"samples\":[99999999999999999999]}", "{\"nodes\":[{\"id\":1,\"children\":[\"x\"]}]}",
        "{\"nodes\":[{\"id\":1,\"callFrame\":{\"url\":\"\\ud800\\x\"}}]}",
    };

    (void)state;
    assert_int_equal(fold_text(bad_ids, strlen(bad_ids), 0, &out, &st, why, sizeof why), 0);
    assert_string_equal(out, "node;JS:a x.js:1_[j];JS:b x.js:2_[j] 1\n");
    assert_int_equal(st.bad_ids, 3); /* child 99, samples 42 and -7 */
    assert_int_equal(st.reparented, 2); /* 2 under itself, 3 under 4 too */
    free(out);
    assert_int_equal(fold_text(twice, strlen(twice), 0, &out, &st, why, sizeof why), -1);
    assert_non_null(strstr(why, "node id 1 is there twice"));
    free(out);
    assert_int_equal(fold_text(cycle, strlen(cycle), 0, &out, &st, why, sizeof why), 0);
    assert_int_equal(st.cut, 1);
    assert_int_equal(strncmp(out, "node;[truncated];", 17), 0);
    free(out);
    assert_int_equal(fold_text(seps, strlen(seps), 0, &out, &st, why, sizeof why), 0);
    assert_string_equal(out, "node;JS:a,b?c?d 5 x.js:1_[j] 1\n");
    free(out);
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        assert_int_equal(fold_text(broken[i], strlen(broken[i]), 0, &out, &st, why, sizeof why), -1);
        free(out);
    }
}

/* A chain 5000 deep: the leaf's 1024 frames kept under [truncated]; and
 * JSON nested past the bound refused, not recursed into. */
static void
test_fold_deep(void **state)
{
    enum { DEPTH = 5000 };
    size_t cap = (size_t)DEPTH * 160 + 64, n = 0;
    char *p = malloc(cap), *out = NULL, why[160];
    ph_cdp_fold_stats st;
    size_t frames = 0;

    (void)state;
    assert_non_null(p);
    n += (size_t)snprintf(p + n, cap - n, "{\"nodes\":[");
    for (int i = 1; i <= DEPTH; i++)
        n += (size_t)snprintf(p + n, cap - n, "%s{\"id\":%d,\"callFrame\":{\"functionName\":\"f%d\",\"url\":\"d.js\","
                              "\"lineNumber\":%d},\"children\":[%d]}", i > 1 ? "," : "", i, i, i, i < DEPTH ? i + 1 : 0);
    n += (size_t)snprintf(p + n, cap - n, "],\"samples\":[%d]}", DEPTH);
    assert_int_equal(fold_text(p, n, 0, &out, &st, why, sizeof why), 0);
    assert_int_equal(st.cut, 1);
    assert_int_equal(st.bad_ids, 1); /* the last one's child 0 */
    for (char *c = out; *c; c++)
        frames += *c == ';';
    assert_int_equal(frames, PH_CDP_DEPTH_MAX + 1); /* [truncated] too */
    assert_non_null(strstr(out, ";JS:f5000 d.js:5001_[j] 1\n"));
    free(out);

    n = 0;
    n += (size_t)snprintf(p + n, cap - n, "{\"x\":");
    for (int i = 0; i < 100000 && n < cap - 8; i++)
        p[n++] = '[';
    p[n] = '\0';
    assert_int_equal(fold_text(p, n, 0, &out, &st, why, sizeof why), -1);
    free(out);
    free(p);
}

/* A 10 MiB function name and url: cut at PH_CDP_NAME_MAX each. */
static void
test_fold_huge_strings(void **state)
{
    size_t big = 10u << 20, n = 0;
    char *p = malloc(2 * big + 256), *out = NULL, why[160];
    ph_cdp_fold_stats st;

    (void)state;
    assert_non_null(p);
    n += (size_t)sprintf(p, "{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"");
    memset(p + n, 'f', big);
    n += big;
    n += (size_t)sprintf(p + n, "\",\"url\":\"");
    memset(p + n, 'u', big);
    n += big;
    n += (size_t)sprintf(p + n, "\",\"lineNumber\":1}}],\"samples\":[1,1]}");
    assert_int_equal(fold_text(p, n, 0, &out, &st, why, sizeof why), 0);
    assert_true(strlen(out) < 3 * PH_CDP_NAME_MAX);
    assert_non_null(strstr(out, " 2\n"));
    free(out);
    free(p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ws_encode_rfc),     cmocka_unit_test(test_ws_decode),
        cmocka_unit_test(test_replies),           cmocka_unit_test(test_fold_lang),
        cmocka_unit_test(test_fold_langview_names),
        cmocka_unit_test_setup_teardown(test_fold_wall_files, tu_setup, tu_teardown), cmocka_unit_test(test_fold_hostile),
        cmocka_unit_test_setup_teardown(test_stackset_failed_write_leaves_nothing, tu_setup, tu_teardown),
        cmocka_unit_test(test_fold_deep),         cmocka_unit_test(test_fold_huge_strings),
        cmocka_unit_test(test_ws_length_edges),   cmocka_unit_test(test_ws_control_in_pieces),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
