#include "config.h"

#include "infertop/body_shape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A shape stands for every request option but the prompt, the model's
 * text and max_tokens, and body_shape_fits() compares each of them: an
 * option added to struct oai_request_opts must be compared there too, or
 * a shape made before it changed would keep printing its old value. The
 * size is the reminder (LP64 only, where it is known). */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct oai_request_opts) == 40, "compare the new option in body_shape_fits()");
#endif

/* Placeholders: strings of control bytes, which cJSON prints as \u00xx
 * runs no real prompt or model name prints as, and a max_tokens no run
 * asks for. Each is looked for in the printed body with its quotes (or,
 * for the number, with the bytes that can surround a JSON number), so a
 * prompt placeholder is never mistaken for part of a longer string. */
#define PROMPT_MARK "\x01\x02\x03\x04\x05\x06"
#define PROMPT_MARK_JSON "\"\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\""
#define MODEL_MARK "\x06\x05\x04\x03\x02\x01"
#define MODEL_MARK_JSON "\"\\u0006\\u0005\\u0004\\u0003\\u0002\\u0001\""
#define NUMBER_MARK 2147483001
#define NUMBER_MARK_JSON "2147483001"

/* The bodies a shape must reproduce before it is used: every kind of
 * escape cJSON makes, raw bytes it leaves alone (/, DEL, UTF-8), numbers
 * of other lengths than the placeholder's, and an empty prompt. */
static const struct {
	const char *prompt, *model;
	int max_tokens;
} samples[] = {
	{"say \"hi\" \\ then\na\rb\tc\bd\fe\x01\x1f\x7f / caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	 "org/M\"o\\d\x02\xc3\xa9l\n", 7},
	{"", "m", 123456789},
};

/* Extra bytes a byte takes when cJSON escapes it: \" \\ \b \f \n \r \t
 * take one, other bytes below 0x20 five (\u00xx), the rest none. A NUL
 * ends the string before it is looked up. */
static const unsigned char esc_extra[256] = {
	5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5,
	5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
};

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
 * set. */
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

/* The printed length of p[0..*n) without its quotes; *n is cut at a NUL. */
static size_t escaped_len(const unsigned char *p, size_t *n)
{
	size_t len = *n, extra = 0, i = 0;
	while (len - i >= 8) {
		uint64_t m = special_bytes(load8(p + i));
		if (!m) {
			i += 8;
			continue;
		}
		i += first_marked(m);
		if (!p[i]) {
			*n = i;
			return i + extra;
		}
		extra += esc_extra[p[i++]];
	}
	for (; i < len; i++) {
		if (!p[i]) {
			*n = i;
			return i + extra;
		}
		extra += esc_extra[p[i]];
	}
	return len + extra;
}

static inline char *put_byte(char *d, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	if (!esc_extra[c]) {
		*d = (char)c;
		return d + 1;
	}
	d[0] = '\\';
	switch (c) {
	case '"':
		d[1] = '"';
		return d + 2;
	case '\\':
		d[1] = '\\';
		return d + 2;
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
		memcpy(d + 1, "u00", 3);
		d[4] = hex[c >> 4];
		d[5] = hex[c & 15];
		return d + 6;
	}
}

/* p[0..n) holds no NUL (escaped_len cut it there) and prints as printed
 * bytes. Each word is stored whole, then the output moves on by its bytes
 * up to the first one to escape: what is left of the input prints at
 * least as long as it is, and longer when it holds an escape, so the
 * store stays inside the body. */
static char *put_escaped(char *d, const unsigned char *p, size_t n, size_t printed)
{
	if (printed == n) {
		memcpy(d, p, n);
		return d + n;
	}
	size_t i = 0;
	while (n - i >= 8) {
		uint64_t w = load8(p + i), m = special_bytes(w);
		memcpy(d, &w, 8);
		if (!m) {
			d += 8;
			i += 8;
			continue;
		}
		size_t k = first_marked(m);
		d = put_byte(d + k, p[i + k]);
		i += k + 1;
	}
	for (; i < n; i++)
		d = put_byte(d, p[i]);
	return d;
}

