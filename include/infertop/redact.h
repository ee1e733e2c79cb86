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
 * URL) loses its user:password@, in place; its control characters go too
 * (redact_controls). */
void redact_userinfo(char *text);
/* Text from the network (a model id, an error body) must not drive the
 * terminal it is printed on, nor a log read there: in place, tab, newline,
 * CR, VT and FF become a space, every other C0 control (ESC, BEL...) and
 * DEL a '?', and so does each C1 control (U+0080-U+009F, or a raw 0x9b
 * CSI) and each byte that is not UTF-8. Valid UTF-8 text is kept; text
 * only shrinks. NULL is fine. */
void redact_controls(char *text);
/* redact_controls, but each newline is kept: multi-line text (a saved
 * plan's summary) read from a file stays on its lines. */
void redact_controls_lines(char *text);
/* Scrubs, in place, what a server may echo back of a request: every
 * occurrence of each string in `secrets` (NULL-terminated: the API key,
 * the URL's password and query values; entries under 3 bytes are left),
 * the token after "Bearer ", and "sk-" style tokens. Each becomes "***"
 * (text only shrinks). Also drops URL credentials and control characters
 * (redact_userinfo). Every string from the network goes through this
 * before it is recorded. */
void redact_secrets(char *text, const char *const *secrets);
/* True when a string looks like a credential (an "sk-" or "Bearer" token,
 * or a long run of letters and digits mixed): such a value is never echoed
 * in a message. */
int redact_looks_secret(const char *s);

#endif
