/* The one JSON string escaper (json_str.c) against oracles: the cJSON
 * style byte for byte against cJSON's own printer, the strict style
 * against a byte-at-a-time reading of its rules (the request log's
 * escaper before it moved here), both over every byte, UTF-8 good and
 * bad, strings cut by a NUL, and a few thousand random strings of every
 * length around the eight-byte words; the bounded form never cuts an
 * escape or a sequence, and the strict style always gives valid JSON. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/json_str.h"
#include "infertop/rng.h"

/* cJSON's printing of s[0..n) (no NUL inside), quotes removed. */
static char *cjson_oracle(const char *s, size_t n)
{
	char *copy = malloc(n + 1);
	assert_non_null(copy);
	memcpy(copy, s, n);
	copy[n] = '\0';
	cJSON *j = cJSON_CreateString(copy);
	free(copy);
	assert_non_null(j);
	char *out = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	assert_non_null(out);
	size_t len = strlen(out);
	assert_true(len >= 2 && out[0] == '"' && out[len - 1] == '"');
	memmove(out, out + 1, len - 2);
	out[len - 2] = '\0';
	return out;
}

/* The strict style, one byte or sequence at a time, written from its
 * rules rather than for speed. */
static size_t utf8_ok(const unsigned char *s, size_t left)
{
	unsigned c = s[0], n, cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static size_t strict_oracle(char *dst, size_t cap, const char *s)
{
	size_t w = 0;
	size_t left = strlen(s);
	if (!cap)
		return 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		char tmp[8];
		size_t tn, adv = 1;
		if (*p == '"' || *p == '\\') {
			tmp[0] = '\\';
			tmp[1] = (char)*p;
			tn = 2;
		} else if (*p < 0x20) {
			tn = (size_t)snprintf(tmp, sizeof tmp, "\\u%04x", *p);
		} else if ((adv = utf8_ok(p, left)) != 0) {
			memcpy(tmp, p, adv);
			tn = adv;
		} else {
			memcpy(tmp, "\xef\xbf\xbd", 3);
			tn = 3;
			adv = 1;
		}
		if (w + tn >= cap)
			break;
		memcpy(dst + w, tmp, tn);
		w += tn;
		p += adv;
		left -= adv;
	}
	dst[w] = '\0';
	return w;
}

/* json_str_len + json_str_put of s[0..n) into a buffer exactly as long,
 * with a guard after it that must stay untouched. */
static char *put_exact(const char *s, size_t n, enum json_str_style st, size_t *n_cut)
{
	size_t cut = n, printed = json_str_len(s, &cut, st);
	char *buf = malloc(printed + 16);
	assert_non_null(buf);
	memset(buf, 'G', printed + 16);
	char *end = json_str_put(buf, s, cut, printed, st);
	assert_ptr_equal(end, buf + printed);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(buf[printed + i], 'G');
	buf[printed] = '\0';
	if (n_cut)
		*n_cut = cut;
	return buf;
}

static void check_cjson(const char *s, size_t n)
{
	size_t cut;
	char *got = put_exact(s, n, JSON_STR_CJSON, &cut);
	assert_int_equal(cut, strnlen(s, n));
	char *want = cjson_oracle(s, cut);
	assert_string_equal(got, want);
	free(got);
	free(want);
}

static void check_strict(const char *s)
{
	size_t n = strlen(s);
	char *want = malloc(6 * n + 1), *got = malloc(6 * n + 1);
	assert_non_null(want);
	assert_non_null(got);
	size_t wl = strict_oracle(want, 6 * n + 1, s);
	assert_int_equal(json_str_escape(got, 6 * n + 1, s, JSON_STR_STRICT), wl);
	assert_string_equal(got, want);
	char *exact = put_exact(s, n, JSON_STR_STRICT, NULL);
	assert_string_equal(exact, want);
	free(exact);
	/* Always valid JSON in valid UTF-8: cJSON reads it back. */
	char *quoted = malloc(wl + 3);
	assert_non_null(quoted);
	snprintf(quoted, wl + 3, "\"%s\"", want);
	cJSON *j = cJSON_Parse(quoted);
	assert_non_null(j);
	assert_true(cJSON_IsString(j));
	for (const unsigned char *p = (const unsigned char *)j->valuestring, *e = p + strlen((char *)p); p < e;) {
		size_t k = utf8_ok(p, (size_t)(e - p));
		assert_true(k > 0);
		p += k;
	}
	cJSON_Delete(j);
	free(quoted);
	/* Every bound: the oracle's cut, never half an escape or sequence. */
	for (size_t cap = 0; cap <= wl + 1; cap++) {
		memset(want, 'W', wl + 1);
		memset(got, 'G', wl + 1);
		size_t a = strict_oracle(want, cap, s), b = json_str_escape(got, cap, s, JSON_STR_STRICT);
		assert_int_equal(a, b);
		if (cap)
			assert_string_equal(got, want);
		else
			assert_int_equal(got[0], 'G');
	}
	free(want);
	free(got);
}