/* As "%d" prints v > 0, without the printf machinery. */
static size_t print_positive(char out[12], int v)
{
	char tmp[12];
	size_t n = 0;
	for (unsigned u = (unsigned)v; u; u /= 10)
		tmp[n++] = (char)('0' + u % 10);
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

static char *render(const struct body_shape *s, const char *prompt, size_t prompt_len, const char *model,
		    int max_tokens, size_t *len_out)
{
	const unsigned char *p = (const unsigned char *)(prompt ? prompt : "");
	size_t pn = prompt ? prompt_len : 0;
	const unsigned char *m = (const unsigned char *)(model ? model : "");
	size_t mn = model ? strlen(model) : 0;
	/* At most six bytes a byte: past this a size_t could wrap. */
	if (pn > SIZE_MAX / 16 || mn > SIZE_MAX / 16)
		return NULL;
	char num[12];
	size_t numlen = print_positive(num, max_tokens);
	size_t printed[BODY_SHAPE_SLOTS] = {0};
	printed[BODY_SLOT_PROMPT] = escaped_len(p, &pn);
	printed[BODY_SLOT_MODEL] = escaped_len(m, &mn);
	printed[BODY_SLOT_NUMBER] = numlen;
	size_t total = s->fixed;
	for (int i = 0; i < s->nslots; i++)
		total += printed[s->what[i]];
	char *body = malloc(total + 1);
	if (!body)
		return NULL;
	char *d = body;
	size_t from = 0;
	for (int i = 0; i < s->nslots; i++) {
		memcpy(d, s->text + from, s->at[i] - from);
		d += s->at[i] - from;
		from = s->at[i];
		switch (s->what[i]) {
		case BODY_SLOT_PROMPT:
			d = put_escaped(d, p, pn, printed[BODY_SLOT_PROMPT]);
			break;
		case BODY_SLOT_MODEL:
			d = put_escaped(d, m, mn, printed[BODY_SLOT_MODEL]);
			break;
		case BODY_SLOT_NUMBER:
		default:
			memcpy(d, num, numlen);
			d += numlen;
			break;
		}
	}
	memcpy(d, s->text + from, s->fixed - from);
	body[total] = '\0';
	if (len_out)
		*len_out = total;
	return body;
}

/* The next placeholder at or after pos: its kind, where it starts and
 * how long it is printed (a string's quotes stay with the fixed bytes).
 * False when there is none. */
static bool next_mark(const char *body, size_t pos, enum body_slot *what, size_t *at, size_t *n)
{
	static const struct {
		enum body_slot what;
		const char *json;
	} marks[] = {
		{BODY_SLOT_PROMPT, PROMPT_MARK_JSON},
		{BODY_SLOT_MODEL, MODEL_MARK_JSON},
		{BODY_SLOT_NUMBER, NUMBER_MARK_JSON},
	};
	bool found = false;
	for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
		size_t ml = strlen(marks[k].json);
		for (const char *h = body + pos; (h = strstr(h, marks[k].json)) != NULL; h++) {
			size_t off = (size_t)(h - body);
			if (marks[k].what == BODY_SLOT_NUMBER) {
				/* A whole number, not digits inside a longer one. */
				char before = off ? body[off - 1] : 0, after = body[off + ml];
				if (!strchr(":,[", before) || !before || !after || !strchr(",]}", after))
					continue;
			}
			if (!found || off < *at) {
				found = true;
				*what = marks[k].what;
				*at = off;
				*n = ml;
			}
			break;
		}
	}
	return found;
}

/* Cuts the placeholder body into fixed bytes and slots. False when it
 * does not have the shape of a body (a placeholder more often than the
 * options can print it). */
