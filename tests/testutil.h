#ifndef INFERTOP_TESTUTIL_H
#define INFERTOP_TESTUTIL_H

#include <stddef.h>

/* Reads $INFERTOP_FIXTURES[/subdir]/name (subdir may be NULL), NUL-terminated
 * (len excludes the NUL); fails the running cmocka test if it cannot. */
char *testutil_fixture(const char *subdir, const char *name, size_t *len);

#endif
