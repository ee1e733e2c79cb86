#include "config.h"

#include "infertop/prom.h"

#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define PROM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PROM_PRINTF(a, b)
#endif

/* The exact fast path below relies on every double operation being rounded
 * once, to double; x87 extended precision would round twice. */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define PROM_FAST_FLOAT 1
#else
#define PROM_FAST_FLOAT 0
#endif

enum line_kind { LINE_ERR = -1, LINE_NONE = 0, LINE_SAMPLE = 1, LINE_EOF = 2 };

enum suffix { SUF_NONE, SUF_TOTAL, SUF_CREATED, SUF_BUCKET, SUF_SUM, SUF_COUNT, SUF_GSUM, SUF_GCOUNT, SUF_INFO, SUF_OTHER };

struct parser {
	unsigned flags;
	const char *type_name;	/* the last valid # TYPE, which the following samples may belong to */
	size_t type_len;
	enum prom_type type;
	char msg[128];
	struct prom_label labels[PROM_MAX_LABELS];
};

static inline bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline bool is_label_char(char c)
{
	return is_alpha_(c) || is_digit(c);
}

static inline bool is_name_start(char c)
{
	return is_alpha_(c) || c == ':';
}

static inline bool is_name_char(char c)
{
	return is_label_char(c) || c == ':';
}

static inline const char *skip_ws(const char *p, const char *e)
{
	while (p < e && is_ws(*p))
		p++;
	return p;
}

static inline const char *skip_token(const char *p, const char *e)
{
	while (p < e && !is_ws(*p))
		p++;
	return p;
}

/* Quotes a piece of the input for an error message: bounded, and without
 * raw control bytes that would garble a terminal or a log line. */
static void excerpt(char *out, size_t cap, const char *s, size_t n)
{
	size_t o = 0;
	const size_t max_in = 24;
	size_t i;

	for (i = 0; i < n && i < max_in; i++) {
		unsigned char c = (unsigned char)s[i];
		if (o + 5 >= cap)
			break;
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			out[o++] = (char)c;
		} else {
			snprintf(out + o, cap - o, "\\x%02x", c);
			o += 4;
		}
	}
	if (i < n && o + 4 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

static PROM_PRINTF(2, 3) int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->msg, sizeof ps->msg, fmt, ap);
	va_end(ap);
	return LINE_ERR;
}

static const char *fail_at(struct parser *ps, const char *what, const char *p, const char *e)
{
	char ex[64];

	excerpt(ex, sizeof ex, p, (size_t)(e - p));
	fail(ps, "%s at \"%s\"", what, ex);
	return NULL;
}

/* ---- numbers ---- */

static bool ci_eq(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++) {
		char c = s[i];
		if (lit[i] == '\0')
			return false;
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lit[i])
			return false;
	}
	return lit[i] == '\0';
}

enum { NUM_OK = 0, NUM_BAD = -1, NUM_RANGE = -2 };

static int parse_number_slow(const char *s, size_t n, double *out)
{
	char buf[PROM_MAX_VALUE_LEN + 16];
	const char *dp = localeconv()->decimal_point;
	size_t dpl = dp ? strlen(dp) : 0;
	size_t o = 0;
	char *endp;
	double v;

	/* strtod follows LC_NUMERIC, and the curses UI may have switched it to a
	 * locale with a decimal comma. The grammar was checked by the caller,
	 * so the only '.' is the decimal point. */
	if (dpl == 0 || dpl > 8) {
		dp = ".";
		dpl = 1;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			memcpy(buf + o, dp, dpl);
			o += dpl;
		} else {
			buf[o++] = s[i];
		}
	}
	buf[o] = '\0';
	v = strtod(buf, &endp);
	if (endp != buf + o)
		return NUM_BAD;
	if (isinf(v))
		return NUM_RANGE;
	*out = v;
	return NUM_OK;
}

/* Go's strconv.ParseFloat grammar as Prometheus uses it (no hex, no '_'):
 * [+-] (digits [. digits] | . digits) [(e|E) [+-] digits], or the specials. */
