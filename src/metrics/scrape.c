#include "config.h"

#include "infertop/scrape.h"
#include "infertop/bodybuf.h"
#include "infertop/redact.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/clock.h"
#include "infertop/http.h"
#include "infertop/profile.h"
#include "infertop/promql.h"
#include "infertop/resolve.h"
#include "infertop/tls.h"
#include "infertop/url.h"

#define BODY_INITIAL (64u << 10)
#define ROUND_ERR_MAX 400
/* --metrics-discover re-resolves its name this often: pods come and go in
 * seconds, and a DNS answer is cheap. */
#define DISCOVER_PERIOD_NS (10LL * 1000000000LL)

struct target {
	struct http_xfer x;	/* CURLOPT_PRIVATE points here */
	struct scrape *s;
	bool gpu;
	bool enabled;
	/* Where its readings go: the scrape's own state and tracker, or, for
	 * one of several replicas, the replica's (then summed in merge()). */
	struct server_state *out;
	struct profile_tracker *prof;
	bool replica;
	bool gone;		/* left the DNS / Prometheus answer: not scraped, counts kept */
	char *long_url;		/* the Prometheus query (longer than urls[]), else NULL */
	bool have_sum;
	struct profile_raw sum;	/* profile_tracker_summable() of the last good scrape */
	CURL *easy;
	char *buf;
	size_t len, cap;
	bool too_large, oom;
	char reason[64];	/* HTTP reason phrase of the last status line */
	char errbuf[CURL_ERROR_SIZE];
	bool in_flight;
	ev_timer timer;
	int64_t next_due;
	int64_t sent_ns;
	unsigned fails;		/* in a row */
	bool ever_ok;

	/* Candidate URLs: one, or (auto, no --metrics-url) several tried in
	 * turn until one serves known metrics; then locked to it. */
	char urls[PROFILE_MAX_CANDIDATES][PROFILE_URL_MAX];
	bool same_origin[PROFILE_MAX_CANDIDATES];
	int nurls, cur;
	bool locked;
	int fallback;		/* a candidate with metrics but no known names */
	char round_err[ROUND_ERR_MAX];
	bool round_same;	/* every candidate failed with the same message */
	char first_err[200];
};

struct scrape {
	struct ev_loop *loop;
	struct http *http;
	const struct config *cfg;
	struct server_state *out;
	struct profile_tracker *prof;
	struct curl_slist *hdr_plain, *hdr_origin;
	CURLSH *share;		/* the scrapes' own connection pool */
	int64_t interval_ns;
	long timeout_ms;
	struct target metrics, gpu;
	struct target *reps;	/* 2+ --metrics-url: one per replica, else NULL */
	int nreps, repcap;
	int want;
	char origin[PROFILE_URL_MAX];
	/* --metrics-discover: each address a replica scraped on its own. */
	struct resolver *dns;
	char dns_name[RESOLVE_NAME_MAX + 1];
	int dns_port;
	char dns_path[PROFILE_URL_MAX];
	/* --metrics-prometheus: one instant query; each instance a replica fed
	 * from its answer (no transfer of its own). */
	struct target prom;
	bool dynamic;		/* either of the two */
	struct gpu_power_ring ring;
	struct gpu_history gpu_hist;   /* the GPU view's charts */
	struct profile_raw acc;	/* merge()'s sum */
	bool running;
};

/* ---- curl callbacks ---- */

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct target *tg = ud;
	size_t n = size * nmemb;
	switch (bodybuf_append(&tg->buf, &tg->len, &tg->cap, p, n, SCRAPE_MAX_BODY, BODY_INITIAL)) {
	case BODYBUF_OK:
		return n;
	case BODYBUF_TOO_LARGE:
		tg->too_large = true;
		return 0;
	default:
		tg->oom = true;
		return 0;
	}
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
	struct target *tg = ud;
	size_t n = size * nmemb;
	/* "HTTP/1.1 404 Not Found": keep the phrase for the error message
	 * (the last status line wins after a redirect). */
	if (n > 5 && memcmp(p, "HTTP/", 5) == 0) {
		const char *sp = memchr(p, ' ', n);
		const char *sp2 = sp ? memchr(sp + 1, ' ', n - (size_t)(sp + 1 - p)) : NULL;
		tg->reason[0] = '\0';
		if (sp2) {
			size_t k = n - (size_t)(sp2 + 1 - p);
			while (k > 0 && (sp2[k] == '\r' || sp2[k] == '\n' || sp2[k] == ' '))
				k--;
			if (k >= sizeof tg->reason)
				k = sizeof tg->reason - 1;
			memcpy(tg->reason, sp2 + 1, k);
			tg->reason[k] = '\0';
		}
	}
	return n;
}

/* ---- helpers ---- */

