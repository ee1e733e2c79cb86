#ifndef INFERTOP_TESTS_SIMUTIL_H
#define INFERTOP_TESTS_SIMUTIL_H

/* Helpers for the sim's integration tests: spawn `$INFERTOP_BIN sim`,
 * talk to it with libcurl, split SSE streams into events with arrival
 * times. Children are registered so a cmocka teardown (or exit) stops
 * them whatever path the test took. */

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/sim.h"

/* Starts a sim with extra args (NULL-terminated). 0, or -1 with a message
 * on stderr. */
int su_spawn(const char *const *args, struct sim_child *out);
/* Stops one child and forgets it; returns sim_child_stop()'s value. */
int su_stop(struct sim_child *c);
/* Stops every child still registered (cmocka teardown). */
int su_teardown(void **state);

/* Path of the binary under test: $INFERTOP_BIN. */
const char *su_bin(void);

struct su_resp {
	long status;
	char *body;		/* NUL-terminated */
	size_t len;
	char *headers;		/* raw header block, NUL-terminated */
	size_t hlen;
	CURLcode rc;
	double t_headers;	/* seconds from start to the first response byte */
};

/* A blocking request; body NULL = GET (method overrides). Returns rc. */
CURLcode su_request(int port, const char *method, const char *path, const char *body, long timeout_ms,
		    struct su_resp *r);
void su_resp_free(struct su_resp *r);
/* Value of a response header (case-insensitive name) into buf; 0 found. */
int su_header(const struct su_resp *r, const char *name, char *buf, size_t cap);

struct su_event {
	char *data;		/* the data: payload (lines joined by \n), NUL-terminated */
	int64_t t;		/* CLOCK_MONOTONIC ns when its blank line arrived */
};

/* A streaming request run by su_multi. */
struct su_stream {
	CURL *easy;
	struct curl_slist *hdrs;
	char *body_json;
	char *raw;		/* everything received */
	size_t len, cap;
	size_t scanned;		/* raw[0..scanned) is split into events */
	struct su_event *ev;
	size_t nev, evcap;
	int framing_error;	/* a line that is neither data: nor blank */
	int64_t t_added;	/* when the transfer was handed to curl */
	int64_t t_sent;		/* when curl asked for the request body: the send */
	size_t body_off;
	int64_t t_headers;	/* first header line; 0 before */
	long status;
	char retry_after[32];
	int finished;
	CURLcode rc;
	void *user;
};

int su_stream_init(struct su_stream *s, int port, const char *path, const char *json, long timeout_ms);
void su_stream_free(struct su_stream *s);
/* Events carrying "[DONE]"; events whose payload is not valid JSON. */
int su_stream_has_done(const struct su_stream *s);

struct su_multi {
	CURLM *m;
	struct su_stream **s;
	size_t n, cap;
	int running;
};

int su_multi_init(struct su_multi *mm);
int su_multi_add(struct su_multi *mm, struct su_stream *s);
/* Drives the transfers until all finished (returns 0), cond(ud) returns
 * nonzero (1), or timeout_ms passes (-1). cond may be NULL. */
int su_multi_until(struct su_multi *mm, int (*cond)(void *ud), void *ud, long timeout_ms);
/* Removes (so aborts) every transfer; the streams stay readable. */
void su_multi_cleanup(struct su_multi *mm);

/* Sums a metric from a scrape with prom_sum(); -1 if absent. */
double su_metric(int port, const char *path, const char *name, const char *matchers);

/* Counts chat/completions chunks with non-empty output text. */
int su_is_token_event(const char *json);

/* Sorts and returns the median of v[0..n). */
double su_median(double *v, size_t n);

#endif