static int parse_number(const char *s, size_t n, double *out)
{
	static const double pow10[] = {
		1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
		1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
	};
	size_t i = 0;
	bool neg = false, digits = false, exact = true;
	uint64_t mant = 0;
	int ndig = 0;
	long exp10 = 0;

	if (n == 0 || n > PROM_MAX_VALUE_LEN)
		return NUM_BAD;
	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		i = 1;
	}
	if (i < n && !is_digit(s[i]) && s[i] != '.') {
		if (ci_eq(s + i, n - i, "inf") || ci_eq(s + i, n - i, "infinity")) {
			*out = neg ? -HUGE_VAL : HUGE_VAL;
			return NUM_OK;
		}
		/* Go takes no sign on NaN. */
		if (i == 0 && ci_eq(s, n, "nan")) {
			*out = NAN;
			return NUM_OK;
		}
		return NUM_BAD;
	}
	for (; i < n && is_digit(s[i]); i++) {
		unsigned d = (unsigned)(s[i] - '0');
		digits = true;
		if (mant == 0 && d == 0)
			continue;
		if (ndig < 19) {
			mant = mant * 10 + d;
			ndig++;
		} else {
			exp10++;
			if (d)
				exact = false;
		}
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && is_digit(s[i]); i++) {
			unsigned d = (unsigned)(s[i] - '0');
			digits = true;
			if (mant == 0 && d == 0) {
				exp10--;
			} else if (ndig < 19) {
				mant = mant * 10 + d;
				ndig++;
				exp10--;
			} else if (d) {
				exact = false;
			}
		}
	}
	if (!digits)
		return NUM_BAD;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		bool eneg = false;
		long ev = 0;
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-')) {
			eneg = s[i] == '-';
			i++;
		}
		if (i >= n || !is_digit(s[i]))
			return NUM_BAD;
		for (; i < n && is_digit(s[i]); i++)
			if (ev < 100000)
				ev = ev * 10 + (s[i] - '0');
		exp10 += eneg ? -ev : ev;
	}
	if (i != n)
		return NUM_BAD;
	if (mant == 0) {
		*out = neg ? -0.0 : 0.0;
		return NUM_OK;
	}
	/* Clinger's fast path: an exact mantissa times or over an exact power of
	 * ten is one correctly rounded operation. It covers nearly every value a
	 * server writes, and strtod stays the reference for the rest. */
	if (PROM_FAST_FLOAT && exact && mant <= (UINT64_C(1) << 53) && exp10 >= -22 && exp10 <= 22) {
		double v = (double)mant;
		v = exp10 >= 0 ? v * pow10[exp10] : v / pow10[-exp10];
		*out = neg ? -v : v;
		return NUM_OK;
	}
	return parse_number_slow(s, n, out);
}

int prom_parse_float(const char *s, size_t len, double *out)
{
	double v;

	if (!s || parse_number(s, len, &v) != NUM_OK)
		return -1;
	if (out)
		*out = v;
	return 0;
}

static int parse_timestamp(const char *s, size_t n, bool int_seconds, int64_t *ms)
{
	size_t i = 0, j;
	bool neg = false;
	double sec, m;

	if (n && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == n)
		return -1;
	for (j = i; j < n && is_digit(s[j]); j++)
		;
	if (j == n) {
		uint64_t v = 0;
		for (j = i; j < n; j++) {
			unsigned d = (unsigned)(s[j] - '0');
			if (v > ((uint64_t)INT64_MAX - d) / 10)
				return -1;
			v = v * 10 + d;
		}
		if (int_seconds) {
			if (v > (uint64_t)INT64_MAX / 1000)
				return -1;
			v *= 1000;
		}
		*ms = neg ? -(int64_t)v : (int64_t)v;
		return 0;
	}
	/* A fraction or exponent only appears in OpenMetrics, where
	 * timestamps are seconds. */
	if (parse_number(s, n, &sec) != NUM_OK || !isfinite(sec))
		return -1;
	m = sec * 1000.0;
	if (!(m > -9.2e18 && m < 9.2e18))
		return -1;
	*ms = (int64_t)llround(m);
	return 0;
}

/* ---- labels ---- */

/* Parses "{...}" with p at '{'. Stores the labels when out is non-NULL
 * (exemplar label sets are only checked). Returns the position after '}',
 * or NULL with ps->msg set. */
static const char *parse_labels(struct parser *ps, const char *p, const char *e,
				struct prom_label *out, size_t *nout)
{
	size_t n = 0;
	char ex[64];

