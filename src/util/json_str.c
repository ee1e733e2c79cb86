#include "config.h"

#include "infertop/json_str.h"
#include "infertop/utf8.h"

#include <stdint.h>
#include <string.h>

/* Both styles escape the same bytes (below 0x20, the quote and the
 * backslash) and differ in how long some escapes are. Extra bytes a byte
 * takes: cJSON writes \b \f \n \r \t in two bytes (one extra), the strict
 * style those in six like every other byte below 0x20 (\u00xx, five
 * extra); \" and \\ take one. A NUL ends the string before it is looked
 * up. Bytes from 0x80 are the strict style's own business (utf8_len). */
static const unsigned char extra_cjson[256] = {
	5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5,
	5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
};
static const unsigned char extra_strict[256] = {
	5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
};

/* U+FFFD, for a byte that does not start valid UTF-8. */
#define REPLACEMENT "\xef\xbf\xbd"

#define BYTES(b) (0x0101010101010101ULL * (b))

static inline uint64_t load8(const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, 8);
	return w;
}

/* 0x80 in exactly those bytes of w that are below 0x20 (a NUL too), a
 * quote or a backslash, else 0: eight bytes tested at once with no
 * branch, since most prompts need no escape at all and text needs one a
 * line. A byte is zero when neither its low seven bits (added to 0x7f
 * they carry into bit 7, and never into the next byte) nor its bit 7 are
 * set. The strict style also marks every byte from 0x80 (w & 0x80...),
 * to check its UTF-8. */
static inline uint64_t special_bytes(uint64_t w)
{
	const uint64_t low = BYTES(0x7f);
	uint64_t ctl = w & BYTES(0xe0), quote = w ^ BYTES('"'), slash = w ^ BYTES('\\');
	uint64_t set = (((ctl & low) + low) | ctl) & (((quote & low) + low) | quote) & (((slash & low) + low) | slash);
	return ~set & BYTES(0x80);
}

/* Offset in the word of the first byte special_bytes() marked. */
static inline size_t first_marked(uint64_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (size_t)__builtin_clzll(m) / 8;
#else
	return (size_t)__builtin_ctzll(m) / 8;
#endif
}

/* Length of the valid UTF-8 sequence at s[0..left), 0 if it is not one
 * (overlong, a surrogate, past U+10FFFF, or cut short). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	uint32_t cp;
	return utf8_seq(s, left, &cp);
}

/* The loops below are written once and compiled once a style (the
 * exported functions call them with a constant), so that the style's
 * tests fold away: a request body's escaping costs what it did when
 * body_shape.c had a loop of its own. */
#define SPECIALISED static inline __attribute__((always_inline))

/* The byte or sequence at p[0..left) (p[0] not a NUL) escaped at d;
 * returns the end of what was written, and in *adv how many input bytes
 * it took. At most six bytes are written. */
SPECIALISED char *put_item(char *d, const unsigned char *p, size_t left, enum json_str_style st, size_t *adv)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char c = *p;
	*adv = 1;
	if (c >= 0x80 && st == JSON_STR_STRICT) {
		size_t k = utf8_len(p, left);
		if (!k) {
			memcpy(d, REPLACEMENT, 3);
			return d + 3;
		}
		memcpy(d, p, k);
		*adv = k;
		return d + k;
	}
	if (!extra_cjson[c]) {
		*d = (char)c;
		return d + 1;
	}
	d[0] = '\\';
	if (c == '"' || c == '\\') {
		d[1] = (char)c;
		return d + 2;
	}
	if (st == JSON_STR_CJSON) {
		switch (c) {
		case '\b':
			d[1] = 'b';
			return d + 2;
		case '\f':
			d[1] = 'f';
			return d + 2;
		case '\n':
			d[1] = 'n';
			return d + 2;
		case '\r':
			d[1] = 'r';
			return d + 2;
		case '\t':
			d[1] = 't';
			return d + 2;
		default:
			break;
		}
	}
	memcpy(d + 1, "u00", 3);
	d[4] = hex[c >> 4];
	d[5] = hex[c & 15];
	return d + 6;
}

