/* The control API's request parser: routes, /v1/load bodies, empty
 * bodies, --listen addresses and the bearer token, against literal cases. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/command.h"
#include "infertop/url.h"
#include "infertop/control_req.h"

static void test_routes(void **state)
{
	(void)state;
	bool post = true;
	assert_int_equal(control_req_route("/healthz", &post), CONTROL_R_HEALTH);
	assert_false(post);
	assert_int_equal(control_req_route("/v1/status?x=1", &post), CONTROL_R_STATUS);
	assert_int_equal(control_req_route("/metrics", &post), CONTROL_R_METRICS);
	assert_int_equal(control_req_route("/v1/load", &post), CONTROL_R_LOAD);
	assert_true(post);
	assert_int_equal(control_req_route("/v1/stop", &post), CONTROL_R_STOP);
	assert_int_equal(control_req_route("/v1/stop/", &post), CONTROL_R_NONE);
	assert_int_equal(control_req_route("/v1/loadx", &post), CONTROL_R_NONE);
	assert_int_equal(control_req_route("", &post), CONTROL_R_NONE);
	assert_int_equal(control_req_route("/V1/STATUS", &post), CONTROL_R_NONE);
}

static int load(const char *body, struct control_load *l, char *field, char *err)
{
	return control_req_parse_load(body, strlen(body), l, field, err);
}

static void test_load_good(void **state)
{
	(void)state;
	struct control_load l;
	char field[64], err[CONTROL_ERR_MAX];
	assert_int_equal(load("{\"concurrency\":32}", &l, field, err), 0);
	assert_false(l.is_rate);
	assert_int_equal(l.concurrency, 32);
	assert_int_equal(load(" { \"rate\" : 2.5 }\n", &l, field, err), 0);
	assert_true(l.is_rate);
	assert_true(l.rate == 2.5);
	assert_int_equal(load("{\"concurrency\":1e3}", &l, field, err), 0);
	assert_int_equal(l.concurrency, 1000);
	assert_int_equal(load("{\"concurrency\":1000000000}", &l, field, err), 0);
	assert_int_equal(load("{\"rate\":1000000}", &l, field, err), 0);
	assert_false(l.force);
	/* A change over --max-change, meant. */
	assert_int_equal(load("{\"concurrency\":999999,\"force\":true}", &l, field, err), 0);
	assert_true(l.force);
	assert_int_equal(l.concurrency, 999999);
	assert_int_equal(load("{\"force\":false,\"rate\":3}", &l, field, err), 0);
	assert_false(l.force);
}

