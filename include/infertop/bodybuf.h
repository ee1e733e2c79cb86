#ifndef INFERTOP_BODYBUF_H
#define INFERTOP_BODYBUF_H

#include <stddef.h>

/* An answer's body gathered by a libcurl write callback (the fleet's
 * polls, scrapes, the probe): n bytes appended to *buf (of *len bytes, *cap
 * allocated; the first allocation `initial`, doubling), a NUL kept after
 * them. BODYBUF_OK, BODYBUF_TOO_LARGE when *len would pass max (nothing is
 * appended: the caller ends the transfer), BODYBUF_OOM. */
enum { BODYBUF_OK, BODYBUF_TOO_LARGE, BODYBUF_OOM };
int bodybuf_append(char **buf, size_t *len, size_t *cap, const char *src, size_t n, size_t max, size_t initial);

#endif
