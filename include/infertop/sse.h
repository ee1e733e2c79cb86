#ifndef INFERTOP_SSE_H
#define INFERTOP_SSE_H

/* Incremental text/event-stream parser: bytes in, events out. Pure: no I/O,
 * no clock. Feed whatever recv() returned; lines may be split anywhere.
 *
 * Lines end in "\n", "\r\n" or "\r" (a "\r" ending one feed and a "\n"
 * starting the next are one line end). ":" lines are comments. Fields:
 * "data" (one optional space after the colon; several data lines are joined
 * with '\n'), "event" (reported as the event name), "id" and "retry"
 * (accepted, ignored), "error" (reported at once as SSE_ERROR_FIELD, since
 * some llama.cpp builds send it); other fields are ignored. A line without
 * a colon is a field name with an empty value. A blank line dispatches the
 * event; an event without any data line is not reported. Data that is
 * exactly "[DONE]" is reported as SSE_DONE.
 *
 * A line, or an event's joined data, longer than max_event_bytes drops that
 * event: SSE_OVERSIZE is reported once, as soon as it is known, and the
 * parser discards input up to the next blank line. Memory stays below about
 * twice max_event_bytes.
 *
 * Zero copy: an event whose single data line lies whole inside the buffer
 * given to sse_feed() is reported by pointing into that buffer; only events
 * split across feeds are copied into the parser's buffer, which grows on
 * demand and is kept across sse_reset(), so a steady stream never
 * allocates. Event pointers are valid only during the callback. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SSE_DEFAULT_MAX_EVENT_BYTES (1u << 20)
/* Event names longer than this minus one are truncated. */
#define SSE_NAME_MAX 64

enum sse_kind { SSE_DATA, SSE_DONE, SSE_ERROR_FIELD, SSE_OVERSIZE };

struct sse_event {
	enum sse_kind kind;
	/* SSE_DATA: the event's data; SSE_DONE: "[DONE]"; SSE_ERROR_FIELD: the
	 * value of the `error:` line; SSE_OVERSIZE: NULL/0. Not NUL-terminated. */
	const char *data;
	size_t len;
	/* The `event:` field of the current event, or NULL/0. */
	const char *name;
	size_t name_len;
};

/* A nonzero return stops feeding; sse_feed() returns it. */
typedef int (*sse_event_fn)(void *ud, const struct sse_event *ev);

/* Public so it can be embedded in a request struct; the fields but the
 * counters are the parser's own. */
struct sse_parser {
	/* What each event touches first (one cache line), then the rest. */
	uint64_t events;   /* SSE_DATA and SSE_DONE events reported */
	char *buf;    /* [joined data of the current event][partial line] */
	size_t max;   /* max_event_bytes */
	size_t dlen;  /* bytes of joined data at buf */
	size_t llen;  /* bytes of an unfinished line at buf + dlen */
	size_t name_len;
	bool have_data;     /* the current event has a data line */
	bool skipping;      /* dropping an oversize event up to a blank line */
	bool skip_mid_line; /* while skipping: the current line is not empty */
	bool cr_pending;    /* the last byte fed was a '\r' line end */

	uint64_t comments; /* comment lines seen */
	uint64_t oversize; /* events dropped for exceeding max_event_bytes */
	size_t cap;   /* allocated size of buf: grows on demand, kept on reset */
	char name[SSE_NAME_MAX];
};

/* max_event_bytes 0 means SSE_DEFAULT_MAX_EVENT_BYTES. Allocates nothing.
 * Returns 0, or -1 if max_event_bytes is absurdly large. */
int sse_init(struct sse_parser *p, size_t max_event_bytes);

/* Start of a new stream: drops any partial event and zeroes the counters,
 * keeps the buffer. */
void sse_reset(struct sse_parser *p);

void sse_free(struct sse_parser *p);

/* Parses buf, calling fn for each event in order. Returns 0, the callback's
 * nonzero value (the rest of buf is then not consumed: sse_reset() before
 * feeding again), or -1 when the buffer cannot grow (out of memory).
 * Incomplete input at the end is held for the next feed; end of stream is
 * the caller's business (EOF without SSE_DONE is a truncated stream). */
int sse_feed(struct sse_parser *p, const char *buf, size_t len, sse_event_fn fn, void *ud);

#endif
