/* Connections a server closes on its own schedule (issue: requests lost
 * against a real llama.cpp server). The simulator closes connections the
 * ways real servers do; no request may be lost to it, and a request whose
 * connection died unanswered is resent once, counted as a retry, not as a
 * failure. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <ev.h>

#include "engine/engine_internal.h"
#include "infertop/http.h"
#include "infertop/report.h"
#include "infertop/stats.h"
#include "enginefix.h"

static int setup(void **state)
{
	struct enginefix *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	enginefix_free(*state);
	free(*state);
	return 0;
}

static long ka(const char *v)
{
	return http_keepalive_parse(v, strlen(v));
}

static void test_keepalive_parse(void **state)
{
	(void)state;
	assert_int_equal(ka(" timeout=5, max=100\r\n"), 5);
	assert_int_equal(ka(" max=100, timeout=20\r\n"), 20);
	assert_int_equal(ka("Timeout=7"), 7);
	assert_int_equal(ka(" timeout=0"), 0);
	assert_int_equal(ka(" max=100\r\n"), -1);
	assert_int_equal(ka(" timeout=\r\n"), -1);
	assert_int_equal(ka(" timeout=x"), -1);
	assert_int_equal(ka(" xtimeout=5"), -1);     /* another parameter's name */
	assert_int_equal(ka(" timeout=99999999999999999999"), -1);
	assert_int_equal(http_keepalive_parse("timeout=5", 8), -1); /* length is honoured */
}

static int64_t ra(const char *v, time_t now)
{
	return http_retry_after_parse(v, strlen(v), now);
}

static void test_retry_after_parse(void **state)
{
	(void)state;
	const int64_t S = 1000000000LL;
	assert_true(ra(" 1\r\n", 0) == 1 * S);
	assert_true(ra("120", 0) == 120 * S);
	assert_true(ra(" 0", 0) == 0);
	assert_true(ra(" 99999", 0) == HTTP_RETRY_AFTER_MAX_S * S);
	assert_true(ra(" -5", 0) == -1);
	assert_true(ra(" soon", 0) == -1);
	assert_true(ra("", 0) == -1);
	/* An HTTP date 30 s after now; one in the past means now. */
	assert_true(ra(" Sun, 06 Nov 1994 08:49:37 GMT\r\n", 784111747) == 30 * S);
	assert_true(ra(" Sun, 06 Nov 1994 08:49:37 GMT", 784111800) == 0);
	assert_true(ra(" Sun, 06 Nov 1994 08:49:37", 784111747) == -1);
}

/* Every connection serves one request; the next one sent on it is dropped
 * unanswered. curl's own resend takes another pooled connection, which is
 * just as doomed: before the fix this lost requests as "Connection died,
 * tried 5 times before giving up". */
static void test_dropped_on_reuse(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
			     "--conn-max-requests", "1", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "8", "-n", "200", "--output-tokens", "4",
			      "--metrics-url", "none", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	assert_int_equal(stats_errors_total(s), 0);
	assert_int_equal(s->run_c.completed, 200);
	assert_true(s->connection_retries > 0);
	/* Each retry is one request, not a second one counted. */
	assert_int_equal(s->started, 200);
	/* The summary says so. */
	char *txt = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&txt, &len);
	assert_non_null(mem);
	struct run_view v;
	engine_view(f->e, &v);
	report_summary(mem, &v);
	fclose(mem);
	assert_non_null(strstr(txt, "Connection retries: "));
	free(txt);
}

/* The server closes after each answer without saying so: the close races
 * the next request on the same connection. */
static void test_closed_silently(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
			     "--conn-close-silently", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "4", "-n", "300", "--output-tokens", "4",
			      "--metrics-url", "none", NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	assert_int_equal(stats_errors_total(s), 0);
	assert_int_equal(s->run_c.completed, 300);
	assert_int_equal(s->started, 300);
	/* Once seen to close every connection, the server gets fresh ones
	 * (http.h): a resend at most for each of the first closes found and
	 * for each probe after (30 of 300 were resent before). */
	assert_true(s->connection_retries <= HTTP_REUSE_CLOSED_RUN + 300 / HTTP_REUSE_PROBE_EVERY);
}

/* A server that closes every connection after its answer (as llama.cpp
 * does after a streamed one), with time between requests for the close to
 * arrive: a kept connection is found closed before it is used, so nothing
 * is resent, on either client (curl checks as well). The direct path once
 * sent every request after the first onto a dead connection. */
static void closed_found(void **state, const char *client)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
			     "--conn-close-silently", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-r", "40", "--arrival", "constant", "-n", "30", "--output-tokens", "2",
			      "--metrics-url", "none", "--http-client", client, NULL};
	enginefix_engine(f, args);
	engine_run(f->e);
	const struct stats *s = f->e->stats;
	assert_int_equal(stats_errors_total(s), 0);
	assert_int_equal(s->run_c.completed, 30);
	assert_int_equal(s->connection_retries, 0);
	assert_int_equal(s->connections, 30);
}

static void test_closed_found_direct(void **state)
{
	closed_found(state, "direct");
}

static void test_closed_found_curl(void **state)
{
	closed_found(state, "curl");
}

/* A server that states its idle limit is believed: connections idle
 * longer are not reused. */
static void test_idle_limit_learned(void **state)
{
	struct enginefix *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "1ms", "--itl", "1ms",
			     "--conn-idle-timeout", "2s", NULL};
	enginefix_sim(f, sim);
	const char *args[] = {"-c", "2", "-n", "20", "--output-tokens", "4",
			      "--metrics-url", "none", NULL};
	enginefix_engine(f, args);
	assert_int_equal(http_reuse_limit(f->e->http), HTTP_KEEPALIVE_DEFAULT_S - 1);
	engine_run(f->e);
	assert_int_equal(stats_errors_total(f->e->stats), 0);
	assert_int_equal(http_reuse_limit(f->e->http), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keepalive_parse),
		cmocka_unit_test(test_retry_after_parse),
		cmocka_unit_test_setup_teardown(test_dropped_on_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_silently, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_found_direct, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_found_curl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_limit_learned, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
