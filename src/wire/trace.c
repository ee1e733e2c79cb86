#include "config.h"

#include "infertop/trace.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/errbuf.h"

/* Times past this (about 285 years in ns) are refused: they would
 * overflow once scaled or shifted. */
#define TRACE_MAX_RAW_NS 9000000000000000000LL
#define CSV_MAX_COLS 64

static const char *const format_names[TRACE_FORMAT_N] = {
	[TRACE_MOONCAKE] = "mooncake", [TRACE_AZURE] = "azure", [TRACE_BURSTGPT] = "burstgpt"
};

/* The columns each CSV format needs, by header name (case-insensitive). */
static const char *const csv_cols[TRACE_FORMAT_N][3] = {
	[TRACE_AZURE] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
	[TRACE_BURSTGPT] = {"Timestamp", "Request tokens", "Response tokens"},
};

struct heap_ent {
	int64_t raw;            /* the trace's own time, ns */
	uint64_t seq;           /* file order: ties keep it */
	struct trace_rec rec;
};

struct trace_reader {
	enum trace_format fmt;
	char *name;
	bool skip_bad;

	char *buf;              /* unread input: buf[start, start + len) */
	size_t start, len, cap;
	bool eof;
	bool discarding;        /* skipping the rest of an over-long line */
	bool failed;
	uint64_t line;

	int col[3];             /* CSV: time, input, output columns */
	bool have_header;

	bool have_prev;         /* mooncake "delay": after the previous line */
	int64_t prev_raw;
	bool have_max;
	int64_t max_raw;        /* latest time read so far */
	bool have_out;
	int64_t last_out_raw;   /* the last record handed out */
	int64_t origin_raw;     /* the first one's: time 0 */

	struct heap_ent *heap;  /* min-heap on (raw, seq), TRACE_REORDER + 1 */
	size_t nheap;
	uint64_t seq;
	struct trace_rec out;
	uint64_t *ids;          /* parse scratch, TRACE_MAX_HASH_IDS */
	struct trace_counts counts;
};

const char *trace_format_name(int i)
{
	return i >= 0 && i < TRACE_FORMAT_N ? format_names[i] : NULL;
}

int trace_spec_parse(const char *spec, enum trace_format *f, const char **path)
{
	if (!spec)
		return -1;
	for (int i = 0; i < TRACE_FORMAT_N; i++) {
		size_t n = strlen(format_names[i]);
		if (strncmp(spec, format_names[i], n) == 0 && spec[n] == ':' && spec[n + 1]) {
			*f = (enum trace_format)i;
			*path = spec + n + 1;
			return 0;
		}
	}
	return -1;
}

struct trace_reader *trace_reader_new(enum trace_format f, const char *name, bool skip_bad)
{
	struct trace_reader *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->fmt = f;
	r->skip_bad = skip_bad;
	r->name = strdup(name ? name : "-");
	r->heap = calloc(TRACE_REORDER + 1, sizeof *r->heap);
	r->ids = malloc(TRACE_MAX_HASH_IDS * sizeof *r->ids);
	if (!r->name || !r->heap || !r->ids) {
		trace_reader_free(r);
		return NULL;
	}
	return r;
}

void trace_reader_free(struct trace_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nheap; i++)
		free(r->heap[i].rec.hash);
	free(r->heap);
	free(r->out.hash);
	free(r->ids);
	free(r->buf);
	free(r->name);
	free(r);
}

const struct trace_counts *trace_reader_counts(const struct trace_reader *r)
{
	return &r->counts;
}

int trace_reader_feed(struct trace_reader *r, const char *buf, size_t len)
{
	if (len == 0) {
		r->eof = true;
		return 0;
	}
	if (r->discarding) {
		/* Only what follows the long line's end is worth keeping. */
		const char *nl = memchr(buf, '\n', len);
		if (!nl)
			return 0;
		r->discarding = false;
		len -= (size_t)(nl + 1 - buf);
		buf = nl + 1;
	}
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->len);
		r->start = 0;
	}
	if (r->len + len > r->cap) {
		size_t n = r->cap ? r->cap : 65536;
		while (n < r->len + len)
			n *= 2;
		char *p = realloc(r->buf, n);
		if (!p)
			return -1;
		r->buf = p;
		r->cap = n;
	}
	memcpy(r->buf + r->len, buf, len);
	r->len += len;
	return 0;
}

