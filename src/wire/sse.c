#include "config.h"

#include "infertop/sse.h"

#include <stdlib.h>
#include <string.h>

/* State that lives for one sse_feed() call only. zc is the data of the event
 * being built while it still points into the caller's buffer: most events
 * are one data line inside one read, and those are never copied. */
struct feed {
	const char *zc;
	size_t zclen;
	sse_event_fn fn;
	void *ud;
};

int sse_init(struct sse_parser *p, size_t max_event_bytes)
{
	memset(p, 0, sizeof *p);
	if (max_event_bytes == 0)
		max_event_bytes = SSE_DEFAULT_MAX_EVENT_BYTES;
	/* The buffer may hold a full event plus a full partial line. */
	if (max_event_bytes > SIZE_MAX / 4)
		return -1;
	p->max = max_event_bytes;
	return 0;
}

void sse_reset(struct sse_parser *p)
{
	p->events = p->comments = p->oversize = 0;
	p->dlen = p->llen = p->name_len = 0;
	p->have_data = p->skipping = p->skip_mid_line = p->cr_pending = false;
}

void sse_free(struct sse_parser *p)
{
	free(p->buf);
	p->buf = NULL;
	p->cap = 0;
	sse_reset(p);
}

static int grow(struct sse_parser *p, size_t need)
{
	if (need <= p->cap && p->buf)
		return 0;
	size_t limit = 2 * p->max + 2;
	size_t ncap = p->cap ? p->cap : 512;
	while (ncap < need)
		ncap *= 2;
	if (ncap > limit)
		ncap = limit;
	if (ncap < need)
		ncap = need;
	char *nb = realloc(p->buf, ncap);
	if (!nb)
		return -1;
	p->buf = nb;
	p->cap = ncap;
	return 0;
}

/* Index of the first '\r' or '\n' in s[0..n), or n. Two memchr passes beat
 * a byte loop by a wide margin on ~250-byte lines. */
static size_t find_eol(const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);
	size_t lim = nl ? (size_t)(nl - s) : n;
	const char *cr = memchr(s, '\r', lim);
	return cr ? (size_t)(cr - s) : lim;
}

/* Position after the line end at t. A '\r' ending the buffer may be the
 * first half of "\r\n": remember it so the next feed drops a leading '\n'. */
static size_t past_eol(struct sse_parser *p, const char *buf, size_t t, size_t len)
{
	if (buf[t] == '\r') {
		if (t + 1 == len) {
			p->cr_pending = true;
			return len;
		}
		if (buf[t + 1] == '\n')
			return t + 2;
	}
	return t + 1;
}

static void event_clear(struct sse_parser *p, struct feed *f)
{
	p->dlen = 0;
	p->have_data = false;
	p->name_len = 0;
	f->zc = NULL;
	f->zclen = 0;
}

static int oversize(struct sse_parser *p, struct feed *f, bool mid_line)
{
	struct sse_event ev = { .kind = SSE_OVERSIZE };
	event_clear(p, f);
	p->llen = 0;
	p->skipping = true;
	p->skip_mid_line = mid_line;
	p->oversize++;
	return f->fn(f->ud, &ev);
}

static int dispatch(struct sse_parser *p, struct feed *f)
{
	if (!p->have_data) {
		event_clear(p, f);
		return 0;
	}
	struct sse_event ev;
	if (f->zc) {
		ev.data = f->zc;
		ev.len = f->zclen;
	} else {
		ev.data = p->dlen ? p->buf : "";
		ev.len = p->dlen;
	}
	ev.kind = ev.len == 6 && memcmp(ev.data, "[DONE]", 6) == 0 ? SSE_DONE : SSE_DATA;
	ev.name = p->name_len ? p->name : NULL;
	ev.name_len = p->name_len;
	p->events++;
	/* Clearing leaves the bytes of buf and name in place for the callback,
	 * and leaves the parser consistent if the callback stops the feed. */
	event_clear(p, f);
	return f->fn(f->ud, &ev);
}

/* Move the zero-copy data into buf before the caller's buffer goes away
 * or another data line must be appended. Only called with no partial line
 * held, so buf holds nothing else. */
static int materialize(struct sse_parser *p, struct feed *f)
{
	if (!f->zc)
		return 0;
	if (grow(p, f->zclen) != 0)
		return -1;
	if (f->zclen)
		memcpy(p->buf, f->zc, f->zclen);
	p->dlen = f->zclen;
	f->zc = NULL;
	f->zclen = 0;
	return 0;
}

/* internal: the line lives in buf at buf + dlen (a line completed across
 * feeds), so there is no zero-copy data in this feed yet and the value
 * can be moved down in place without growing. */
static int data_line(struct sse_parser *p, struct feed *f, const char *val, size_t vlen,
		     bool internal)
{
	if (!p->have_data) {
		p->have_data = true;
		if (!internal) {
			f->zc = val;
			f->zclen = vlen;
			return 0;
		}
		memmove(p->buf, val, vlen);
		p->dlen = vlen;
		return 0;
	}
	size_t cur = f->zc ? f->zclen : p->dlen;
	if (cur + 1 + vlen > p->max)
		return oversize(p, f, false);
	if (internal) {
		p->buf[p->dlen] = '\n';
		memmove(p->buf + p->dlen + 1, val, vlen);
		p->dlen += 1 + vlen;
		return 0;
	}
	if (grow(p, cur + 1 + vlen) != 0 || materialize(p, f) != 0)
		return -1;
	p->buf[p->dlen] = '\n';
	if (vlen)
		memcpy(p->buf + p->dlen + 1, val, vlen);
	p->dlen += 1 + vlen;
	return 0;
}