	for (p++;;) {
		const char *name, *val;
		size_t name_len;

		p = skip_ws(p, e);
		if (p >= e) {
			fail(ps, "unterminated label set: missing '}'");
			return NULL;
		}
		if (*p == '}')
			break;
		name = p;
		if (!is_alpha_(*p)) {
			if (*p == ',')
				fail(ps, "unexpected ',' in label set");
			else
				fail_at(ps, "invalid label name", p, e);
			return NULL;
		}
		while (p < e && is_label_char(*p))
			p++;
		name_len = (size_t)(p - name);
		if (p < e && !is_ws(*p) && *p != '=') {
			excerpt(ex, sizeof ex, p, 1);
			fail(ps, "invalid character '%s' in label name", ex);
			return NULL;
		}
		p = skip_ws(p, e);
		if (p >= e || *p != '=') {
			excerpt(ex, sizeof ex, name, name_len);
			fail(ps, "expected '=' after label name \"%s\"", ex);
			return NULL;
		}
		p = skip_ws(p + 1, e);
		if (p >= e || *p != '"') {
			excerpt(ex, sizeof ex, name, name_len);
			fail(ps, "value of label \"%s\" is not a quoted string", ex);
			return NULL;
		}
		val = ++p;
		/* Two memchr passes beat a byte loop on long values, and most
		 * values have no escape at all. */
		for (;;) {
			const char *q = memchr(p, '"', (size_t)(e - p));
			const char *b;
			if (!q) {
				excerpt(ex, sizeof ex, name, name_len);
				fail(ps, "unterminated quoted value of label \"%s\"", ex);
				return NULL;
			}
			b = memchr(p, '\\', (size_t)(q - p));
			if (!b) {
				p = q;
				break;
			}
			if (b[1] != '\\' && b[1] != '"' && b[1] != 'n') {
				excerpt(ex, sizeof ex, b + 1, 1);
				fail(ps, "invalid escape '\\%s' in label value (only \\\\ \\\" \\n)", ex);
				return NULL;
			}
			p = b + 2;
		}
		if (out) {
			if (n == PROM_MAX_LABELS) {
				fail(ps, "too many labels (more than %d)", PROM_MAX_LABELS);
				return NULL;
			}
			for (size_t k = 0; k < n; k++) {
				if (out[k].name_len == name_len && memcmp(out[k].name, name, name_len) == 0) {
					excerpt(ex, sizeof ex, name, name_len);
					fail(ps, "duplicate label name \"%s\"", ex);
					return NULL;
				}
			}
			out[n].name = name;
			out[n].name_len = name_len;
			out[n].value = val;
			out[n].value_len = (size_t)(p - val);
			n++;
		}
		p = skip_ws(p + 1, e);
		if (p < e && *p == ',') {
			p++;
			continue;
		}
		if (p < e && *p == '}')
			break;
		if (p >= e)
			fail(ps, "unterminated label set: missing '}'");
		else
			fail_at(ps, "expected ',' or '}' after label value", p, e);
		return NULL;
	}
	if (nout)
		*nout = n;
	return p + 1;
}

size_t prom_label_unescape(const char *raw, size_t raw_len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < raw_len; i++) {
		char c = raw[i];
		if (c == '\\' && i + 1 < raw_len) {
			char d = raw[i + 1];
			if (d == 'n') {
				c = '\n';
				i++;
			} else if (d == '\\' || d == '"') {
				c = d;
				i++;
			}
		}
		if (o + 1 < cap)
			out[o] = c;
		o++;
	}
	if (cap)
		out[o < cap ? o : cap - 1] = '\0';
	return o;
}

/* Compares the unescaped raw value with v[0..vlen). */
static bool value_eq_n(const char *raw, size_t raw_len, const char *v, size_t vlen)
{
	size_t o = 0;

	for (size_t i = 0; i < raw_len; i++) {
		char c = raw[i];
		if (c == '\\' && i + 1 < raw_len) {
			char d = raw[i + 1];
			if (d == 'n') {
				c = '\n';
				i++;
			} else if (d == '\\' || d == '"') {
				c = d;
				i++;
			}
		}
		if (o >= vlen || v[o] != c)
			return false;
		o++;
	}
	return o == vlen;
}

bool prom_label_value_eq(const struct prom_label *l, const char *value)
{
	if (!l || !value)
		return false;
	return value_eq_n(l->value, l->value_len, value, strlen(value));
}

static const struct prom_label *find_label(const struct prom_label *labels, size_t n,
					   const char *name, size_t name_len)
{
	for (size_t i = 0; i < n; i++)
		if (labels[i].name_len == name_len && memcmp(labels[i].name, name, name_len) == 0)
			return &labels[i];
	return NULL;
}

const struct prom_label *prom_sample_label(const struct prom_sample *s, const char *name)
{
	if (!s || !name)
		return NULL;
	return find_label(s->labels, s->nlabels, name, strlen(name));
}

