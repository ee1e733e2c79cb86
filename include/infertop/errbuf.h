#ifndef INFERTOP_ERRBUF_H
#define INFERTOP_ERRBUF_H

#include <stddef.h>

/* Formats a message into the caller's error buffer (nothing when cap is 0)
 * and returns -1, so a failing path is one line: return errbuf_set(...). */
int errbuf_set(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
