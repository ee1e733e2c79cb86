#include "config.h"

#include "infertop/openai.h"

#include <stdint.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Shared by both chunk paths, so equal inputs give byte-equal results. */

static const char *const api_names[OAI_API_N] = { [OAI_CHAT] = "chat", [OAI_COMPLETIONS] = "completions" };

const char *oai_api_name(int api)
{
	return api >= 0 && api < OAI_API_N ? api_names[api] : NULL;
}

int oai_api_parse(const char *name, enum oai_api *out)
{
	for (int i = 0; name && i < OAI_API_N; i++) {
		if (strcmp(name, api_names[i]) == 0) {
			*out = (enum oai_api)i;
			return 0;
		}
	}
	return -1;
}

static void chunk_init(struct oai_chunk *out)
{
	out->valid = false;
	out->choices = false;
	out->output = false;
	out->finish = false;
	out->usage = false;
	out->error = false;
	out->prompt_tokens = -1;
	out->completion_tokens = -1;
	out->cached_tokens = -1;
	out->has_text = false;
	out->text_off = out->text_len = 0;
	out->error_msg[0] = '\0';
}

/* Token counts beyond 2^53 or below zero are nonsense, not counts. */
static bool tokens_from_double(double d, int64_t *out)
{
	if (!(d >= 0 && d <= 9007199254740992.0))
		return false;
	*out = (int64_t)d;
	return true;
}

/* The answer's text at json[off, off + n), the same on every path
 * (offsets are 32-bit; an SSE event is far smaller, nothing is assumed). */
static void set_text(struct oai_chunk *out, size_t off, size_t n)
{
	if (off > UINT32_MAX || n > UINT32_MAX - off)
		return;
	out->has_text = true;
	out->text_off = (uint32_t)off;
	out->text_len = (uint32_t)n;
}

/* Length of s[0..n) without a trailing, incomplete UTF-8 sequence, so a
 * truncated message never ends in half a character. */