/* Truncating copy: URLs and messages are shown, never parsed back. */
static void scopy(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* "scheme://authority", lowercased, for the same-origin test. */
/* Paths on the target's origin are shown short; see url.h. */
static void origin_of(const char *url, char *out, size_t cap)
{
	if (url_origin(url, out, cap) != 0)
		out[0] = '\0';
}

static bool starts_with_ci(const char *s, const char *prefix)
{
	return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static void set_status(struct target *tg, enum server_status st)
{
	if (tg->gpu)
		tg->out->gpu_status = st;
	else
		tg->out->status = st;
}

static enum server_status get_status(const struct target *tg)
{
	return tg->gpu ? tg->out->gpu_status : tg->out->status;
}

static void set_url(struct target *tg, const char *url)
{
	struct server_state *o = tg->out;
	/* What is shown and saved; the request itself keeps the full URL. */
	if (tg->gpu)
		redact_url(url, o->gpu_url, sizeof o->gpu_url);
	else
		redact_url(url, o->url, sizeof o->url);
}

static void start(struct target *tg, int64_t now)
{
	struct scrape *s = tg->s;
	tg->len = 0;
	tg->too_large = tg->oom = false;
	tg->reason[0] = '\0';
	tg->errbuf[0] = '\0';
	curl_easy_setopt(tg->easy, CURLOPT_URL, tg->long_url ? tg->long_url : tg->urls[tg->cur]);
	curl_easy_setopt(tg->easy, CURLOPT_HTTPHEADER, tg->same_origin[tg->cur] ? s->hdr_origin : s->hdr_plain);
	if (http_add(s->http, tg->easy, false) != 0) {
		/* Only a programming error or no memory: treated as a failed scrape
		 * at the next tick rather than looping here. */
		tg->next_due = now + s->interval_ns;
		return;
	}
	tg->in_flight = true;
	tg->sent_ns = now;
	if (!tg->gpu)
		tg->out->last_attempt_ns = now;
	if (!tg->long_url)
		set_url(tg, tg->urls[tg->cur]);
}

/* Why a finished transfer gave no usable body; "" when it did. */
static void classify(struct target *tg, CURLcode rc, char *err, size_t cap, unsigned *flags)
{
	err[0] = '\0';
	*flags = 0;
	if (tg->too_large) {
		snprintf(err, cap, "response too large (over %u MiB)", SCRAPE_MAX_BODY >> 20);
		return;
	}
	if (tg->oom) {
		snprintf(err, cap, "out of memory for the response");
		return;
	}
	if (rc != CURLE_OK) {
		long os = 0;
		curl_easy_getinfo(tg->easy, CURLINFO_OS_ERRNO, &os);
		if (rc == CURLE_COULDNT_CONNECT && os == ECONNREFUSED)
			snprintf(err, cap, "connection refused");
		else if (rc == CURLE_OPERATION_TIMEDOUT)
			snprintf(err, cap, "timed out after %.1f s", (double)tg->s->timeout_ms / 1000.0);
		else
			snprintf(err, cap, "%s", tg->errbuf[0] ? tg->errbuf : curl_easy_strerror(rc));
		return;
	}
	long code = 0;
	curl_easy_getinfo(tg->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299) {
		snprintf(err, cap, "HTTP %ld%s%s", code, tg->reason[0] ? " " : "", tg->reason);
		return;
	}
	const char *ct = NULL;
	curl_easy_getinfo(tg->easy, CURLINFO_CONTENT_TYPE, &ct);
	size_t i = 0;
	while (i < tg->len && isspace((unsigned char)tg->buf[i]))
		i++;
	if (i == tg->len) {
		snprintf(err, cap, "empty response");
		return;
	}
	if ((ct && strstr(ct, "html")) || tg->buf[i] == '<') {
		snprintf(err, cap, "HTML instead of metrics (a web page or a login: check the URL)");
		return;
	}
	if ((ct && strstr(ct, "json")) || tg->buf[i] == '{' || tg->buf[i] == '[') {
		snprintf(err, cap, "JSON instead of Prometheus metrics");
		return;
	}
	if (ct && starts_with_ci(ct, "application/openmetrics-text"))
		*flags = PROM_OPENMETRICS;
}

static void on_success(struct target *tg, int64_t now)
{
	struct server_state *o = tg->out;
	tg->fails = 0;
	tg->ever_ok = true;
	tg->next_due = 0;
	set_status(tg, SERVER_UP);
	if (tg->gpu) {
		o->gpu_scrapes++;
		o->gpu_last_ok_ns = now;
	} else {
		o->scrapes++;
		o->last_ok_ns = now;
	}
}

static void on_failure(struct target *tg, const char *msg, int64_t now)
{
	struct scrape *s = tg->s;
	struct server_state *o = tg->out;
	if (tg->fails < 64)
		tg->fails++;
	if (tg->gpu) {
		o->gpu_failures++;
		scopy(o->gpu_error, sizeof o->gpu_error, msg);
		redact_userinfo(o->gpu_error);
	} else {
		o->failures++;
		scopy(o->last_error, sizeof o->last_error, msg);
		redact_userinfo(o->last_error);
	}
	if (tg->ever_ok && tg->fails < SCRAPE_STALE_AFTER) {
		set_status(tg, SERVER_STALE);
	} else {
		set_status(tg, SERVER_DOWN);
		if (tg->gpu) {
			o->ngpus = 0;
			o->power_total_w.valid = false;
			o->joules_per_token.valid = false;
		} else {
			profile_invalidate_live(o);
		}
	}
	/* Back off: interval x 2^failures, at most 30 s, reset on success. */
	int64_t delay = s->interval_ns;
	for (unsigned i = 0; i < tg->fails && delay < SCRAPE_BACKOFF_MAX_NS; i++)
		delay *= 2;
	if (delay > SCRAPE_BACKOFF_MAX_NS)
		delay = SCRAPE_BACKOFF_MAX_NS;
	if (delay < s->interval_ns)
		delay = s->interval_ns;
	tg->next_due = now + delay;
}

static void round_note(struct target *tg, const char *msg)
{
	if (tg->cur == 0) {
		scopy(tg->first_err, sizeof tg->first_err, msg);
		tg->round_same = true;
		tg->round_err[0] = '\0';
	} else if (strcmp(msg, tg->first_err) != 0) {
		tg->round_same = false;
	}
	/* Paths on the target's origin, whole URLs elsewhere (Triton's port). */
	char o0[PROFILE_URL_MAX], o[PROFILE_URL_MAX];
	const char *u = tg->urls[tg->cur];
	origin_of(tg->urls[0], o0, sizeof o0);
	origin_of(u, o, sizeof o);
	char shown[PROFILE_URL_MAX];
	if (strcmp(o0, o) != 0 || url_path(u, shown, sizeof shown) != 0)
		redact_url(u, shown, sizeof shown);
	else if (strchr(shown, '?'))
		*strchr(shown, '?') = '\0';   /* query values may be keys */
	size_t n = strlen(tg->round_err);
	snprintf(tg->round_err + n, sizeof tg->round_err - n, "%s%s: %s", n ? "; " : "", shown, msg);
}

/* Server replicas: the scrape's state from every replica's own. Counters
 * and histograms sum exactly (a replica down keeps its last totals, so the
 * sum never goes back); gauges come from the replicas read now. */
static void merge(struct scrape *s, int64_t now)
{
	struct server_state *o = s->out;
	struct profile_raw *acc = &s->acc;
	int nadded = 0, nread = 0, npending = 0;
	uint64_t scrapes = 0, failures = 0, skipped = 0;
	o->last_error[0] = '\0';
	for (int i = 0; i < s->nreps; i++) {
		struct target *tg = &s->reps[i];
		const struct server_state *rs = tg->out;
		struct server_replica *r = &o->replica[i];
		bool live = rs->status == SERVER_UP || rs->status == SERVER_STALE;
		nread += live;
		npending += rs->status == SERVER_PENDING;
		scrapes += rs->scrapes;
		failures += rs->failures;
		skipped += rs->skipped;
		if (rs->last_ok_ns > o->last_ok_ns)
			o->last_ok_ns = rs->last_ok_ns;
		if (rs->last_attempt_ns > o->last_attempt_ns)
			o->last_attempt_ns = rs->last_attempt_ns;
		r->status = rs->status;
		r->gone = tg->gone;
		r->last_ok_ns = rs->last_ok_ns;
		scopy(r->last_error, sizeof r->last_error, rs->last_error);
		scopy(r->url, sizeof r->url, rs->url);
		r->running = rs->gauge[SRV_RUNNING];
		r->waiting = rs->gauge[SRV_WAITING];
		r->kv = rs->gauge[SRV_KV_USAGE];
		r->kv_max = rs->gauge[SRV_KV_USAGE_MAX];
		r->run_gen_tokens = rs->run_gen_tokens;
		if (rs->status == SERVER_DOWN && !tg->gone && !o->last_error[0])
			snprintf(o->last_error, sizeof o->last_error, "replica %d down: %.160s", i + 1, rs->last_error);
		if (tg->have_sum)
			profile_raw_add(acc, &nadded, &tg->sum, live);
	}
	o->nreplicas = s->nreps;
	o->replicas_read = nread;
	o->scrapes = scrapes;
	o->failures = failures;
	o->skipped = skipped;
	if (nadded > 0) {
		profile_raw_finish(acc);
		profile_tracker_apply(s->prof, acc, now, o);
	}
	if (nread > 0)
		o->status = SERVER_UP;
	else if (npending == s->nreps && (!s->dynamic || !o->replicas_error[0]))
		o->status = SERVER_PENDING;
	else {
		o->status = SERVER_DOWN;
		profile_invalidate_live(o);
	}
	/* The source's own trouble (no address, Prometheus's error) says more
	 * than a replica's. */
	if (nread == 0 && o->replicas_error[0])
		scopy(o->last_error, sizeof o->last_error, o->replicas_error);
}

/* ---- replicas found by a source (--metrics-discover, --metrics-prometheus) ---- */

static int target_init(struct scrape *s, struct target *tg, bool gpu, char *err, size_t errcap);

/* A replica target: its own state and tracker; scraped (with a transfer
 * and a timer of its own) when active, else fed by its source. url: what
 * it scrapes, or the key it is found by; shown: what the panel says. */
static int rep_setup(struct scrape *s, struct target *tg, const char *url, const char *shown, bool active,
		     char *err, size_t errcap)
{
	const struct config *cfg = s->cfg;
	if (strlen(url) >= PROFILE_URL_MAX) {
		snprintf(err, errcap, "metrics URL longer than %d characters", PROFILE_URL_MAX - 1);
		return -1;
	}
	if (active) {
		if (target_init(s, tg, false, err, errcap) != 0)
			return -1;
	} else {
		tg->s = s;
	}
	tg->replica = true;
	tg->out = calloc(1, sizeof *tg->out);
	if (!tg->out) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	server_state_init(tg->out);
	tg->prof = profile_tracker_new(s->want, (const char *const *)cfg->watch_metrics, cfg->nwatch_metrics,
				       cfg->window_ns, s->interval_ns, err, errcap);
	if (!tg->prof)
		return -1;
	snprintf(tg->urls[0], sizeof tg->urls[0], "%s", url);
	if (active) {
		char o2[PROFILE_URL_MAX];
		origin_of(url, o2, sizeof o2);
		tg->same_origin[0] = strcmp(s->origin, o2) == 0;
	}
	tg->nurls = 1;
	tg->locked = true;
	tg->enabled = true;
	tg->out->status = SERVER_PENDING;
	if (shown)
		scopy(tg->out->url, sizeof tg->out->url, shown);
	else
		redact_url(url, tg->out->url, sizeof tg->out->url);
	struct server_replica *r = &s->out->replica[tg - s->reps];
	scopy(r->url, sizeof r->url, tg->out->url);
	r->status = SERVER_PENDING;
	return 0;
}

/* The replica whose key is url, added when new (NULL: no room, or no
 * memory: said in the source's error). A gone one comes back. */
static struct target *rep_find_or_add(struct scrape *s, const char *url, const char *shown, bool active)
{
	for (int i = 0; i < s->nreps; i++) {
		struct target *tg = &s->reps[i];
		if (strcmp(tg->urls[0], url) != 0)
			continue;
		if (tg->gone) {
			tg->gone = false;
			tg->fails = 0;
			tg->next_due = 0;
			if (active && s->running) {
				ev_timer_set(&tg->timer, 0., (double)s->interval_ns / 1e9);
				ev_timer_start(s->loop, &tg->timer);
			}
		}
		return tg;
	}
	if (s->nreps == s->repcap)
		return NULL;
	struct target *tg = &s->reps[s->nreps];
	char err[200];
	if (rep_setup(s, tg, url, shown, active, err, sizeof err) != 0) {
		scopy(s->out->replicas_error, sizeof s->out->replicas_error, err);
		if (tg->easy)
			curl_easy_cleanup(tg->easy);
		free(tg->out);
		profile_tracker_free(tg->prof);
		memset(tg, 0, sizeof *tg);
		return NULL;
	}
	s->nreps++;
	s->out->nreplicas = s->nreps;
	if (active && s->running) {
		ev_timer_set(&tg->timer, 0., (double)s->interval_ns / 1e9);
		ev_timer_start(s->loop, &tg->timer);
	}
	return tg;
}

/* Left the source's answer: no longer scraped, shown down as gone; its
 * counters stay in the sums (merge() adds every replica ever read). */
static void rep_gone(struct scrape *s, struct target *tg, const char *why)
{
	if (tg->gone)
		return;
	tg->gone = true;
	if (tg->easy) {
		ev_timer_stop(s->loop, &tg->timer);
		if (tg->in_flight) {
			http_remove(s->http, tg->easy);
			tg->in_flight = false;
		}
	}
	tg->out->status = SERVER_DOWN;
	scopy(tg->out->last_error, sizeof tg->out->last_error, why);
	profile_invalidate_live(tg->out);
}

static void on_dns(void *ud, const struct resolve_answer *a)
{
	struct scrape *s = ud;
	struct server_state *o = s->out;
	if (a->rc != 0) {
		/* One failed answer is not the pods gone: the replicas stay as
		 * they were until an answer says otherwise. */
		snprintf(o->replicas_error, sizeof o->replicas_error, "dns:%.100s: %.90s", s->dns_name, a->err);
		merge(s, clock_now_ns());
		return;
	}
	o->replicas_error[0] = '\0';
	bool seen[SERVER_MAX_REPLICAS] = { false };
	int extra = 0;
	for (int i = 0; i < a->n; i++) {
		char url[PROFILE_URL_MAX];
		snprintf(url, sizeof url, a->v6[i] ? "http://[%s]:%d%s" : "http://%s:%d%s", a->addr[i], s->dns_port,
			 s->dns_path);
		struct target *tg = rep_find_or_add(s, url, NULL, true);
		if (tg)
			seen[tg - s->reps] = true;
		else if (!o->replicas_error[0])
			extra++;
	}
	for (int i = 0; i < s->nreps; i++)
		if (!seen[i])
			rep_gone(s, &s->reps[i], "gone: no longer in the DNS answer");
	if (extra)
		snprintf(o->replicas_error, sizeof o->replicas_error,
			 "dns:%.120s: %d more addresses than the %d replicas read", s->dns_name, extra, SERVER_MAX_REPLICAS);
	merge(s, clock_now_ns());
}

/* The instant query's answer: each instance's series to its replica. */
static void prom_done(struct scrape *s, struct target *tg, CURLcode rc, int64_t now)
{
	struct server_state *o = s->out;
	char err[256];
	unsigned flags;
	struct promql_split sp;
	int ok = -1;
	if (tg->too_large || tg->oom || rc != CURLE_OK) {
		classify(tg, rc, err, sizeof err, &flags);
	} else {
		/* Prometheus answers its errors (400, 422, 503) in JSON too. */
		ok = promql_vector_split(tg->buf ? tg->buf : "", tg->len, SERVER_MAX_REPLICAS, &sp, err, sizeof err);
		long code = 0;
		curl_easy_getinfo(tg->easy, CURLINFO_RESPONSE_CODE, &code);
		if (ok != 0 && (code < 200 || code > 299) && strncmp(err, "Prometheus: ", 12) != 0)
			snprintf(err, sizeof err, "HTTP %ld%s%s%s", code, tg->reason[0] ? " " : "", tg->reason,
				 code == 404 ? " (is the URL Prometheus's base URL?)" : "");
	}
	if (ok != 0) {
		on_failure(tg, err, now);
		scopy(o->replicas_error, sizeof o->replicas_error, err);
		redact_userinfo(o->replicas_error);
		for (int i = 0; i < s->nreps; i++)
			if (!s->reps[i].gone)
				on_failure(&s->reps[i], err, now);
		merge(s, now);
		return;
	}
	on_success(tg, now);
	o->replicas_error[0] = '\0';
	bool seen[SERVER_MAX_REPLICAS] = { false };
	for (int i = 0; i < sp.n; i++) {
		const struct promql_group *g = &sp.g[i];
		char shown[PROFILE_URL_MAX];
		snprintf(shown, sizeof shown, "%s", g->instance[0] ? g->instance : "(no instance label)");
		struct target *rt = rep_find_or_add(s, shown, shown, false);
		if (!rt)
			continue;
		seen[rt - s->reps] = true;
		char e2[256];
		if (profile_tracker_update(rt->prof, g->text, g->len, 0, now, rt->out, e2, sizeof e2) == 0) {
			on_success(rt, now);
			profile_tracker_summable(rt->prof, &rt->sum);
			rt->have_sum = true;
		} else {
			on_failure(rt, e2, now);
		}
	}
	for (int i = 0; i < s->nreps; i++)
		if (!seen[i])
			rep_gone(s, &s->reps[i], "gone: no longer in Prometheus's answer");
	if (sp.dropped)
		snprintf(o->replicas_error, sizeof o->replicas_error,
			 "more instances than the %d replicas read (%d series left out)", SERVER_MAX_REPLICAS,
			 sp.dropped);
	promql_split_free(&sp);
	merge(s, now);
}

static void on_done(struct http_xfer *x, CURLcode rc)
{
	struct target *tg = (struct target *)x;
	struct scrape *s = tg->s;
	int64_t now = clock_now_ns();
	char err[256];
	unsigned flags;
	tg->in_flight = false;
	if (tg == &s->prom) {
		prom_done(s, tg, rc, now);
		return;
	}
	classify(tg, rc, err, sizeof err, &flags);
	if (!err[0]) {
		if (tg->gpu) {
			struct gpu_reading rd;
			if (gpu_parse_dcgm(tg->buf, tg->len, flags, s->out, &rd, err, sizeof err) >= 0) {
				gpu_ring_push(&s->ring, now, &rd);
				gpu_history_push(&s->gpu_hist, now, s->out);
				s->out->gpu_hist = &s->gpu_hist;
				if (rd.power_valid)
					server_agg_add(&s->out->power_agg, rd.power_w);
			}
		} else if (profile_tracker_update(tg->prof, tg->buf, tg->len, flags, now, tg->out, err, sizeof err) ==
				   0 &&
			   !tg->locked && profile_tracker_profile(tg->prof) == PROFILE_NONE) {
			/* Metrics, but none of a known server: a later candidate
			 * may be the real one; this one is the fallback. */
			if (tg->fallback < 0)
				tg->fallback = tg->cur;
			snprintf(err, sizeof err, "no known inference-server metrics");
		}
	}
	if (!err[0]) {
		tg->locked = true;
		on_success(tg, now);
		if (tg->replica) {
			profile_tracker_summable(tg->prof, &tg->sum);
			tg->have_sum = true;
			merge(s, now);
		}
		return;
	}
	if (tg->locked || tg->nurls <= 1) {
		on_failure(tg, err, now);
		if (tg->replica)
			merge(s, now);
		return;
	}
	round_note(tg, err);
	if (tg->cur + 1 < tg->nurls && s->running) {
		tg->cur++;
		start(tg, now);
		return;
	}
	if (tg->fallback >= 0) {
		tg->cur = tg->fallback;
		tg->locked = true;
		set_url(tg, tg->urls[tg->cur]);
		on_success(tg, now);
		return;
	}
	tg->cur = 0;
	set_url(tg, tg->urls[0]);
	on_failure(tg, tg->round_same ? tg->first_err : tg->round_err, now);
}

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct target *tg = w->data;
	int64_t now = clock_now_ns();
	if (tg->in_flight) {
		/* A slow endpoint gets one scrape at a time, never a pile. */
		if (!tg->gpu)
			tg->out->skipped++;
		return;
	}
	if (now < tg->next_due)
		return;
	if (!tg->locked)
		tg->fallback = -1;
	start(tg, now);
}

/* ---- setup ---- */

static int target_init(struct scrape *s, struct target *tg, bool gpu, char *err, size_t errcap)
{
	tg->s = s;
	tg->gpu = gpu;
	tg->out = s->out;
	tg->x.done = on_done;
	tg->fallback = -1;
	tg->easy = curl_easy_init();
	if (!tg->easy) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	CURL *c = tg->easy;
	curl_easy_setopt(c, CURLOPT_PRIVATE, &tg->x);
	curl_easy_setopt(c, CURLOPT_SHARE, s->share);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, tg);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, tg);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, tg->errbuf);
	/* "" = every encoding this libcurl decodes (gzip, deflate, br, zstd). */
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->timeout_ms < 5000 ? s->timeout_ms : 5000L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
	http_easy_tls(c, &(struct tls_opts){.insecure = s->cfg->insecure, .cafile = s->cfg->cacert});
	ev_timer_init(&tg->timer, on_tick, 0., (double)s->interval_ns / 1e9);
	tg->timer.data = tg;
	return 0;
}

