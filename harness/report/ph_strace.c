/* ph_strace.c - strace logs, streamed; see ph_strace.h for what is kept.
 *
 * Speed matters (a busy service writes hundreds of MB of log): each line
 * is read once from the front for its pid, time and syscall name and
 * once from the back for its -T time and result, never copied unless it
 * becomes one of the slowest calls or is left unfinished.  Syscall names
 * are interned so that a name's id is its row; pids find their thread
 * through an open-addressing map.
 */
#include "ph_strace.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_intern.h"
#include "ph_lines.h"

#define NAMES_MAX (4u << 20)
#define DAY_NS (86400LL * 1000000000LL)
#define FIRST_WIDTH_NS 1000000LL /* 1 ms buckets to start with */
#define MAX_SECONDS 4000000000LL   /* a timestamp past 2096 is not one */
#define MAX_PID_DIGITS 10

typedef struct sys_rec {
    uint64_t calls, errors, timed, total_ns, max_ns;
} sys_rec;

typedef struct pending {
    int active;
    uint32_t sys;
    int64_t start_ns;
    char ts[24];
    char text[PH_STRACE_SNIPPET];
} pending;

typedef struct thread_rec {
    ph_strace_thread pub;
    pending pend;
} thread_rec;

typedef struct errno_rec {
    uint32_t sys, name;
    uint64_t count;
} errno_rec;

struct ph_strace {
    ph_lines lines;
    ph_strace_info info;
    ph_intern *sysnames; /* id = row in sys */
    ph_intern *names;    /* errno and signal names */
    sys_rec *sys;
    size_t cap_sys;
    uint32_t other_sys;  /* UINT32_MAX until needed */

    thread_rec *threads;
    size_t n_threads, cap_threads;
    ph_u64map by_pid;
    uint32_t other_thread;

    errno_rec *errnos;
    size_t n_errnos, cap_errnos;
    ph_u64map by_errno;  /* sys << 32 | name -> row */

    uint64_t *signals;   /* count by names id (signals only) */
    size_t cap_signals;

    ph_strace_call slow[PH_STRACE_SLOWEST];
    size_t n_slow;

    uint64_t *timeline;  /* PH_STRACE_BUCKETS per timeline */
    size_t n_timelines;
    int64_t origin_ns, width_ns;

    int64_t day_ns, last_raw_ns;
    int have_time;
};

/* ---- helpers ----------------------------------------------------------- */

static void
bad_line(ph_strace *st, size_t lineno)
{
    if (st->info.bad_lines < PH_STRACE_BAD_KEPT)
        st->info.bad_line_numbers[st->info.bad_lines] = lineno;
    st->info.bad_lines++;
}

static int
grow(void **arr, size_t *cap, size_t size, size_t need)
{
    size_t nc = *cap ? *cap : 64;
    void *na;

    if (need <= *cap)
        return 0;
    while (nc < need)
        nc *= 2;
    na = realloc(*arr, nc * size);
    if (na == NULL)
        return -1;
    memset((char *)na + *cap * size, 0, (nc - *cap) * size);
    *arr = na;
    *cap = nc;
    return 0;
}

static inline int
is_digit(char c)
{
    return (unsigned)(c - '0') <= 9;
}

/* "HH:MM:SS[.frac]" or "SECONDS[.frac]" at *P; ns in *OUT, *P moved past. */
static int
parse_time(const char **pp, const char *e, int64_t *out)
{
    const char *p = *pp;
    int64_t v = 0;

    for (int group = 0; group < 3; group++) {
        const char *s = p;
        int64_t part = 0;

        while (p < e && is_digit(*p) && p - s < 12)
            part = part * 10 + (*p++ - '0');
        if (p == s)
            return -1;
        v = v * 60 + part;
        if (p == e || *p != ':')
            break;
        p++;
    }
    if (v > MAX_SECONDS)
        return -1; /* not a time: nanoseconds of it would overflow */
    v *= 1000000000LL;
    if (p < e && *p == '.') {
        int64_t scale = 100000000LL;
        p++;
        if (p == e || !is_digit(*p))
            return -1;
        for (; p < e && is_digit(*p); p++) {
            v += (*p - '0') * scale;
            scale /= 10;
        }
    }
    *out = v;
    *pp = p;
    return 0;
}