static size_t utf8_trim(const unsigned char *s, size_t n)
{
	size_t i = n, back = 0;
	while (i > 0 && back < 3 && (s[i - 1] & 0xC0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return n;
	unsigned char lead = s[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (need > 1 && i - 1 + need > n)
		return i - 1;
	return n;
}

/* Messages end up on a terminal and in one-line logs: control bytes become
 * spaces. Looks at most at src[0..cap-1] plus whether n goes beyond. */
static void copy_msg(char *dst, size_t cap, const char *src, size_t n)
{
	if (cap == 0)
		return;
	size_t keep = n;
	if (keep > cap - 1)
		keep = utf8_trim((const unsigned char *)src, cap - 1);
	for (size_t i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	dst[keep] = '\0';
}

/* ------------------------------------------------------------------ */
/* Reference path: cJSON. */

static bool only_ws(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
			return false;
	return true;
}

static bool nonempty_string(const cJSON *j)
{
	return cJSON_IsString(j) && j->valuestring && j->valuestring[0] != '\0';
}

static const cJSON *get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static bool get_tokens(const cJSON *obj, const char *key, int64_t *out)
{
	const cJSON *j = get(obj, key);
	return cJSON_IsNumber(j) && tokens_from_double(j->valuedouble, out);
}

/* cJSON keeps no offsets, so the answer's string is found again in the
 * bytes by its place in the tree (which member, which element), walking
 * them by cJSON's own rules: whitespace is any byte up to 0x20 (and a
 * UTF-8 BOM first), a string ends at the first quote not after a
 * backslash, a number or literal at the next separator. Only run on bytes
 * cJSON accepted; every read is bounded all the same. */
static size_t cj_ws(const char *s, size_t i, size_t n)
{
	while (i < n && (unsigned char)s[i] <= 0x20)
		i++;
	return i;
}

/* From an opening quote to its closing quote (n: none). */
static size_t cj_string_close(const char *s, size_t i, size_t n)
{
	for (i++; i < n && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i < n ? i : n;
}

static size_t cj_skip(const char *s, size_t i, size_t n)
{
	size_t depth = 0;
	do {
		if (i >= n)
			return n;
		char c = s[i];
		if (c == '"')
			i = cj_string_close(s, i, n);
		else if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--;
		else if (depth == 0) {
			while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && (unsigned char)s[i] > 0x20)
				i++;
			return i;
		}
		i++;
	} while (depth > 0);
	return i;
}

/* At '{' (object) or '[': where the value of its k-th member or element
 * starts. */
static size_t cj_nth(const char *s, size_t i, size_t n, size_t k, bool object)
{
	i = cj_ws(s, i + 1, n);
	for (;;) {
		if (object)
			i = cj_ws(s, cj_ws(s, cj_string_close(s, i, n) + 1, n) + 1, n); /* "key" : */
		if (k-- == 0 || i >= n)
			return i;
		i = cj_ws(s, cj_ws(s, cj_skip(s, i, n), n) + 1, n); /* value , */
	}
}

static size_t cj_index(const cJSON *parent, const cJSON *item)
{
	size_t k = 0;
	for (const cJSON *x = parent->child; x && x != item; x = x->next)
		k++;
	return k;
}

/* path: the member of the root, the element of choices, the member of
 * the choice and (delta.content) the member of the delta. */
static void cj_text(const char *json, size_t len, const size_t *path, int depth, struct oai_chunk *out)
{
	size_t i = len >= 3 && memcmp(json, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
	i = cj_ws(json, i, len);
	for (int d = 0; d < depth && i < len; d++)
		i = cj_nth(json, i, len, path[d], d != 1);
	if (i >= len || json[i] != '"')
		return;
	size_t close = cj_string_close(json, i, len);
	if (close < len)
		set_text(out, i + 1, close - i - 1);
}

int oai_chunk_parse_cjson(const char *json, size_t len, struct oai_chunk *out)
{
	chunk_init(out);
	if (!json || len == 0)
		return -1;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
	if (!root)
		return -1;
	if (!cJSON_IsObject(root) || !end || !only_ws(end, json + len)) {
		cJSON_Delete(root);
		return -1;
	}
	out->valid = true;

	const cJSON *choices = get(root, "choices");
	size_t path[4];
	int depth = 0, texts = 0;
	if (cJSON_IsArray(choices)) {
		const cJSON *c;
		size_t ci = 0;
		cJSON_ArrayForEach(c, choices) {
			out->choices = true;
			if (!cJSON_IsObject(c)) {
				ci++;
				continue;
			}
			const cJSON *d = get(c, "delta");
			if (cJSON_IsObject(d) &&
			    (nonempty_string(get(d, "content")) || nonempty_string(get(d, "reasoning")) ||
			     nonempty_string(get(d, "reasoning_content"))))
				out->output = true;
			if (nonempty_string(get(c, "text")))
				out->output = true;
			/* The answer: a string delta.content or text, null or
			 * reasoning not; it is the chunk's only one or none. */
			const cJSON *content = cJSON_IsObject(d) ? get(d, "content") : NULL;
			const cJSON *text = get(c, "text");
			if (cJSON_IsString(content) && texts++ == 0) {
				path[1] = ci;
				path[2] = cj_index(c, d);
				path[3] = cj_index(d, content);
				depth = 4;
			}
			if (cJSON_IsString(text) && texts++ == 0) {
				path[1] = ci;
				path[2] = cj_index(c, text);
				depth = 3;
			}
			const cJSON *fr = get(c, "finish_reason");
			if (fr && !cJSON_IsNull(fr))
				out->finish = true;
			ci++;
		}
	}
	if (texts == 1) {
		path[0] = cj_index(root, choices);
		cj_text(json, len, path, depth, out);
	}

	const cJSON *usage = get(root, "usage");
	if (cJSON_IsObject(usage)) {
		if (get_tokens(usage, "completion_tokens", &out->completion_tokens))
			out->usage = true;
		get_tokens(usage, "prompt_tokens", &out->prompt_tokens);
		const cJSON *ptd = get(usage, "prompt_tokens_details");
		if (cJSON_IsObject(ptd))
			get_tokens(ptd, "cached_tokens", &out->cached_tokens);
	}
	const cJSON *timings = get(root, "timings");
	if (out->cached_tokens < 0 && cJSON_IsObject(timings))
		get_tokens(timings, "cache_n", &out->cached_tokens);

	const cJSON *err = get(root, "error");
	if (cJSON_IsObject(err)) {
		out->error = true;
		const cJSON *m = get(err, "message");
		if (cJSON_IsString(m) && m->valuestring)
			copy_msg(out->error_msg, sizeof out->error_msg, m->valuestring,
				 strlen(m->valuestring));
	} else if (cJSON_IsString(err) && err->valuestring) {
		out->error = true;
		copy_msg(out->error_msg, sizeof out->error_msg, err->valuestring,
			 strlen(err->valuestring));
	}
	cJSON_Delete(root);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Fast path: one pass over the bytes, no allocation. It validates all it
 * walks and returns false ("bail") on anything it is not sure cJSON reads
 * the same way: then the caller reruns the chunk through cJSON. Accepted
 * input is strict RFC 8259 JSON, which cJSON also accepts, so the two can
 * only differ in what they extract, and the differential fuzz target
 * checks that. Bails: nesting deeper than JS_MAX_DEPTH, escaped key names
 * in the objects it looks into, raw control bytes in strings, lone
 * surrogates, numbers longer than 40 bytes, token counts that are not
 * plain integers of at most 15 digits, non-JSON whitespace, a UTF-8 BOM. */

#define JS_MAX_DEPTH 32

struct js {
	const unsigned char *p, *end;
	int depth;
	/* Output strings walked (what a memo needs): how many, and the last
	 * one's opening quote and the byte after its closing quote. */
	int outs;
	const unsigned char *out_open, *out_close;
	/* Answer strings (delta.content, text) walked, the last one's text. */
	int texts;
	const unsigned char *text;
	size_t text_n;
	/* usage.prompt_tokens_details.cached_tokens, timings.cache_n; -1: none. */
	int64_t usage_cached, timings_cached;
};

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Nonzero when one of 8 bytes is '"', '\\' or a control byte: strings are
 * most of a chunk's bytes, so they are skipped 8 at a time. */
static inline uint64_t swar_special(uint64_t x)
{
	uint64_t q = x ^ (ONES * '"');
	uint64_t b = x ^ (ONES * '\\');
	return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x)) & HIGHS;
}

static inline bool js_is_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline void js_ws(struct js *s)
{
	while (s->p < s->end && js_is_ws(*s->p))
		s->p++;
}

static inline bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char c = p[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

/* At '"'. On success str and n give the raw text between the quotes. */
static bool js_string(struct js *s, const unsigned char **str, size_t *n, bool *esc)
{
	const unsigned char *p = s->p + 1, *end = s->end;
	bool e = false;
	*str = p;
	for (;;) {
		while (end - p >= 8) {
			uint64_t x;
			memcpy(&x, p, 8);
			uint64_t m = swar_special(x);
			if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				/* The lowest flagged byte is exact (a borrow only
				 * runs upward from a true one): jump to it. */
				p += __builtin_ctzll(m) >> 3;
				goto special;
#else
				break;
#endif
			}
			p += 8;
		}
		while (p < end && *p != '"' && *p != '\\' && *p >= 0x20)
			p++;
	special: __attribute__((unused));
		if (p >= end || *p < 0x20)
			return false;
		if (*p == '"')
			break;
		e = true;
		if (end - p < 2)
			return false;
		switch (p[1]) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
			p += 2;
			break;
		case 'u': {
			unsigned hi, lo;
			if (end - p < 6 || !hex4(p + 2, &hi) || (hi >= 0xDC00 && hi <= 0xDFFF))
				return false;
			if (hi >= 0xD800 && hi <= 0xDBFF) {
				if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || !hex4(p + 8, &lo) ||
				    lo < 0xDC00 || lo > 0xDFFF)
					return false;
				p += 12;
			} else {
				p += 6;
			}
			break;
		}
		default:
			return false;
		}
	}
	*n = (size_t)(p - *str);
	*esc = e;
	s->p = p + 1;
	return true;
}

/* cJSON strings are C strings: "\u0000..." reads as empty there. */
static bool raw_nonempty(const unsigned char *str, size_t n)
{
	return n > 0 && !(n >= 6 && memcmp(str, "\\u0000", 6) == 0);
}

/* Strict JSON number. *plain: a non-negative integer of at most 15 digits
 * (exact in a double), whose value goes to *val. */
static bool js_number(struct js *s, bool *plain, int64_t *val)
{
	const unsigned char *p = s->p, *end = s->end, *start = p;
	bool simple = true;
	if (p < end && *p == '-') {
		simple = false;
		p++;
	}
	const unsigned char *ds = p;
	if (p >= end)
		return false;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (p < end && is_digit(*p))
			p++;
	else
		return false;
	const unsigned char *de = p;
	if (p < end && *p == '.') {
		p++;
		if (p >= end || !is_digit(*p))
			return false;
		while (p < end && is_digit(*p))
			p++;
		simple = false;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return false;
		while (p < end && is_digit(*p))
			p++;
		simple = false;
	}
	if (p - start > 40)
		return false;
	if (de - ds > 15)
		simple = false;
	if (plain) {
		*plain = simple;
		if (simple) {
			int64_t v = 0;
			for (const unsigned char *q = ds; q < de; q++)
				v = v * 10 + (*q - '0');
			*val = v;
		}
	}
	s->p = p;
	return true;
}

static bool js_lit(struct js *s, const char *lit, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
		return false;
	s->p += n;
	return true;
}

static bool js_value(struct js *s);

/* Containers: open consumes the bracket and reports whether a member
 * follows (1), the container was empty (0), or bail (-1); next consumes
 * the separator after a member the same way. */
static int js_open(struct js *s, unsigned char close)
{
	if (++s->depth > JS_MAX_DEPTH)
		return -1;
	s->p++;
	js_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		s->depth--;
		return 0;
	}
	return 1;
}

static int js_next(struct js *s, unsigned char close)
{
	js_ws(s);
	if (s->p >= s->end)
		return -1;
	if (*s->p == ',') {
		s->p++;
		js_ws(s);
		return 1;
	}
	if (*s->p == close) {
		s->p++;
		s->depth--;
		return 0;
	}
	return -1;
}

/* "key" ws ':' ws. Keys we look up must not be escaped: cJSON would
 * decode them and could match where a raw comparison does not. */
static bool js_key(struct js *s, const unsigned char **k, size_t *kn, bool allow_escape)
{
	bool esc;
	if (s->p >= s->end || *s->p != '"' || !js_string(s, k, kn, &esc))
		return false;
	if (esc && !allow_escape)
		return false;
	js_ws(s);
	if (s->p >= s->end || *s->p != ':')
		return false;
	s->p++;
	js_ws(s);
	return true;
}

static bool js_object(struct js *s)
{
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		if (!js_key(s, &k, &kn, true) || !js_value(s))
			return false;
		r = js_next(s, '}');
	}
	return r == 0;
}

