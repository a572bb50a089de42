/* fuzz_dockerfile.c - libFuzzer target for the profiling image's
 * Dockerfile (ph_image_dockerfile): the first byte picks the package
 * manager (apt, apk, dnf, microdnf, yum, none), the rest is package names,
 * one a line.  Package names go into a shell command, so beyond "no crash,
 * no leak, no undefined behaviour":
 *   - when it is written, every name given appears in it whole (with a
 *     package manager: with none the tools tree is copied instead), and no line
 *     of it holds a character a name may not have outside the text
 *     profharness itself writes (no `;`, `|`, `$`, backquote, quote,
 *     redirection or newline smuggled in by a name);
 *   - when a name is refused, nothing is written.
 * The seeds are the names the shipped profiles use. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ph_image.h"

static const char *const pms[] = { "apt", "apk", "dnf", "microdnf", "yum", "" };

/* The characters a line of ours may hold beyond a name's. */
static int
line_ok(const char *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)l[i];

        if (c < 0x20 || c == 0x7f || strchr("|$`'&<(){}\\!", c) != NULL)
            return 0;
    }
    return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ph_image_facts f = { .shell = 1 };
    ph_strv v = { 0 };
    ph_error_t err = NULL;
    char *text = NULL, *buf;
    const char *p;

    if (size == 0)
        return 0;
    snprintf(f.pm, sizeof f.pm, "%s", pms[data[0] % 6]);
    f.shell = f.pm[0] != '\0';
    if ((buf = strndup((const char *)data + 1, size - 1)) == NULL)
        return 0;
    for (char *save = NULL, *tok = strtok_r(buf, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
        if (ph_strv_push(&v, tok) < 0)
            abort();
    if (ph_image_dockerfile(&f, "sha256:base", "profharness-tools:t", &v, &text, &err) == 0) {
        /* (with no package manager the names are not installed at all) */
        for (size_t i = 0; f.pm[0] && i < v.n; i++)
            if (strstr(text, v.v[i]) == NULL)
                abort();
        for (p = text; *p;) {
            const char *nl = strchr(p, '\n');
            size_t n = nl ? (size_t)(nl - p) : strlen(p);

            /* ours: the comment line, the exec-form RUN's quotes and
             * brackets, apt's `>/dev/null`, dnf's `&& dnf clean all` */
            if (p[0] != '#' && strncmp(p, "RUN [", 5) != 0) {
                char line[8192];
                char *gt;

                snprintf(line, sizeof line, "%.*s", (int)n, p);
                if ((gt = strstr(line, " >/dev/null;")) != NULL)
                    memset(gt, 'x', 12);
                if ((gt = strstr(line, " && ")) != NULL) /* `&& dnf clean all` */
                    memset(gt, 'x', 4);
                if (strchr(line, ';') && strncmp(line, "RUN set -e; apt-get update -qq;", 31) != 0)
                    abort();
                if (!line_ok(line, strlen(line)))
                    abort();
            }
            p += n + (nl != NULL);
        }
        free(text);
    } else if (text != NULL) {
        abort();
    }
    ph_error_free(&err);
    ph_strv_free(&v);
    free(buf);
    return 0;
}