static void test_load_bad(void **state)
{
	(void)state;
	static const struct {
		const char *body, *field, *err;
	} cases[] = {
		{ "", "", "not valid JSON" },
		{ "{", "", "not valid JSON" },
		{ "null", "", "JSON object" },
		{ "[]", "", "JSON object" },
		{ "{} {}", "", "after the JSON" },
		{ "{}", "concurrency", "missing" },
		{ "{\"concurrency\":\"1\"}", "concurrency", "number" },
		{ "{\"concurrency\":[1]}", "concurrency", "number" },
		{ "{\"concurrency\":2.5}", "concurrency", "whole" },
		{ "{\"concurrency\":0}", "concurrency", "range" },
		{ "{\"concurrency\":1000000001}", "concurrency", "range" },
		{ "{\"concurrency\":-1e999}", "concurrency", "whole" },
		{ "{\"rate\":0.001}", "rate", "range" },
		{ "{\"rate\":1e7}", "rate", "range" },
		{ "{\"rate\":false}", "rate", "number" },
		{ "{\"rate\":1,\"rate\":2}", "rate", "twice" },
		{ "{\"rate\":1,\"concurrency\":2}", "rate", "not both" },
		{ "{\"concurrency\":2,\"force\":1}", "force", "true or false" },
		{ "{\"concurrency\":2,\"force\":\"yes\"}", "force", "true or false" },
		{ "{\"force\":true}", "concurrency", "missing" },
		{ "{\"x\":1}", "x", "unknown" },
		{ "{\"concurrency\":1,\"\\u0001\":1}", "?", "unknown" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct control_load l;
		char field[64] = "unset", err[CONTROL_ERR_MAX] = "";
		if (load(cases[i].body, &l, field, err) != -1)
			fail_msg("accepted %s", cases[i].body);
		if (strcmp(field, cases[i].field) != 0 || !strstr(err, cases[i].err))
			fail_msg("%s: field '%s' message '%s'", cases[i].body, field, err);
	}
	/* Too large is refused whatever it holds. */
	char big[CONTROL_BODY_MAX + 2];
	memset(big, ' ', sizeof big);
	big[0] = '{';
	big[sizeof big - 1] = '}';
	struct control_load l;
	char field[64], err[CONTROL_ERR_MAX];
	assert_int_equal(control_req_parse_load(big, sizeof big, &l, field, err), -1);
	assert_non_null(strstr(err, "too large"));
	/* A body is bytes, not a string: what follows len is not read. */
	assert_int_equal(control_req_parse_load("{\"rate\":3}garbage", 10, &l, field, err), 0);
}

static void test_empty(void **state)
{
	(void)state;
	char field[64], err[CONTROL_ERR_MAX];
	assert_int_equal(control_req_parse_empty("", 0, field, err), 0);
	assert_int_equal(control_req_parse_empty(" \r\n", 3, field, err), 0);
	assert_int_equal(control_req_parse_empty("{ }", 3, field, err), 0);
	assert_int_equal(control_req_parse_empty("{\"a\":1}", 7, field, err), -1);
	assert_string_equal(field, "a");
	assert_int_equal(control_req_parse_empty("go", 2, field, err), -1);
	assert_int_equal(control_req_parse_empty("[]", 2, field, err), -1);
}

static void test_listen(void **state)
{
	(void)state;
	static const struct {
		const char *spec;
		const char *host;
		int port;
		bool loopback;
	} good[] = {
		{ "127.0.0.1:9464", "127.0.0.1", 9464, true },
		{ "127.1.2.3:0", "127.1.2.3", 0, true },
		{ "localhost:80", "localhost", 80, true },
		{ "[::1]:65535", "::1", 65535, true },
		{ "0.0.0.0:9464", "0.0.0.0", 9464, false },
		{ "10.0.0.5:1", "10.0.0.5", 1, false },
		{ "[::]:9464", "::", 9464, false },
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char host[64], err[128];
		int port = -1;
		bool lb = false;
		if (url_parse_listen(good[i].spec, host, sizeof host, &port, &lb, err, sizeof err) != 0)
			fail_msg("%s: %s", good[i].spec, err);
		assert_string_equal(host, good[i].host);
		assert_int_equal(port, good[i].port);
		assert_int_equal(lb, good[i].loopback);
	}
	static const char *const bad[] = { "", "9464", ":9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
					   "127.0.0.1:-1", "127.0.0.1:80x", "::1:80", "[::1:80", "example.com:80",
					   "256.0.0.1:80", "127.0.0.1:000000080" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char host[64], err[128] = "";
		int port;
		bool lb;
		if (url_parse_listen(bad[i], host, sizeof host, &port, &lb, err, sizeof err) != -1)
			fail_msg("accepted %s", bad[i]);
		assert_true(err[0] != '\0');
	}
}

static void test_token(void **state)
{
	(void)state;
	assert_true(control_req_token_ok("Bearer abc", "abc"));
	assert_true(control_req_token_ok("bearer abc", "abc"));
	assert_false(control_req_token_ok("Bearer abcd", "abc"));
	assert_false(control_req_token_ok("Bearer ab", "abc"));
	assert_false(control_req_token_ok("Bearer abd", "abc"));
	assert_false(control_req_token_ok("Bearer  abc", "abc"));
	assert_false(control_req_token_ok("abc", "abc"));
	assert_false(control_req_token_ok("Basic abc", "abc"));
	assert_false(control_req_token_ok("", "abc"));
	assert_false(control_req_token_ok(NULL, "abc"));
	assert_false(control_req_token_ok("Bearer ", ""));
}

/* Host values, Origins and --listen-allow-host all come out as
 * "name:port", so the server compares them as strings. */
static void test_host(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} good[] = {
		{ "127.0.0.1:9464", "127.0.0.1:9464" },
		{ "LocalHost:80", "localhost:80" },
		{ "localhost", "localhost:80" },
		{ "[::1]:9464", "[::1]:9464" },
		{ "[::FFFF:7f00:1]:1", "[::ffff:7f00:1]:1" },
		{ "gen-1.example_x:65535", "gen-1.example_x:65535" },
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char out[CONTROL_HOSTPORT_MAX];
		if (control_req_host_header(good[i].in, out) != 0)
			fail_msg("refused %s", good[i].in);
		assert_string_equal(out, good[i].out);
	}
	static const char *const bad[] = { "", ":80", "a b:80", "h:", "h:0", "h:65536", "h:123456", "h:8o",
					   "h:80:80", "[::1", "[::1]x", "[]:80", "[1.2.3.4]:80", "[::g]:80",
					   "h\t", "h/x", "user@h:80", "h:80 " };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char out[CONTROL_HOSTPORT_MAX];
		if (control_req_host_header(bad[i], out) != -1)
			fail_msg("accepted %s as %s", bad[i], out);
	}
	char out[CONTROL_HOSTPORT_MAX], longname[400];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	assert_int_equal(control_req_host_header(longname, out), -1);
	assert_int_equal(control_req_host_header(NULL, out), -1);
}