static int build_headers(struct scrape *s)
{
	static const char accept[] = "Accept: text/plain;version=0.0.4;q=1,*/*;q=0.1";
	struct curl_slist *t;
	if (!(s->hdr_plain = curl_slist_append(NULL, accept)))
		return -1;
	if (!(s->hdr_origin = curl_slist_append(NULL, accept)))
		return -1;
	const char *key = s->cfg->api_key_env ? getenv(s->cfg->api_key_env) : NULL;
	if (key && *key) {
		size_t n = strlen(key) + 32;
		char *line = malloc(n);
		if (!line)
			return -1;
		snprintf(line, n, "Authorization: Bearer %s", key);
		t = curl_slist_append(s->hdr_origin, line);
		memset(line, 0, n);
		free(line);
		if (!t)
			return -1;
	}
	for (size_t i = 0; i < s->cfg->nheaders; i++)
		if (!curl_slist_append(s->hdr_origin, s->cfg->headers[i]))
			return -1;
	return 0;
}

/* One target per --metrics-url, each with its own state and tracker;
 * merge() sums them into the scrape's. */
static int replicas_init(struct scrape *s, char *err, size_t errcap)
{
	const struct config *cfg = s->cfg;
	int n = (int)cfg->nmetrics_urls;
	if (n > SERVER_MAX_REPLICAS) {
		snprintf(err, errcap, "at most %d --metrics-url replicas", SERVER_MAX_REPLICAS);
		return -1;
	}
	s->reps = calloc((size_t)n, sizeof *s->reps);
	if (!s->reps) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	s->repcap = n;
	for (int i = 0; i < n; i++) {
		if (rep_setup(s, &s->reps[i], cfg->metrics_urls[i], NULL, true, err, errcap) != 0)
			return -1;
		s->nreps++;
	}
	s->out->nreplicas = n;
	return 0;
}

