/* ph_jattach.c - the pure parts of HotSpot's dynamic attach (ph_jattach.h
 * says what each promises and the protocol they serve). */
#include "ph_jattach.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FLAG "DisableAttachMechanism"

ssize_t
ph_jattach_request(char *buf, size_t len, const char *command, const char *const *args, size_t n_args)
{
    const char *part[2 + PH_JATTACH_ARGS] = { PH_JATTACH_PROTOCOL, command, "", "", "" };
    size_t at = 0;

    if (command == NULL || n_args > PH_JATTACH_ARGS)
        return -1;
    for (size_t i = 0; i < n_args; i++)
        part[2 + i] = args[i] ? args[i] : "";
    for (size_t i = 0; i < 2 + PH_JATTACH_ARGS; i++) {
        size_t n = strlen(part[i]) + 1; /* with its NUL */

        if (n > len - at)
            return -1;
        memcpy(buf + at, part[i], n);
        at += n;
    }
    return (ssize_t)at;
}

int
ph_jattach_reply_code(const char *buf, size_t len, int *code, size_t *body)
{
    size_t i = 0, digits = 0;
    long v = 0;
    int neg = 0;

    if (len > 0 && buf[0] == '-') {
        neg = 1;
        i = 1;
    }
    for (; i < len && buf[i] >= '0' && buf[i] <= '9'; i++) {
        if (++digits > 10)
            return -1;
        v = v * 10 + (buf[i] - '0');
    }
    if (i == len)
        return len < 32 ? 0 : -1;
    if (buf[i] != '\n' || digits == 0 || v > INT32_MAX)
        return -1;
    *code = neg ? -(int)v : (int)v;
    *body = i + 1;
    return 1;
}

/* The value of the line starting with KEY (":" included) in TEXT, up to
 * its newline: *VLEN bytes; NULL when there is no such line. */
static const char *
status_field(const char *text, size_t len, const char *key, size_t *vlen)
{
    size_t kl = strlen(key);

    for (size_t at = 0; at < len;) {
        const char *line = text + at, *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) : len - at;

        if (ll >= kl && memcmp(line, key, kl) == 0) {
            const char *v = line + kl;

            *vlen = ll - kl;
            while (*vlen > 0 && (*v == ' ' || *v == '\t')) {
                v++;
                (*vlen)--;
            }
            return v;
        }
        at += ll + 1;
    }
    return NULL;
}

/* Up to MAX unsigned decimal numbers of V (VLEN bytes), separated by
 * blanks, into OUT: how many, or -1 on anything else. */
static int
numbers(const char *v, size_t vlen, unsigned long *out, size_t max)
{
    size_t n = 0, i = 0;

    while (i < vlen) {
        unsigned long x = 0;
        size_t d = 0;

        while (i < vlen && (v[i] == ' ' || v[i] == '\t'))
            i++;
        if (i == vlen)
            break;
        for (; i < vlen && v[i] >= '0' && v[i] <= '9'; i++, d++) {
            if (x > (ULONG_MAX - 9) / 10)
                return -1;
            x = x * 10 + (unsigned long)(v[i] - '0');
        }
        if (d == 0 || (i < vlen && v[i] != ' ' && v[i] != '\t'))
            return -1;
        if (n < max)
            out[n] = x;
        n++;
    }
    return n > max ? -1 : (int)n;
}