/* ---- the heap ---- */

static bool ent_before(const struct heap_ent *a, const struct heap_ent *b)
{
	return a->raw < b->raw || (a->raw == b->raw && a->seq < b->seq);
}

static void heap_push(struct trace_reader *r, const struct heap_ent *e)
{
	size_t i = r->nheap++;
	r->heap[i] = *e;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!ent_before(&r->heap[i], &r->heap[p]))
			break;
		struct heap_ent t = r->heap[i];
		r->heap[i] = r->heap[p];
		r->heap[p] = t;
		i = p;
	}
}

static struct heap_ent heap_pop(struct trace_reader *r)
{
	struct heap_ent top = r->heap[0];
	r->heap[0] = r->heap[--r->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < r->nheap && ent_before(&r->heap[l], &r->heap[m]))
			m = l;
		if (l + 1 < r->nheap && ent_before(&r->heap[l + 1], &r->heap[m]))
			m = l + 1;
		if (m == i)
			break;
		struct heap_ent t = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = t;
		i = m;
	}
	return top;
}

static const struct trace_rec *emit(struct trace_reader *r)
{
	struct heap_ent e = heap_pop(r);
	if (!r->have_out) {
		r->have_out = true;
		r->origin_raw = e.raw;
	}
	r->last_out_raw = e.raw;
	free(r->out.hash);
	r->out = e.rec;
	r->out.t_ns = e.raw - r->origin_raw;
	r->counts.records++;
	return &r->out;
}

/* ---- fields ---- */

/* A whole number in [0, TRACE_MAX_TOKENS]. */
static bool tokens_ok(double v)
{
	return isfinite(v) && v >= 0 && v <= (double)TRACE_MAX_TOKENS && v == floor(v);
}

static int field_err(char *msg, size_t cap, const char *field, const char *what)
{
	snprintf(msg, cap, "%s: %s", field, what);
	return -1;
}

static int json_tokens(const cJSON *o, const char *field, long *out, char *msg, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
	if (!v)
		return field_err(msg, cap, field, "missing");
	if (!cJSON_IsNumber(v))
		return field_err(msg, cap, field, "not a number");
	if (!tokens_ok(v->valuedouble))
		return field_err(msg, cap, field, "expected a whole number from 0 to 10000000");
	*out = (long)v->valuedouble;
	return 0;
}

/* ms as a JSON number into ns; 0 absent, 1 given, -1 bad. */
static int json_ms(const cJSON *o, const char *field, int64_t *ns, char *msg, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v))
		return field_err(msg, cap, field, "not a number");
	if (!(isfinite(v->valuedouble) && v->valuedouble >= 0 && v->valuedouble <= TRACE_MAX_RAW_NS / 1e6))
		return field_err(msg, cap, field, "expected milliseconds >= 0");
	*ns = llround(v->valuedouble * 1e6);
	return 1;
}