/* "0.000123" -> 123000 ns; -1 when not such a number. */
static int64_t
parse_seconds(const char *p, const char *e)
{
    int64_t v = 0, scale = 100000000LL;

    if (p == e || !is_digit(*p))
        return -1;
    while (p < e && is_digit(*p)) {
        v = v * 10 + (*p++ - '0');
        if (v > MAX_SECONDS)
            return -1;
    }
    v *= 1000000000LL;
    if (p < e && *p == '.') {
        for (p++; p < e && is_digit(*p); p++) {
            v += (*p - '0') * scale;
            scale /= 10;
        }
    }
    return p == e ? v : -1;
}

/* ---- tables ------------------------------------------------------------ */

static int64_t
sys_index(ph_strace *st, const char *s, size_t n)
{
    int64_t id = ph_intern_find(st->sysnames, s, n);

    if (id >= 0)
        return id;
    if (ph_intern_count(st->sysnames) >= PH_STRACE_MAX_SYSCALLS) {
        if (st->other_sys == UINT32_MAX) {
            id = ph_intern_add(st->sysnames, "(other)", 7);
            if (id < 0)
                return -1;
            st->other_sys = (uint32_t)id;
        }
        return st->other_sys;
    }
    id = ph_intern_add(st->sysnames, s, n);
    if (id < 0 || grow((void **)&st->sys, &st->cap_sys, sizeof *st->sys, (size_t)id + 2) < 0)
        return -1;
    return id;
}

static thread_rec *
thread_of(ph_strace *st, int64_t pid)
{
    uint32_t t = ph_u64map_get(&st->by_pid, (uint64_t)pid);

    if (t != UINT32_MAX)
        return &st->threads[t];
    if (st->n_threads >= PH_STRACE_MAX_THREADS) {
        if (st->other_thread != UINT32_MAX)
            return &st->threads[st->other_thread];
        pid = -1;
    }
    if (grow((void **)&st->threads, &st->cap_threads, sizeof *st->threads, st->n_threads + 1) < 0)
        return NULL;
    t = (uint32_t)st->n_threads++;
    memset(&st->threads[t], 0, sizeof st->threads[t]);
    st->threads[t].pub.pid = pid;
    st->threads[t].pub.first_ns = st->threads[t].pub.last_ns = -1;
    st->threads[t].pub.timeline = -1;
    if (pid == -1) {
        st->other_thread = t;
        return &st->threads[t];
    }
    if (st->n_timelines < PH_STRACE_TIMELINE_THREADS) {
        if (st->timeline == NULL) {
            st->timeline = calloc((size_t)PH_STRACE_TIMELINE_THREADS * PH_STRACE_BUCKETS, sizeof *st->timeline);
            if (st->timeline == NULL)
                return NULL;
        }
        st->threads[t].pub.timeline = (int32_t)st->n_timelines++;
    }
    if (ph_u64map_put(&st->by_pid, (uint64_t)pid, t) < 0)
        return NULL;
    return &st->threads[t];
}

static int
count_errno(ph_strace *st, uint32_t sys, const char *s, size_t n)
{
    int64_t name = ph_intern_add(st->names, s, n);
    uint64_t key;
    uint32_t r;

    if (name < 0)
        return errno == ENOMEM ? -1 : 0;
    key = (uint64_t)sys << 32 | (uint64_t)name;
    r = ph_u64map_get(&st->by_errno, key);
    if (r == UINT32_MAX) {
        if (grow((void **)&st->errnos, &st->cap_errnos, sizeof *st->errnos, st->n_errnos + 1) < 0)
            return -1;
        r = (uint32_t)st->n_errnos++;
        st->errnos[r] = (errno_rec){ sys, (uint32_t)name, 0 };
        if (ph_u64map_put(&st->by_errno, key, r) < 0)
            return -1;
    }
    st->errnos[r].count++;
    return 0;
}