static int process_line(struct sse_parser *p, struct feed *f, const char *line, size_t n,
			bool internal)
{
	if (n == 0)
		return dispatch(p, f);
	if (n > p->max)
		return oversize(p, f, false);
	if (line[0] == ':') {
		p->comments++;
		return 0;
	}
	const char *colon = memchr(line, ':', n);
	size_t flen = colon ? (size_t)(colon - line) : n;
	const char *val = line + n;
	if (colon) {
		val = colon + 1;
		if (val < line + n && *val == ' ')
			val++;
	}
	size_t vlen = (size_t)(line + n - val);

	if (flen == 4 && memcmp(line, "data", 4) == 0)
		return data_line(p, f, val, vlen, internal);
	if (flen == 5 && memcmp(line, "event", 5) == 0) {
		size_t k = vlen < SSE_NAME_MAX - 1 ? vlen : SSE_NAME_MAX - 1;
		if (k)
			memcpy(p->name, val, k);
		p->name[k] = '\0';
		p->name_len = k;
		return 0;
	}
	if (flen == 5 && memcmp(line, "error", 5) == 0) {
		struct sse_event ev = {
			.kind = SSE_ERROR_FIELD,
			.data = val,
			.len = vlen,
			.name = p->name_len ? p->name : NULL,
			.name_len = p->name_len,
		};
		return f->fn(f->ud, &ev);
	}
	return 0;
}

/* Drop input up to and including the next blank line. */
static size_t skip(struct sse_parser *p, const char *buf, size_t pos, size_t len)
{
	while (pos < len) {
		size_t t = pos + find_eol(buf + pos, len - pos);
		if (t == len) {
			p->skip_mid_line = true;
			return len;
		}
		bool blank = !p->skip_mid_line && t == pos;
		pos = past_eol(p, buf, t, len);
		p->skip_mid_line = false;
		if (blank) {
			p->skipping = false;
			break;
		}
	}
	return pos;
}

/* The shape of almost every feed of a stream: nothing held, and the feed
 * starts with a whole one-line event, "data:" [" "] value LF LF. Its length
 * when it does, its event reported as dispatch() would; else 0. */
static size_t whole_event(struct sse_parser *p, const char *buf, size_t len, sse_event_fn fn, void *ud,
			  int *rc)
{
	if (p->llen || p->have_data || p->skipping || p->cr_pending || p->name_len || len < 7 ||
	    memcmp(buf, "data:", 5) != 0)
		return 0;
	const char *nl = memchr(buf + 5, '\n', len - 5);
	if (!nl || (size_t)(nl - buf) + 1 >= len || nl[1] != '\n' || (size_t)(nl - buf) > p->max ||
	    memchr(buf + 5, '\r', (size_t)(nl - buf) - 5))
		return 0;
	const char *val = buf + 5;
	if (val < nl && *val == ' ')
		val++;
	struct sse_event ev = { .data = val, .len = (size_t)(nl - val), .name = NULL, .name_len = 0 };
	ev.kind = ev.len == 6 && memcmp(ev.data, "[DONE]", 6) == 0 ? SSE_DONE : SSE_DATA;
	p->events++;
	*rc = fn(ud, &ev);
	return (size_t)(nl - buf) + 2;
}

int sse_feed(struct sse_parser *p, const char *buf, size_t len, sse_event_fn fn, void *ud)
{
	struct feed f = { .zc = NULL, .zclen = 0, .fn = fn, .ud = ud };
	size_t pos = 0;
	int rc = 0;

	if (len == 0)
		return 0;
	pos = whole_event(p, buf, len, fn, ud, &rc);
	if (rc)
		return rc;
	if (p->cr_pending) {
		p->cr_pending = false;
		if (buf[0] == '\n')
			pos = 1;
	}
	while (pos < len) {
		if (p->skipping) {
			pos = skip(p, buf, pos, len);
			continue;
		}
		size_t t = pos + find_eol(buf + pos, len - pos);
		if (t == len)
			break;
		size_t next = past_eol(p, buf, t, len);
		if (p->llen) {
			/* Finish the line held from the previous feed. */
			size_t add = t - pos;
			size_t n = p->llen + add;
			if (n > p->max) {
				rc = oversize(p, &f, false);
			} else {
				if (grow(p, p->dlen + n) != 0)
					return -1;
				if (add)
					memcpy(p->buf + p->dlen + p->llen, buf + pos, add);
				p->llen = 0;
				rc = process_line(p, &f, p->buf + p->dlen, n, true);
			}
		} else {
			rc = process_line(p, &f, buf + pos, t - pos, false);
		}
		pos = next;
		if (rc)
			return rc;
	}

	if (pos < len && !p->skipping) {
		size_t add = len - pos;
		if (p->llen + add > p->max) {
			rc = oversize(p, &f, true);
			if (rc)
				return rc;
		} else {
			if (materialize(p, &f) != 0 || grow(p, p->dlen + p->llen + add) != 0)
				return -1;
			memcpy(p->buf + p->dlen + p->llen, buf + pos, add);
			p->llen += add;
		}
	}
	return materialize(p, &f);
}
