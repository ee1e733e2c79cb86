/* infertop fleet's pure parts: the split of a total, the --discover and
 * --targets parsers, the run spec each generator gets from --start, and
 * the view and commands of a fleet that has heard from nobody yet. The
 * HTTP side runs against real processes in tests/fleet*.sh. */
#include "config.h"

#include <cjson/cJSON.h>
#include <ev.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "infertop/cli.h"
#include "infertop/cmd_target.h"
#include "infertop/fleet.h"
#include "infertop/hist.h"
#include "infertop/options.h"
#include "infertop/redact.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"
#include "infertop/view.h"
#include "simutil.h"

static void test_split(void **state)
{
	(void)state;
	assert_int_equal(fleet_split_long(13, 3, 0), 5);
	assert_int_equal(fleet_split_long(13, 3, 1), 4);
	assert_int_equal(fleet_split_long(13, 3, 2), 4);
	assert_int_equal(fleet_split_long(7, 3, 0), 3);
	assert_int_equal(fleet_split_long(7, 3, 2), 2);
	assert_int_equal(fleet_split_long(5, 0, 0), 0);
	/* Every split adds up, and no two shares differ by more than one. */
	for (long total = 1; total < 200; total++)
		for (size_t k = 1; k <= 9 && (long)k <= total; k++) {
			long sum = 0, lo = total, hi = 0;
			for (size_t i = 0; i < k; i++) {
				long v = fleet_split_long(total, k, i);
				sum += v;
				lo = v < lo ? v : lo;
				hi = v > hi ? v : hi;
				if (i)
					assert_true(v <= fleet_split_long(total, k, i - 1));
			}
			assert_int_equal(sum, total);
			assert_true(hi - lo <= 1);
		}
}

static void test_dns_parse(void **state)
{
	(void)state;
	char name[300], err[256];
	int port = 0;
	assert_int_equal(fleet_dns_parse("dns:gens.default.svc:9464", name, sizeof name, &port, err, sizeof err), 0);
	assert_string_equal(name, "gens.default.svc");
	assert_int_equal(port, 9464);
	static const char *const bad[] = {"gens:9464", "dns::80", "dns:x:0", "dns:x:65536", "dns:x", "dns:x:12a",
					  "dns:x:", "DNS:x:1"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_int_equal(fleet_dns_parse(bad[i], name, sizeof name, &port, err, sizeof err), -1);
		assert_non_null(strstr(err, "dns:NAME:PORT"));
	}
}

struct fx {
	struct ev_loop *loop;
	struct config cfg;
	struct fleet *f;
};

static int fx_setup(void **state)
{
	struct fx *x = calloc(1, sizeof *x);
	char *argv[] = {"infertop", NULL};
	if (!x || cli_parse(&x->cfg, 1, argv) != CLI_RUN)
		return -1;
	char err[256];
	x->loop = ev_loop_new(EVFLAG_AUTO);
	x->f = fleet_new(x->loop, &x->cfg, err, sizeof err);
	*state = x;
	return x->f ? 0 : -1;
}

static int fx_teardown(void **state)
{
	struct fx *x = *state;
	fleet_free(x->f);
	ev_loop_destroy(x->loop);
	cli_free(&x->cfg);
	free(x);
	return 0;
}

static void test_targets(void **state)
{
	struct fx *x = *state;
	char err[256];
	assert_int_equal(fleet_add_list(x->f, " http://a:1 , http://b:2/v1/status,http://a:1/", err, sizeof err), 0);
	assert_int_equal(fleet_nendpoints(x->f), 2);
	assert_string_equal(fleet_endpoint_url(x->f, 0), "http://a:1");
	assert_string_equal(fleet_endpoint_url(x->f, 1), "http://b:2");
	assert_int_equal(fleet_add_list(x->f, "ftp://c:3", err, sizeof err), -1);
	assert_int_equal(fleet_add_list(x->f, ",,", err, sizeof err), -1);
	/* A password in a URL is refused and never repeated. */
	assert_int_equal(fleet_add_list(x->f, "http://u:hunter2@c:3", err, sizeof err), -1);
	assert_null(strstr(err, "hunter2"));
	assert_int_equal(fleet_nendpoints(x->f), 2);

	char path[] = "/tmp/test_fleet_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char text[] = "# generators\nhttp://c:3\n\n  http://d:4  # the last\n";
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	assert_int_equal(fleet_add_file(x->f, path, err, sizeof err), 0);
	unlink(path);
	assert_int_equal(fleet_nendpoints(x->f), 4);
	assert_string_equal(fleet_endpoint_url(x->f, 3), "http://d:4");
	assert_int_equal(fleet_add_file(x->f, "/nonexistent/targets", err, sizeof err), -1);
}

/* The spec generator i of k gets, parsed back. */
static cJSON *spec_of(struct fleet_start *s, size_t i, size_t k)
{
	char *t = fleet_start_spec(s, i, k, 1767225600.5);
	assert_non_null(t);
	cJSON *j = cJSON_Parse(t);
	free(t);
	assert_non_null(j);
	return j;
}