static bool js_array(struct js *s)
{
	int r = js_open(s, ']');
	while (r == 1) {
		if (!js_value(s))
			return false;
		r = js_next(s, ']');
	}
	return r == 0;
}

static bool js_value(struct js *s)
{
	if (s->p >= s->end)
		return false;
	switch (*s->p) {
	case '"': {
		const unsigned char *str;
		size_t n;
		bool esc;
		return js_string(s, &str, &n, &esc);
	}
	case '{':
		return js_object(s);
	case '[':
		return js_array(s);
	case 't':
		return js_lit(s, "true", 4);
	case 'f':
		return js_lit(s, "false", 5);
	case 'n':
		return js_lit(s, "null", 4);
	default:
		return js_number(s, NULL, NULL);
	}
}

static inline bool key_is(const unsigned char *k, size_t kn, const char *name, size_t n)
{
	return kn == n && memcmp(k, name, n) == 0;
}
#define KEY_IS(k, kn, lit) key_is(k, kn, lit, sizeof(lit) - 1)

static inline bool at(const struct js *s, unsigned char c)
{
	return s->p < s->end && *s->p == c;
}

/* A string value that counts as output when non-empty; other types are
 * walked and do not count. answer: it is the answer's text (not reasoning). */
static bool js_output_string(struct js *s, bool *output, bool answer)
{
	if (!at(s, '"'))
		return js_value(s);
	const unsigned char *str;
	size_t n;
	bool esc;
	s->out_open = s->p;
	if (!js_string(s, &str, &n, &esc))
		return false;
	s->outs++;
	s->out_close = s->p;
	if (answer) {
		s->texts++;
		s->text = str;
		s->text_n = n;
	}
	if (raw_nonempty(str, n))
		*output = true;
	return true;
}