static const char *const cases[] = {
	"",
	"plain ascii text, long enough for a few words",
	"a \"quoted\" word and a back\\slash",
	"two\nlines\r\n\ttabbed\b\f",
	"ctl \x01\x02\x1f\x7f end",
	"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 / slash",
	"bad \xff\xfe\x80 lone \xc3 cut \xe2\x82",
	"overlong \xc0\xaf \xe0\x80\xaf surrogate \xed\xa0\x80 big \xf4\x90\x80\x80",
	"\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac",
	"12345678\"12345678\\1234567\n",
};

static void test_fixed(void **state)
{
	(void)state;
	char out[64];
	size_t n = json_str_escape(out, sizeof out, "a\"b\\c\n\x01\xff\xc3\xa9", JSON_STR_STRICT);
	assert_string_equal(out, "a\\\"b\\\\c\\u000a\\u0001\xef\xbf\xbd\xc3\xa9");
	assert_int_equal(n, strlen(out));
	/* Never a cut escape or sequence at the end of a small buffer. */
	json_str_escape(out, 4, "ab\"cd", JSON_STR_STRICT);
	assert_string_equal(out, "ab");
	json_str_escape(out, 5, "ab\xe2\x82\xac", JSON_STR_STRICT);
	assert_string_equal(out, "ab");
	json_str_escape(out, sizeof out, NULL, JSON_STR_STRICT);
	assert_string_equal(out, "");
	json_str_escape(out, sizeof out, "a\nb\x01\xff", JSON_STR_CJSON);
	assert_string_equal(out, "a\\nb\\u0001\xff");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		check_cjson(cases[i], strlen(cases[i]));
		check_strict(cases[i]);
	}
	/* A NUL ends the string, inside a word or after it. */
	check_cjson("abc\0def", 7);
	check_cjson("abcdefghij\"\0klmnop", 18);
	n = 18;
	assert_int_equal(json_str_len("abcdefghij\"\0klmnop", &n, JSON_STR_STRICT), 12);
	assert_int_equal(n, 11);
}

/* Every byte alone and inside a word (each of the eight places). */
static void test_every_byte(void **state)
{
	(void)state;
	for (int c = 1; c < 256; c++) {
		char s[2] = {(char)c, 0};
		check_cjson(s, 1);
		check_strict(s);
		for (int at = 0; at < 8; at++) {
			char w[17];
			memset(w, 'x', 16);
			w[16] = '\0';
			w[at] = (char)c;
			check_cjson(w, 16);
			check_strict(w);
		}
	}
}

static void test_random(void **state)
{
	(void)state;
	/* Bytes drawn mostly from text, with escapes, UTF-8 pieces and
	 * bytes that start none. */
	static const char *const pieces[] = {"a", "b", " ", "\"", "\\", "\n", "\x01", "\x7f", "\xc3\xa9",
					     "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\x80", "\xc3", "\xe2\x82",
					     "\xed\xa0\x80", "\xc0\xaf"};
	struct rng r;
	rng_seed(&r, 24);
	char s[80];
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = 0, want = rng_below(&r, 40);
		while (len < want) {
			const char *p = pieces[rng_below(&r, sizeof pieces / sizeof pieces[0])];
			size_t pl = strlen(p);
			if (rng_below(&r, 3))
				p = "t", pl = 1;
			memcpy(s + len, p, pl);
			len += pl;
		}
		s[len] = '\0';
		check_cjson(s, len);
		check_strict(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
