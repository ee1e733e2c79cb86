#include "config.h"

#include "infertop/body_shape.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/json_str.h"

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
	const char *p = prompt ? prompt : "";
	size_t pn = prompt ? prompt_len : 0;
	const char *m = model ? model : "";
	size_t mn = model ? strlen(model) : 0;
	/* At most six bytes a byte: past this a size_t could wrap. */
	if (pn > SIZE_MAX / 16 || mn > SIZE_MAX / 16)
		return NULL;
	char num[12];
	size_t numlen = print_positive(num, max_tokens);
	size_t printed[BODY_SHAPE_SLOTS] = {0};
	printed[BODY_SLOT_PROMPT] = json_str_len(p, &pn, JSON_STR_CJSON);
	printed[BODY_SLOT_MODEL] = json_str_len(m, &mn, JSON_STR_CJSON);
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
			d = json_str_put(d, p, pn, printed[BODY_SLOT_PROMPT], JSON_STR_CJSON);
			break;
		case BODY_SLOT_MODEL:
			d = json_str_put(d, m, mn, printed[BODY_SLOT_MODEL], JSON_STR_CJSON);
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