static bool js_delta(struct js *s, struct oai_chunk *out)
{
	bool seen_content = false, seen_reasoning = false, seen_rc = false;
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		bool ok;
		if (!js_key(s, &k, &kn, false))
			return false;
		if (!seen_content && KEY_IS(k, kn, "content")) {
			seen_content = true;
			ok = js_output_string(s, &out->output, true);
		} else if (!seen_reasoning && KEY_IS(k, kn, "reasoning")) {
			seen_reasoning = true;
			ok = js_output_string(s, &out->output, false);
		} else if (!seen_rc && KEY_IS(k, kn, "reasoning_content")) {
			seen_rc = true;
			ok = js_output_string(s, &out->output, false);
		} else {
			ok = js_value(s);
		}
		if (!ok)
			return false;
		r = js_next(s, '}');
	}
	return r == 0;
}

static bool js_choice(struct js *s, struct oai_chunk *out)
{
	bool seen_delta = false, seen_text = false, seen_finish = false;
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		bool ok;
		if (!js_key(s, &k, &kn, false))
			return false;
		if (!seen_delta && KEY_IS(k, kn, "delta")) {
			seen_delta = true;
			ok = at(s, '{') ? js_delta(s, out) : js_value(s);
		} else if (!seen_text && KEY_IS(k, kn, "text")) {
			seen_text = true;
			ok = js_output_string(s, &out->output, true);
		} else if (!seen_finish && KEY_IS(k, kn, "finish_reason")) {
			seen_finish = true;
			bool is_null = at(s, 'n');
			ok = js_value(s);
			if (ok && !is_null)
				out->finish = true;
		} else {
			ok = js_value(s);
		}
		if (!ok)
			return false;
		r = js_next(s, '}');
	}
	return r == 0;
}

