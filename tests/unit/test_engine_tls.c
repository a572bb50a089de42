/* test_engine_tls.c - the Engine's certificate is checked for its host
 * name and its dates, not only for its CA.
 *
 * A fake Engine (tests/unit/data/fake-engine.py, TLS on 127.0.0.1) shows
 * certificates made here with openssl by one CA: one for localhost (the
 * control: the ping goes through, so the only difference in the others
 * is the certificate), one for another host name, one for localhost that
 * expired in 2020.  The client is told DOCKER_HOST=tcp://localhost:PORT,
 * DOCKER_TLS_VERIFY=1 and the CA, as the docker CLI would be.  The full
 * TLS Engine (client certificates, contexts) is tests/50-engine-tls.bats. */
#include "test_engine_util.h"

#include <jansson.h>

#include "ph_engine.h"

static int
sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* A server certificate NAME for SAN, signed by the CA in test_dir, valid
 * from START to END (openssl ca's YYMMDDHHMMSSZ; NULL: two days from now). */
static void
server_cert(const char *name, const char *san, const char *start, const char *end)
{
    char dates[128] = "-days 2";

    if (start != NULL)
        snprintf(dates, sizeof dates, "-startdate %s -enddate %s", start, end);
    assert_int_equal(sh("cd '%s' && openssl req -newkey rsa:2048 -nodes -keyout %s-key.pem -out %s.csr "
                        "-subj /CN=%s 2>/dev/null >&2 && printf 'subjectAltName=%s\\nextendedKeyUsage=serverAuth\\n' "
                        "> %s.ext && openssl ca -batch -notext -config ca.cnf -cert ca.pem -keyfile ca-key.pem "
                        "-in %s.csr -out %s.pem -extfile %s.ext %s >/dev/null 2>&1",
                        test_dir, name, name, name, san, name, name, name, name, dates),
                     0);
}

static int
setup(void **state)
{
    tu_setup(state);
    if (sh("cd '%s' && mkdir ca && touch index.txt && echo 1000 > serial && "
           "printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase=index.txt\\nnew_certs_dir=ca\\nserial=serial\\n"
           "default_md=sha256\\npolicy=p\\nunique_subject=no\\n[p]\\ncommonName=supplied\\n' > ca.cnf && "
           "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 "
           "-subj '/CN=profharness unit CA' >/dev/null 2>&1",
           test_dir) != 0)
        return -1;
    server_cert("good", "DNS:localhost,IP:127.0.0.1", NULL, NULL);
    server_cert("other", "DNS:engine.other.example", NULL, NULL);
    server_cert("expired", "DNS:localhost,IP:127.0.0.1", "200101000000Z", "200102000000Z");
    return 0;
}

static int
teardown(void **state)
{
    return tu_teardown(state);
}

/* Ping a fake Engine showing certificate NAME: 0, or -1 and *err. */
static int
ping_with(const char *name, char *host, size_t host_size, ph_error_t *err)
{
    tu_fake f;
    char cert[400], key[400];
    ph_engine *x;
    int rc = -1;

    snprintf(cert, sizeof cert, "%s/%s.pem", test_dir, name);
    snprintf(key, sizeof key, "%s/%s-key.pem", test_dir, name);
    tu_fake_start(&f, "tls", cert, key);
    snprintf(host, host_size, "tcp://localhost:%d", f.port);
    setenv("DOCKER_HOST", host, 1);
    setenv("DOCKER_TLS_VERIFY", "1", 1);
    setenv("DOCKER_CERT_PATH", test_dir, 1); /* ca.pem; no cert.pem: no client certificate */
    x = ph_engine_new(err);
    unsetenv("DOCKER_HOST");
    unsetenv("DOCKER_TLS_VERIFY");
    unsetenv("DOCKER_CERT_PATH");
    if (x != NULL)
        rc = ph_engine_ping(x, err);
    ph_engine_free(x);
    tu_fake_stop(&f);
    return rc;
}

/* The control: the right name, in date: trusted. */
static void
test_good_certificate(void **state)
{
    ph_error_t err = NULL;
    char host[64];

    (void)state;
    if (ping_with("good", host, sizeof host, &err) < 0)
        fail_msg("%s", err->msg);
}

/* Issued for another host: refused, naming the host it should be for. */
static void
test_certificate_for_another_host(void **state)
{
    ph_error_t err = NULL;
    char host[64], want[300];

    (void)state;
    assert_int_equal(ping_with("other", host, sizeof host, &err), -1);
    snprintf(want, sizeof want,
             "ping the Docker Engine: the Docker Engine at %s (TLS) is not trusted: its certificate is not issued "
             "for the host name `localhost`",
             host);
    if (strncmp(err->msg, want, strlen(want)) != 0)
        fail_msg("got `%s`", err->msg);
    assert_int_equal(err->status, PH_EXIT_FAILURE);
    ph_error_free(&err);
}

/* Expired: refused, saying so. */
static void
test_expired_certificate(void **state)
{
    ph_error_t err = NULL;
    char host[64], want[300];

    (void)state;
    assert_int_equal(ping_with("expired", host, sizeof host, &err), -1);
    snprintf(want, sizeof want,
             "ping the Docker Engine: the Docker Engine at %s (TLS) is not trusted: its certificate has expired", host);
    if (strncmp(err->msg, want, strlen(want)) != 0)
        fail_msg("got `%s`", err->msg);
    ph_error_free(&err);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_certificate),
        cmocka_unit_test(test_certificate_for_another_host),
        cmocka_unit_test(test_expired_certificate),
    };

    return cmocka_run_group_tests_name("engine_tls", tests, setup, teardown);
}