static void test_origin(void **state)
{
	(void)state;
	char out[CONTROL_HOSTPORT_MAX];
	assert_int_equal(control_req_origin("http://127.0.0.1:9464", out), 0);
	assert_string_equal(out, "127.0.0.1:9464");
	assert_int_equal(control_req_origin("HTTP://Gen.Example", out), 0);
	assert_string_equal(out, "gen.example:80");
	assert_int_equal(control_req_origin("http://[::1]:8080", out), 0);
	assert_string_equal(out, "[::1]:8080");
	/* file:// pages and sandboxed frames, other schemes, paths, junk. */
	static const char *const bad[] = { "null", "Null", "", "https://127.0.0.1:9464", "file://", "127.0.0.1:9464",
					   "http://", "http://127.0.0.1:9464/", "http://h:80/x", "http://u@h",
					   "ws://h", "http://h:0" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (control_req_origin(bad[i], out) != -1)
			fail_msg("accepted %s as %s", bad[i], out);
	assert_int_equal(control_req_origin(NULL, out), -1);
}

static void test_allow_host(void **state)
{
	(void)state;
	char out[CONTROL_HOSTPORT_MAX], err[200];
	assert_int_equal(control_req_allow_host("gen-1.Example", 9464, out, err, sizeof err), 0);
	assert_string_equal(out, "gen-1.example:9464");
	assert_int_equal(control_req_allow_host("proxy:80", 9464, out, err, sizeof err), 0);
	assert_string_equal(out, "proxy:80");
	assert_int_equal(control_req_allow_host("[::1]", 7, out, err, sizeof err), 0);
	assert_string_equal(out, "[::1]:7");
	assert_int_equal(control_req_allow_host("a b", 7, out, err, sizeof err), -1);
	assert_non_null(strstr(err, "NAME:PORT"));
	assert_int_equal(control_req_allow_host("h:99999", 7, out, err, sizeof err), -1);
	assert_non_null(strstr(err, "port"));
	assert_int_equal(control_req_allow_host("", 7, out, err, sizeof err), -1);
}

static void test_json_type(void **state)
{
	(void)state;
	assert_true(control_req_json_type("application/json"));
	assert_true(control_req_json_type("Application/JSON"));
	assert_true(control_req_json_type("application/json; charset=utf-8"));
	assert_true(control_req_json_type(" application/json ;charset=UTF-8"));
	assert_false(control_req_json_type(NULL));
	assert_false(control_req_json_type(""));
	assert_false(control_req_json_type("text/plain"));
	assert_false(control_req_json_type("application/x-www-form-urlencoded"));
	assert_false(control_req_json_type("multipart/form-data; boundary=x"));
	assert_false(control_req_json_type("application/jsonx"));
	assert_false(control_req_json_type("application/json-patch+json"));
	assert_false(control_req_json_type("text/plain; x=application/json"));
	assert_false(control_req_json_type("application/json,text/plain"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),  cmocka_unit_test(test_load_good), cmocka_unit_test(test_load_bad),
		cmocka_unit_test(test_empty),   cmocka_unit_test(test_listen),    cmocka_unit_test(test_token),
		cmocka_unit_test(test_host),    cmocka_unit_test(test_origin),    cmocka_unit_test(test_allow_host),
		cmocka_unit_test(test_json_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
