/* ph_image_progress.c - what an image build shows while it runs (see
 * ph_image.h): the builder's text lines and the context's bytes in, a
 * status line or quiet lines out.
 *
 * The classic builder's text is read for its steps only: "Step N/M :
 * INSTRUCTION" opens step N (the next one, so a RUN that prints "Step
 * 1/1 : x" opens nothing), and the first line after it says how the step
 * went: " ---> Using cache" (from the cache), anything else (its
 * container, its layer's id) for a step that runs; a FROM never runs, and
 * a step with no line (an ARG before the first FROM) neither.  Every line
 * is escaped once on the way in (for the log and the tail); a status line
 * is composed of the raw text and escaped as a whole, then cut. */
#include "ph_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ph_escape.h"
#include "ph_log.h"

#define TEXT_MAX 1024 /* one line of the builder's kept (a step's, the tail's) */
#define ESC_MAX (4 * TEXT_MAX + 256)

struct ph_image_progress {
    ph_image_progress_opts o;
    char who[128];
    char drawn[ESC_MAX];  /* the status line as last drawn */
    int shown;            /* a status line is on the terminal, unended */
    unsigned step, steps; /* the current "Step N/M", 0 before the first */
    char header[TEXT_MAX]; /* its instruction, raw ("RUN make") */
    char header_esc[ESC_MAX]; /* its whole line, escaped */
    unsigned long long header_no; /* its line's number (from 0) */
    int from, lines_in_step;
    unsigned run, cached;
    char tail[PH_IMAGE_PROGRESS_TAIL][TEXT_MAX]; /* escaped, by line number */
    unsigned long long lines;
};

ph_image_progress *
ph_image_progress_new(const ph_image_progress_opts *o)
{
    ph_image_progress *p = calloc(1, sizeof *p);

    if (p == NULL)
        return NULL;
    p->o = *o;
    snprintf(p->who, sizeof p->who, "%s", o->who ? o->who : "build");
    p->o.who = p->who;
    if (p->o.width < 20)
        p->o.width = 80;
    return p;
}

void
ph_image_progress_free(ph_image_progress *p)
{
    free(p);
}

static void
out(ph_image_progress *p, const char *s, size_t n)
{
    if (p->o.out != NULL && n > 0)
        p->o.out(p->o.out_ud, s, n);
}

/* The bytes of the UTF-8 sequence led by *S (1 for a stray byte), and
 * its columns into *COLS. */
static size_t
seq(const unsigned char *s, int *cols)
{
    size_t n = *s < 0x80 ? 1 : *s >= 0xf0 ? 4 : *s >= 0xe0 ? 3 : *s >= 0xc0 ? 2 : 1;
    unsigned cp = n == 1 ? *s : (unsigned)(*s & (0x7f >> n));

    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return *cols = 1, i; /* cut short: what there is, one column */
        cp = cp << 6 | (s[i] & 0x3f);
    }
    *cols = cp >= 0x1100 ? 2 : 1;
    return n;
}

/* S cut to COLS columns into OUT (CAP bytes): "..." in place of the rest
 * when it does not fit. */
static void
cut(char *o, size_t cap, const char *s, int cols)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n = 0, fit = 0;
    int used = 0, w;

    while (u[i] != '\0') { /* where it must end to leave room for "..." */
        size_t l = seq(u + i, &w);

        if (used + w > cols - 3 && fit == 0)
            fit = i;
        if (used + w > cols)
            break;
        used += w;
        i += l;
    }
    n = u[i] == '\0' ? i : fit;
    if (n + 4 > cap)
        n = cap - 4;
    memcpy(o, s, n);
    snprintf(o + n, cap - n, "%s", u[i] == '\0' ? "" : "...");
}

/* PH_LOG_PREFIX WHO ": " TEXT, escaped, cut to COLS columns into LINE. */
static void
compose(ph_image_progress *p, const char *text, int cols, char *line, size_t cap)
{
    char raw[TEXT_MAX + 256], esc[ESC_MAX];

    snprintf(raw, sizeof raw, PH_LOG_PREFIX "%s: %s", p->who, text);
    ph_escape_mem(esc, sizeof esc, raw, strlen(raw), 0);
    cut(line, cap, esc, cols);
}

/* The status line says TEXT now (a terminal only, drawn when it changed). */
static void
draw(ph_image_progress *p, const char *text)
{
    char line[ESC_MAX];

    if (!p->o.tty || p->o.quiet)
        return;
    compose(p, text, p->o.width - 1, line, sizeof line);
    if (p->shown && strcmp(line, p->drawn) == 0)
        return;
    out(p, "\r", 1);
    out(p, line, strlen(line));
    out(p, "\x1b[K", 3);
    snprintf(p->drawn, sizeof p->drawn, "%s", line);
    p->shown = 1;
}