static int parse_mooncake(struct trace_reader *r, const char *line, size_t len, struct heap_ent *e, char *msg,
			  size_t cap)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	int rc = -1;
	if (!cJSON_IsObject(o)) {
		snprintf(msg, cap, "not a JSON object");
		goto out;
	}
	int64_t ts = 0, delay = 0;
	int have_ts = json_ms(o, "timestamp", &ts, msg, cap);
	if (have_ts < 0)
		goto out;
	int have_delay = json_ms(o, "delay", &delay, msg, cap);
	if (have_delay < 0)
		goto out;
	if (have_ts) {
		e->raw = ts;
	} else if (have_delay) {
		if (delay > TRACE_MAX_RAW_NS - r->prev_raw) {
			field_err(msg, cap, "delay", "too large");
			goto out;
		}
		e->raw = (r->have_prev ? r->prev_raw : 0) + delay;
	} else {
		field_err(msg, cap, "timestamp", "missing (and no delay)");
		goto out;
	}
	if (json_tokens(o, "input_length", &e->rec.input_tokens, msg, cap) != 0 ||
	    json_tokens(o, "output_length", &e->rec.output_tokens, msg, cap) != 0)
		goto out;
	const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "hash_ids");
	if (h) {
		if (!cJSON_IsArray(h)) {
			field_err(msg, cap, "hash_ids", "not an array");
			goto out;
		}
		const cJSON *it;
		uint32_t n = 0;
		cJSON_ArrayForEach(it, h) {
			double v = it->valuedouble;
			if (!cJSON_IsNumber(it) || !isfinite(v) || v != floor(v) || fabs(v) > 9007199254740992.0) {
				snprintf(msg, cap, "hash_ids[%u]: not a whole number", n);
				goto out;
			}
			if (n == TRACE_MAX_HASH_IDS) {
				snprintf(msg, cap, "hash_ids: more than %d ids", TRACE_MAX_HASH_IDS);
				goto out;
			}
			r->ids[n++] = (uint64_t)(int64_t)v;
		}
		if (n) {
			e->rec.hash = malloc(n * sizeof *e->rec.hash);
			if (!e->rec.hash) {
				snprintf(msg, cap, "out of memory");
				goto out;
			}
			memcpy(e->rec.hash, r->ids, n * sizeof *e->rec.hash);
			e->rec.nhash = n;
		}
	}
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "session_id");
	if (cJSON_IsString(s))
		snprintf(e->rec.session, sizeof e->rec.session, "%s", s->valuestring);
	else if (cJSON_IsNumber(s) && isfinite(s->valuedouble))
		snprintf(e->rec.session, sizeof e->rec.session, "%.17g", s->valuedouble);
	else if (s && !cJSON_IsNull(s)) {
		field_err(msg, cap, "session_id", "not a string or number");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

/* The next CSV field from line[*pos]: a bare field or a "quoted" one
 * ("" inside it is a quote; numbers never hold one, so it is not
 * unescaped). Trimmed of blanks. false past the last field. */
static bool csv_next(const char *line, size_t len, size_t *pos, const char **f, size_t *flen)
{
	if (*pos > len)
		return false;
	size_t i = *pos;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	size_t b = i, e;
	if (i < len && line[i] == '"') {
		b = ++i;
		while (i < len && !(line[i] == '"' && (i + 1 >= len || line[i + 1] != '"')))
			i += line[i] == '"' ? 2 : 1;
		e = i < len ? i : len;
		while (i < len && line[i] != ',')
			i++;
	} else {
		while (i < len && line[i] != ',')
			i++;
		e = i;
		while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t'))
			e--;
	}
	*f = line + b;
	*flen = e - b;
	*pos = i + 1;
	return true;
}

/* A field as a number: the whole field, nothing else. */
static bool csv_number(const char *f, size_t n, double *v)
{
	char tmp[64];
	if (n == 0 || n >= sizeof tmp)
		return false;
	memcpy(tmp, f, n);
	tmp[n] = '\0';
	char *end;
	*v = strtod(tmp, &end);
	return *end == '\0' && isfinite(*v);
}

static bool two_digits(const char *s, int *v)
{
	if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
		return false;
	*v = (s[0] - '0') * 10 + (s[1] - '0');
	return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar:
 * years counted from March so the leap day ends a year. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int trace_parse_datetime(const char *s, size_t len, int64_t *ns)
{
	int y1, y2, mo, d, h, mi, se;
	if (len < 19 || !two_digits(s, &y1) || !two_digits(s + 2, &y2) || s[4] != '-' || !two_digits(s + 5, &mo) ||
	    s[7] != '-' || !two_digits(s + 8, &d) || (s[10] != ' ' && s[10] != 'T') || !two_digits(s + 11, &h) ||
	    s[13] != ':' || !two_digits(s + 14, &mi) || s[16] != ':' || !two_digits(s + 17, &se))
		return -1;
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int year = y1 * 100 + y2;
	/* From 1970 to 2200: in ns, any two such times and their difference
	 * fit in 64 bits. */
	if (year < 1970 || year > 2200 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 ||
	    se > 60)
		return -1;
	size_t i = 19;
	int64_t frac = 0, scale = 1000000000;
	if (i < len && s[i] == '.') {
		i++;
		size_t digits = 0;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (digits < 9) {
				scale /= 10;
				frac += (s[i] - '0') * scale;
			}
			digits++;
			i++;
		}
		if (digits == 0)
			return -1;
	}
	int64_t offset = 0;
	if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < len && (s[i] == '+' || s[i] == '-')) {
		int oh, om;
		if (len - i < 6 || !two_digits(s + i + 1, &oh) || s[i + 3] != ':' || !two_digits(s + i + 4, &om) ||
		    oh > 23 || om > 59)
			return -1;
		offset = (s[i] == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
		i += 6;
	}
	if (i != len)
		return -1;
	int64_t secs = days_from_civil(year, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
	*ns = secs * 1000000000LL + frac;
	return 0;
}

static int parse_csv_header(struct trace_reader *r, const char *line, size_t len, char *msg, size_t cap)
{
	for (int k = 0; k < 3; k++)
		r->col[k] = -1;
	size_t pos = 0, flen;
	const char *f;
	for (int c = 0; c < CSV_MAX_COLS && csv_next(line, len, &pos, &f, &flen); c++)
		for (int k = 0; k < 3; k++)
			if (r->col[k] < 0 && strlen(csv_cols[r->fmt][k]) == flen &&
			    strncasecmp(f, csv_cols[r->fmt][k], flen) == 0)
				r->col[k] = c;
	for (int k = 0; k < 3; k++)
		if (r->col[k] < 0) {
			snprintf(msg, cap, "header: no \"%s\" column (the %s header names %s, %s and %s)",
				 csv_cols[r->fmt][k], format_names[r->fmt], csv_cols[r->fmt][0], csv_cols[r->fmt][1],
				 csv_cols[r->fmt][2]);
			return -1;
		}
	r->have_header = true;
	return 0;
}

static int parse_csv(struct trace_reader *r, const char *line, size_t len, struct heap_ent *e, char *msg,
		     size_t cap)
{
	const char *fv[3] = {NULL, NULL, NULL};
	size_t fl[3] = {0, 0, 0};
	size_t pos = 0, flen;
	const char *f;
	for (int c = 0; c < CSV_MAX_COLS && csv_next(line, len, &pos, &f, &flen); c++)
		for (int k = 0; k < 3; k++)
			if (r->col[k] == c) {
				fv[k] = f;
				fl[k] = flen;
			}
	const char *const *names = csv_cols[r->fmt];
	for (int k = 0; k < 3; k++)
		if (!fv[k])
			return field_err(msg, cap, names[k], "missing");
	double v;
	if (r->fmt == TRACE_AZURE) {
		if (trace_parse_datetime(fv[0], fl[0], &e->raw) != 0)
			return field_err(msg, cap, names[0], "expected a date and time like 2023-11-16 18:15:46.6805900");
	} else {
		if (!csv_number(fv[0], fl[0], &v))
			return field_err(msg, cap, names[0], "not a number");
		if (!(v >= 0 && v <= TRACE_MAX_RAW_NS / 1e9))
			return field_err(msg, cap, names[0], "expected seconds >= 0");
		e->raw = llround(v * 1e9);
	}
	for (int k = 1; k < 3; k++) {
		if (!csv_number(fv[k], fl[k], &v))
			return field_err(msg, cap, names[k], "not a number");
		if (!tokens_ok(v))
			return field_err(msg, cap, names[k], "expected a whole number from 0 to 10000000");
		if (k == 1)
			e->rec.input_tokens = (long)v;
		else
			e->rec.output_tokens = (long)v;
	}
	return 0;
}

/* ---- lines ---- */

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

/* A bad line: an error, or with skip_bad one more skipped. */
static enum trace_next bad(struct trace_reader *r, const char *msg, char *err, size_t errcap)
{
	char full[sizeof r->counts.first_bad];
	snprintf(full, sizeof full, "%s:%llu: %s", r->name, (unsigned long long)r->line, msg);
	if (r->skip_bad) {
		if (r->counts.skipped++ == 0)
			memcpy(r->counts.first_bad, full, sizeof full);
		return TRACE_NEED_INPUT; /* not returned: go on */
	}
	r->failed = true;
	errbuf_set(err, errcap, "%s", full);
	return TRACE_ERROR;
}

/* One line: 0 taken (or skipped), -1 an error in err. */
static int take_line(struct trace_reader *r, const char *line, size_t len, char *err, size_t errcap)
{
	if (len && line[len - 1] == '\r')
		len--;
	if (blank(line, len))
		return 0;
	char msg[200];
	if (r->fmt != TRACE_MOONCAKE && !r->have_header) {
		if (parse_csv_header(r, line, len, msg, sizeof msg) == 0)
			return 0;
		/* A file without its header cannot be read at all. */
		r->skip_bad = false;
		bad(r, msg, err, errcap);
		return -1;
	}
	struct heap_ent e = {0};
	e.rec.line = r->line;
	int rc = r->fmt == TRACE_MOONCAKE ? parse_mooncake(r, line, len, &e, msg, sizeof msg)
					  : parse_csv(r, line, len, &e, msg, sizeof msg);
	if (rc == 0 && r->have_out && e.raw < r->last_out_raw) {
		snprintf(msg, sizeof msg,
			 "timestamp: %.3f s before a record already replayed (more than %d records out of order)",
			 (double)(r->last_out_raw - e.raw) / 1e9, TRACE_REORDER);
		rc = -1;
	}
	if (rc != 0) {
		free(e.rec.hash);
		return bad(r, msg, err, errcap) == TRACE_ERROR ? -1 : 0;
	}
	r->have_prev = true;
	r->prev_raw = e.raw;
	if (r->have_max && e.raw < r->max_raw)
		r->counts.reordered++;
	if (!r->have_max || e.raw > r->max_raw)
		r->max_raw = e.raw;
	r->have_max = true;
	e.seq = r->seq++;
	heap_push(r, &e);
	return 0;
}

enum trace_next trace_reader_next(struct trace_reader *r, const struct trace_rec **rec, char *err, size_t errcap)
{
	for (;;) {
		if (r->failed) {
			errbuf_set(err, errcap, "%s: already failed", r->name);
			return TRACE_ERROR;
		}
		if (r->nheap > TRACE_REORDER) {
			*rec = emit(r);
			return TRACE_RECORD;
		}
		/* No buffer yet before the first feed: no line either. */
		char *p = r->buf ? r->buf + r->start : NULL;
		char *nl = r->len ? memchr(p, '\n', r->len) : NULL;
		size_t n;
		if (nl) {
			n = (size_t)(nl - p);
			r->start += n + 1;
			r->len -= n + 1;
		} else if (r->eof && r->len) {
			n = r->len; /* a last line without its newline */
			r->start += n;
			r->len = 0;
		} else if (r->eof) {
			if (r->nheap) {
				*rec = emit(r);
				return TRACE_RECORD;
			}
			return TRACE_END;
		} else if (r->len > TRACE_MAX_LINE) {
			r->line++;
			r->counts.lines++;
			r->start = r->len = 0;
			char msg[64];
			snprintf(msg, sizeof msg, "line longer than %u bytes", TRACE_MAX_LINE);
			if (bad(r, msg, err, errcap) == TRACE_ERROR)
				return TRACE_ERROR;
			r->discarding = true;
			return TRACE_NEED_INPUT;
		} else {
			return TRACE_NEED_INPUT;
		}
		r->line++;
		r->counts.lines++;
		if (take_line(r, p, n, err, errcap) != 0)
			return TRACE_ERROR;
	}
}
