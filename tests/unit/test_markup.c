/* test_markup.c - the markup writer (ph_markup.h) and SHA-256: each
 * sink's escaping on hostile text (markup, quotes, controls, bytes that
 * are not UTF-8, "</script>", U+2028), PH_MW_FMT's conversions (every %s
 * escaped, numbers as printf writes them), base64 of every length modulo
 * 3, and SHA-256 on FIPS 180-4's vectors and the padding's edges. */
#include "test_util.h"

#include <malloc.h>
#include <stdint.h>

#include "ph_markup.h"
#include "ph_sha256.h"

/* What STMT writes to W, a writer of SINK, as a string (static buffer). */
#define WRITE(sink, stmt)                                                                                              \
    ({                                                                                                                 \
        ph_mw w_, *w = &w_;                                                                                            \
        assert_int_equal(ph_mw_open_mem(&w_, (sink)), 0);                                                              \
        stmt;                                                                                                          \
        written(&w_);                                                                                                  \
    })

static const char *
written(ph_mw *w)
{
    static char out[4096];
    const char *mem = NULL;
    size_t len = 0;

    assert_int_equal(ph_mw_finish(w, &mem, &len), 0);
    assert_true(len < sizeof out);
    memcpy(out, mem ? mem : "", len);
    out[len] = '\0';
    ph_mw_close(w);
    return out;
}

#define R "\xef\xbf\xbd" /* U+FFFD */

static const char hostile[] = "Ir<script>document.title='X'</script>&\"\x01\t\n";

static void
test_html_text(void **state)
{
    (void)state;
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_text(w, hostile)),
                        "Ir&lt;script&gt;document.title=&#39;X&#39;&lt;/script&gt;&amp;&quot;\xef\xbf\xbd\t\n");
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_textn(w, "<b>bold", 3)), "&lt;b&gt;");
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_text(w, NULL)), "");
}

static void
test_html_attr(void **state)
{
    (void)state;
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_attr(w, "\" onclick=\"x()\" a='b'\t\r\n")),
                        "&quot; onclick=&quot;x()&quot; a=&#39;b&#39;&#9;&#13;&#10;");
}

static void
test_svg_text(void **state)
{
    (void)state;
    /* markup escaped; what XML 1.0 cannot hold is U+FFFD: C0 controls,
     * a lone continuation byte, an overlong form (2 bytes: 2), a
     * surrogate (3 bytes: 3), U+FFFF */
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_text(w, "<g onload='x'>&\x01\x80\xc0\xaf\xed\xa0\x80\xef\xbf\xbf")),
                        "&lt;g onload=&apos;x&apos;&gt;&amp;" R R R R R R R R);
    /* valid UTF-8 of every length is kept, tab, newline and CR too */
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_text(w, "é€😀\t\r\n")), "é€😀\t\r\n");
    /* a sequence cut at the end of the bytes given */
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_textn(w, "a\xe2\x82", 3)), "a\xef\xbf\xbd\xef\xbf\xbd");
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_attr(w, "\"x\"")), "&quot;x&quot;");
}

/* What reorders or hides text, and bytes that are not UTF-8, never reach
 * a page or an SVG as they are, in any context: a right-to-left override
 * (U+202E) in a function name makes a frame read as another, and a lone
 * 0x9b is the 8-bit CSI to whatever shows the file raw.  Bidi controls
 * (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069) and C1 controls are
 * shown as the text \uNNNN, as the terminal's escaper shows them; bytes
 * that are not UTF-8 (an overlong form too) are U+FFFD. */