static const char *str(const cJSON *j, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_start_spec(void **state)
{
	struct fx *x = *state;
	char err[256];
	char *argv[] = {"-c", "13", "-d", "5s", "--seed=7", "-H", "X-A: 1", "--header", "X-B: 2", "-n20",
			"http://h:8000"};
	struct fleet_start *s = fleet_start_new(x->f, 11, argv, err, sizeof err);
	assert_non_null(s);
	static const long conc[] = {5, 4, 4}, reqs[] = {7, 7, 6};
	static const char *const seeds[] = {"7", "8", "9"};
	for (size_t i = 0; i < 3; i++) {
		cJSON *j = spec_of(s, i, 3);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "concurrency")->valuedouble, conc[i]);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "requests")->valuedouble, reqs[i]);
		assert_string_equal(str(j, "seed"), seeds[i]);
		assert_string_equal(str(j, "start-at"), "1767225600.500");
		assert_string_equal(str(j, "duration"), "5s");
		assert_string_equal(str(j, "url"), "http://h:8000");
		assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "no-tui")));
		const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "header");
		assert_true(cJSON_IsArray(h) && cJSON_GetArraySize(h) == 2);
		/* --slice I/N when this build has it (another module's option). */
		if (cli_option_kind("slice") == 1) {
			char want[16];
			snprintf(want, sizeof want, "%zu/3", i);
			assert_string_equal(str(j, "slice"), want);
		} else {
			assert_null(cJSON_GetObjectItemCaseSensitive(j, "slice"));
		}
		cJSON_Delete(j);
	}
	fleet_start_free(s);

	char *open[] = {"--rate", "10", "--max-concurrency", "7", "http://h:8000"};
	s = fleet_start_new(x->f, 5, open, err, sizeof err);
	assert_non_null(s);
	cJSON *j = spec_of(s, 1, 3);
	assert_true(strtod(str(j, "rate"), NULL) * 3 == 10.0);
	assert_null(cJSON_GetObjectItemCaseSensitive(j, "concurrency"));
	cJSON_Delete(j);
	/* The cap is a fleet total too: 7 = 3 + 2 + 2; never 0 (no cap). */
	static const long caps[] = {3, 2, 2};
	for (size_t i = 0; i < 3; i++) {
		j = spec_of(s, i, 3);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "max-concurrency")->valuedouble, caps[i]);
		cJSON_Delete(j);
	}
	j = spec_of(s, 9, 10);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "max-concurrency")->valuedouble, 1);
	cJSON_Delete(j);
	fleet_start_free(s);
}

static void test_start_refused(void **state)
{
	struct fx *x = *state;
	char err[256];
	struct {
		int argc;
		char *argv[4];
		const char *msg;
	} bad[] = {
		{1, {"--bogus"}, "unknown option --bogus"},
		{2, {"-o", "x.json"}, "the fleet's to set"},
		{2, {"--start-at", "5"}, "the fleet's to set"},
		{2, {"-c", "0"}, "--concurrency"},
		{1, {"-c"}, "needs a value"},
		{2, {"http://a", "http://b"}, "one target URL"},
		{1, {"--help"}, "unknown option --help"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = '\0';
		assert_null(fleet_start_new(x->f, bad[i].argc, bad[i].argv, err, sizeof err));
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, bad[i].msg);
	}
}

static void test_empty_view(void **state)
{
	struct fx *x = *state;
	struct cmd_target t;
	fleet_cmd_target(x->f, &t);
	struct run_view v;
	cmd_target_view(&t, &v);
	assert_int_equal(v.state, ENGINE_IDLE);
	assert_non_null(v.stats);
	assert_non_null(v.stats->run[STAT_TTFT]);
	assert_non_null(v.load);
	assert_null(fleet_merged(x->f));
	struct cmd_result r;
	assert_int_equal(cmd_target_set_concurrency(&t, 8, CMD_SRC_KEY, &r), CMD_REFUSED);
	assert_int_equal(cmd_target_pause(&t, CMD_SRC_KEY, &r), CMD_REFUSED);
	assert_int_equal(cmd_target_window_reset(&t, CMD_SRC_KEY, &r), CMD_REFUSED);
	assert_int_equal(cmd_target_snapshot(&t, CMD_SRC_KEY, &r), CMD_REFUSED);
	cmd_target_view(&t, &v);
	assert_true(v.last_cmd->seq > 0);
}

struct chain {
	struct fleet *f;
	char url[128];
	int left, ok;
};

static void chain_next(void *ud, long code, const char *body, size_t len, const char *err)
{
	(void)body;
	(void)len;
	struct chain *c = ud;
	if (!err && code == 200)
		c->ok++;
	if (--c->left > 0)
		assert_int_equal(fleet_http(c->f, "GET", c->url, NULL, 2000, chain_next, c), 0);
}

