/* ph_fmt.c - number formatting for reports; see ph_fmt.h. */
#include "ph_fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *
ph_fmt_commify(char buf[PH_FMT_LEN], uint64_t v)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v), o = 0;

    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

const char *
ph_fmt_commify_signed(char buf[PH_FMT_LEN], int64_t v)
{
    if (v >= 0)
        return ph_fmt_commify(buf, (uint64_t)v);
    char tmp[PH_FMT_LEN];

    ph_fmt_commify(tmp, v == INT64_MIN ? (uint64_t)INT64_MAX + 1 : (uint64_t)-v);
    snprintf(buf, PH_FMT_LEN, "-%s", tmp);
    return buf;
}

/* Three significant digits of V (already scaled) followed by UNIT. */
static const char *
sig3(char buf[PH_FMT_LEN], double v, const char *unit)
{
    double a = fabs(v);

    if (a < 9.995)
        snprintf(buf, PH_FMT_LEN, "%.2f%s", v, unit);
    else if (a < 99.95)
        snprintf(buf, PH_FMT_LEN, "%.1f%s", v, unit);
    else
        snprintf(buf, PH_FMT_LEN, "%.0f%s", v, unit);
    return buf;
}

const char *
ph_fmt_bytes(char buf[PH_FMT_LEN], double bytes)
{
    static const char *const units[] = { " KiB", " MiB", " GiB", " TiB", " PiB", " EiB" };
    double a = fabs(bytes);
    int u = -1;

    if (a < 1000) {
        snprintf(buf, PH_FMT_LEN, "%.0f B", bytes);
        return buf;
    }
    /* ms_print's rule: a new unit from 1000 of the previous one */
    while (a >= 999.5 && u < 5) {
        a /= 1024;
        bytes /= 1024;
        u++;
    }
    return sig3(buf, bytes, units[u]);
}

const char *
ph_fmt_count(char buf[PH_FMT_LEN], double v)
{
    static const char *const units[] = { " k", " M", " G", " T", " P", " E" };
    double a = fabs(v);
    int u = -1;

    if (a < 999.5) {
        if (v == floor(v))
            snprintf(buf, PH_FMT_LEN, "%.0f", v);
        else
            sig3(buf, v, "");
        return buf;
    }
    while (a >= 999.5 && u < 5) {
        a /= 1000;
        v /= 1000;
        u++;
    }
    return sig3(buf, v, units[u]);
}

const char *
ph_fmt_seconds(char buf[PH_FMT_LEN], double s)
{
    double a = fabs(s);

    if (a == 0)
        snprintf(buf, PH_FMT_LEN, "0 s");
    else if (a < 999.5e-9)
        sig3(buf, s * 1e9, " ns");
    else if (a < 999.5e-6)
        sig3(buf, s * 1e6, " µs");
    else if (a < 999.5e-3)
        sig3(buf, s * 1e3, " ms");
    else if (a < 99.95)
        sig3(buf, s, " s");
    else if (a < 3600)
        snprintf(buf, PH_FMT_LEN, "%s%d min %d s", s < 0 ? "-" : "", (int)(a / 60), (int)fmod(a, 60));
    else
        snprintf(buf, PH_FMT_LEN, "%s%d h %d min", s < 0 ? "-" : "", (int)(a / 3600), (int)fmod(a / 60, 60));
    return buf;
}

const char *
ph_fmt_percent(char buf[PH_FMT_LEN], double part, double whole)
{
    if (whole == 0)
        snprintf(buf, PH_FMT_LEN, "-");
    else
        snprintf(buf, PH_FMT_LEN, "%.1f %%", 100.0 * part / whole);
    return buf;
}

const char *
ph_fmt_change(char buf[PH_FMT_LEN], double a, double b)
{
    if (a == b)
        snprintf(buf, PH_FMT_LEN, "0.0 %%");
    else if (a == 0)
        snprintf(buf, PH_FMT_LEN, "new");
    else if (b == 0)
        snprintf(buf, PH_FMT_LEN, "gone");
    else
        snprintf(buf, PH_FMT_LEN, "%+.1f %%", 100.0 * (b - a) / fabs(a));
    return buf;
}

#define ELLIPSIS "\xe2\x80\xa6" /* U+2026 */

/* S with the contents of each bracket pair OPEN..CLOSE at depth 0 (or,
 * with LAST_ONLY, of the last one when it ends S) made an ellipsis. */
static void
elide_groups(char *s, char open, char close, int last_only)
{
    char out[4096];
    size_t o = 0, n = strlen(s), start = n;
    int depth = 0;

    if (last_only) { /* the trailing group: its open bracket at depth 0 */
        if (n == 0 || s[n - 1] != close)
            return;
        for (size_t i = n; i-- > 0;) {
            depth += s[i] == close ? 1 : s[i] == open ? -1 : 0;
            if (depth == 0) {
                start = i;
                break;
            }
        }
        if (start == n || start + 2 >= n) /* unbalanced, or empty already */
            return;
        snprintf(out, sizeof out, "%.*s%c" ELLIPSIS "%c", (int)start, s, open, close);
        snprintf(s, 4096, "%s", out);
        return;
    }
    for (size_t i = 0; i < n && o + 8 < sizeof out; i++) {
        if (s[i] == open && depth++ == 0) {
            out[o++] = open;
            memcpy(out + o, ELLIPSIS, 3);
            o += 3;
            continue;
        }
        if (s[i] == close && depth > 0 && --depth == 0) {
            out[o++] = close;
            continue;
        }
        if (depth == 0)
            out[o++] = s[i];
    }
    if (depth != 0)
        return; /* unbalanced (`operator<`): left as it is */
    out[o] = '\0';
    snprintf(s, 4096, "%s", out);
}

/* `a::b::c(…)` -> `…::c(…)`: the last qualifier at depth 0 kept. */
static void
drop_qualifiers(char *s)
{
    char out[4096];
    const char *cut = NULL;
    int depth = 0;

    for (const char *p = s; *p; p++) {
        depth += (*p == '(' || *p == '<') ? 1 : (*p == ')' || *p == '>') ? -1 : 0;
        if (depth == 0 && p[0] == ':' && p[1] == ':')
            cut = p;
    }
    if (cut == NULL)
        return;
    snprintf(out, sizeof out, ELLIPSIS "%s", cut);
    snprintf(s, 4096, "%s", out);
}

const char *
ph_fmt_name(char *out, size_t cap, const char *name, size_t max)
{
    char s[4096];

    if (cap == 0)
        return out;
    if (strlen(name) <= max || strlen(name) >= sizeof s) {
        snprintf(out, cap, "%s", name);
        return out;
    }
    snprintf(s, sizeof s, "%s", name);
    elide_groups(s, '(', ')', 1);
    if (strlen(s) > max)
        elide_groups(s, '<', '>', 0);
    if (strlen(s) > max)
        drop_qualifiers(s);
    snprintf(out, cap, "%s", s);
    return out;
}