/* The instant query of --metrics-prometheus: every series name the
 * profile (and --watch-metric) reads, with the selector's matchers. */
#define QUERY_NAMES 512
struct names {
	const char *v[QUERY_NAMES];
	char s[QUERY_NAMES][160];
	size_t n;
};

static void add_name(void *ud, const char *name)
{
	struct names *nm = ud;
	for (size_t i = 0; i < nm->n; i++)
		if (strcmp(nm->s[i], name) == 0)
			return;
	if (nm->n < QUERY_NAMES && strlen(name) < sizeof nm->s[0]) {
		memcpy(nm->s[nm->n], name, strlen(name) + 1);
		nm->v[nm->n] = nm->s[nm->n];
		nm->n++;
	}
}

static int prom_init(struct scrape *s, char *err, size_t errcap)
{
	const struct config *cfg = s->cfg;
	struct promql_selector sel;
	char e2[256];
	if (promql_selector_parse(cfg->metrics_selector, &sel, e2, sizeof e2) != 0) {
		snprintf(err, errcap, "--metrics-selector: %s", e2);
		return -1;
	}
	struct names *nm = calloc(1, sizeof *nm);
	int rc = -1;
	if (!nm) {
		snprintf(err, errcap, "out of memory");
		goto out;
	}
	profile_series_names(s->want, add_name, nm);
	for (size_t i = 0; i < cfg->nwatch_metrics; i++) {
		struct profile_watch_expr w;
		if (profile_watch_parse(cfg->watch_metrics[i], &w, e2, sizeof e2) == 0)
			add_name(nm, w.name);	/* a bad one is said by the tracker */
	}
	size_t qcap = 64 * 1024;
	char *q = malloc(qcap);
	if (!q || promql_query_build(&sel, nm->v, nm->n, q, qcap) != 0) {
		free(q);
		snprintf(err, errcap, "the Prometheus query does not fit");
		goto out;
	}
	char *enc = curl_easy_escape(NULL, q, 0);
	free(q);
	const char *base = cfg->metrics_prometheus;
	size_t bl = strlen(base);
	while (bl > 0 && base[bl - 1] == '/')
		bl--;
	size_t ul = bl + (enc ? strlen(enc) : 0) + 32;
	struct target *tg = &s->prom;
	tg->long_url = enc ? malloc(ul) : NULL;
	if (!tg->long_url) {
		curl_free(enc);
		snprintf(err, errcap, "out of memory");
		goto out;
	}
	snprintf(tg->long_url, ul, "%.*s/api/v1/query?query=%s", (int)bl, base, enc);
	curl_free(enc);
	tg->out = calloc(1, sizeof *tg->out);
	if (!tg->out) {
		snprintf(err, errcap, "out of memory");
		goto out;
	}
	server_state_init(tg->out);
	redact_url(base, tg->out->url, sizeof tg->out->url);
	tg->nurls = 1;
	tg->locked = true;
	tg->enabled = true;
	tg->out->status = SERVER_PENDING;
	char shown[PROFILE_URL_MAX];
	redact_url(base, shown, sizeof shown);
	snprintf(s->out->replicas_source, sizeof s->out->replicas_source, "Prometheus %.90s %.90s", shown,
		 cfg->metrics_selector && cfg->metrics_selector[0] ? cfg->metrics_selector : "(every series)");
	rc = 0;
out:
	free(nm);
	return rc;
}