/* Double the bucket width of every timeline: bucket i takes 2i and 2i+1. */
static void
widen(ph_strace *st)
{
    for (size_t t = 0; t < st->n_timelines; t++) {
        uint64_t *b = st->timeline + t * PH_STRACE_BUCKETS;
        for (size_t i = 0; i < PH_STRACE_BUCKETS / 2; i++)
            b[i] = b[2 * i] + b[2 * i + 1];
        memset(b + PH_STRACE_BUCKETS / 2, 0, PH_STRACE_BUCKETS / 2 * sizeof *b);
    }
    st->width_ns *= 2;
}

/* Spread DUR ns from START over the thread's buckets. */
static void
timeline_add(ph_strace *st, const ph_strace_thread *th, int64_t start, uint64_t dur)
{
    int64_t end, b0, b1;
    uint64_t *b;

    if (th->timeline < 0 || !st->have_time)
        return;
    if (start < st->origin_ns)
        start = st->origin_ns;
    end = start + (int64_t)dur;
    while (end - st->origin_ns >= st->width_ns * PH_STRACE_BUCKETS && st->width_ns < INT64_MAX / 4)
        widen(st);
    b = st->timeline + (size_t)th->timeline * PH_STRACE_BUCKETS;
    b0 = (start - st->origin_ns) / st->width_ns;
    b1 = (end - st->origin_ns) / st->width_ns;
    if (b1 >= PH_STRACE_BUCKETS)
        b1 = PH_STRACE_BUCKETS - 1;
    for (int64_t i = b0; i <= b1; i++) {
        int64_t lo = st->origin_ns + i * st->width_ns, hi = lo + st->width_ns;
        int64_t a = start > lo ? start : lo, z = end < hi ? end : hi;
        if (i == b1 && b0 == b1)
            b[i] += dur; /* within one bucket: all of it */
        else if (z > a)
            b[i] += (uint64_t)(z - a);
    }
}

/* Keep the call if it is among the slowest: its text is HEAD (the call,
 * shortened in the middle when long) and TAIL (" = RET ERRNO (...)"). */
static void
note_slow(ph_strace *st, int64_t pid, int64_t start, uint64_t dur, const char *ts, const char *head, size_t hl,
          const char *tail, size_t tl)
{
    const size_t cap = PH_STRACE_SNIPPET - 1;
    size_t i;
    ph_strace_call *c;

    if (st->n_slow == PH_STRACE_SLOWEST && dur <= st->slow[PH_STRACE_SLOWEST - 1].dur_ns)
        return;
    i = st->n_slow < PH_STRACE_SLOWEST ? st->n_slow++ : PH_STRACE_SLOWEST - 1;
    while (i > 0 && st->slow[i - 1].dur_ns < dur) {
        st->slow[i] = st->slow[i - 1];
        i--;
    }
    c = &st->slow[i];
    c->pid = pid;
    c->start_ns = start;
    c->dur_ns = dur;
    snprintf(c->ts, sizeof c->ts, "%s", ts);
    if (tl > cap / 2)
        tl = cap / 2;
    if (hl + tl <= cap)
        snprintf(c->text, sizeof c->text, "%.*s%.*s", (int)hl, head, (int)tl, tail);
    else /* "…" is 3 bytes */
        snprintf(c->text, sizeof c->text, "%.*s…%.*s", (int)(cap - tl - 3), head, (int)tl, tail);
}

/* ---- one call's end ---------------------------------------------------- */

