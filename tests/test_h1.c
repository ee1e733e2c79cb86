#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "infertop/h1.h"

/* The status line is read from the line just taken: an answer as plain as
 * this one must parse. */
static void test_status_line(void **state)
{
	(void)state;
	static const struct h1_callbacks none = { 0 };
	struct h1_parser *p = malloc(sizeof *p);
	assert_non_null(p);
	const char in[] = "HTTP/1.0 204 No Content\r\n\r\n";
	size_t used = 0;
	h1_reset(p, false);
	assert_int_equal(h1_feed(p, in, sizeof in - 1, &none, NULL, &used), H1_COMPLETE);
	assert_int_equal(used, sizeof in - 1);
	assert_int_equal(p->status, 204);
	assert_int_equal(p->minor, 0);
	free(p);
}

/* A first line too long, fed at once, is an error with bytes read: the
 * caller must not take it for a connection that closed unanswered. */
static void test_started_after_long_line(void **state)
{
	(void)state;
	static const struct h1_callbacks none = { 0 };
	struct h1_parser *p = malloc(sizeof *p);
	char *in = malloc(H1_LINE_MAX + 2);
	assert_non_null(p);
	assert_non_null(in);
	memset(in, 'x', H1_LINE_MAX);
	memcpy(in + H1_LINE_MAX, "\r\n", 2);
	h1_reset(p, false);
	assert_int_equal(h1_feed(p, in, H1_LINE_MAX + 2, &none, NULL, NULL), H1_ERROR);
	assert_string_equal(h1_error(p), "header line longer than 8 KiB");
	assert_true(h1_started(p));
	free(in);
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_line),
		cmocka_unit_test(test_started_after_long_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