/* le and quantile values are short numbers; anything longer is garbage. */
static int label_number(const struct prom_label *l, double *out)
{
	char buf[64];
	size_t n = prom_label_unescape(l->value, l->value_len, buf, sizeof buf);

	if (n >= sizeof buf)
		return -1;
	if (parse_number(buf, n, out) != NUM_OK || isnan(*out))
		return -1;
	return 0;
}

/* ---- types and families ---- */

static const struct {
	const char *name;
	enum prom_type type;
} type_names[] = {
	{ "counter", PROM_COUNTER },
	{ "gauge", PROM_GAUGE },
	{ "histogram", PROM_HISTOGRAM },
	{ "summary", PROM_SUMMARY },
	{ "untyped", PROM_UNTYPED },
	{ "gaugehistogram", PROM_GAUGEHISTOGRAM },
	{ "info", PROM_INFO },
	{ "stateset", PROM_STATESET },
	{ "unknown", PROM_UNKNOWN },
};

const char *prom_type_name(enum prom_type t)
{
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
		if (type_names[i].type == t)
			return type_names[i].name;
	return "untyped";
}

static enum suffix suffix_of(const char *s, size_t n)
{
	static const struct {
		const char *text;
		size_t len;
		enum suffix suf;
	} table[] = {
		{ "_total", 6, SUF_TOTAL },   { "_created", 8, SUF_CREATED }, { "_bucket", 7, SUF_BUCKET },
		{ "_sum", 4, SUF_SUM },	      { "_count", 6, SUF_COUNT },     { "_gsum", 5, SUF_GSUM },
		{ "_gcount", 7, SUF_GCOUNT }, { "_info", 5, SUF_INFO },
	};

	if (n == 0)
		return SUF_NONE;
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (n == table[i].len && memcmp(s, table[i].text, n) == 0)
			return table[i].suf;
	return SUF_OTHER;
}

static bool suffix_allowed(enum prom_type t, enum suffix suf)
{
	switch (suf) {
	case SUF_NONE:
		return true;
	case SUF_TOTAL:
		return t == PROM_COUNTER;
	case SUF_CREATED:
		return t == PROM_COUNTER || t == PROM_HISTOGRAM || t == PROM_SUMMARY;
	case SUF_BUCKET:
		return t == PROM_HISTOGRAM || t == PROM_GAUGEHISTOGRAM;
	case SUF_SUM:
	case SUF_COUNT:
		return t == PROM_HISTOGRAM || t == PROM_SUMMARY;
	case SUF_GSUM:
	case SUF_GCOUNT:
		return t == PROM_GAUGEHISTOGRAM;
	case SUF_INFO:
		return t == PROM_INFO;
	case SUF_OTHER:
		break;
	}
	return false;
}

/* Samples of a family follow its # TYPE, so only the most recent TYPE can
 * own a sample; anything else is untyped, whatever its name looks like. */
static enum suffix resolve_family(const struct parser *ps, struct prom_sample *s)
{
	enum suffix suf;

	s->family = s->name;
	s->family_len = s->name_len;
	s->type = PROM_UNTYPED;
	if (!ps->type_name || s->name_len < ps->type_len ||
	    memcmp(s->name, ps->type_name, ps->type_len) != 0)
		return SUF_OTHER;
	suf = suffix_of(s->name + ps->type_len, s->name_len - ps->type_len);
	if (!suffix_allowed(ps->type, suf))
		return SUF_OTHER;
	s->family = ps->type_name;
	s->family_len = ps->type_len;
	s->type = ps->type;
	return suf;
}

/* ---- lines ---- */

static int parse_exemplar(struct parser *ps, const char *p, const char *e)
{
	const char *tok;
	double v;
	int64_t ts;

	/* p is at '#'; OpenMetrics: " # {labels} value [timestamp]". */
	p++;
	if (p >= e || !is_ws(*p))
		return fail(ps, "malformed exemplar: expected \" # {\" after the value");
	p = skip_ws(p, e);
	if (p >= e || *p != '{')
		return fail(ps, "malformed exemplar: expected '{' after '#'");
	p = parse_labels(ps, p, e, NULL, NULL);
	if (!p)
		return LINE_ERR;
	p = skip_ws(p, e);
	tok = p;
	p = skip_token(p, e);
	if (parse_number(tok, (size_t)(p - tok), &v) != NUM_OK)
		return fail(ps, "malformed exemplar: missing or invalid value");
	p = skip_ws(p, e);
	if (p < e) {
		tok = p;
		p = skip_token(p, e);
		if (parse_timestamp(tok, (size_t)(p - tok), true, &ts) != 0)
			return fail(ps, "malformed exemplar: invalid timestamp");
		p = skip_ws(p, e);
		if (p < e)
			return fail(ps, "malformed exemplar: unexpected text after its timestamp");
	}
	return LINE_NONE;
}