static bool js_choices(struct js *s, struct oai_chunk *out)
{
	int r = js_open(s, ']');
	while (r == 1) {
		out->choices = true;
		if (!(at(s, '{') ? js_choice(s, out) : js_value(s)))
			return false;
		r = js_next(s, ']');
	}
	return r == 0;
}

/* A token count: plain integers are read here, anything else numeric is
 * left to cJSON so both paths convert the same way. */
static bool js_tokens(struct js *s, int64_t *dst, bool *found)
{
	if (!at(s, '-') && !(s->p < s->end && is_digit(*s->p)))
		return js_value(s);
	bool plain;
	int64_t v;
	if (!js_number(s, &plain, &v) || !plain)
		return false;
	*dst = v;
	if (found)
		*found = true;
	return true;
}

/* An object of which only the first `name` matters, a token count going
 * to *dst: usage.prompt_tokens_details, timings. */
static bool js_count_in(struct js *s, const char *name, size_t name_n, int64_t *dst)
{
	bool seen = false;
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		bool ok;
		if (!js_key(s, &k, &kn, false))
			return false;
		if (!seen && key_is(k, kn, name, name_n)) {
			seen = true;
			ok = js_tokens(s, dst, NULL);
		} else {
			ok = js_value(s);
		}
		if (!ok)
			return false;
		r = js_next(s, '}');
	}
	return r == 0;
}

static bool js_usage(struct js *s, struct oai_chunk *out)
{
	bool seen_ct = false, seen_pt = false, seen_ptd = false;
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		bool ok;
		if (!js_key(s, &k, &kn, false))
			return false;
		if (!seen_ct && KEY_IS(k, kn, "completion_tokens")) {
			seen_ct = true;
			ok = js_tokens(s, &out->completion_tokens, &out->usage);
		} else if (!seen_pt && KEY_IS(k, kn, "prompt_tokens")) {
			seen_pt = true;
			ok = js_tokens(s, &out->prompt_tokens, NULL);
		} else if (!seen_ptd && KEY_IS(k, kn, "prompt_tokens_details")) {
			seen_ptd = true;
			ok = at(s, '{') ? js_count_in(s, "cached_tokens", 13, &s->usage_cached) : js_value(s);
		} else {
			ok = js_value(s);
		}
		if (!ok)
			return false;
		r = js_next(s, '}');
	}
	return r == 0;
}

static void utf8_put(unsigned char *o, size_t *n, unsigned cp)
{
	if (cp < 0x80) {
		o[(*n)++] = (unsigned char)cp;
	} else if (cp < 0x800) {
		o[(*n)++] = (unsigned char)(0xC0 | cp >> 6);
		o[(*n)++] = (unsigned char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		o[(*n)++] = (unsigned char)(0xE0 | cp >> 12);
		o[(*n)++] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		o[(*n)++] = (unsigned char)(0x80 | (cp & 0x3F));
	} else {
		o[(*n)++] = (unsigned char)(0xF0 | cp >> 18);
		o[(*n)++] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
		o[(*n)++] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		o[(*n)++] = (unsigned char)(0x80 | (cp & 0x3F));
	}
}

/* Decodes a string js_string() validated, as cJSON would (up to the first
 * NUL), far enough for copy_msg() to give the same result. */
static void js_message(const unsigned char *str, size_t len, struct oai_chunk *out)
{
	unsigned char tmp[OAI_ERROR_MSG_MAX + 4];
	size_t n = 0, i = 0;
	while (i < len && n < OAI_ERROR_MSG_MAX) {
		if (str[i] != '\\') {
			tmp[n++] = str[i++];
			continue;
		}
		unsigned char c;
		switch (str[i + 1]) {
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u': {
			unsigned cp = 0, lo = 0;
			hex4(str + i + 2, &cp);
			i += 6;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				hex4(str + i + 2, &lo);
				i += 6;
				cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
			}
			if (cp == 0)
				goto done;
			utf8_put(tmp, &n, cp);
			continue;
		}
		default: c = str[i + 1]; break;
		}
		tmp[n++] = c;
		i += 2;
	}
