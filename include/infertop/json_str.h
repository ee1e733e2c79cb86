#ifndef INFERTOP_JSON_STR_H
#define INFERTOP_JSON_STR_H

/* The one JSON string escaper, for every JSON infertop writes by hand
 * rather than through cJSON: request bodies (body_shape.c), the request
 * log and detail rows (reqlog.c), the simulator's replies (sim/). Only
 * what goes between the quotes; the quotes are the caller's.
 *
 * A string is read up to its length or its first NUL, whichever comes
 * first; bytes are looked at eight at a time, since most text needs no
 * escape at all (bodies are built on every request). */

#include <stddef.h>

enum json_str_style {
	/* As cJSON 1.7.15 prints a string: \" \\ \b \f \n \r \t, \u00xx for
	 * the other bytes below 0x20, every other byte as it is (UTF-8 or
	 * not). Request bodies must be byte-equal to cJSON's. */
	JSON_STR_CJSON,
	/* \" \\, \u00xx for every byte below 0x20, and U+FFFD for each byte
	 * that does not start a valid UTF-8 sequence: valid JSON in valid
	 * UTF-8 whatever the bytes (server messages, texts from a dataset). */
	JSON_STR_STRICT,
};

/* The escaped length of s[0..*n); *n is cut at the first NUL. */
size_t json_str_len(const char *s, size_t *n, enum json_str_style st);

/* Writes s[0..n) escaped at d: exactly printed bytes, json_str_len()'s
 * answer for the same s, n and style (n already cut at a NUL). Returns
 * d + printed. Nothing is stored past that. */
char *json_str_put(char *d, const char *s, size_t n, size_t printed, enum json_str_style st);

/* s (NUL-terminated; NULL is "") escaped into dst[0..cap), NUL-terminated
 * when cap > 0: an escape or UTF-8 sequence that does not fit whole is
 * left out, with everything after it. Returns the length written. */
size_t json_str_escape(char *dst, size_t cap, const char *s, enum json_str_style st);

#endif