#define BIDI "<\xe2\x80\xae|\xe2\x81\xa6|\xe2\x80\x8f|\xd8\x9c|\xe2\x80\xaa|\xe2\x81\xa9|\xc2\x9b|\x9b|\xe0\x80\xaf|\xff>"
#define BIDI_SHOWN "&lt;\\u202E|\\u2066|\\u200F|\\u061C|\\u202A|\\u2069|\\u009B|" R "|" R R R "|" R "&gt;"
static void
test_bidi_c1_and_bad_bytes_every_context(void **state)
{
    (void)state;
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_text(w, BIDI)), BIDI_SHOWN);
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_attr(w, BIDI)), BIDI_SHOWN);
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_text(w, BIDI)), BIDI_SHOWN);
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_attr(w, BIDI)), BIDI_SHOWN);
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "<b title=\"%s\">", BIDI)), "<b title=\"" BIDI_SHOWN "\">");
    assert_string_equal(WRITE(PH_MW_SVG, PH_MW_FMT(w, "<title>%s</title>", BIDI)), "<title>" BIDI_SHOWN "</title>");
    /* in a JS string the value is that text: the backslash escaped */
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_js(w, BIDI)),
                        "\"\\u003c\\\\u202E|\\\\u2066|\\\\u200F|\\\\u061C|\\\\u202A|\\\\u2069|\\\\u009B|\\ufffd|"
                        "\\ufffd\\ufffd\\ufffd|\\ufffd\\u003e\"");
    /* the neighbours of each range are text like any other */
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_text(w, "\xc2\xa0\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xe2\x80\x8d")),
                        "\xc2\xa0\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa\xe2\x80\x8d");
}

/* An overlong 3-byte form (E0 80..9F) is no character: U+FFFD in an SVG
 * and \ufffd in JS ("\xe0\x80\xbc" would otherwise be a second '<'). */
static void
test_overlong_three_bytes(void **state)
{
    (void)state;
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_text(w, "a\xe0\x80\xafz")), "a" R R R "z");
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_text(w, "a\xe0\x9f\xbfz")), "a" R R R "z");
    assert_string_equal(WRITE(PH_MW_SVG, ph_mw_text(w, "a\xe0\xa0\x80z")), "a\xe0\xa0\x80z"); /* U+0800: the first */
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_js(w, "\xe0\x80\xbc")), "\"\\ufffd\\ufffd\\ufffd\"");
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_js(w, "\xe0\xa0\x80")), "\"\xe0\xa0\x80\"");
}

static void
test_js(void **state)
{
    (void)state;
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_js(w, "</script><!--\"\\'&\n\x01\xe2\x80\xa8\xff")),
                        "\"\\u003c/script\\u003e\\u003c!--\\\"\\\\\\u0027\\u0026\\n\\u0001\\u2028\\ufffd\"");
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_js(w, "é")), "\"é\"");
}

static void
test_url(void **state)
{
    (void)state;
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_url(w, "javascript:alert(1)")), "javascript%3Aalert%281%29");
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_url(w, "front/../x?y#z\"é")), "front%2F..%2Fx%3Fy%23z%22%C3%A9");
    assert_string_equal(WRITE(PH_MW_HTML, ph_mw_url(w, "20261122T100000Z-strace.2")), "20261122T100000Z-strace.2");
}

static void
test_fmt(void **state)
{
    (void)state;
    /* every %s is escaped, whatever the format around it */
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "<h3>%s</h3>", "Ir<script>")), "<h3>Ir&lt;script&gt;</h3>");
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "<a title=\"%s\">", "\" onclick=\"")),
                        "<a title=\"&quot; onclick=&quot;\">");
    /* a %s may sit in an attribute: tab, newline and CR are references
     * there (an attribute's value would normalise them), as ph_mw_attr
     * writes them, never kept as text keeps them */
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "<a title=\"%s\">", "a\tb\nc\rd")),
                        "<a title=\"a&#9;b&#10;c&#13;d\">");
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "<a title=\"%c%c\">", '\t', '\r')), "<a title=\"&#9;&#13;\">");
    assert_string_equal(WRITE(PH_MW_SVG, PH_MW_FMT(w, "<title>%s</title>", "a\x02<")), "<title>a\xef\xbf\xbd&lt;</title>");
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "[%-6s|%6s|%.3s|%c]", "<a", "b", "<<<<", '<')),
                        "[&lt;a    |     b|&lt;&lt;&lt;|&lt;]");
    /* numbers as printf writes them */
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "%d %u %ld %lld %zu %x %05.1f %.17g %g%% %*d|%-*d|%.*f", -3, 4u,
                                                    -5L, -6LL, (size_t)7, 255u, 3.14159, 0.1, 50.0, 4, 7, 3, 8, 2,
                                                    2.0 / 3)),
                        "-3 4 -5 -6 7 ff 003.1 0.10000000000000001 50%    7|8  |0.67");
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "%llu %zd %jd %hhd", 18446744073709551615ull, (ssize_t)-9,
                                                    (intmax_t)-10, (signed char)-11)),
                        "18446744073709551615 -9 -10 -11");
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_FMT(w, "<p>no conversion</p>%s", "")), "<p>no conversion</p>");
}