/* A line of its own: in place of the status line on a terminal, left there. */
static void
say_line(ph_image_progress *p, const char *text, int cols)
{
    char line[ESC_MAX];

    if (p->o.quiet)
        return;
    compose(p, text, cols, line, sizeof line);
    if (p->o.tty)
        out(p, "\r", 1);
    out(p, line, strlen(line));
    out(p, p->o.tty ? "\x1b[K\n" : "\n", p->o.tty ? 4 : 1);
    p->shown = 0;
}

void
ph_image_progress_say(ph_image_progress *p, const char *what)
{
    draw(p, what);
}

/* N bytes in the unit TOTAL is best said in. */
static void
size_in(char *buf, size_t len, unsigned long long n, unsigned long long total)
{
    if (total >= 1ull << 20)
        snprintf(buf, len, "%llu MiB", n >> 20);
    else if (total >= 1ull << 10)
        snprintf(buf, len, "%llu KiB", n >> 10);
    else
        snprintf(buf, len, "%llu B", n);
}

void
ph_image_progress_sent(ph_image_progress *p, unsigned long long sent, unsigned long long total)
{
    char text[128], a[32], b[32];

    size_in(a, sizeof a, sent, total);
    size_in(b, sizeof b, total, total);
    if (sent >= total)
        snprintf(text, sizeof text, "build context sent (%s); waiting for the builder", b);
    else
        snprintf(text, sizeof text, "sending build context %s / %s", a, b);
    draw(p, text);
}

static const char *
skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static void
step_text(const ph_image_progress *p, char *buf, size_t len)
{
    snprintf(buf, len, "step %u/%u %s", p->step, p->steps, p->header);
}

/* LINE opens the next step: "Step N/M : INSTRUCTION". */
static int
step_opens(ph_image_progress *p, const char *line)
{
    unsigned n = 0, m = 0;
    int used = 0;

    if (sscanf(line, "Step %u/%u :%n", &n, &m, &used) != 2 || used == 0 || n != p->step + 1 || n > m ||
        (p->steps != 0 && m != p->steps))
        return 0;
    p->step = n;
    p->steps = m;
    snprintf(p->header, sizeof p->header, "%s", skip_blanks(line + used));
    p->from = strncasecmp(p->header, "FROM", 4) == 0 && (p->header[4] == ' ' || p->header[4] == '\t');
    p->lines_in_step = 0;
    p->header_no = p->lines - 1; /* this line's */
    return 1;
}

void
ph_image_progress_line(ph_image_progress *p, const char *line)
{
    char *kept = p->tail[p->lines++ % PH_IMAGE_PROGRESS_TAIL], text[TEXT_MAX + 64];
    size_t n = strlen(line);

    ph_escape_mem(kept, TEXT_MAX, line, n, 0);
    if (p->o.log != NULL) {
        char esc[ESC_MAX];
        size_t l = ph_escape_mem(esc, sizeof esc - 1, line, n, 0);

        esc[l++] = '\n';
        p->o.log(p->o.log_ud, esc, l);
    }
    if (step_opens(p, line)) {
        snprintf(p->header_esc, sizeof p->header_esc, "%s", kept);
        step_text(p, text, sizeof text);
        draw(p, text);
        return;
    }
    if (p->step == 0 || p->lines_in_step++ > 0)
        return;
    if (strcmp(skip_blanks(line), "---> Using cache") == 0) {
        p->cached++;
    } else if (!p->from) {
        p->run++;
        if (!p->o.tty) {
            step_text(p, text, sizeof text);
            say_line(p, text, PH_IMAGE_PROGRESS_LINE_MAX);
        }
    }
}

void
ph_image_progress_done(ph_image_progress *p, const char *image)
{
    char text[TEXT_MAX];

    if (p->steps == 0)
        snprintf(text, sizeof text, "built %s", image);
    else if (p->run == 0)
        snprintf(text, sizeof text, "%s up to date, from the build cache (%u steps)", image, p->steps);
    else
        snprintf(text, sizeof text, "built %s (%u steps: %u run, %u from the build cache)", image, p->steps,
                 p->run, p->cached);
    /* the result is never cut: it may wrap, and it stays */
    say_line(p, text, ESC_MAX);
}

static void
tail_line(ph_image_progress *p, const char *esc)
{
    char line[ESC_MAX + 160];
    int n = snprintf(line, sizeof line, "  [%s] %s\n", p->who, esc);

    out(p, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void
ph_image_progress_failed(ph_image_progress *p)
{
    unsigned long long first = p->lines > PH_IMAGE_PROGRESS_TAIL ? p->lines - PH_IMAGE_PROGRESS_TAIL : 0;
    char gap[96];

    if (p->shown)
        out(p, "\r\x1b[K", 4);
    p->shown = 0;
    /* the failing step's line, when the tail has passed it */
    if (p->step > 0 && p->header_no < first) {
        tail_line(p, p->header_esc);
        if (first - p->header_no > 1) {
            snprintf(gap, sizeof gap, "... %llu lines left out (the whole log has them)", first - p->header_no - 1);
            tail_line(p, gap);
        }
    }
    for (unsigned long long i = first; i < p->lines; i++)
        tail_line(p, p->tail[i % PH_IMAGE_PROGRESS_TAIL]);
}