static int check_bounds(struct parser *ps, const struct prom_sample *s, enum suffix suf)
{
	const struct prom_label *l;
	double v;
	char ex[64];

	if ((s->type == PROM_HISTOGRAM || s->type == PROM_GAUGEHISTOGRAM) && suf == SUF_BUCKET) {
		l = find_label(s->labels, s->nlabels, "le", 2);
		if (!l)
			return fail(ps, "histogram bucket without an le label");
		if (label_number(l, &v) != 0) {
			excerpt(ex, sizeof ex, l->value, l->value_len);
			return fail(ps, "le=\"%s\" is not a number", ex);
		}
	} else if (s->type == PROM_SUMMARY && suf == SUF_NONE) {
		l = find_label(s->labels, s->nlabels, "quantile", 8);
		if (l && label_number(l, &v) != 0) {
			excerpt(ex, sizeof ex, l->value, l->value_len);
			return fail(ps, "quantile=\"%s\" is not a number", ex);
		}
	}
	return LINE_SAMPLE;
}

static int parse_sample(struct parser *ps, const char *p, const char *e, struct prom_sample *s)
{
	const char *tok;
	size_t nlabels = 0;
	char ex[64];
	int rc;
	enum suffix suf;

	s->name = p;
	if (!is_name_start(*p)) {
		fail_at(ps, "invalid metric name", p, e);
		return LINE_ERR;
	}
	for (p++; p < e && is_name_char(*p); p++)
		;
	s->name_len = (size_t)(p - s->name);
	if (p >= e) {
		excerpt(ex, sizeof ex, s->name, s->name_len);
		return fail(ps, "missing value after \"%s\"", ex);
	}
	if (*p != '{' && !is_ws(*p)) {
		excerpt(ex, sizeof ex, p, 1);
		return fail(ps, "invalid character '%s' in metric name", ex);
	}
	p = skip_ws(p, e);
	if (p < e && *p == '{') {
		p = parse_labels(ps, p, e, ps->labels, &nlabels);
		if (!p)
			return LINE_ERR;
		p = skip_ws(p, e);
	}
	s->labels = ps->labels;
	s->nlabels = nlabels;

	tok = p;
	p = skip_token(p, e);
	if (p == tok || *tok == '#') {
		excerpt(ex, sizeof ex, s->name, s->name_len);
		return fail(ps, "missing value after \"%s\"", ex);
	}
	rc = parse_number(tok, (size_t)(p - tok), &s->value);
	if (rc != NUM_OK) {
		excerpt(ex, sizeof ex, tok, (size_t)(p - tok));
		return fail(ps, rc == NUM_RANGE ? "value \"%s\" out of range" : "invalid value \"%s\"", ex);
	}
	s->has_timestamp = false;
	s->timestamp_ms = 0;
	p = skip_ws(p, e);
	if (p < e && *p != '#') {
		tok = p;
		p = skip_token(p, e);
		if (parse_timestamp(tok, (size_t)(p - tok), ps->flags & PROM_OPENMETRICS, &s->timestamp_ms) != 0) {
			excerpt(ex, sizeof ex, tok, (size_t)(p - tok));
			return fail(ps, "invalid timestamp \"%s\"", ex);
		}
		s->has_timestamp = true;
		p = skip_ws(p, e);
	}
	if (p < e) {
		if (*p != '#') {
			fail_at(ps, "unexpected text after the timestamp", p, e);
			return LINE_ERR;
		}
		if (parse_exemplar(ps, p, e) != LINE_NONE)
			return LINE_ERR;
	}
	suf = resolve_family(ps, s);
	return check_bounds(ps, s, suf);
}