/* 200 requests one after another (as the polls of a long fleet run):
 * the transfers' curl multis do not grow with them. Before each freed
 * transfer gave its place back, every 32 requests made a new multi (and
 * a new connection, the cache being per multi). */
static void test_http_multis_bounded(void **state)
{
	struct fx *x = *state;
	struct sim_child sim;
	assert_int_equal(su_spawn(NULL, &sim), 0);
	struct chain c = {.f = x->f, .left = 200};
	snprintf(c.url, sizeof c.url, "http://127.0.0.1:%d/health", sim.port);
	assert_int_equal(fleet_http(x->f, "GET", c.url, NULL, 2000, chain_next, &c), 0);
	while (c.left > 0)
		ev_run(x->loop, EVRUN_ONCE);
	print_message("200 requests: %d answered 200, %ld curl multis\n", c.ok, fleet_http_shards(x->f));
	assert_int_equal(c.ok, 200);
	assert_int_equal(fleet_http_shards(x->f), 1);
	assert_int_equal(su_stop(&sim), 0);
}

/* Text from a generator: control characters and the token never pass. */
static void test_scrub(void **state)
{
	(void)state;
	char t[] = "a\x1b[31mb\x07" "c\td\xc2\x9b" "e\xc3\xa9" "f\x9b\x7f\n";
	redact_controls(t);
	assert_string_equal(t, "a?[31mb?c d?e\xc3\xa9" "f?? ");
	const char *const secrets[] = {"fleet-TOKEN-x1", NULL};
	char u[] = "echo fleet-TOKEN-x1 and Bearer abcdef\x1b]0;t\x07";
	fleet_text_scrub(u, secrets);
	assert_string_equal(u, "echo *** and Bearer ***?]0;t?");
	/* Scrubbed whole, then cut: a cut secret would have passed. */
	char d[12];
	const char *src = "xxfleet-TOKEN-x1yy tail";
	fleet_text_scrub_into(d, sizeof d, src, strlen(src), secrets);
	assert_string_equal(d, "xx***yy tai");
}

/* A status's figures: within the bounds, or refused with why. */
static void test_status_check(void **state)
{
	(void)state;
	struct snapshot s;
	char why[256];
	memset(&s, 0, sizeof s);
	snprintf(s.run_id, sizeof s.run_id, "%s", "0123456789abcdef0123456789abcdef");
	s.start_unix = 1.7e9;
	s.taken_unix = 1.7e9 + 5;
	s.elapsed = s.duration = s.win_seconds = 5;
	s.concurrency = 8;
	s.max_output_tok_s = NAN;
	s.run_c.completed = FLEET_COUNT_MAX;
	int ok = fleet_status_check(&s, why, sizeof why);
	assert_string_equal(why, "");
	assert_int_equal(ok, 0);

	struct snapshot b = s;
	b.elapsed = 1e300;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	assert_non_null(strstr(why, "impossible status: elapsed"));
	b = s;
	b.win_seconds = NAN;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	b = s;
	b.rate = INFINITY;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	b = s;
	b.run_c.completed = UINT64_C(1) << 53;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	assert_non_null(strstr(why, "a counter above"));
	b = s;
	b.http_codes[500] = FLEET_COUNT_MAX + 1;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	b = s;
	snprintf(b.run_id, sizeof b.run_id, "%s", "0123456789ABCDEF0123456789abcdef");
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	b = s;
	b.start_unix = b.taken_unix + 2 * FLEET_SKEW_MAX_S;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);

	/* A histogram: its count, then its sum of microseconds. */
	b = s;
	struct hist *h = hist_new();
	assert_non_null(h);
	hist_record_n(h, 1000, FLEET_COUNT_MAX);  /* sum 2^43 x 1000 < 2^53 */
	b.run[STAT_TTFT] = h;
	assert_int_equal(fleet_status_check(&b, why, sizeof why), 0);
	hist_record(h, 1000);
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	assert_non_null(strstr(why, "histogram"));
	hist_reset(h);
	hist_record_n(h, INT64_C(1) << 40, 1u << 14);  /* 2^54 us summed */
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	hist_free(h);

	/* A number of a carried block out of an exact double's range. */
	b = s;
	b.server = cJSON_Parse("{\"scrapes\":3,\"gpu\":{\"x\":[1,1e300]}}");
	assert_non_null(b.server);
	assert_int_equal(fleet_status_check(&b, why, sizeof why), -1);
	cJSON_Delete(b.server);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_dns_parse),
		cmocka_unit_test(test_scrub),
		cmocka_unit_test(test_status_check),
		cmocka_unit_test_setup_teardown(test_targets, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_start_spec, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_start_refused, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_empty_view, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_http_multis_bounded, fx_setup, fx_teardown),
	};
	curl_global_init(CURL_GLOBAL_DEFAULT);
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
