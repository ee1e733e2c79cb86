#include "config.h"

#include "infertop/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int errbuf_set(char *err, size_t cap, const char *fmt, ...)
{
	if (cap) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, cap, fmt, ap);
		va_end(ap);
	}
	return -1;
}