static void
test_raw_and_splice(void **state)
{
    ph_mw part;

    (void)state;
    assert_string_equal(WRITE(PH_MW_HTML, PH_MW_RAW(w, "<b>" "literal</b>")), "<b>literal</b>");
    assert_int_equal(ph_mw_open_mem(&part, PH_MW_HTML), 0);
    ph_mw_text(&part, "<part>");
    {
        const char *mem = NULL;
        size_t len = 0;
        ph_mw all;

        assert_int_equal(ph_mw_open_mem(&all, PH_MW_HTML), 0);
        PH_MW_RAW(&all, "<div>");
        ph_mw_splice(&all, &part);
        PH_MW_RAW(&all, "</div>");
        assert_int_equal(ph_mw_finish(&all, &mem, &len), 0);
        assert_int_equal(len, strlen("<div>&lt;part&gt;</div>"));
        assert_memory_equal(mem, "<div>&lt;part&gt;</div>", len);
        ph_mw_close(&all);
    }
    ph_mw_close(&part);
}

/* A memory writer closed without ph_mw_finish (a report's error path)
 * frees its stream and its buffer: the heap's bytes in use (the
 * allocator's own count) do not grow over 2,000 of them, written to or
 * not.  Before the fix each one left its FILE and buffer behind (the
 * stream was closed only once a flush had set its buffer). */
static void
test_mem_writer_closed_unfinished(void **state)
{
    size_t before, after;

    (void)state;
    for (int round = 0; round < 2; round++) {
        before = mallinfo2().uordblks;
        for (int i = 0; i < 2000; i++) {
            ph_mw w;
            assert_int_equal(ph_mw_open_mem(&w, i % 2 ? PH_MW_SVG : PH_MW_HTML), 0);
            if (i % 4 < 2)
                ph_mw_text(&w, "<part of a page that failed>");
            ph_mw_close(&w);
        }
        after = mallinfo2().uordblks;
    }
    /* the second round: whatever the first made stdio allocate once */
    if (after > before + 4096)
        fail_msg("%zu bytes more in use after 2,000 writers", after - before);
}

/* base64 of 0..9 bytes, decoded here again */
static void
test_base64(void **state)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char in[] = { 0xff, 0x00, 0x3c, 0x80, 0x7f, 0x22, 0xfe, 0x01, 0x41 };

    (void)state;
    for (size_t n = 0; n <= sizeof in; n++) {
        const char *s = WRITE(PH_MW_HTML, ph_mw_base64(w, in, n));
        unsigned char back[16];
        size_t k = 0, len = strlen(s);
        unsigned acc = 0;
        int bits = 0;

        assert_int_equal(len, (n + 2) / 3 * 4);
        for (size_t i = 0; i < len && s[i] != '='; i++) {
            const char *p = strchr(tab, s[i]);
            assert_non_null(p);
            acc = acc << 6 | (unsigned)(p - tab);
            if ((bits += 6) >= 8) {
                bits -= 8;
                back[k++] = (unsigned char)(acc >> bits);
                acc &= (1u << bits) - 1;
            }
        }
        assert_int_equal(k, n);
        assert_memory_equal(back, in, n);
    }
}