/* The result part of a call: from " = " to the end, without " <time>".
 * S..E is the text after the call's name (its args or resumed rest).
 * HEAD is the call as the slowest list shows it: HL bytes, or, when HL
 * is SIZE_MAX, from HEAD up to the result.  COUNT: the call starts here
 * too (a complete line).  1 when there is no result (a bad line, nothing
 * counted), -1 on ENOMEM. */
static int
finish_call(ph_strace *st, thread_rec *t, uint32_t sys, int64_t start, const char *ts, const char *head, size_t hl,
            const char *s, const char *e, int count)
{
    const char *p = e, *eq = NULL, *ret, *q;
    int64_t dur = -1;
    sys_rec *r = &st->sys[sys];

    /* " <0.000123>" at the end */
    if (e > s && e[-1] == '>') {
        const char *lt = e - 1;
        while (lt > s && *lt != '<')
            lt--;
        if (*lt == '<' && (dur = parse_seconds(lt + 1, e - 1)) >= 0) {
            p = lt;
            while (p > s && p[-1] == ' ')
                p--;
        }
    }
    /* the last " = " before it */
    for (q = p - 3; q >= s; q--)
        if (q[0] == ' ' && q[1] == '=' && q[2] == ' ') {
            eq = q;
            break;
        }
    if (eq == NULL)
        return 1;
    if (count) {
        r->calls++;
        t->pub.calls++;
        st->info.calls++;
    }
    {
        const char *re;
        ret = eq + 3;
        re = ret;
        while (re < p && *re != ' ')
            re++;
        if (((re - ret == 2 && ret[0] == '-' && ret[1] == '1') || (re - ret == 1 && ret[0] == '?')) && re + 1 < p &&
            re[1] == 'E') {
            const char *en = re + 1, *ee = en;
            while (ee < p && ((*ee >= 'A' && *ee <= 'Z') || is_digit(*ee) || *ee == '_'))
                ee++;
            r->errors++;
            t->pub.errors++;
            st->info.errors++;
            if (count_errno(st, sys, en, (size_t)(ee - en)) < 0)
                return -1;
        }
    }
    if (dur >= 0) {
        r->timed++;
        r->total_ns += (uint64_t)dur;
        if ((uint64_t)dur > r->max_ns)
            r->max_ns = (uint64_t)dur;
        t->pub.total_ns += (uint64_t)dur;
        st->info.total_ns += (uint64_t)dur;
        timeline_add(st, &t->pub, start, (uint64_t)dur);
        if (st->n_slow < PH_STRACE_SLOWEST || (uint64_t)dur > st->slow[PH_STRACE_SLOWEST - 1].dur_ns) {
            /* a complete line: the call up to its result, then the result; a
             * resumed one: its start as kept, then all the resumed line says */
            const char *tail = hl == SIZE_MAX ? eq : s;
            if (hl == SIZE_MAX)
                hl = (size_t)(tail - head);
            note_slow(st, t->pub.pid, start, (uint64_t)dur, ts, head, hl, tail, (size_t)(p - tail));
        }
    }
    return 0;
}

/* ---- one line ---------------------------------------------------------- */

