#ifndef INFERTOP_REDACT_H
#define INFERTOP_REDACT_H

#include <stddef.h>

/* Credentials never reach the screen or a file: URLs are shown and saved
 * only after these. */

/* Copies into dst (cap bytes, always terminated) the URL with any
 * user:password@, query and fragment removed (some gateways carry keys in
 * ?key=). */
void redact_url(const char *url, char *dst, size_t cap);
/* Every "scheme://user:password@" inside text (an error message quoting a
 * URL) loses its user:password@, in place. */
void redact_userinfo(char *text);

#endif