/* --metrics-discover dns:NAME:PORT[/PATH]: the replicas come with the
 * resolver's answers (on_dns). */
static int discover_init(struct scrape *s, char *err, size_t errcap)
{
	const char *rest, *why;
	const char *spec = s->cfg->metrics_discover;
	if (resolve_parse_spec(spec, s->dns_name, sizeof s->dns_name, &s->dns_port, &rest, &why) != 0) {
		snprintf(err, errcap, "--metrics-discover %s: %s", spec, why);
		return -1;
	}
	const char *path = *rest ? rest : profile_metrics_path(s->want == PROFILE_AUTO ? PROFILE_VLLM : s->want);
	if (strlen(path) + RESOLVE_ADDR_MAX + 16 >= PROFILE_URL_MAX) {
		snprintf(err, errcap, "--metrics-discover %s: the path is too long", spec);
		return -1;
	}
	snprintf(s->dns_path, sizeof s->dns_path, "%s", path);
	snprintf(s->out->replicas_source, sizeof s->out->replicas_source, "dns:%.100s:%d%.60s (every %d s)",
		 s->dns_name, s->dns_port, s->dns_path, (int)(DISCOVER_PERIOD_NS / CLOCK_NS_PER_S));
	s->dns = resolver_new(s->loop, s->dns_name, s->dns_port, DISCOVER_PERIOD_NS, on_dns, s, err, errcap);
	return s->dns ? 0 : -1;
}

