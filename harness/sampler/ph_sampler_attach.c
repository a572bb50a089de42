/* ph_sampler_attach.c - the agent's attach options (ph_sampler_attach.h). */
#include "ph_sampler_attach.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_sampler_int.h"

/* A whole number in [LO, HI] from the LEN bytes at S; -1 otherwise. */
static long
number(const char *s, size_t len, long lo, long hi)
{
    long v = 0;

    if (len == 0 || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= lo && v <= hi ? v : -1;
}

PH_HIDDEN int
phs_attach_parse(const char *options, phs_attach_opts *o, char *why, size_t len)
{
    const char *p = options ? options : "";
    size_t n;

    memset(o, 0, sizeof *o);
    o->hz = 150;
    o->interval_s = 120;
    if (strcmp(p, "stop") == 0) {
        o->what = PHS_ATTACH_STOP;
        return 0;
    }
    if (strncmp(p, "start", 5) != 0 || (p[5] != '\0' && p[5] != ',')) {
        snprintf(why, len, "the options must start with `start` or be `stop`, not `%.40s`", p);
        return -1;
    }
    o->what = PHS_ATTACH_START;
    for (p += 5; *p == ','; p += n) {
        const char *k = ++p, *eq;
        long v;

        if (strncmp(k, "title=", 6) == 0) {
            snprintf(o->title, sizeof o->title, "%s", k + 6);
            break; /* the rest of the string */
        }
        n = strcspn(k, ",");
        eq = memchr(k, '=', n);
        if (eq == NULL) {
            snprintf(why, len, "`%.*s` is no key=value", (int)(n > 40 ? 40 : n), k);
            return -1;
        }
        if (eq - k == 3 && strncmp(k, "dir", 3) == 0) {
            if (eq[1] != '/' || (size_t)(k + n - eq - 1) >= sizeof o->dir) {
                snprintf(why, len, "dir= wants an absolute path under %zu bytes", sizeof o->dir);
                return -1;
            }
            memcpy(o->dir, eq + 1, (size_t)(k + n - eq - 1));
            o->dir[k + n - eq - 1] = '\0';
        } else if (eq - k == 2 && strncmp(k, "hz", 2) == 0) {
            if ((v = number(eq + 1, (size_t)(k + n - eq - 1), 1, 10000)) < 0) {
                snprintf(why, len, "hz= wants samples per second, 1 to 10000");
                return -1;
            }
            o->hz = (int)v;
        } else if (eq - k == 8 && strncmp(k, "interval", 8) == 0) {
            if ((v = number(eq + 1, (size_t)(k + n - eq - 1), 0, 1000000)) < 0) {
                snprintf(why, len, "interval= wants whole seconds (0: the final snapshot only)");
                return -1;
            }
            o->interval_s = (int)v;
        } else if (eq - k == 5 && strncmp(k, "clock", 5) == 0) {
            size_t l = (size_t)(k + n - eq - 1);

            if (l == 3 && strncmp(eq + 1, "cpu", 3) == 0)
                o->wall = 0;
            else if (l == 4 && strncmp(eq + 1, "wall", 4) == 0)
                o->wall = 1;
            else {
                snprintf(why, len, "clock= wants cpu or wall");
                return -1;
            }
        } else {
            snprintf(why, len, "unknown option `%.*s`", (int)(eq - k > 40 ? 40 : eq - k), k);
            return -1;
        }
    }
    if (o->dir[0] == '\0') {
        snprintf(why, len, "start needs dir=, the directory to write into");
        return -1;
    }
    return 0;
}