done:
	copy_msg(out->error_msg, sizeof out->error_msg, (const char *)tmp, n);
}

static bool js_error_obj(struct js *s, struct oai_chunk *out)
{
	bool seen_msg = false;
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		bool ok;
		if (!js_key(s, &k, &kn, false))
			return false;
		if (!seen_msg && KEY_IS(k, kn, "message")) {
			seen_msg = true;
			if (at(s, '"')) {
				const unsigned char *str;
				size_t n;
				bool esc;
				ok = js_string(s, &str, &n, &esc);
				if (ok)
					js_message(str, n, out);
			} else {
				ok = js_value(s);
			}
		} else {
			ok = js_value(s);
		}
		if (!ok)
			return false;
		r = js_next(s, '}');
	}
	return r == 0;
}

static bool js_top(struct js *s, struct oai_chunk *out)
{
	bool seen_choices = false, seen_usage = false, seen_error = false, seen_timings = false;
	js_ws(s);
	if (!at(s, '{'))
		return false;
	int r = js_open(s, '}');
	while (r == 1) {
		const unsigned char *k;
		size_t kn;
		bool ok;
		if (!js_key(s, &k, &kn, false))
			return false;
		if (!seen_choices && KEY_IS(k, kn, "choices")) {
			seen_choices = true;
			ok = at(s, '[') ? js_choices(s, out) : js_value(s);
		} else if (!seen_usage && KEY_IS(k, kn, "usage")) {
			seen_usage = true;
			ok = at(s, '{') ? js_usage(s, out) : js_value(s);
		} else if (!seen_timings && KEY_IS(k, kn, "timings")) {
			seen_timings = true;
			ok = at(s, '{') ? js_count_in(s, "cache_n", 7, &s->timings_cached) : js_value(s);
		} else if (!seen_error && KEY_IS(k, kn, "error")) {
			seen_error = true;
			if (at(s, '{')) {
				out->error = true;
				ok = js_error_obj(s, out);
			} else if (at(s, '"')) {
				const unsigned char *str;
				size_t n;
				bool esc;
				out->error = true;
				ok = js_string(s, &str, &n, &esc);
				if (ok)
					js_message(str, n, out);
			} else {
				ok = js_value(s);
			}
		} else {
			ok = js_value(s);
		}
		if (!ok)
			return false;
		r = js_next(s, '}');
	}
	if (r != 0)
		return false;
	js_ws(s);
	return s->p == s->end;
}

static int parse_fast(struct js *s, const char *json, size_t len, struct oai_chunk *out)
{
	chunk_init(out);
	if (!json || len == 0)
		return -1;
	*s = (struct js){ .p = (const unsigned char *)json, .end = (const unsigned char *)json + len,
			  .usage_cached = -1, .timings_cached = -1 };
	if (!js_top(s, out))
		return -1;
	out->valid = true;
	out->cached_tokens = s->usage_cached >= 0 ? s->usage_cached : s->timings_cached;
	if (s->texts == 1)
		set_text(out, (size_t)(s->text - (const unsigned char *)json), s->text_n);
	return 0;
}

int oai_chunk_parse_fast(const char *json, size_t len, struct oai_chunk *out)
{
	struct js s;
	return parse_fast(&s, json, len, out);
}

int oai_chunk_parse(const char *json, size_t len, struct oai_chunk *out)
{
	if (oai_chunk_parse_fast(json, len, out) == 0)
		return 0;
	return oai_chunk_parse_cjson(json, len, out);
}

/* json as the memo's bytes with another string in the place of its output
 * string: then only that string is new, and js_string() reads it as the
 * parse did (a string's end is its own business). */
