#include "config.h"

#include "infertop/reqtrack.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct reqtrack *reqtrack_new(struct request *const *live)
{
	struct reqtrack *t = calloc(1, sizeof *t);
	if (t)
		t->live = live;
	return t;
}

void reqtrack_free(struct reqtrack *t)
{
	free(t);
}

void reqtrack_clear(struct reqtrack *t)
{
	if (!t)
		return;
	memset(t->nslow, 0, sizeof t->nslow);
	t->recent_head = t->recent_len = 0;
}

void reqtrack_start(struct reqtrack *t, struct request *r, const char *model)
{
	r->model = model;
	r->seq = t ? ++t->next_seq : 0;
}

uint32_t reqtrack_gaps(const struct request *r, uint32_t *out, uint32_t cap)
{
	/* The buffer's gaps are the newest; the kept ones (from before the
	 * last flush) fill what room is left in front of them. */
	uint32_t nbuf = (uint32_t)(r->n_itl < cap ? r->n_itl : cap);
	uint32_t nkeep = cap - nbuf < r->n_keep ? cap - nbuf : r->n_keep;
	memcpy(out, r->itl_keep + (r->n_keep - nkeep), nkeep * sizeof *out);
	memcpy(out + nkeep, r->itl + (r->n_itl - nbuf), nbuf * sizeof *out);
	return nkeep + nbuf;
}

uint32_t reqtrack_worst_gap(const struct request *r)
{
	uint32_t w = r->itl_worst;
	for (size_t i = 0; i < r->n_itl; i++)
		if (r->itl[i] > w)
			w = r->itl[i];
	return w;
}

static void copy_model(char *dst, const char *model)
{
	snprintf(dst, REQTRACK_MODEL_MAX, "%s", model ? model : "");
}

void reqtrack_rec_live(const struct request *r, int64_t now_ns, bool with_gaps, struct reqtrack_rec *out)
{
	out->seq = r->seq;
	copy_model(out->model, r->model);
	out->phase = r->t_first_token ? RT_STREAMING : r->t_first_event ? RT_PREFILL : RT_WAITING;
	out->http = r->status_known ? (int)r->status : 0;
	out->err = ERR_OTHER;
	out->msg[0] = '\0';
	out->t_send = r->t_send;
	out->ttfb_ns = r->t_first_event ? r->t_first_event - r->t_send : -1;
	out->ttft_ns = r->t_first_token ? r->t_first_token - r->t_send : -1;
	out->e2e_ns = now_ns > r->t_send ? now_ns - r->t_send : 0;
	out->tokens_in = r->prompt_estimate;
	out->tokens_out = (int64_t)r->chunks;
	out->chunks = r->chunks;
	out->worst_gap_us = reqtrack_worst_gap(r);
	out->ngaps = with_gaps ? reqtrack_gaps(r, out->gaps_us, REQTRACK_GAPS) : 0;
}

static int64_t rec_metric(const struct reqtrack_rec *rec, int which)
{
	switch (which) {
	case 0:
		return rec->ttft_ns;
	case 1:
		return rec->e2e_ns;
	default:
		return rec->worst_gap_us;
	}
}

/* Sorted array, slowest first: a request slower than the last kept one
 * goes in at its place and the fastest falls off the end. At most
 * REQTRACK_N records move, and only for a request that makes the list. */
static void slow_insert(struct reqtrack *t, int which, const struct reqtrack_rec *rec)
{
	struct reqtrack_rec *a = t->slow[which];
	uint32_t n = t->nslow[which];
	int64_t v = rec_metric(rec, which);
	if (n == REQTRACK_N && v <= rec_metric(&a[n - 1], which))
		return;
	uint32_t i = n < REQTRACK_N ? n : REQTRACK_N - 1;
	while (i > 0 && rec_metric(&a[i - 1], which) < v) {
		a[i] = a[i - 1];
		i--;
	}
	a[i] = *rec;
	if (n < REQTRACK_N)
		t->nslow[which] = n + 1;
}