static int
line_cb(void *ctx, const char *s, size_t n, size_t lineno, ph_error_t *err)
{
    ph_strace *st = ctx;
    const char *p = s, *e = s + n, *ts0 = NULL, *ts1 = NULL, *name, *ne;
    int64_t pid = 0, now = -1;
    thread_rec *t;
    char ts[24] = "";
    int64_t id;

    st->info.lines = lineno;
    if (s == NULL) {
        bad_line(st, lineno);
        return 0;
    }
    if (n == 0)
        return 0;
    /* [pid N] or N, then the time */
    if (*p == '[' && n > 5 && memcmp(p, "[pid", 4) == 0) {
        const char *d0;
        for (p += 4; p < e && *p == ' '; p++)
            ;
        for (d0 = p; p < e && is_digit(*p) && p - d0 < MAX_PID_DIGITS; p++)
            pid = pid * 10 + (*p - '0');
        if (p == e || *p != ']')
            goto bad;
        for (p++; p < e && *p == ' '; p++)
            ;
        st->info.with_pids = 1;
    } else if (is_digit(*p)) {
        const char *q = p;
        int64_t v = 0;
        while (q < e && is_digit(*q) && q - p < MAX_PID_DIGITS)
            v = v * 10 + (*q++ - '0');
        if (q < e && *q == ' ') {
            pid = v;
            st->info.with_pids = 1;
            for (p = q; p < e && *p == ' '; p++)
                ;
        }
    }
    if (p < e && is_digit(*p)) {
        ts0 = p;
        if (parse_time(&p, e, &now) < 0 || p == e || *p != ' ')
            goto bad;
        ts1 = p;
        p++;
        /* past midnight (-tt has no date): a big step back is a new day */
        if (now + st->day_ns < st->last_raw_ns - DAY_NS / 2 && memchr(ts0, ':', (size_t)(ts1 - ts0)) != NULL)
            st->day_ns += DAY_NS;
        now += st->day_ns;
        st->last_raw_ns = now;
        {
            size_t tl = (size_t)(ts1 - ts0) < sizeof ts - 1 ? (size_t)(ts1 - ts0) : sizeof ts - 1;
            memcpy(ts, ts0, tl); /* not snprintf: this runs for every line */
            ts[tl] = '\0';
        }
        if (!st->have_time) {
            st->have_time = 1;
            st->origin_ns = now;
            st->info.first_ns = now;
        }
        if (now > st->info.last_ns)
            st->info.last_ns = now;
        st->info.with_times = 1;
    }
    if (p == e)
        goto bad;
    if ((t = thread_of(st, pid)) == NULL)
        return ph_fail(err, ENOMEM, "keep strace's threads");
    if (now >= 0) {
        if (t->pub.first_ns < 0)
            t->pub.first_ns = now;
        t->pub.last_ns = now;
    }

    if (e - p >= 4 && memcmp(p, "--- ", 4) == 0) {
        const char *sn = p + 4, *se = sn;
        while (se < e && *se != ' ')
            se++;
        id = ph_intern_add(st->names, sn, (size_t)(se - sn));
        if (id < 0 || grow((void **)&st->signals, &st->cap_signals, sizeof *st->signals, (size_t)id + 1) < 0)
            return ph_fail(err, ENOMEM, "keep strace's signals");
        st->signals[id]++;
        t->pub.signals++;
        return 0;
    }
    if (e - p >= 4 && memcmp(p, "+++ ", 4) == 0) {
        const char *x = p + 4, *xe = e;
        if (xe - x > 4 && memcmp(xe - 4, " +++", 4) == 0)
            xe -= 4;
        snprintf(t->pub.ended, sizeof t->pub.ended, "%.*s", (int)(xe - x), x);
        return 0;
    }
    if (e - p >= 5 && memcmp(p, "<... ", 5) == 0) {
        const char *r;
        name = p + 5;
        r = memchr(name, ' ', (size_t)(e - name));
        if (r == NULL || e - r < 9 || memcmp(r, " resumed>", 9) != 0)
            goto bad;
        if (!t->pend.active || (id = ph_intern_find(st->sysnames, name, (size_t)(r - name))) < 0 ||
            (uint32_t)id != t->pend.sys) {
            goto bad; /* its start is not in the log */
        }
        t->pend.active = 0;
        if (e - (r + 9) >= 16 && memcmp(e - 16, "<unfinished ...>", 16) == 0)
            goto bad; /* resumed and interrupted again: strace does not write this */
        switch (finish_call(st, t, t->pend.sys, t->pend.start_ns, t->pend.ts, t->pend.text, strlen(t->pend.text),
                            r + 9, e, 0)) {
        case 0: return 0;
        case 1: goto bad;
        default: return ph_fail(err, ENOMEM, "keep strace's errors");
        }
    }
    /* name(args... */
    name = p;
    for (ne = p; ne < e && *ne != '(' && *ne != ' '; ne++)
        ;
    if (ne == e || *ne != '(' || ne == name)
        goto bad;
    if ((id = sys_index(st, name, (size_t)(ne - name))) < 0)
        return ph_fail(err, ENOMEM, "keep strace's syscalls");
    if (t->pend.active) {
        st->info.unfinished++; /* the previous one never came back */
        t->pend.active = 0;
    }
    {
        int unfinished = e - name >= 16 && memcmp(e - 16, "<unfinished ...>", 16) == 0;
        int detached = e - name >= 14 && memcmp(e - 14, "<detached ...>", 14) == 0;
        if (unfinished || detached) {
            st->sys[id].calls++;
            t->pub.calls++;
            st->info.calls++;
        }
    }
    if (e - name >= 14 && memcmp(e - 14, "<detached ...>", 14) == 0) {
        st->info.unfinished++; /* strace let go of it mid-call */
        return 0;
    }
    if (e - name >= 16 && memcmp(e - 16, "<unfinished ...>", 16) == 0) {
        const char *he = e - 16;
        size_t hl;

        while (he > name && he[-1] == ' ')
            he--;
        hl = (size_t)(he - name) < sizeof t->pend.text - 1 ? (size_t)(he - name) : sizeof t->pend.text - 1;
        t->pend.active = 1;
        t->pend.sys = (uint32_t)id;
        t->pend.start_ns = now;
        memcpy(t->pend.ts, ts, sizeof t->pend.ts);
        memcpy(t->pend.text, name, hl);
        t->pend.text[hl] = '\0';
        return 0;
    }
    switch (finish_call(st, t, (uint32_t)id, now, ts, name, SIZE_MAX, ne, e, 1)) {
    case 0: return 0;
    case 1: goto bad;
    default: return ph_fail(err, ENOMEM, "keep strace's errors");
    }
bad:
    bad_line(st, lineno);
    return 0;
}

