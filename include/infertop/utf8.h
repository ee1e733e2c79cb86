#ifndef INFERTOP_UTF8_H
#define INFERTOP_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The length (1 to 4) of the well-formed UTF-8 sequence at s, of at most
 * left bytes, with its code point in *cp; 0 when it is not one (a stray
 * continuation, an overlong form, a surrogate, past U+10FFFF, cut short).
 * One reader for the JSON escaper and the control scrubber. */
size_t utf8_seq(const unsigned char *s, size_t left, uint32_t *cp);

#endif