struct scrape *scrape_new(struct ev_loop *loop, struct http *http, const struct config *cfg,
			  struct server_state *out, char *err, size_t errcap)
{
	int want = PROFILE_AUTO;
	if (errcap)
		err[0] = '\0';
	if (cfg->server && profile_parse(cfg->server, &want) != 0) {
		snprintf(err, errcap, "--server %s: unknown server", cfg->server);
		return NULL;
	}
	struct scrape *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->http = http;
	s->cfg = cfg;
	s->out = out;
	s->want = want;
	s->dynamic = cfg->metrics_discover || cfg->metrics_prometheus;
	server_state_init(out);
	s->interval_ns = cfg->metrics_interval_ns > 0 ? cfg->metrics_interval_ns : CLOCK_NS_PER_S;
	int64_t to = 2 * s->interval_ns;
	if (to < 10 * CLOCK_NS_PER_S)
		to = 10 * CLOCK_NS_PER_S;
	if (to > 60 * CLOCK_NS_PER_S)
		to = 60 * CLOCK_NS_PER_S;
	s->timeout_ms = (long)(to / CLOCK_NS_PER_MS);
	/* Scrapes keep their connections apart from the streams': a client
	 * request never rides (or is counted on) a scrape's keep-alive
	 * connection, and the other way round. */
	s->share = curl_share_init();
	if (!s->share || curl_share_setopt(s->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK) {
		snprintf(err, errcap, "cannot set up a connection pool for the metrics scrapes");
		scrape_free(s);
		return NULL;
	}
	if (build_headers(s) != 0 || target_init(s, &s->metrics, false, err, errcap) != 0 ||
	    target_init(s, &s->gpu, true, err, errcap) != 0 ||
	    (cfg->metrics_prometheus && target_init(s, &s->prom, false, err, errcap) != 0)) {
		if (!err[0])
			snprintf(err, errcap, "out of memory");
		scrape_free(s);
		return NULL;
	}
	s->prof = profile_tracker_new(want, (const char *const *)cfg->watch_metrics, cfg->nwatch_metrics,
				      cfg->window_ns, s->interval_ns, err, errcap);
	if (!s->prof) {
		scrape_free(s);
		return NULL;
	}
	s->metrics.prof = s->prof;
	if ((cfg->metrics_url && strlen(cfg->metrics_url) >= PROFILE_URL_MAX) ||
	    (cfg->gpu_metrics_url && strlen(cfg->gpu_metrics_url) >= PROFILE_URL_MAX)) {
		snprintf(err, errcap, "metrics URL longer than %d characters", PROFILE_URL_MAX - 1);
		scrape_free(s);
		return NULL;
	}
	char *origin = s->origin, o2[PROFILE_URL_MAX];
	origin_of(cfg->url ? cfg->url : "", origin, sizeof s->origin);
	struct target *m = &s->metrics;
	if (!cfg->metrics_url || strcmp(cfg->metrics_url, "none") != 0) {
		if (cfg->metrics_url) {
			snprintf(m->urls[0], sizeof m->urls[0], "%s", cfg->metrics_url);
			m->nurls = 1;
		} else {
			m->nurls = profile_default_urls(want, cfg->url ? cfg->url : "", m->urls, PROFILE_MAX_CANDIDATES);
			if (m->nurls < 1) {
				char shown[PROFILE_URL_MAX];
				redact_url(cfg->url ? cfg->url : "(no URL)", shown, sizeof shown);
				snprintf(err, errcap, "cannot build a metrics URL from %s; give --metrics-url", shown);
				scrape_free(s);
				return NULL;
			}
		}
		for (int i = 0; i < m->nurls; i++) {
			origin_of(m->urls[i], o2, sizeof o2);
			m->same_origin[i] = strcmp(origin, o2) == 0;
		}
		m->locked = m->nurls == 1;
		m->enabled = cfg->nmetrics_urls < 2 && !s->dynamic;
		out->status = SERVER_PENDING;
		redact_url(m->urls[0], out->url, sizeof out->url);
		snprintf(out->detected, sizeof out->detected, "%s", want == PROFILE_AUTO ? "" : profile_name(want));
	}
	if (cfg->nmetrics_urls >= 2 && replicas_init(s, err, errcap) != 0) {
		scrape_free(s);
		return NULL;
	}
	if (s->dynamic) {
		s->reps = calloc(SERVER_MAX_REPLICAS, sizeof *s->reps);
		s->repcap = SERVER_MAX_REPLICAS;
		if (!s->reps) {
			snprintf(err, errcap, "out of memory");
			scrape_free(s);
			return NULL;
		}
		if ((cfg->metrics_prometheus ? prom_init(s, err, errcap) : discover_init(s, err, errcap)) != 0) {
			scrape_free(s);
			return NULL;
		}
		snprintf(out->url, sizeof out->url, "%s", out->replicas_source);
	}
	if (cfg->gpu_metrics_url) {
		struct target *g = &s->gpu;
		snprintf(g->urls[0], sizeof g->urls[0], "%s", cfg->gpu_metrics_url);
		origin_of(g->urls[0], o2, sizeof o2);
		g->same_origin[0] = strcmp(origin, o2) == 0;
		g->nurls = 1;
		g->locked = true;
		g->enabled = true;
		out->gpu_status = SERVER_PENDING;
		redact_url(g->urls[0], out->gpu_url, sizeof out->gpu_url);
	}
	out->nwatch = (int)cfg->nwatch_metrics;
	for (size_t i = 0; i < cfg->nwatch_metrics && i < SERVER_MAX_WATCH; i++)
		snprintf(out->watch[i].expr, sizeof out->watch[i].expr, "%s", cfg->watch_metrics[i]);
	return s;
}

void scrape_start(struct scrape *s)
{
	if (!s || s->running)
		return;
	s->running = true;
	struct target *ts[] = { &s->metrics, &s->gpu, &s->prom };
	for (size_t i = 0; i < 3; i++) {
		if (!ts[i]->enabled)
			continue;
		ev_timer_set(&ts[i]->timer, 0., (double)s->interval_ns / 1e9);
		ev_timer_start(s->loop, &ts[i]->timer);
	}
	for (int i = 0; i < s->nreps; i++) {
		if (!s->reps[i].easy || s->reps[i].gone)
			continue;
		ev_timer_set(&s->reps[i].timer, 0., (double)s->interval_ns / 1e9);
		ev_timer_start(s->loop, &s->reps[i].timer);
	}
}

static void target_stop(struct target *tg)
{
	struct scrape *s = tg->s;
	ev_timer_stop(s->loop, &tg->timer);
	if (tg->in_flight) {
		http_remove(s->http, tg->easy);
		tg->in_flight = false;
	}
	if (tg->enabled && get_status(tg) == SERVER_PENDING) {
		char msg[160];
		if (tg->sent_ns)
			snprintf(msg, sizeof msg, "no answer before the run ended (waited %.1f s)",
				 (double)(clock_now_ns() - tg->sent_ns) / 1e9);
		else
			snprintf(msg, sizeof msg, "the run ended before the first scrape");
		set_status(tg, SERVER_DOWN);
		char *dst = tg->gpu ? tg->out->gpu_error : tg->out->last_error;
		snprintf(dst, sizeof tg->out->last_error, "%s", msg);
		redact_userinfo(dst);
	}
}

void scrape_stop(struct scrape *s)
{
	if (!s)
		return;
	s->running = false;
	if (s->metrics.s)
		target_stop(&s->metrics);
	if (s->gpu.s)
		target_stop(&s->gpu);
	if (s->prom.s)
		target_stop(&s->prom);
	/* The replicas stand as the run left them. */
	resolver_free(s->dns);
	s->dns = NULL;
	for (int i = 0; i < s->nreps; i++)
		if (s->reps[i].s && s->reps[i].easy && !s->reps[i].gone)
			target_stop(&s->reps[i]);
	if ((s->nreps > 0 && s->reps[0].s) || s->dynamic)
		merge(s, clock_now_ns());
}

void scrape_free(struct scrape *s)
{
	if (!s)
		return;
	resolver_free(s->dns);
	struct target *ts[] = { &s->metrics, &s->gpu, &s->prom };
	for (size_t i = 0; i < 3; i++) {
		if (!ts[i]->s)
			continue;
		ev_timer_stop(s->loop, &ts[i]->timer);
		if (ts[i]->in_flight)
			http_remove(s->http, ts[i]->easy);
		if (ts[i]->easy)
			curl_easy_cleanup(ts[i]->easy);
		free(ts[i]->buf);
	}
	free(s->prom.long_url);
	if (s->prom.out != s->out)
		free(s->prom.out);
	for (int i = 0; i < s->nreps; i++) {
		struct target *tg = &s->reps[i];
		if (!tg->s)
			continue;
		if (tg->easy) {
			ev_timer_stop(s->loop, &tg->timer);
			if (tg->in_flight)
				http_remove(s->http, tg->easy);
			curl_easy_cleanup(tg->easy);
		}
		free(tg->buf);
		if (tg->replica)
			free(tg->out);
		profile_tracker_free(tg->prof);
	}
	free(s->reps);
	/* After the easy handles: a share in use cannot be freed. It closes
	 * the pooled connections while the multi is still there to be told. */
	if (s->share)
		curl_share_cleanup(s->share);
	curl_slist_free_all(s->hdr_plain);
	curl_slist_free_all(s->hdr_origin);
	profile_tracker_free(s->prof);
	free(s);
}

void scrape_update_derived(struct scrape *s, int64_t now_ns, uint64_t window_output_tokens, double window_seconds)
{
	if (!s || !s->gpu.enabled)
		return;
	struct server_state *o = s->out;
	double w, jpt;
	int64_t span = (int64_t)(window_seconds * 1e9);
	bool ok = (o->gpu_status == SERVER_UP || o->gpu_status == SERVER_STALE) &&
		  gpu_ring_mean_power(&s->ring, now_ns, span, &w) &&
		  gpu_joules_per_token(w, window_seconds, window_output_tokens, &jpt);
	o->joules_per_token.valid = ok;
	o->joules_per_token.v = ok ? jpt : 0;
	if (ok)
		server_agg_add(&o->jpt_agg, jpt);
}