void reqtrack_done(struct reqtrack *t, const struct request *r, const struct req_result *res)
{
	if (!t)
		return;
	t->finished++;
	struct reqtrack_rec *rec = &t->recent[t->recent_head];
	t->recent_head = (t->recent_head + 1) % REQTRACK_N;
	if (t->recent_len < REQTRACK_N)
		t->recent_len++;
	reqtrack_rec_live(r, r->t_last_token ? r->t_last_token : r->t_send, true, rec);
	rec->phase = res->ok ? RT_OK : res->incomplete ? RT_INCOMPLETE : RT_FAILED;
	rec->http = res->http_code;
	rec->err = res->err;
	/* The text recorded with the failure, already scrubbed of secrets
	 * (request.c); never the raw answer. */
	snprintf(rec->msg, sizeof rec->msg, "%s", res->ok || !res->msg ? "" : res->msg);
	if (res->ok) {
		rec->ttfb_ns = res->ttfb_ns;
		rec->ttft_ns = res->ttft_ns;
		rec->e2e_ns = res->e2e_ns;
		rec->tokens_in = res->prompt_tokens;
		rec->tokens_out = res->output_tokens;
		for (int i = 0; i < 3; i++)
			slow_insert(t, i, rec);
	} else {
		/* How long it took to fail: until the last bytes read (the stamp
		 * request.c took for them; no clock read here). */
		rec->e2e_ns = r->now > r->t_send ? r->now - r->t_send : 0;
	}
}

size_t reqtrack_count(const struct reqtrack *t, enum reqtrack_list l)
{
	if (!t)
		return 0;
	switch (l) {
	case RT_SLOW_TTFT:
	case RT_SLOW_E2E:
	case RT_SLOW_ITL:
		return t->nslow[l - RT_SLOW_TTFT];
	case RT_RECENT:
		return t->recent_len;
	default:
		return 0;
	}
}

const struct reqtrack_rec *reqtrack_get(const struct reqtrack *t, enum reqtrack_list l, size_t i)
{
	if (i >= reqtrack_count(t, l))
		return NULL;
	if (l == RT_RECENT)
		return &t->recent[(t->recent_head + REQTRACK_N - 1 - i) % REQTRACK_N];
	return &t->slow[l - RT_SLOW_TTFT][i];
}

const struct request *reqtrack_live_first(const struct reqtrack *t)
{
	return t && t->live ? *t->live : NULL;
}

const struct request *reqtrack_live_find(const struct reqtrack *t, uint64_t seq)
{
	for (const struct request *r = reqtrack_live_first(t); r; r = r->next)
		if (r->seq == seq)
			return r;
	return NULL;
}

const struct reqtrack_rec *reqtrack_find(const struct reqtrack *t, uint64_t seq)
{
	for (int l = RT_SLOW_TTFT; l < RT_LIST_N; l++)
		for (size_t i = 0; i < reqtrack_count(t, (enum reqtrack_list)l); i++) {
			const struct reqtrack_rec *rec = reqtrack_get(t, (enum reqtrack_list)l, i);
			if (rec->seq == seq)
				return rec;
		}
	return NULL;
}

const char *reqtrack_phase_name(enum reqtrack_phase p)
{
	static const char *const names[] = {"waiting", "prefill", "streaming", "ok", "failed", "incomplete"};
	return (unsigned)p < sizeof names / sizeof names[0] ? names[p] : "?";
}

static bool contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == n)
			return true;
	}
	return n == 0;
}

bool reqtrack_match(const struct reqtrack_rec *rec, const char *filter)
{
	if (!filter || !*filter)
		return true;
	char http[16];
	snprintf(http, sizeof http, "http %d", rec->http);
	return contains(rec->model, filter) || contains(reqtrack_phase_name(rec->phase), filter) ||
	       (rec->http && contains(http, filter)) ||
	       (rec->phase == RT_FAILED && contains(stats_err_name(rec->err), filter));
}