static int parse_comment(struct parser *ps, const char *p, const char *e)
{
	static const char *const kws[] = { "HELP", "TYPE", "UNIT", "EOF" };
	const char *kw, *name, *tok;
	size_t kl, name_len;
	int k;
	char ex[64];

	/* p is at '#'. "#HELP" without a space is a plain comment, as for
	 * Prometheus itself. */
	p++;
	if (p >= e || !is_ws(*p))
		return LINE_NONE;
	p = skip_ws(p, e);
	kw = p;
	p = skip_token(p, e);
	kl = (size_t)(p - kw);
	for (k = 0; k < 4; k++)
		if (kl == strlen(kws[k]) && memcmp(kw, kws[k], kl) == 0)
			break;
	if (k == 4)
		return LINE_NONE;
	p = skip_ws(p, e);
	if (k == 3)
		return p == e ? LINE_EOF : LINE_NONE;
	if (p >= e)
		return fail(ps, "missing metric name after # %s", kws[k]);
	name = p;
	if (!is_name_start(*p)) {
		excerpt(ex, sizeof ex, p, (size_t)(e - p));
		return fail(ps, "invalid metric name \"%s\" in # %s", ex, kws[k]);
	}
	for (p++; p < e && is_name_char(*p); p++)
		;
	name_len = (size_t)(p - name);
	if (p < e && !is_ws(*p)) {
		excerpt(ex, sizeof ex, p, 1);
		return fail(ps, "invalid character '%s' in metric name in # %s", ex, kws[k]);
	}
	if (k != 1)
		return LINE_NONE; /* HELP text and UNIT are free-form: nothing here uses them */
	p = skip_ws(p, e);
	tok = p;
	p = skip_token(p, e);
	if (p == tok)
		return fail(ps, "missing type in # TYPE");
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
		if (strlen(type_names[i].name) == (size_t)(p - tok) &&
		    memcmp(type_names[i].name, tok, (size_t)(p - tok)) == 0) {
			if (skip_ws(p, e) != e) {
				fail_at(ps, "unexpected text after the type in # TYPE", skip_ws(p, e), e);
				return LINE_ERR;
			}
			ps->type_name = name;
			ps->type_len = name_len;
			ps->type = type_names[i].type;
			return LINE_NONE;
		}
	}
	excerpt(ex, sizeof ex, tok, (size_t)(p - tok));
	return fail(ps, "unknown metric type \"%s\" in # TYPE", ex);
}

static int parse_line(struct parser *ps, const char *p, const char *e, struct prom_sample *s)
{
	p = skip_ws(p, e);
	if (p == e)
		return LINE_NONE;
	if (*p == '#')
		return parse_comment(ps, p, e);
	return parse_sample(ps, p, e, s);
}

static void note_error(struct prom_error *err, unsigned line, const char *msg)
{
	if (!err)
		return;
	if (err->nbad++ == 0) {
		err->line = line;
		snprintf(err->msg, sizeof err->msg, "%s", msg);
	}
}

int prom_parse(const char *text, size_t len, unsigned flags, prom_sample_fn fn, void *ud,
	       struct prom_error *err)
{
	struct parser ps;
	const char *p, *end;
	unsigned line = 0;
	int count = 0;
	bool lenient = flags & PROM_LENIENT;

	if (err) {
		err->line = 0;
		err->msg[0] = '\0';
		err->nbad = 0;
	}
	if (!text || len == 0) {
		if (!(flags & PROM_OPENMETRICS))
			return 0;
		note_error(err, 1, "missing \"# EOF\" at the end of OpenMetrics text");
		return lenient ? 0 : -1;
	}
	memset(&ps, 0, sizeof ps);
	ps.flags = flags;
	p = text;
	end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *next = nl ? nl + 1 : end;
		struct prom_sample s;
		int kind;

		line++;
		if (le > p && le[-1] == '\r')
			le--;
		kind = parse_line(&ps, p, le, &s);
		p = next;
		if (kind == LINE_ERR) {
			note_error(err, line, ps.msg);
			if (!lenient)
				return -1;
			continue;
		}
		if (kind == LINE_EOF) {
			/* Nothing but blank lines may follow "# EOF". */
			for (const char *q = p; q < end; q++) {
				if (*q == '\n') {
					line++;
				} else if (!is_ws(*q) && *q != '\r') {
					note_error(err, line + 1, "unexpected content after \"# EOF\"");
					return lenient ? count : -1;
				}
			}
			return count;
		}
		if (kind != LINE_SAMPLE)
			continue;
		if (count == INT_MAX) {
			note_error(err, line, "too many samples");
			return lenient ? count : -1;
		}
		count++;
		s.line = line;
		if (fn) {
			int rc = fn(ud, &s);
			if (rc) {
				if (err) {
					err->line = line;
					snprintf(err->msg, sizeof err->msg, "stopped by the sample callback");
				}
				return rc;
			}
		}
	}
	if (flags & PROM_OPENMETRICS) {
		note_error(err, line + 1, "missing \"# EOF\" at the end of OpenMetrics text");
		if (!lenient)
			return -1;
	}
	return count;
}