static bool memo_hit(struct oai_memo *m, const unsigned char *json, size_t len, struct oai_chunk *out)
{
	if (m->pre == 0 || len < (size_t)m->pre + m->suf || memcmp(json, m->bytes, m->pre) != 0)
		return false;
	struct js s = { .p = json + m->pre - 1, .end = json + len };
	const unsigned char *str;
	size_t n;
	bool esc;
	if (!js_string(&s, &str, &n, &esc) || (size_t)(s.end - s.p) + 1 != m->suf ||
	    memcmp(s.p - 1, m->bytes + m->pre, m->suf) != 0)
		return false;
	chunk_init(out); /* no error: a chunk with one is not learned */
	out->valid = true;
	out->choices = m->choices;
	out->output = raw_nonempty(str, n);
	out->finish = m->finish;
	out->usage = m->usage;
	out->prompt_tokens = m->prompt_tokens;
	out->completion_tokens = m->completion_tokens;
	out->cached_tokens = m->cached_tokens;
	if (m->text)
		set_text(out, m->pre, n);
	m->hits++;
	return true;
}

int oai_chunk_parse_memo(struct oai_memo *m, const char *json, size_t len, struct oai_chunk *out)
{
	const unsigned char *u = (const unsigned char *)json;
	if (json && memo_hit(m, u, len, out))
		return 0;
	struct js s;
	if (parse_fast(&s, json, len, out) != 0)
		return oai_chunk_parse_cjson(json, len, out);
	if (s.outs != 1 || out->error)
		return 0;
	size_t pre = (size_t)(s.out_open - u) + 1, suf = len - (size_t)(s.out_close - u) + 1;
	if (pre + suf <= sizeof m->bytes) {
		m->pre = (uint16_t)pre;
		m->suf = (uint16_t)suf;
		m->choices = out->choices;
		m->finish = out->finish;
		m->usage = out->usage;
		m->prompt_tokens = out->prompt_tokens;
		m->completion_tokens = out->completion_tokens;
		m->cached_tokens = out->cached_tokens;
		m->text = s.texts == 1; /* then its one output string is the answer */
		memcpy(m->bytes, u, pre);
		memcpy(m->bytes + pre, s.out_close - 1, suf);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Request bodies and other once-per-run JSON. */

char *oai_body_build(const struct oai_request_opts *o, const char *prompt, size_t *len_out)
{
	if (o->extra_body && !cJSON_IsObject(o->extra_body))
		return NULL;
	if (!prompt)
		prompt = "";
	cJSON *root = cJSON_CreateObject();
	bool ok = root != NULL;
	if (ok && o->model)
		ok = cJSON_AddStringToObject(root, "model", o->model) != NULL;
	if (ok && o->api == OAI_CHAT) {
		cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
		cJSON *m = cJSON_CreateObject();
		ok = msgs && m && cJSON_AddItemToArray(msgs, m);
		if (!ok)
			cJSON_Delete(m);
		ok = ok && cJSON_AddStringToObject(m, "role", "user") &&
		     cJSON_AddStringToObject(m, "content", prompt);
	} else if (ok) {
		ok = cJSON_AddStringToObject(root, "prompt", prompt) != NULL;
	}
	if (ok && o->max_tokens > 0)
		ok = cJSON_AddNumberToObject(root, "max_tokens", o->max_tokens) != NULL;
	if (ok)
		ok = cJSON_AddTrueToObject(root, "stream") != NULL;
	if (ok) {
		cJSON *so = cJSON_AddObjectToObject(root, "stream_options");
		ok = so && cJSON_AddTrueToObject(so, "include_usage");
	}
	if (ok && o->ignore_eos) {
		ok = cJSON_AddTrueToObject(root, "ignore_eos") != NULL;
		if (ok && o->max_tokens > 0)
			ok = cJSON_AddNumberToObject(root, "min_tokens", o->max_tokens) != NULL;
	}
	if (ok && o->have_temperature)
		ok = cJSON_AddNumberToObject(root, "temperature", o->temperature) != NULL;
	if (ok && o->extra_body) {
		const cJSON *x;
		cJSON_ArrayForEach(x, o->extra_body) {
			if (!x->string)
				continue;
			cJSON *dup = cJSON_Duplicate(x, 1);
			if (!dup) {
				ok = false;
				break;
			}
			bool done = get(root, x->string)
					    ? cJSON_ReplaceItemInObjectCaseSensitive(root, x->string, dup)
					    : cJSON_AddItemToObject(root, x->string, dup);
			if (!done) {
				cJSON_Delete(dup);
				ok = false;
				break;
			}
		}
	}
	char *body = ok ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	if (body && len_out)
		*len_out = strlen(body);
	return body;
}

int oai_models_first_id(const char *json, size_t len, char *out, size_t cap)
{
	if (cap > 0)
		out[0] = '\0';
	if (!json || len == 0 || cap == 0)
		return -1;
	cJSON *root = cJSON_ParseWithLength(json, len);
	const cJSON *data = get(root, "data");
	int rc = -1;
	if (cJSON_IsArray(data)) {
		const cJSON *m;
		cJSON_ArrayForEach(m, data) {
			const cJSON *id = cJSON_IsObject(m) ? get(m, "id") : NULL;
			if (!nonempty_string(id))
				continue;
			size_t n = strlen(id->valuestring);
			if (n < cap) {
				memcpy(out, id->valuestring, n + 1);
				rc = 0;
			}
			break;
		}
	}
	cJSON_Delete(root);
	return rc;
}

#define ERROR_BODY_RAW_MAX 160

static void raw_message(const char *body, size_t len, char *out, size_t cap)
{
	size_t lim = cap - 1 < ERROR_BODY_RAW_MAX ? cap - 1 : ERROR_BODY_RAW_MAX;
	size_t n = 0;
	bool space = false;
	for (size_t i = 0; i < len && n < lim; i++) {
		unsigned char c = (unsigned char)body[i];
		if (c <= 0x20 || c == 0x7f) {
			space = n > 0;
			continue;
		}
		if (space) {
			out[n++] = ' ';
			space = false;
			if (n == lim)
				break;
		}
		out[n++] = (char)c;
	}
	n = utf8_trim((const unsigned char *)out, n);
	out[n] = '\0';
}

void oai_error_body_message(const char *body, size_t len, char *out, size_t cap)
{
	if (cap == 0)
		return;
	out[0] = '\0';
	if (!body || len == 0)
		return;
	cJSON *root = cJSON_ParseWithLength(body, len);
	const char *msg = NULL;
	if (cJSON_IsObject(root)) {
		const cJSON *e = get(root, "error");
		const cJSON *m = cJSON_IsObject(e) ? get(e, "message") : NULL;
		const cJSON *detail = get(root, "detail");
		if (nonempty_string(m))
			msg = m->valuestring;
		else if (nonempty_string(e))
			msg = e->valuestring;
		else if (nonempty_string(get(root, "message")))
			msg = get(root, "message")->valuestring;
		else if (nonempty_string(detail))
			msg = detail->valuestring;
		else if (cJSON_IsArray(detail) && cJSON_IsObject(cJSON_GetArrayItem(detail, 0)) &&
			 nonempty_string(get(cJSON_GetArrayItem(detail, 0), "msg")))
			msg = get(cJSON_GetArrayItem(detail, 0), "msg")->valuestring;
	}
	if (msg)
		copy_msg(out, cap, msg, strlen(msg));
	else
		raw_message(body, len, out, cap);
	cJSON_Delete(root);
}

/* Built on oai_body_build() so both kinds of chat body carry the same
 * members in the same order; only "messages" is swapped for the array. */
char *oai_body_build_messages(const struct oai_request_opts *o, const char *messages_json,
			      size_t *len_out)
{
	if (o->api != OAI_CHAT || !messages_json)
		return NULL;
	char *base = oai_body_build(o, "", NULL);
	if (!base)
		return NULL;
	cJSON *root = cJSON_Parse(base);
	free(base);
	if (!root)
		return NULL;
	char *body = NULL;
	if (!(o->extra_body && get(o->extra_body, "messages"))) {
		cJSON *raw = cJSON_CreateRaw(messages_json);
		if (!raw || !cJSON_ReplaceItemInObjectCaseSensitive(root, "messages", raw)) {
			cJSON_Delete(raw);
			cJSON_Delete(root);
			return NULL;
		}
	}
	body = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (body && len_out)
		*len_out = strlen(body);
	return body;
}

/* ASCII case-insensitive: servers vary the case of the same words. */
static bool contains_ci(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= len; i++) {
		size_t j = 0;
		while (j < n && tolower((unsigned char)s[i + j]) == needle[j])
			j++;
		if (j == n)
			return true;
	}
	return false;
}

/* Each server's own words for it: vLLM "This model's maximum context
 * length is N tokens" (and max_model_len), llama.cpp
 * "exceed_context_size_error" / "exceeds the available context size",
 * SGLang "longer than the model's context length", TGI "`inputs` tokens +
 * `max_new_tokens` must be <= N", OpenAI "context_length_exceeded". */
bool oai_error_is_context(const char *body, size_t len)
{
	static const char *const words[] = {
		"context length", "context_length", "context size", "context_size",
		"context window", "max_model_len", "max_new_tokens` must be <=",
	};
	if (!body)
		return false;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (contains_ci(body, len, words[i]))
			return true;
	return false;
}