/* Extra bytes the byte or sequence at p[0..left) takes (p[0] not a NUL);
 * *adv as put_item's. */
SPECIALISED size_t item_extra(const unsigned char *p, size_t left, enum json_str_style st, size_t *adv)
{
	unsigned char c = *p;
	*adv = 1;
	if (st == JSON_STR_CJSON)
		return extra_cjson[c];
	if (c < 0x80)
		return extra_strict[c];
	size_t k = utf8_len(p, left);
	if (!k)
		return 2;
	*adv = k;
	return 0;
}

SPECIALISED size_t len_as(const unsigned char *p, size_t *n, enum json_str_style st)
{
	const uint64_t high = st == JSON_STR_STRICT ? BYTES(0x80) : 0;
	size_t len = *n, extra = 0, i = 0, adv;
	while (len - i >= 8) {
		uint64_t w = load8(p + i), m = special_bytes(w) | (w & high);
		if (!m) {
			i += 8;
			continue;
		}
		i += first_marked(m);
		if (!p[i]) {
			*n = i;
			return i + extra;
		}
		extra += item_extra(p + i, len - i, st, &adv);
		i += adv;
	}
	while (i < len) {
		if (!p[i]) {
			*n = i;
			return i + extra;
		}
		extra += item_extra(p + i, len - i, st, &adv);
		i += adv;
	}
	return len + extra;
}

size_t json_str_len(const char *s, size_t *n, enum json_str_style st)
{
	if (st == JSON_STR_CJSON)
		return len_as((const unsigned char *)s, n, JSON_STR_CJSON);
	return len_as((const unsigned char *)s, n, JSON_STR_STRICT);
}

/* Each word is stored whole, then the output moves on by its bytes up to
 * the first one to escape: what is left of the input prints at least as
 * long as it is (an escape or a U+FFFD is longer than its byte, a valid
 * sequence as long), and longer when it holds an escape, so the store
 * stays inside the printed length. */
SPECIALISED char *put_as(char *d, const unsigned char *p, size_t n, enum json_str_style st)
{
	const uint64_t high = st == JSON_STR_STRICT ? BYTES(0x80) : 0;
	size_t i = 0, adv;
	while (n - i >= 8) {
		uint64_t w = load8(p + i), m = special_bytes(w) | (w & high);
		memcpy(d, &w, 8);
		if (!m) {
			d += 8;
			i += 8;
			continue;
		}
		size_t k = first_marked(m);
		d = put_item(d + k, p + i + k, n - i - k, st, &adv);
		i += k + adv;
	}
	while (i < n) {
		d = put_item(d, p + i, n - i, st, &adv);
		i += adv;
	}
	return d;
}

char *json_str_put(char *d, const char *s, size_t n, size_t printed, enum json_str_style st)
{
	if (printed == n) {
		memcpy(d, s, n);
		return d + n;
	}
	if (st == JSON_STR_CJSON)
		return put_as(d, (const unsigned char *)s, n, JSON_STR_CJSON);
	return put_as(d, (const unsigned char *)s, n, JSON_STR_STRICT);
}

size_t json_str_escape(char *dst, size_t cap, const char *s, enum json_str_style st)
{
	if (!cap)
		return 0;
	if (!s)
		s = "";
	size_t n = strlen(s), printed = json_str_len(s, &n, st);
	if (printed < cap) {
		json_str_put(dst, s, n, printed, st);
		dst[printed] = '\0';
		return printed;
	}
	/* Too long: item by item, up to the first that does not fit whole. */
	const unsigned char *p = (const unsigned char *)s;
	size_t w = 0, i = 0, adv;
	while (i < n) {
		char tmp[8];
		size_t tn = (size_t)(put_item(tmp, p + i, n - i, st, &adv) - tmp);
		if (w + tn >= cap)
			break;
		memcpy(dst + w, tmp, tn);
		w += tn;
		i += adv;
	}
	dst[w] = '\0';
	return w;
}