static bool cut(struct body_shape *s, const char *body, size_t len)
{
	int count[BODY_SHAPE_SLOTS] = {0};
	size_t pos = 0, out = 0;
	enum body_slot what = BODY_SLOT_PROMPT;
	size_t at = 0, n = 0;
	s->nslots = 0;
	while (next_mark(body, pos, &what, &at, &n)) {
		if (s->nslots == BODY_SHAPE_SLOTS || ++count[what] > (what == BODY_SLOT_NUMBER ? 2 : 1))
			return false;
		bool quoted = what != BODY_SLOT_NUMBER;
		size_t keep = at + quoted - pos;
		memcpy(s->text + out, body + pos, keep);
		out += keep;
		s->at[s->nslots] = out;
		s->what[s->nslots++] = what;
		pos = at + n - quoted;
	}
	memcpy(s->text + out, body + pos, len - pos);
	out += len - pos;
	s->text[out] = '\0';
	s->fixed = out;
	return true;
}

/* Renders the samples and compares them with oai_body_build()'s. 1 when
 * all are equal, 0 when one differs, -1 when out of memory. */
static int check(const struct body_shape *s, const struct oai_request_opts *o)
{
	for (size_t k = 0; k < sizeof samples / sizeof samples[0]; k++) {
		struct oai_request_opts so = *o;
		so.max_tokens = samples[k].max_tokens;
		if (so.model)
			so.model = samples[k].model;
		size_t want_len = 0, got_len = 0;
		char *want = oai_body_build(&so, samples[k].prompt, &want_len);
		char *got = want ? render(s, samples[k].prompt, strlen(samples[k].prompt), so.model,
					  so.max_tokens, &got_len)
				 : NULL;
		int rc = !want || !got ? -1 : want_len == got_len && memcmp(want, got, want_len + 1) == 0;
		free(want);
		free(got);
		if (rc != 1)
			return rc;
	}
	return 1;
}

/* 0 when made (usable or not), -1 when out of memory (still empty: the
 * next body tries again). */
static int make(struct body_shape *s, const struct oai_request_opts *o)
{
	body_shape_free(s);
	struct oai_request_opts po = *o;
	po.max_tokens = NUMBER_MARK;
	if (po.model)
		po.model = MODEL_MARK;
	s->api = o->api;
	s->has_model = o->model != NULL;
	s->ignore_eos = o->ignore_eos;
	s->have_temperature = o->have_temperature;
	s->temperature = o->temperature;
	s->extra_body = o->extra_body;
	s->made = true;
	if (o->extra_body && !cJSON_IsObject(o->extra_body))
		return 0;
	size_t len = 0;
	char *body = oai_body_build(&po, PROMPT_MARK, &len);
	if (body)
		s->text = malloc(len + 1);
	if (!s->text) {
		free(body);
		body_shape_free(s);
		return -1;
	}
	bool ok = cut(s, body, len);
	free(body);
	int rc = ok ? check(s, o) : 0;
	if (rc < 0) {
		body_shape_free(s);
		return -1;
	}
	s->usable = rc == 1;
	return 0;
}

bool body_shape_fits(const struct body_shape *s, const struct oai_request_opts *o)
{
	/* temperature by its bits: equal bits print equal bytes, and a NaN
	 * still equals itself. */
	return s->made && s->api == o->api && s->has_model == (o->model != NULL) &&
	       s->ignore_eos == o->ignore_eos && s->have_temperature == o->have_temperature &&
	       (!o->have_temperature || memcmp(&s->temperature, &o->temperature, sizeof o->temperature) == 0) &&
	       s->extra_body == o->extra_body;
}

char *body_shape_build(struct body_shape *s, const struct oai_request_opts *o, const char *prompt,
		       size_t prompt_len, size_t *len_out)
{
	if (o->max_tokens <= 0)
		return oai_body_build(o, prompt, len_out);
	if (!body_shape_fits(s, o) && make(s, o) != 0)
		return oai_body_build(o, prompt, len_out);
	if (!s->usable)
		return oai_body_build(o, prompt, len_out);
	return render(s, prompt, prompt_len, o->model, o->max_tokens, len_out);
}

void body_shape_free(struct body_shape *s)
{
	free(s->text);
	memset(s, 0, sizeof *s);
}
