/* URLs built with libcurl's URL API (url.h) and what is scrubbed before
 * anything is shown or saved (redact.h). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "infertop/redact.h"
#include "infertop/bodybuf.h"
#include "infertop/url.h"

static void base_is(const char *in, const char *want)
{
	char err[160];
	char *b = url_base_parse(in, err, sizeof err);
	if (!want) {
		assert_null(b);
		assert_true(err[0] != '\0');
		return;
	}
	assert_non_null(b);
	assert_string_equal(b, want);
	free(b);
}

static void test_base(void **state)
{
	(void)state;
	base_is("http://127.0.0.1:8000", "http://127.0.0.1:8000");
	base_is("http://127.0.0.1:8000/", "http://127.0.0.1:8000");
	base_is("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000");
	base_is("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000");
	base_is("https://gw.example/openai/v1", "https://gw.example/openai");
	base_is("https://x.openai.azure.com/openai/deployments/d/v1?api-version=2024-06-01",
		"https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01");
	base_is("http://[::1]:8000/v1", "http://[::1]:8000");
	base_is("http://u:p@h:1/v1#frag", "http://u:p@h:1");
	base_is("ftp://h/", NULL);
	base_is("127.0.0.1:8000", NULL);
	base_is("http://", NULL);
}

static void test_join(void **state)
{
	(void)state;
	char out[256];
	assert_int_equal(url_join("http://h:1", "/v1/models", out, sizeof out), 0);
	assert_string_equal(out, "http://h:1/v1/models");
	assert_int_equal(url_join("http://h:1/?api-version=7", "/v1/chat/completions", out, sizeof out), 0);
	assert_string_equal(out, "http://h:1/v1/chat/completions?api-version=7");
	assert_int_equal(url_join("https://g/p/q?a=1&b=2", "/tokenize", out, sizeof out), 0);
	assert_string_equal(out, "https://g/p/q/tokenize?a=1&b=2");
	assert_int_equal(url_join("http://h:1", "/v1/models", out, 10), -1);
	assert_int_equal(url_on_port("http://u:p@[::1]:8000/x?k=1", "8002", "/metrics", out, sizeof out), 0);
	assert_string_equal(out, "http://u:p@[::1]:8002/metrics");
	assert_int_equal(url_origin("HTTP://u:p@Host:9/a?b", out, sizeof out), 0);
	assert_string_equal(out, "http://host:9");
	assert_int_equal(url_path("http://h/metrics?x=1", out, sizeof out), 0);
	assert_string_equal(out, "/metrics?x=1");
}

static void test_secrets(void **state)
{
	(void)state;
	char **s = url_secrets("http://bob:pw%21x@h/v1?api-version=2024&sig=a%2Bb&flag");
	assert_non_null(s);
	int have_pw = 0, have_sig = 0, have_dec = 0;
	for (size_t i = 0; s[i]; i++) {
		have_pw |= strcmp(s[i], "pw%21x") == 0 || strcmp(s[i], "pw!x") == 0;
		have_sig |= strcmp(s[i], "a%2Bb") == 0;
		have_dec |= strcmp(s[i], "a+b") == 0;
	}
	assert_true(have_pw && have_sig && have_dec);

	char t[256] = "HTTP 401: bad key sk-test-KEY0123456789 in Authorization: Bearer tok.en_1 for "
		      "http://bob:pw@h/v1?sig=a%2Bb (sig a+b)";
	redact_secrets(t, (const char *const *)s);
	url_secrets_free(s);
	assert_null(strstr(t, "KEY0123456789"));
	assert_null(strstr(t, "tok.en_1"));
	assert_null(strstr(t, "bob:pw@"));
	assert_null(strstr(t, "a%2Bb"));
	assert_null(strstr(t, "a+b"));
	assert_non_null(strstr(t, "HTTP 401: bad key"));

	const char *key[] = {"plainkey42", NULL};
	char u[64] = "echo: plainkey42 plainkey42";
	redact_secrets(u, key);
	assert_string_equal(u, "echo: *** ***");
	char v[32] = "Bearer ***";
	redact_secrets(v, NULL);
	assert_string_equal(v, "Bearer ***");
	char w[32] = "task-runner sk-ok";   /* short sk- words are not keys */
	redact_secrets(w, NULL);
	assert_string_equal(w, "task-runner sk-ok");

	assert_true(redact_looks_secret("sk-abc"));
	assert_true(redact_looks_secret("Bearer x"));
	assert_true(redact_looks_secret("a1b2c3d4e5f6g7h8i9j0k"));
	assert_false(redact_looks_secret("8"));
	assert_false(redact_looks_secret("10m"));
	assert_false(redact_looks_secret("ttft=500ms,tpot=50ms"));
	assert_false(redact_looks_secret("/tmp/some/long/path/to/file.json"));
}

/* Server text printed on a terminal: each control becomes one '?' (or a
 * space for the blanks), UTF-8 text stays, secrets scrubbing does it too. */