int
ph_jattach_status_parse(const char *text, size_t len, ph_jattach_proc *out)
{
    unsigned long ids[PH_JATTACH_GROUPS_MAX];
    const char *v;
    size_t vlen;
    int n;
    unsigned long long mask = 0;

    memset(out, 0, sizeof *out);
    if ((v = status_field(text, len, "State:", &vlen)) == NULL || vlen == 0)
        return -1;
    out->state = v[0];
    /* real, effective, saved, filesystem */
    if ((v = status_field(text, len, "Uid:", &vlen)) == NULL || numbers(v, vlen, ids, 4) != 4)
        return -1;
    out->uid = (uid_t)ids[1];
    if ((v = status_field(text, len, "Gid:", &vlen)) == NULL || numbers(v, vlen, ids, 4) != 4)
        return -1;
    out->gid = (gid_t)ids[1];
    if ((v = status_field(text, len, "Groups:", &vlen)) != NULL) {
        if ((n = numbers(v, vlen, ids, PH_JATTACH_GROUPS_MAX)) < 0)
            return -1;
        for (int i = 0; i < n; i++)
            out->groups[i] = (gid_t)ids[i];
        out->n_groups = (size_t)n;
    }
    if ((v = status_field(text, len, "SigCgt:", &vlen)) == NULL || vlen == 0 || vlen > 16)
        return -1;
    for (size_t i = 0; i < vlen; i++) {
        char c = v[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

        if (d < 0)
            return -1;
        mask = mask << 4 | (unsigned)d;
    }
    out->catches_quit = (mask >> (3 - 1)) & 1; /* SIGQUIT is 3 */
    /* NSpid lists the pid in each namespace from ours inwards (Linux 4.1+) */
    if ((v = status_field(text, len, "NSpid:", &vlen)) != NULL) {
        if ((n = numbers(v, vlen, ids, PH_JATTACH_GROUPS_MAX)) < 1)
            return -1;
        out->nspid = (long)ids[n - 1];
    } else {
        if ((v = status_field(text, len, "Pid:", &vlen)) == NULL || numbers(v, vlen, ids, 1) != 1)
            return -1;
        out->nspid = (long)ids[0];
    }
    return out->nspid > 0 ? 0 : -1;
}

int
ph_jattach_maps_jvm(const char *text, size_t len)
{
    static const char lib[] = "/libjvm.so";
    size_t ll = sizeof lib - 1;

    /* a mapped file's path ends its line: ".../server/libjvm.so\n" */
    for (size_t i = 0; i + ll <= len; i++)
        if (memcmp(text + i, lib, ll) == 0 && (i + ll == len || text[i + ll] == '\n' || text[i + ll] == ' '))
            return 1;
    return 0;
}

/* What WORD (LEN bytes) says of the flag: 1 on, 0 off, -1 nothing. */
static int
flag_word(const char *w, size_t len)
{
    static const char on[] = "-XX:+" FLAG, off[] = "-XX:-" FLAG, eq[] = "-XX:" FLAG "=";

    if (len == sizeof on - 1 && memcmp(w, on, len) == 0)
        return 1;
    if (len == sizeof off - 1 && memcmp(w, off, len) == 0)
        return 0;
    if (len > sizeof eq - 1 && memcmp(w, eq, sizeof eq - 1) == 0) {
        const char *v = w + sizeof eq - 1;
        size_t vl = len - (sizeof eq - 1);

        if ((vl == 4 && memcmp(v, "true", 4) == 0) || (vl == 1 && *v == '1'))
            return 1;
        if ((vl == 5 && memcmp(v, "false", 5) == 0) || (vl == 1 && *v == '0'))
            return 0;
    }
    return -1;
}

/* The flag's state after the blank-separated words of V (VLEN bytes),
 * starting from STATE. */
static int
flag_in_words(const char *v, size_t vlen, int state)
{
    for (size_t i = 0; i < vlen;) {
        size_t j;

        while (i < vlen && (v[i] == ' ' || v[i] == '\t' || v[i] == '\n'))
            i++;
        for (j = i; j < vlen && v[j] != ' ' && v[j] != '\t' && v[j] != '\n'; j++)
            ;
        if (j > i) {
            int f = flag_word(v + i, j - i);

            if (f >= 0)
                state = f;
        }
        i = j;
    }
    return state;
}

/* The value of NAME in the NUL-separated environment ENV: *VLEN bytes,
 * or NULL. */
static const char *
env_value(const char *env, size_t len, const char *name, size_t *vlen)
{
    size_t nl = strlen(name);

    for (size_t at = 0; env != NULL && at < len;) {
        const char *s = env + at, *end = memchr(s, '\0', len - at);
        size_t sl = end ? (size_t)(end - s) : len - at;

        if (sl > nl && memcmp(s, name, nl) == 0 && s[nl] == '=') {
            *vlen = sl - nl - 1;
            return s + nl + 1;
        }
        at += sl + 1;
    }
    return NULL;
}

/* The launcher's options that take the next word as their value. */
static int
takes_value(const char *w)
{
    static const char *const with_value[] = { "-cp", "-classpath", "--class-path", "-p", "--module-path",
                                              "--upgrade-module-path", "--add-modules", "--limit-modules",
                                              "--add-reads", "--add-exports", "--add-opens", "--patch-module",
                                              "--enable-native-access", "--source", NULL };

    for (size_t i = 0; with_value[i]; i++)
        if (strcmp(w, with_value[i]) == 0)
            return 1;
    return 0;
}

int
ph_jattach_attach_disabled(const char *cmdline, size_t len, const char *environ, size_t env_len)
{
    const char *v;
    size_t vlen;
    int state = 0, first = 1;

    if ((v = env_value(environ, env_len, "JAVA_TOOL_OPTIONS", &vlen)) != NULL)
        state = flag_in_words(v, vlen, state);
    if ((v = env_value(environ, env_len, "JDK_JAVA_OPTIONS", &vlen)) != NULL)
        state = flag_in_words(v, vlen, state);
    /* argv[0] is the launcher; its options end at the main class, at the
     * jar after -jar, at the module after -m */
    for (size_t at = 0; at < len;) {
        const char *w = cmdline + at, *end = memchr(w, '\0', len - at);
        size_t wl = end ? (size_t)(end - w) : len - at;
        char word[64];

        at += wl + 1;
        if (first) {
            first = 0;
            continue;
        }
        if (wl == 0 || w[0] != '-')
            break;
        if (wl < sizeof word) {
            memcpy(word, w, wl);
            word[wl] = '\0';
            if (strcmp(word, "-jar") == 0 || strcmp(word, "-m") == 0 || strcmp(word, "--module") == 0)
                break;
            if (takes_value(word)) {
                const char *nx = at < len ? memchr(cmdline + at, '\0', len - at) : NULL;

                at = nx ? (size_t)(nx - cmdline) + 1 : len;
                continue;
            }
        }
        {
            int f = flag_word(w, wl);

            if (f >= 0)
                state = f;
        }
    }
    if ((v = env_value(environ, env_len, "_JAVA_OPTIONS", &vlen)) != NULL)
        state = flag_in_words(v, vlen, state);
    return state;
}
