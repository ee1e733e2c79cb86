#include "config.h"

#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

char *testutil_fixture(const char *subdir, const char *name, size_t *len)
{
	const char *dir = getenv("INFERTOP_FIXTURES");
	char path[4096];
	snprintf(path, sizeof path, "%s/%s%s%s", dir ? dir : "tests/fixtures", subdir ? subdir : "",
		 subdir ? "/" : "", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open fixture %s (set INFERTOP_FIXTURES)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	char *b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	b[n] = '\0';
	*len = (size_t)n;
	return b;
}