static void test_controls(void **state)
{
	(void)state;
	char a[64] = "m\x1b[2J\x07id\tx\r\ny\x7f";
	redact_controls(a);
	assert_string_equal(a, "m?[2J?id x  y?");
	/* C1 CSI in UTF-8 (U+009B) and raw (0x9b), a stray continuation byte,
	 * a cut sequence; é, € and 😀 kept. */
	char b[64] = "\xc2\x9b" "31m \x9b" "1m \x80 \xe2\x82 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
	redact_controls(b);
	assert_string_equal(b, "?31m ?1m ? ?? \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	/* Overlong and surrogate encodings are not text either. */
	char c[32] = "\xc0\x9b|\xed\xa0\x80|\xc2\xa0";
	redact_controls(c);
	assert_string_equal(c, "??|???|\xc2\xa0");
	char d[64] = "HTTP 400: bad \x1b]0;title\x07 key sk-test-KEY0123456789";
	redact_secrets(d, NULL);
	assert_string_equal(d, "HTTP 400: bad ?]0;title? key sk-***");
	redact_controls(NULL);
	/* The lines form keeps each newline, scrubs each line, shrinks. */
	char e[64] = "plan\x1b[2J\n\xc2\x9bstep 1\r\n\nlast\x07";
	redact_controls_lines(e);
	assert_string_equal(e, "plan?[2J\n?step 1 \n\nlast?");
	char f[8] = "\n\n";
	redact_controls_lines(f);
	assert_string_equal(f, "\n\n");
	redact_controls_lines(NULL);
}

/* The one HOST:PORT splitter: what each form gives, and what it refuses. */
static void test_split_hostport(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		bool optional;
		const char *host;
		int port;
		bool bracketed;
	} good[] = {
		{"127.0.0.1:8000", false, "127.0.0.1", 8000, false},
		{"[::1]:9", false, "::1", 9, true},
		{":8000", false, "", 8000, false},
		{"gen-1.example", true, "gen-1.example", -1, false},
		{"[fe80::1]", true, "fe80::1", -1, true},
		{"h:0", false, "h", 0, false},
		{"h:65535", false, "h", 65535, false},
		{"h:00080", false, "h", 80, false},
	};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		char host[64];
		int port = 7;
		bool br = !good[i].bracketed;
		const char *why = NULL;
		if (url_split_hostport(good[i].in, strlen(good[i].in), host, sizeof host, &port, &br, good[i].optional,
				       &why) != 0)
			fail_msg("%s: refused (%s)", good[i].in, why);
		assert_string_equal(host, good[i].host);
		assert_int_equal(port, good[i].port);
		assert_int_equal(br, good[i].bracketed);
	}
	static const char *const bad[] = {
		"h", "h:", "h:65536", "h:123456", "h:8a", "h:-1", "[::1", "[::1]x", "[::1]:", "h:80:90", "h: 80",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char host[64];
		int port;
		bool br;
		const char *why = NULL;
		if (url_split_hostport(bad[i], strlen(bad[i]), host, sizeof host, &port, &br, false, &why) != -1)
			fail_msg("%s: accepted", bad[i]);
		assert_non_null(why);
	}
	/* A NUL inside, and a host longer than the room: refused. */
	char host[8];
	int port;
	bool br;
	const char *why;
	assert_int_equal(url_split_hostport("a\0b:80", 6, host, sizeof host, &port, &br, false, &why), -1);
	assert_int_equal(url_split_hostport("abcdefghij:80", 13, host, sizeof host, &port, &br, false, &why), -1);
	/* Only n bytes are read. */
	assert_int_equal(url_split_hostport("ab:80xyz", 5, host, sizeof host, &port, &br, false, &why), 0);
	assert_int_equal(port, 80);
}

/* A service's base (the fleet's generators): scheme, host and port only;
 * credentials refused, not dropped. */
static void test_service_base(void **state)
{
	(void)state;
	char out[64];
	assert_int_equal(url_service_base("http://10.0.0.7:8080/v1/status?x=1#f", out, sizeof out), 0);
	assert_string_equal(out, "http://10.0.0.7:8080");
	assert_int_equal(url_service_base("https://gen-1.example", out, sizeof out), 0);
	assert_string_equal(out, "https://gen-1.example");
	assert_int_equal(url_service_base("http://[::1]:9/", out, sizeof out), 0);
	assert_string_equal(out, "http://[::1]:9");
	assert_int_equal(url_service_base("http://u:p@h:1", out, sizeof out), URL_BASE_CREDENTIALS);
	assert_int_equal(url_service_base("http://u@h:1", out, sizeof out), URL_BASE_CREDENTIALS);
	assert_int_equal(url_service_base("ftp://h:1", out, sizeof out), URL_BASE_BAD);
	assert_int_equal(url_service_base("h:1", out, sizeof out), URL_BASE_BAD);
	assert_int_equal(url_service_base("http://", out, sizeof out), URL_BASE_BAD);
	assert_int_equal(url_service_base("http://a-rather-long-host-name.example:8080", out, 16), URL_BASE_LONG);
}

/* The one body gatherer of the write callbacks: grows, keeps a NUL,
 * refuses past max without appending. */
static void test_bodybuf(void **state)
{
	(void)state;
	char *b = NULL;
	size_t len = 0, cap = 0;
	assert_int_equal(bodybuf_append(&b, &len, &cap, "abc", 3, 10, 2), BODYBUF_OK);
	assert_int_equal(cap, 4);
	assert_int_equal(bodybuf_append(&b, &len, &cap, "defgh", 5, 10, 2), BODYBUF_OK);
	assert_string_equal(b, "abcdefgh");
	assert_int_equal(len, 8);
	assert_int_equal(cap, 16);
	assert_int_equal(bodybuf_append(&b, &len, &cap, "xyz", 3, 10, 2), BODYBUF_TOO_LARGE);
	assert_string_equal(b, "abcdefgh");
	assert_int_equal(bodybuf_append(&b, &len, &cap, "ij", 2, 10, 2), BODYBUF_OK);
	assert_string_equal(b, "abcdefghij");
	assert_int_equal(bodybuf_append(&b, &len, &cap, "", 0, 10, 2), BODYBUF_OK);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base),
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_split_hostport),
		cmocka_unit_test(test_service_base),
		cmocka_unit_test(test_bodybuf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