/* ---- the public face --------------------------------------------------- */

ph_strace *
ph_strace_new(ph_error_t *err)
{
    ph_strace *st = calloc(1, sizeof *st);

    if (st == NULL || (st->sysnames = ph_intern_new(NAMES_MAX)) == NULL ||
        (st->names = ph_intern_new(NAMES_MAX)) == NULL) {
        if (st)
            ph_intern_free(st->sysnames);
        free(st);
        ph_fail(err, ENOMEM, "parse an strace log");
        return NULL;
    }
    ph_lines_init(&st->lines, PH_STRACE_MAX_LINE, 0, line_cb, st);
    st->other_sys = st->other_thread = UINT32_MAX;
    st->width_ns = FIRST_WIDTH_NS;
    st->info.first_ns = 1;
    st->info.last_ns = 0;
    return st;
}

void
ph_strace_free(ph_strace *st)
{
    if (st == NULL)
        return;
    ph_lines_free(&st->lines);
    ph_intern_free(st->sysnames);
    ph_intern_free(st->names);
    free(st->sys);
    free(st->threads);
    ph_u64map_free(&st->by_pid);
    free(st->errnos);
    ph_u64map_free(&st->by_errno);
    free(st->signals);
    free(st->timeline);
    free(st);
}

int
ph_strace_feed(ph_strace *st, const char *buf, size_t len, ph_error_t *err)
{
    return ph_lines_feed(&st->lines, buf, len, err);
}