/* ---- matchers, sums, histograms ---- */

struct matcher {
	const char *k, *v;
	size_t klen, vlen;
};

static int parse_matchers(const char *s, struct matcher *m, int cap)
{
	int n = 0;

	if (!s)
		return 0;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			return n;
		if (n == cap || !is_alpha_(*s))
			return -1;
		m[n].k = s;
		while (is_label_char(*s))
			s++;
		m[n].klen = (size_t)(s - m[n].k);
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s++ != '=')
			return -1;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '"') {
			const char *q = strchr(++s, '"');
			if (!q)
				return -1;
			m[n].v = s;
			m[n].vlen = (size_t)(q - s);
			s = q + 1;
		} else {
			const char *q = s;
			m[n].v = s;
			while (*q && *q != ',')
				q++;
			s = q;
			while (q > m[n].v && (q[-1] == ' ' || q[-1] == '\t'))
				q--;
			m[n].vlen = (size_t)(q - m[n].v);
		}
		n++;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == ',')
			s++;
		else if (*s != '\0')
			return -1;
	}
}

static bool labels_match(const struct prom_sample *s, const struct matcher *m, int nm)
{
	for (int i = 0; i < nm; i++) {
		const struct prom_label *l = find_label(s->labels, s->nlabels, m[i].k, m[i].klen);
		if (!l) {
			if (m[i].vlen != 0)
				return false;
		} else if (!value_eq_n(l->value, l->value_len, m[i].v, m[i].vlen)) {
			return false;
		}
	}
	return true;
}

struct sum_ctx {
	const char *name;
	size_t name_len;
	struct matcher m[PROM_MAX_LABELS];
	int nm;
	int n;
	double sum;
};

static int sum_cb(void *ud, const struct prom_sample *s)
{
	struct sum_ctx *c = ud;

	if (s->name_len != c->name_len || memcmp(s->name, c->name, c->name_len) != 0)
		return 0;
	if (!labels_match(s, c->m, c->nm))
		return 0;
	if (c->n < INT_MAX)
		c->n++;
	c->sum += s->value;
	return 0;
}

int prom_sum(const char *text, size_t len, const char *name, const char *matchers, double *out)
{
	struct sum_ctx c;

	if (out)
		*out = 0;
	if (!name)
		return -1;
	memset(&c, 0, sizeof c);
	c.name = name;
	c.name_len = strlen(name);
	c.nm = parse_matchers(matchers, c.m, PROM_MAX_LABELS);
	if (c.nm < 0)
		return -1;
	prom_parse(text, len, PROM_LENIENT, sum_cb, &c, NULL);
	if (out)
		*out = c.sum;
	return c.n;
}

struct hist_ctx {
	const char *family;
	size_t family_len;
	struct matcher m[PROM_MAX_LABELS];
	int nm;
	struct prom_hist *h;
	bool overflow, have_count;
};

static bool has_suffix(const struct prom_sample *s, const char *fam, size_t flen, const char *suf, size_t slen)
{
	return s->name_len == flen + slen && memcmp(s->name, fam, flen) == 0 &&
	       memcmp(s->name + flen, suf, slen) == 0;
}

static int hist_cb(void *ud, const struct prom_sample *s)
{
	struct hist_ctx *c = ud;
	struct prom_hist *h = c->h;
	const struct prom_label *l;
	double le;
	int k;

	if (s->name_len <= c->family_len || memcmp(s->name, c->family, c->family_len) != 0)
		return 0;
	if (!labels_match(s, c->m, c->nm))
		return 0;
	if (has_suffix(s, c->family, c->family_len, "_sum", 4)) {
		h->sum += s->value;
		return 0;
	}
	if (has_suffix(s, c->family, c->family_len, "_count", 6)) {
		h->count += s->value;
		c->have_count = true;
		return 0;
	}
	if (!has_suffix(s, c->family, c->family_len, "_bucket", 7))
		return 0;
	l = find_label(s->labels, s->nlabels, "le", 2);
	if (!l || label_number(l, &le) != 0)
		return 0;
	for (k = 0; k < h->n && h->le[k] < le; k++)
		;
	if (k < h->n && h->le[k] == le) {
		h->cum[k] += s->value;
		return 0;
	}
	if (h->n == PROM_HIST_MAX) {
		c->overflow = true;
		return 0;
	}
	memmove(&h->le[k + 1], &h->le[k], (size_t)(h->n - k) * sizeof h->le[0]);
	memmove(&h->cum[k + 1], &h->cum[k], (size_t)(h->n - k) * sizeof h->cum[0]);
	h->le[k] = le;
	h->cum[k] = s->value;
	h->n++;
	return 0;
}

