#include "config.h"

#include "infertop/bodybuf.h"

#include <stdlib.h>
#include <string.h>

int bodybuf_append(char **buf, size_t *len, size_t *cap, const char *src, size_t n, size_t max, size_t initial)
{
	if (n > max - *len)
		return BODYBUF_TOO_LARGE;
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : initial;
		while (c < *len + n + 1)
			c *= 2;
		char *nb = realloc(*buf, c);
		if (!nb)
			return BODYBUF_OOM;
		*buf = nb;
		*cap = c;
	}
	memcpy(*buf + *len, src, n);
	*len += n;
	(*buf)[*len] = '\0';
	return BODYBUF_OK;
}