int
ph_strace_finish(ph_strace *st, ph_error_t *err)
{
    uint64_t open = 0;

    if (ph_lines_finish(&st->lines, err) < 0)
        return -1;
    for (size_t i = 0; i < st->n_threads; i++)
        open += st->threads[i].pend.active != 0;
    st->info.problem[0] = '\0';
    st->info.in_flight = open + st->info.unfinished;
    if (st->info.lines == 0)
        snprintf(st->info.problem, sizeof st->info.problem, "the log is empty");
    else if (st->info.calls == 0)
        snprintf(st->info.problem, sizeof st->info.problem, "no syscall in the log (%zu lines, none of them strace's)",
                 st->info.bad_lines);
    else if (open + st->info.unfinished > 0)
        snprintf(st->info.problem, sizeof st->info.problem,
                 "%llu call%s never returned in the log (the process was killed, or the log is cut short)",
                 (unsigned long long)(open + st->info.unfinished), open + st->info.unfinished == 1 ? "" : "s");
    else if (!st->info.with_times)
        snprintf(st->info.problem, sizeof st->info.problem, "no timestamps: strace ran without -tt");
    return 0;
}

static int
chunk_cb(void *ctx, const char *buf, size_t len, ph_error_t *err)
{
    return ph_strace_feed(ctx, buf, len, err);
}

ph_strace *
ph_strace_parse_files(const char *const *paths, size_t n, ph_error_t *err)
{
    ph_strace *st = ph_strace_new(err);

    if (st == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (ph_read_file_chunks(paths[i], chunk_cb, st, NULL, err) < 0 || ph_strace_finish(st, err) < 0) {
            ph_strace_free(st);
            return NULL;
        }
    if (n == 0)
        ph_strace_finish(st, err);
    return st;
}

const ph_strace_info *
ph_strace_get_info(const ph_strace *st)
{
    return &st->info;
}

size_t
ph_strace_n_syscalls(const ph_strace *st)
{
    return ph_intern_count(st->sysnames);
}

ph_strace_sys
ph_strace_get_syscall(const ph_strace *st, size_t i)
{
    const sys_rec *r = &st->sys[i];

    return (ph_strace_sys){ ph_intern_get(st->sysnames, (uint32_t)i), r->calls, r->errors, r->timed, r->total_ns,
                            r->max_ns };
}

int
ph_strace_find_syscall(const ph_strace *st, const char *name)
{
    return (int)ph_intern_find(st->sysnames, name, strlen(name));
}

size_t
ph_strace_n_errnos(const ph_strace *st)
{
    return st->n_errnos;
}

ph_strace_errno
ph_strace_get_errno(const ph_strace *st, size_t i)
{
    return (ph_strace_errno){ st->errnos[i].sys, ph_intern_get(st->names, st->errnos[i].name), st->errnos[i].count };
}

size_t
ph_strace_n_threads(const ph_strace *st)
{
    return st->n_threads;
}

const ph_strace_thread *
ph_strace_get_thread(const ph_strace *st, size_t i)
{
    return i < st->n_threads ? &st->threads[i].pub : NULL;
}

size_t
ph_strace_n_slowest(const ph_strace *st)
{
    return st->n_slow;
}

const ph_strace_call *
ph_strace_get_slowest(const ph_strace *st, size_t i)
{
    return i < st->n_slow ? &st->slow[i] : NULL;
}

size_t
ph_strace_n_signals(const ph_strace *st)
{
    size_t n = 0;

    for (size_t i = 0; i < st->cap_signals; i++)
        n += st->signals[i] > 0;
    return n;
}

ph_strace_signal
ph_strace_get_signal(const ph_strace *st, size_t i)
{
    for (size_t k = 0; k < st->cap_signals; k++) {
        if (st->signals[k] == 0)
            continue;
        if (i-- == 0)
            return (ph_strace_signal){ ph_intern_get(st->names, (uint32_t)k), st->signals[k] };
    }
    return (ph_strace_signal){ "", 0 };
}

const uint64_t *
ph_strace_timeline(const ph_strace *st, int32_t timeline, int64_t *origin_ns, int64_t *width_ns)
{
    if (timeline < 0 || (size_t)timeline >= st->n_timelines || !st->have_time)
        return NULL;
    *origin_ns = st->origin_ns;
    *width_ns = st->width_ns;
    return st->timeline + (size_t)timeline * PH_STRACE_BUCKETS;
}