static void
test_sha256(void **state)
{
    static const struct {
        size_t n;
        char fill;
        const char *text, *hex;
    } v[] = {
        { 0, 0, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { 0, 0, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
        { 0, 0, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
        /* the padding's edges: the length fits after 55 bytes, not after 56 */
        { 55, 'a', NULL, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
        { 56, 'a', NULL, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
        { 63, 'a', NULL, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
        { 64, 'a', NULL, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
        { 1000000, 'a', NULL, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0" },
    };
    char csp[PH_CSP_HASH_LEN];

    (void)state;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char d[PH_SHA256_LEN];
        char hex[65], *buf = NULL;
        const char *p = v[i].text;
        size_t n = p ? strlen(p) : v[i].n;

        if (p == NULL) {
            buf = malloc(n);
            assert_non_null(buf);
            memset(buf, v[i].fill, n);
            p = buf;
        }
        ph_sha256(p, n, d);
        for (size_t k = 0; k < sizeof d; k++)
            snprintf(hex + 2 * k, 3, "%02x", d[k]);
        assert_string_equal(hex, v[i].hex);
        free(buf);
    }
    /* as `openssl dgst -sha256 -binary | base64` says */
    assert_string_equal(ph_markup_csp_hash(csp, "window.pageRan=1;"), "sha256-JoHLCNzzZsmzrUHMMyXLdZ0u2axRSCWLYnrVwFp2crU=");
}

/* SRC compiled (syntax only) against ph_markup.h: the compiler's status. */
static int
compiles(const char *src)
{
    char cmd[1200];
    FILE *p;

    snprintf(cmd, sizeof cmd, "cc -fsyntax-only -Werror -D_GNU_SOURCE -Iharness/util -x c - 2>/dev/null");
    p = popen(cmd, "w");
    assert_non_null(p);
    fputs(src, p);
    return pclose(p) == 0;
}

/* By construction: markup from a variable, or stdio in a file that
 * writes pages, does not build; the same with a literal does. */
static void
test_only_literals_compile(void **state)
{
    (void)state;
    assert_true(compiles("#include \"ph_markup.h\"\nvoid f(ph_mw *w) { PH_MW_RAW(w, \"<b>\"); }\n"));
    assert_false(compiles("#include \"ph_markup.h\"\nvoid f(ph_mw *w, const char *s) { PH_MW_RAW(w, s); }\n"));
    assert_false(compiles("#include \"ph_markup.h\"\nvoid f(ph_mw *w, const char *s) { PH_MW_FMT(w, s, 1); }\n"));
    assert_true(compiles("#include <stdio.h>\n#include \"ph_markup_only.h\"\n"
                         "void f(ph_mw *w, const char *s) { ph_mw_text(w, s); }\n"));
    assert_false(compiles("#include <stdio.h>\n#include \"ph_markup_only.h\"\n"
                          "void f(FILE *o, const char *s) { fputs(s, o); }\n"));
    assert_false(compiles("#include <stdio.h>\n#include \"ph_markup_only.h\"\n"
                          "void f(FILE *o, const char *s) { fprintf(o, \"%s\", s); }\n"));
    /* nor the writer's raw entries by name, around the macros' check */
    assert_true(compiles("#include <stdio.h>\n#include \"ph_markup_only.h\"\n"
                         "void f(ph_mw *w, int n) { PH_MW_RAW(w, \"<b>\"); PH_MW_FMT(w, \"<i>%d</i>\", n); }\n"));
    assert_false(compiles("#include <stdio.h>\n#include \"ph_markup_only.h\"\n"
                          "void f(ph_mw *w, const char *s) { ph_mw_raw_(w, s); }\n"));
    assert_false(compiles("#include <stdio.h>\n#include \"ph_markup_only.h\"\n"
                          "void f(ph_mw *w, const char *s) { ph_mw_fmt_(w, \"%s\", s); }\n"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_text), cmocka_unit_test(test_html_attr),       cmocka_unit_test(test_svg_text),
        cmocka_unit_test(test_bidi_c1_and_bad_bytes_every_context), cmocka_unit_test(test_overlong_three_bytes),
        cmocka_unit_test(test_js),        cmocka_unit_test(test_url),             cmocka_unit_test(test_fmt),
        cmocka_unit_test(test_raw_and_splice), cmocka_unit_test(test_mem_writer_closed_unfinished),
        cmocka_unit_test(test_base64),     cmocka_unit_test(test_sha256),
        cmocka_unit_test(test_only_literals_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