int prom_hist_collect(const char *text, size_t len, const char *family, const char *matchers,
		      struct prom_hist *out)
{
	struct hist_ctx c;
	struct prom_hist *h = out;

	if (!out)
		return -1;
	memset(out, 0, sizeof *out);
	if (!family)
		return -1;
	memset(&c, 0, sizeof c);
	c.family = family;
	c.family_len = strlen(family);
	c.h = h;
	c.nm = parse_matchers(matchers, c.m, PROM_MAX_LABELS);
	if (c.nm < 0)
		return -1;
	prom_parse(text, len, PROM_LENIENT, hist_cb, &c, NULL);
	if (h->n == 0 || c.overflow)
		goto absent;
	if (!isinf(h->le[h->n - 1]) || h->le[h->n - 1] < 0) {
		if (!c.have_count || h->n == PROM_HIST_MAX)
			goto absent;
		h->le[h->n] = HUGE_VAL;
		h->cum[h->n] = h->count;
		h->n++;
	}
	if (!c.have_count)
		h->count = h->cum[h->n - 1];
	return 0;
absent:
	memset(out, 0, sizeof *out);
	return -1;
}

void prom_hist_delta(const struct prom_hist *now, const struct prom_hist *before, struct prom_hist *out)
{
	struct prom_hist r = *now;
	bool reset = !before || before->n != now->n || now->n < 0 || now->n > PROM_HIST_MAX ||
		     now->count < before->count;

	for (int i = 0; !reset && i < now->n; i++) {
		if (now->le[i] != before->le[i] || now->cum[i] < before->cum[i])
			reset = true;
		else
			r.cum[i] = now->cum[i] - before->cum[i];
	}
	if (!reset) {
		r.sum = now->sum - before->sum;
		r.count = now->count - before->count;
	} else {
		r = *now;
	}
	*out = r;
}

static double quantile_in(const struct prom_hist *h, double q, double *lo, double *hi);

double prom_hist_quantile(const struct prom_hist *h, double q)
{
	double lo, hi;
	return quantile_in(h, q, &lo, &hi);
}

double prom_hist_quantile_bucket(const struct prom_hist *h, double q, double *lo, double *hi)
{
	return quantile_in(h, q, lo, hi);
}

/* The bucket the rank falls in is [*lo, *hi] (NaN when there is none;
 * *hi = +Inf for the overflow bucket). */
static double quantile_in(const struct prom_hist *h, double q, double *lo, double *hi)
{
	double cum[PROM_HIST_MAX];
	*lo = *hi = NAN;
	double run = 0, total, rank, start, end, count;
	int n, b;

	if (isnan(q))
		return NAN;
	if (q < 0)
		return -HUGE_VAL;
	if (q > 1)
		return HUGE_VAL;
	if (!h || h->n < 2 || h->n > PROM_HIST_MAX)
		return NAN;
	n = h->n;
	if (!isinf(h->le[n - 1]) || h->le[n - 1] < 0)
		return NAN;
	for (int i = 0; i < n; i++) {
		double c = h->cum[i];
		if (isnan(c) || isnan(h->le[i]) || (i > 0 && !(h->le[i] > h->le[i - 1])))
			return NAN;
		/* Prometheus flattens dips (float noise, racy exporters) the same way. */
		if (c < run)
			c = run;
		cum[i] = run = c;
	}
	total = cum[n - 1];
	if (!(total > 0) || isinf(total))
		return NAN;
	rank = q * total;
	for (b = 0; b < n - 1 && cum[b] < rank; b++)
		;
	if (b == n - 1) {
		*lo = h->le[n - 2];
		*hi = HUGE_VAL;
		return h->le[n - 2];
	}
	if (b == 0 && h->le[0] <= 0) {
		*lo = *hi = h->le[0];
		return h->le[0];
	}
	start = b > 0 ? h->le[b - 1] : 0;
	end = h->le[b];
	*lo = start;
	*hi = end;
	count = cum[b];
	if (b > 0) {
		count -= cum[b - 1];
		rank -= cum[b - 1];
	}
	/* Only q = 0 with an empty first bucket gets here with count 0, where
	 * PromQL would compute 0/0. */
	if (!(count > 0))
		return start;
	return start + (end - start) * (rank / count);
}
