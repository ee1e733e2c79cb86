/* infertop fleet (fleet.h): the generators, their status polls, the exact
 * merge, the run view built from it, and the commands fanned out. */
#include "config.h"

#include "infertop/fleet.h"
#include "infertop/bodybuf.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infertop/clock.h"
#include "infertop/cmd_target.h"
#include "infertop/hist.h"
#include "infertop/http.h"
#include "infertop/load.h"
#include "infertop/options.h"
#include "infertop/redact.h"
#include "infertop/result.h"
#include "infertop/url.h"
#include "infertop/sampler.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/snapshot.h"
#include "infertop/stats.h"
#include "infertop/tls.h"
#include "infertop/view.h"

/* A generator's control API: polled, one poll in flight at a time. */
struct endpoint {
	struct fleet *f;
	char url[FLEET_URL_MAX];     /* http://host:port */
	char id[FLEET_URL_MAX];      /* host:port */
	bool in_flight;
	double sent_unix;
	int64_t last_ok_ns;          /* 0: never */
	int64_t added_ns;
	struct row *row;             /* its current run; NULL: none yet */
	bool idle;                   /* serve, between runs (409) */
	bool refused;                /* its last status was impossible: not counted */
	char msg[200];
	/* Its status poll: one transfer kept for the endpoint's life, so a
	 * poll costs no curl handle set-up and finds its connection in the
	 * same curl multi (NULL until the first poll). */
	struct req *poll;
};

/* A run: the latest status of one generator's run. */
struct row {
	long ep;                     /* the endpoint that serves it now */
	char run_id[33];
	enum fleet_gen_state state;
	bool have;                   /* snap holds a status */
	struct snapshot snap;
	char *raw;                   /* the status as received (a fleet snapshot saves it) */
	int64_t last_seen_ns;
	double offset_s;
	bool foreign;                /* another target or model than the reference */
	char msg[200];
};

struct fleet {
	struct ev_loop *loop;
	const struct config *cfg;
	struct http *http;
	struct curl_slist *hdr;      /* token (when set) and JSON content type */
	struct endpoint **eps;
	size_t neps, capeps;
	struct row **rows;
	size_t nrows, caprows;
	ev_timer poll;
	bool running;
	bool dirty;
	long inflight_reqs;          /* fleet_http transfers not done yet */
	struct req *reqs;            /* ... listed, for fleet_free to cancel */

	/* The merge and what the view is made of. */
	struct snapshot merged;
	bool have_merged;
	/* The next parse and the next merge are made in these, then swapped
	 * with a row's or the merge's: their histograms (16 x 188 KB) are
	 * reused, not allocated and zeroed for every status document. */
	struct snapshot parse_spare, merge_spare;
	/* The reference the runs must share: --start's spec (fixed) or the
	 * majority of the generators' current runs. */
	char ref_url[1024], ref_model[256];
	bool have_ref_url, have_ref_model;
	bool ref_url_fixed, ref_model_fixed;
	bool ref_dirty;                       /* a run's target may have changed */
	/* Runs no generator serves any more: a ring of the newest. */
	struct fleet_gen_info fin[FLEET_FINISHED_MAX];
	int64_t fin_seen_ns[FLEET_FINISHED_MAX];
	size_t nfin, fin_next;
	char *token;                 /* scrubbed from all a generator says */
	const char *secrets[2];
	double poll_s;               /* FLEET_POLL_NS, or $INFERTOP_FLEET_POLL_MS */
	struct config vcfg;          /* the view's options: cfg with the target URL */
	char vurl[1024];
	struct stats st;
	struct hist *empty[STAT_NMETRICS];   /* the view's histograms before any status */
	struct load ld;
	struct server_state srv;
	bool have_srv;
	struct series *series;
	struct sampler sampler;
	int64_t t_start, t_end;
	bool finished, auto_finish;
	char stop_reason[128];
	struct cmd_record last_cmd;
	/* A load change the statuses do not show yet: the view shows it for
	 * a while, so a second + counts from the new total. */
	int64_t override_until;
	bool ov_open;
	long ov_conc;
	double ov_rate;

	fleet_tick_fn on_tick;
	void *tick_ud;
	/* --start: the generators and the load the run was planned with. */
	size_t planned;
	bool planned_open;
	double planned_target;
};

static const char *const state_names[FLEET_GEN_NSTATES] = {
	"waiting", "idle", "running", "draining", "done", "lost", "refused", "ended",
};

const char *fleet_gen_state_name(enum fleet_gen_state s)
{
	return (unsigned)s < FLEET_GEN_NSTATES ? state_names[s] : "?";
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- HTTP ---- */

struct req {
	struct http_xfer x;          /* CURLOPT_PRIVATE points here */
	struct fleet *f;
	CURL *easy;
	char *buf;
	size_t len, cap;
	bool too_large;
	char *body;
	char errbuf[CURL_ERROR_SIZE];
	fleet_http_fn fn;
	void *ud;
	bool keep;                   /* an endpoint's poll: reused, freed with it */
	struct req *prev, *next;     /* the fleet's transfers in flight */
};

static size_t req_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct req *r = ud;
	size_t n = size * nmemb;
	int rc = bodybuf_append(&r->buf, &r->len, &r->cap, p, n, FLEET_BODY_MAX, 16384);
	r->too_large = rc == BODYBUF_TOO_LARGE;
	return rc == BODYBUF_OK ? n : 0;
}

static void req_free(struct req *r)
{
	http_release(r->f->http, &r->x);
	curl_easy_cleanup(r->easy);
	free(r->buf);
	free(r->body);
	free(r);
}

static void req_done(struct http_xfer *x, CURLcode rc)
{
	struct req *r = (struct req *)x;
	long code = 0;
	char err[CURL_ERROR_SIZE + 32] = "";
	if (r->too_large)
		snprintf(err, sizeof err, "answer larger than %u bytes", FLEET_BODY_MAX);
	else if (rc != CURLE_OK)
		snprintf(err, sizeof err, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc));
	else
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
	struct fleet *f = r->f;
	f->inflight_reqs--;
	if (r->prev)
		r->prev->next = r->next;
	else
		f->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
	if (r->fn)
		r->fn(r->ud, err[0] ? 0 : code, r->buf ? r->buf : "", r->len, err[0] ? err : NULL);
	if (r->keep) {
		r->len = 0;
		r->too_large = false;
		r->errbuf[0] = '\0';
		return;
	}
	req_free(r);
}

/* A transfer set up but not sent: NULL on OOM. */
static struct req *req_make(struct fleet *f, const char *method, const char *url, const char *body, long timeout_ms,
			    fleet_http_fn fn, void *ud)
{
	struct req *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->f = f;
	r->fn = fn;
	r->ud = ud;
	r->x.done = req_done;
	r->easy = curl_easy_init();
	if (!r->easy || (body && !(r->body = strdup(body)))) {
		req_free(r);
		return NULL;
	}
	CURL *c = r->easy;
	curl_easy_setopt(c, CURLOPT_PRIVATE, &r->x);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, req_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : FLEET_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, FLEET_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, f->hdr);
	http_easy_tls(c, &(struct tls_opts){.insecure = f->cfg->insecure, .cafile = f->cfg->cacert});
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(r->body));
	}
	if (strcmp(method, "GET") != 0 && !(body && strcmp(method, "POST") == 0))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "POST") == 0 && !body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
	}
	return r;
}

/* Sends r; it is listed in flight until its callback. */
static int req_send(struct fleet *f, struct req *r)
{
	if (http_add(f->http, r->easy, false) != 0)
		return -1;
	f->inflight_reqs++;
	r->next = f->reqs;
	if (f->reqs)
		f->reqs->prev = r;
	f->reqs = r;
	return 0;
}

int fleet_http(struct fleet *f, const char *method, const char *url, const char *body, long timeout_ms,
	       fleet_http_fn fn, void *ud)
{
	struct req *r = req_make(f, method, url, body, timeout_ms, fn, ud);
	if (!r)
		return -1;
	if (req_send(f, r) != 0) {
		req_free(r);
		return -1;
	}
	return 0;
}

long fleet_http_shards(const struct fleet *f)
{
	return http_shards(f->http);
}

/* ---- endpoints and rows ---- */

static bool grow(void *pp, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return true;
	size_t nc = *cap ? *cap * 2 : 8;
	void *p = realloc(*(void **)pp, nc * elem);
	if (!p)
		return false;
	*(void **)pp = p;
	*cap = nc;
	return true;
}

int fleet_add_endpoint(struct fleet *f, const char *url, char *err, size_t errcap)
{
	char base[FLEET_URL_MAX];
	switch (url_service_base(url, base, sizeof base)) {
	case 0:
		break;
	case URL_BASE_CREDENTIALS:
		/* Not echoed: the password would be on the screen. */
		snprintf(err, errcap, "a generator URL with a user or password (the token goes in --token-env VAR)");
		return -1;
	case URL_BASE_LONG:
		snprintf(err, errcap, "a generator URL is too long");
		return -1;
	default:
		snprintf(err, errcap, "%s: expected an http(s) URL of a generator's control API, http://HOST:PORT",
			 url);
		return -1;
	}
	for (size_t i = 0; i < f->neps; i++)
		if (strcmp(f->eps[i]->url, base) == 0)
			return 0;
	if (f->neps >= FLEET_MAX_ENDPOINTS) {
		snprintf(err, errcap, "more than %d generators", FLEET_MAX_ENDPOINTS);
		return -1;
	}
	struct endpoint *ep = calloc(1, sizeof *ep);
	if (!ep || !grow(&f->eps, &f->capeps, f->neps, sizeof *f->eps)) {
		free(ep);
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	ep->f = f;
	snprintf(ep->url, sizeof ep->url, "%s", base);
	snprintf(ep->id, sizeof ep->id, "%s", strstr(base, "://") + 3); /* HOST:PORT */
	ep->row = NULL;
	ep->added_ns = clock_now_ns();
	f->eps[f->neps++] = ep;
	return 0;
}

size_t fleet_nendpoints(const struct fleet *f)
{
	return f->neps;
}

const char *fleet_endpoint_url(const struct fleet *f, size_t i)
{
	return i < f->neps ? f->eps[i]->url : NULL;
}

static struct row *row_find(const struct fleet *f, const char *run_id)
{
	for (size_t i = 0; i < f->nrows; i++)
		if (strcmp(f->rows[i]->run_id, run_id) == 0)
			return f->rows[i];
	return NULL;
}

static struct row *row_add(struct fleet *f, long ep, const char *run_id)
{
	struct row *r = calloc(1, sizeof *r);
	if (!r || !grow(&f->rows, &f->caprows, f->nrows, sizeof *f->rows)) {
		free(r);
		return NULL;
	}
	r->ep = ep;
	snprintf(r->run_id, sizeof r->run_id, "%s", run_id);
	r->state = FLEET_GEN_WAITING;
	r->offset_s = NAN;
	f->rows[f->nrows++] = r;
	return r;
}

static bool counted(const struct fleet *f, const struct row *r)
{
	return r->have && !r->foreign && r->state != FLEET_GEN_REFUSED && !f->eps[r->ep]->refused;
}

/* A row as the panel shows it. */
static void row_info(const struct fleet *f, const struct row *r, int64_t now, struct fleet_gen_info *out)
{
	memset(out, 0, sizeof *out);
	const struct endpoint *ep = r->ep >= 0 && (size_t)r->ep < f->neps ? f->eps[r->ep] : NULL;
	snprintf(out->id, sizeof out->id, "%s", ep ? ep->id : "?");
	snprintf(out->run_id, sizeof out->run_id, "%s", r->run_id);
	out->state = r->state;
	out->counted = counted(f, r);
	if (r->foreign || (ep && ep->refused && ep->row == r))
		out->state = FLEET_GEN_REFUSED;
	out->last_seen_s = r->last_seen_ns ? (double)(now - r->last_seen_ns) / 1e9 : -1;
	out->clock_offset_s = r->offset_s;
	snprintf(out->msg, sizeof out->msg, "%s", r->msg[0] ? r->msg : ep ? ep->msg : "");
	if (!r->have)
		return;
	const struct snapshot *s = &r->snap;
	out->open_loop = s->open_loop;
	out->target = s->open_loop ? s->rate : s->concurrency;
	out->in_flight = s->in_flight;
	out->completed = s->run_c.completed;
	out->errors = snapshot_failed(s);
	out->req_s = s->win_seconds > 0 ? (double)s->win_c.completed / s->win_seconds : 0;
}

/* A run no generator serves any more leaves the totals: its row goes to
 * the ring of finished runs (a few hundred bytes, its last figures), its
 * status is freed (or kept as the next parse's spare: its histograms
 * reused), so a fleet over a serve that runs job after job stays flat. */
static void retire(struct fleet *f, struct row *r)
{
	for (size_t i = 0; i < f->neps; i++)
		if (f->eps[i]->row == r)
			return;
	int64_t now = clock_now_ns();
	size_t k = f->fin_next;
	row_info(f, r, now, &f->fin[k]);
	f->fin[k].counted = false;
	f->fin[k].in_flight = 0;
	f->fin[k].req_s = 0;
	f->fin_seen_ns[k] = r->last_seen_ns;
	f->fin_next = (k + 1) % FLEET_FINISHED_MAX;
	if (f->nfin < FLEET_FINISHED_MAX)
		f->nfin++;
	if (r->have && !f->parse_spare.run[0])
		f->parse_spare = r->snap;
	else if (r->have)
		snapshot_release(&r->snap);
	free(r->raw);
	for (size_t i = 0; i < f->nrows; i++)
		if (f->rows[i] == r) {
			memmove(&f->rows[i], &f->rows[i + 1], (f->nrows - i - 1) * sizeof *f->rows);
			f->nrows--;
			break;
		}
	free(r);
	f->dirty = true;
	f->ref_dirty = true;
}

static enum fleet_gen_state state_of(const char *status)
{
	if (strcmp(status, "running") == 0)
		return FLEET_GEN_RUNNING;
	if (strcmp(status, "draining") == 0)
		return FLEET_GEN_DRAINING;
	if (strcmp(status, "done") == 0)
		return FLEET_GEN_DONE;
	return FLEET_GEN_WAITING;  /* "idle": built, not started (a --start waiting for its time) */
}

/* A status the fleet cannot use at all: why, or "" when it can. Another
 * target or model is not decided here but against the reference, at the
 * tick (update_reference). */
static void check_status(const struct snapshot *s, char *why, size_t cap)
{
	why[0] = '\0';
	if (s->schema != SNAPSHOT_SCHEMA) {
		snprintf(why, cap, "status schema %d, this fleet reads %d", s->schema, SNAPSHOT_SCHEMA);
		return;
	}
	if (!s->run_id[0]) {
		snprintf(why, cap, "its status has no run_id");
		return;
	}
	if (fleet_status_check(s, why, cap) != 0)
		return;
	double now = wall_now();
	if (fabs(s->taken_unix - now) > FLEET_SKEW_MAX_S)
		snprintf(why, cap, "impossible status: taken %.0f s from this clock", s->taken_unix - now);
}

/* Said once when it starts (on the dashboard, on the status line). why is
 * scrubbed already. */
static void refuse(struct endpoint *ep, const char *why, bool was)
{
	ep->refused = true;
	ep->f->dirty = true;
	ep->f->ref_dirty = true;
	snprintf(ep->msg, sizeof ep->msg, "refused: %.180s", why);
	if (!was)
		fprintf(stderr, "infertop fleet: %s: %s\n", ep->id, ep->msg);
}

/* The reference (the target and model every counted run must share): the
 * parts --start fixed, the others those of most current runs (a tie keeps
 * the one in use, so one generator cannot take it from another). Then
 * every run of another target or model is marked foreign, with why. */
static void update_reference(struct fleet *f)
{
	if (!f->ref_dirty)
		return;
	f->ref_dirty = false;
	if (!f->ref_url_fixed || !f->ref_model_fixed) {
		const struct row *best = NULL;
		size_t bestn = 0, curn = 0;
		for (size_t i = 0; i < f->nrows; i++) {
			const struct row *r = f->rows[i];
			if (!r->have || f->eps[r->ep]->refused)
				continue;
			if (f->ref_url_fixed && strcmp(r->snap.target_url, f->ref_url) != 0)
				continue;
			if (f->ref_model_fixed && strcmp(r->snap.model, f->ref_model) != 0)
				continue;
			size_t n = 0;
			for (size_t j = 0; j < f->nrows; j++) {
				const struct row *o = f->rows[j];
				n += o->have && !f->eps[o->ep]->refused && strcmp(o->snap.target_url, r->snap.target_url) == 0 &&
				     strcmp(o->snap.model, r->snap.model) == 0;
			}
			if (n > bestn) {
				best = r;
				bestn = n;
			}
			if (f->have_ref_url && f->have_ref_model && strcmp(r->snap.target_url, f->ref_url) == 0 &&
			    strcmp(r->snap.model, f->ref_model) == 0)
				curn = n;
		}
		if (best && bestn > curn) {
			snprintf(f->ref_url, sizeof f->ref_url, "%s", best->snap.target_url);
			snprintf(f->ref_model, sizeof f->ref_model, "%s", best->snap.model);
			f->have_ref_url = f->have_ref_model = true;
		}
	}
	for (size_t i = 0; i < f->nrows; i++) {
		struct row *r = f->rows[i];
		if (!r->have)
			continue;
		char why[200] = "";
		if (f->have_ref_url && strcmp(r->snap.target_url, f->ref_url) != 0)
			snprintf(why, sizeof why, "refused: it loads %.80s, the fleet %.80s", r->snap.target_url, f->ref_url);
		else if (f->have_ref_model && strcmp(r->snap.model, f->ref_model) != 0)
			snprintf(why, sizeof why, "refused: it asks for model %.70s, the fleet %.70s", r->snap.model,
				 f->ref_model);
		bool foreign = why[0] != '\0';
		if (foreign && (!r->foreign || strncmp(r->msg, why, sizeof r->msg - 1) != 0))
			fprintf(stderr, "infertop fleet: %s: %s\n", f->eps[r->ep]->id, why);
		if (foreign != r->foreign)
			f->dirty = true;
		if (foreign)
			snprintf(r->msg, sizeof r->msg, "%.199s", why);
		else if (r->foreign)
			r->msg[0] = '\0';
		r->foreign = foreign;
	}
}

void fleet_set_reference(struct fleet *f, const char *url, const char *model)
{
	if (url && *url) {
		snprintf(f->ref_url, sizeof f->ref_url, "%s", url);
		f->have_ref_url = f->ref_url_fixed = true;
	}
	if (model && *model) {
		snprintf(f->ref_model, sizeof f->ref_model, "%s", model);
		f->have_ref_model = f->ref_model_fixed = true;
	}
	f->ref_dirty = true;
}

const char *const *fleet_secrets(const struct fleet *f)
{
	return f->secrets;
}

static void on_status(void *ud, long code, const char *body, size_t len, const char *err)
{
	struct endpoint *ep = ud;
	struct fleet *f = ep->f;
	long epi = 0;
	while ((size_t)epi < f->neps && f->eps[epi] != ep)
		epi++;
	int64_t now = clock_now_ns();
	double mid = (ep->sent_unix + wall_now()) / 2;
	ep->in_flight = false;
	bool was_dirty = f->dirty;
	f->dirty = true;
	struct row *cur = ep->row;
	if (err || (code != 200 && code != 409)) {
		if (err)
			fleet_text_scrub_into(ep->msg, sizeof ep->msg, err, strlen(err), f->secrets);
		else
			snprintf(ep->msg, sizeof ep->msg, "GET /v1/status: HTTP %ld", code);
		if (cur)
			snprintf(cur->msg, sizeof cur->msg, "%s", ep->msg);
		return;
	}
	ep->last_ok_ns = now;
	if (code == 409) {
		ep->refused = false;
		/* serve between runs: the run it had is over. */
		ep->idle = true;
		ep->msg[0] = '\0';
		if (cur && (cur->state == FLEET_GEN_RUNNING || cur->state == FLEET_GEN_DRAINING ||
			    cur->state == FLEET_GEN_LOST))
			cur->state = FLEET_GEN_DONE;
		return;
	}
	ep->idle = false;
	/* The very document of last time (a generator whose run is over, or
	 * one polled within its status cache's life): nothing to parse or
	 * merge again. */
	if (cur && cur->have && !ep->refused && cur->raw && strlen(cur->raw) == len && memcmp(cur->raw, body, len) == 0) {
		enum fleet_gen_state st = state_of(cur->snap.status);
		f->dirty = was_dirty || cur->state != st || (cur->msg[0] && !cur->foreign) || ep->msg[0];
		cur->state = st;
		if (!cur->foreign)
			cur->msg[0] = '\0';
		ep->msg[0] = '\0';
		cur->last_seen_ns = now;
		return;
	}
	struct snapshot *sp = &f->parse_spare;
	char why[300];
	bool was_refused = ep->refused;
	if (snapshot_reparse(sp, body, len, why, sizeof why) != 0) {
		fleet_text_scrub(why, f->secrets);
		refuse(ep, why, was_refused);
		return;
	}
	/* Everything it says is scrubbed before anything of it is shown,
	 * merged or saved. */
	fleet_status_scrub(sp, f->secrets);
	check_status(sp, why, sizeof why);
	if (why[0]) {
		refuse(ep, why, was_refused);
		return;
	}
	struct row *r = row_find(f, sp->run_id);
	if (!r && !(r = row_add(f, epi, sp->run_id)))
		return;
	/* A run that answers at another address (DNS gave it two) is still
	 * one run: the row follows the address that answered last. */
	r->ep = epi;
	if (was_refused)
		f->ref_dirty = true;
	ep->refused = false;
	if (ep->row != r)
		fprintf(stderr, "infertop fleet: %s: run %.8s\n", ep->id, sp->run_id);
	ep->row = r;
	ep->msg[0] = '\0';
	if (!r->have || strcmp(r->snap.target_url, sp->target_url) != 0 || strcmp(r->snap.model, sp->model) != 0)
		f->ref_dirty = true;
	char *raw = malloc(len + 1);
	if (raw) {
		memcpy(raw, body, len);
		raw[len] = '\0';
	}
	free(r->raw);
	r->raw = raw;
	/* The row's previous document becomes the spare (released by the next
	 * parse, its histograms kept). */
	struct snapshot old = r->snap;
	r->snap = *sp;
	if (r->have)
		*sp = old;
	else
		memset(sp, 0, sizeof *sp);
	r->have = true;
	r->last_seen_ns = now;
	r->offset_s = r->snap.taken_unix - mid;
	r->state = state_of(r->snap.status);
	if (!r->foreign)
		r->msg[0] = '\0';
	/* The run it had is over: done, or lost (it stays so: it was never
	 * seen to end), or else ended by the new one; it leaves the totals. */
	if (cur && cur != r) {
		if (cur->state != FLEET_GEN_DONE && cur->state != FLEET_GEN_LOST) {
			cur->state = FLEET_GEN_ENDED;
			snprintf(cur->msg, sizeof cur->msg, "its generator started run %.8s", r->run_id);
		}
		retire(f, cur);
	}
}

static void poll_endpoint(struct fleet *f, struct endpoint *ep, int64_t now)
{
	if (ep->in_flight)
		return; /* a slow generator gets one poll at a time, never a pile */
	if (!ep->poll) {
		char url[FLEET_URL_MAX + 32];
		/* Lean: the figures the merge recomputes are not sent. */
		snprintf(url, sizeof url, "%s/v1/status?lean=1", ep->url);
		if (!(ep->poll = req_make(f, "GET", url, NULL, 0, on_status, ep)))
			return;
		ep->poll->keep = true;
	}
	ep->sent_unix = wall_now();
	if (req_send(f, ep->poll) == 0)
		ep->in_flight = true;
	(void)now;
}

/* ---- the merge and the view ---- */

static void mark_lost(struct fleet *f, int64_t now)
{
	for (size_t i = 0; i < f->neps; i++) {
		struct endpoint *ep = f->eps[i];
		struct row *r = ep->row;
		if (!r)
			continue;
		int64_t seen = ep->last_ok_ns ? ep->last_ok_ns : ep->added_ns;
		bool silent = now - seen > FLEET_LOST_NS;
		if (silent && r->state != FLEET_GEN_LOST && r->state != FLEET_GEN_ENDED && r->state != FLEET_GEN_DONE) {
			r->state = FLEET_GEN_LOST;
			fprintf(stderr, "infertop fleet: %s: lost (%s); its last counts stay in the totals\n", ep->id,
				ep->msg[0] ? ep->msg : "no answer");
			f->dirty = true;
		}
	}
}

static void view_load(struct fleet *f)
{
	memset(&f->ld, 0, sizeof f->ld);
	f->ld.loop = f->loop;
	const struct snapshot *m = &f->merged;
	f->ld.mode = m->open_loop ? LOAD_OPEN : LOAD_CLOSED;
	f->ld.rate = m->rate;
	f->ld.concurrency = lround(m->concurrency);
	f->ld.max_concurrency = lround(m->max_concurrency);
	f->ld.paused = m->paused;
	/* The fleet's keys ask before a jump as one run's do; its
	 * generators then get "force" (the change was confirmed here). */
	f->ld.max_change = f->cfg->max_change;
	if (clock_now_ns() < f->override_until) {
		f->ld.mode = f->ov_open ? LOAD_OPEN : LOAD_CLOSED;
		if (f->ov_open)
			f->ld.rate = f->ov_rate;
		else
			f->ld.concurrency = f->ov_conc;
	}
}

/* Seconds of a merge as ns: every status is range-checked, and this
 * bound keeps the view's arithmetic defined whatever a merge adds up to. */
static int64_t secs_ns(double s)
{
	return s > 0 ? (s < 4e9 ? (int64_t)(s * 1e9) : INT64_C(4000000000000000000)) : 0;
}

/* struct stats from the merge: pointers to its histograms, its counters.
 * The window is the merged window's length, ending now. */
static void view_stats(struct fleet *f, int64_t now)
{
	const struct snapshot *m = &f->merged;
	struct stats *st = &f->st;
	memset(st, 0, sizeof *st);
	for (int k = 0; k < STAT_NMETRICS; k++) {
		st->run[k] = m->run[k];
		st->win[k] = m->win[k];
	}
	st->run_c = m->run_c;
	st->win_c = m->win_c;
	st->all_c = m->run_c;
	/* The prefix cache's and the sessions' figures (the sessions panel). */
	for (int x = 0; x < XH_N; x++)
		st->xh[x] = m->xh[x];
	st->sessions_done = m->sessions_done;
	st->sessions_failed = m->sessions_failed;
	st->sessions_context = m->sessions_context;
	st->sessions_incomplete = m->sessions_incomplete;
	st->session_turns = m->session_turns;
	int64_t win_ns = secs_ns(m->win_seconds);
	st->slice_ns = win_ns > 0 ? win_ns : 1;
	st->slices_used = 1;
	st->slice_start_ns = now - win_ns;
	st->start_ns = now - secs_ns(m->elapsed);
	st->started = m->started;
	st->in_flight = m->in_flight;
	st->max_in_flight = m->max_in_flight;
	st->connections = m->connections;
	st->connection_retries = m->connection_retries;
	st->tokens_from_usage = m->tokens_from_usage;
	st->tokens_from_chunks = m->tokens_from_chunks;
	st->usage_mismatch = m->usage_mismatch;
	memcpy(st->usage_mismatch_msg, m->usage_mismatch_msg, sizeof st->usage_mismatch_msg);
	memcpy(st->errors, m->errors, sizeof st->errors);
	memcpy(st->http_codes, m->http_codes, sizeof st->http_codes);
	memcpy(st->last_msg, m->last_msg, sizeof st->last_msg);
	uint64_t most = 0;
	for (int k = 0; k < ERR_NKINDS; k++)
		if (m->errors[k] > most) {
			most = m->errors[k];
			st->last_err = (enum err_kind)k;
		}
	for (int c = STATS_HTTP_CODES - 1; c >= 0; c--)
		if (m->http_codes[c] && c >= 400) {
			st->last_http = c;
			break;
		}
}

/* The server as one generator scraped it (they all load the same one; a
 * sum of their scrapes would count the server several times): the
 * freshest counted run's. */
static void view_server(struct fleet *f)
{
	const struct row *best = NULL;
	for (size_t i = 0; i < f->nrows; i++) {
		const struct row *r = f->rows[i];
		if (counted(f, r) && r->snap.server && (!best || r->last_seen_ns > best->last_seen_ns))
			best = r;
	}
	server_state_init(&f->srv);
	f->have_srv = best != NULL;
	if (best)
		snapshot_server_state(best->snap.server, &f->srv);
}

static void remerge(struct fleet *f, int64_t now)
{
	const struct snapshot **src = calloc(f->nrows ? f->nrows : 1, sizeof *src);
	if (!src)
		return;
	size_t n = 0;
	for (size_t i = 0; i < f->nrows; i++)
		if (counted(f, f->rows[i]))
			src[n++] = &f->rows[i]->snap;
	if (n) {
		char err[256];
		if (snapshot_remerge(&f->merge_spare, src, n, err, sizeof err) == 0) {
			/* The previous merge becomes the spare: the view's pointers
			 * into it are renewed just below. */
			struct snapshot old = f->merged;
			f->merged = f->merge_spare;
			if (f->have_merged)
				f->merge_spare = old;
			else
				memset(&f->merge_spare, 0, sizeof f->merge_spare);
			f->have_merged = true;
			if (!f->t_start)
				f->t_start = now - secs_ns(f->merged.elapsed);
			snprintf(f->vurl, sizeof f->vurl, "%s", f->merged.target_url);
			view_stats(f, now);
			view_load(f);
			view_server(f);
		} else {
			snprintf(f->last_cmd.msg, sizeof f->last_cmd.msg, "merge: %.140s", err);
		}
	}
	free(src);
	f->dirty = false;
}

/* Every run seen is over: done, replaced or refused, or lost (a run
 * whose process ended with it is lost to the polls; all of them silent
 * for FLEET_GONE_NS means the fleet has nothing left to watch). */
#define FLEET_GONE_NS (10 * CLOCK_NS_PER_S)
static bool all_over(const struct fleet *f, int64_t now)
{
	bool any_done = false, any_lost = false;
	int64_t last_seen = 0;
	for (size_t i = 0; i < f->neps; i++) {
		const struct endpoint *ep = f->eps[i];
		if (!ep->row && !ep->refused)
			return false;
		if (ep->last_ok_ns > last_seen)
			last_seen = ep->last_ok_ns;
	}
	for (size_t i = 0; i < f->nrows; i++) {
		if (!counted(f, f->rows[i]))
			continue; /* refused: not the fleet's to wait for */
		enum fleet_gen_state s = f->rows[i]->state;
		if (s == FLEET_GEN_DONE)
			any_done = true;
		else if (s == FLEET_GEN_LOST)
			any_lost = true;
		else if (s != FLEET_GEN_ENDED && s != FLEET_GEN_REFUSED)
			return false;
	}
	return any_done || (any_lost && now - last_seen > FLEET_GONE_NS);
}

static void tick(struct fleet *f, int64_t now)
{
	mark_lost(f, now);
	update_reference(f);
	if (f->dirty)
		remerge(f, now);
	else if (f->have_merged)
		view_load(f);
	if (f->have_merged && !f->finished) {
		struct run_view v;
		fleet_view(f, &v);
		sampler_push(&f->sampler, f->series, &v, now);
	}
	if (f->auto_finish && !f->finished && all_over(f, now))
		fleet_finish(f, "every run is over");
	if (f->on_tick)
		f->on_tick(f, f->tick_ud, now);
}

static void on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct fleet *f = w->data;
	int64_t now = clock_now_ns();
	for (size_t i = 0; i < f->neps; i++)
		poll_endpoint(f, f->eps[i], now);
	tick(f, now);
}

/* ---- life ---- */

struct fleet *fleet_new(struct ev_loop *loop, const struct config *cfg, char *err, size_t errcap)
{
	struct fleet *f = calloc(1, sizeof *f);
	if (!f) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	f->loop = loop;
	f->cfg = cfg;
	f->auto_finish = true;
	f->vcfg = *cfg;
	f->vcfg.url = f->vurl;
	f->http = http_new(loop);
	f->series = series_new();
	for (int k = 0; k < STAT_NMETRICS; k++) {
		if (!(f->empty[k] = hist_new())) {
			snprintf(err, errcap, "out of memory");
			fleet_free(f);
			return NULL;
		}
		f->st.run[k] = f->st.win[k] = f->empty[k];
	}
	f->st.slice_ns = 1;
	f->st.slices_used = 1;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	f->hdr = h;
	if (!f->http || !f->series || !h) {
		snprintf(err, errcap, "out of memory");
		fleet_free(f);
		return NULL;
	}
	const char *tok = cfg->fleet_token_env ? getenv(cfg->fleet_token_env) : NULL;
	if (cfg->fleet_token_env && (!tok || !*tok)) {
		snprintf(err, errcap, "--token-env %s: the variable is not set", cfg->fleet_token_env);
		fleet_free(f);
		return NULL;
	}
	if (tok && !(f->token = strdup(tok))) {
		snprintf(err, errcap, "out of memory");
		fleet_free(f);
		return NULL;
	}
	/* A generator may echo the token back (a refusal quoting the request):
	 * scrubbed from all it says. */
	f->secrets[0] = f->token;
	f->secrets[1] = NULL;
	f->poll_s = (double)FLEET_POLL_NS / 1e9;
	const char *pm = getenv("INFERTOP_FLEET_POLL_MS");
	if (pm && *pm) {
		char *end;
		long ms = strtol(pm, &end, 10);
		if (*end || ms < 1 || ms > 60000) {
			snprintf(err, errcap, "INFERTOP_FLEET_POLL_MS=%.20s: expected milliseconds, 1 to 60000", pm);
			fleet_free(f);
			return NULL;
		}
		f->poll_s = (double)ms / 1e3;
	}
	if (tok) {
		size_t n = strlen(tok) + 32;
		char *line = malloc(n);
		struct curl_slist *t = NULL;
		if (line) {
			snprintf(line, n, "Authorization: Bearer %s", tok);
			t = curl_slist_append(f->hdr, line);
			memset(line, 0, n);
			free(line);
		}
		if (!t) {
			snprintf(err, errcap, "out of memory");
			fleet_free(f);
			return NULL;
		}
	}
	http_set_cache(f->http, 64);
	ev_timer_init(&f->poll, on_poll, 0., f->poll_s);
	f->poll.data = f;
	return f;
}

void fleet_start(struct fleet *f)
{
	if (f->running)
		return;
	f->running = true;
	ev_timer_start(f->loop, &f->poll);
}

void fleet_stop(struct fleet *f)
{
	if (!f || !f->running)
		return;
	f->running = false;
	ev_timer_stop(f->loop, &f->poll);
}

void fleet_free(struct fleet *f)
{
	if (!f)
		return;
	fleet_stop(f);
	/* Transfers still in flight are cancelled: their callbacks run (so
	 * their owners free what they hold), then the multi goes. */
	while (f->reqs) {
		struct req *r = f->reqs;
		f->reqs = r->next;
		http_remove(f->http, r->easy);
		if (r->fn)
			r->fn(r->ud, 0, "", 0, "cancelled");
		if (!r->keep)
			req_free(r);
	}
	for (size_t i = 0; i < f->neps; i++)
		if (f->eps[i]->poll)
			req_free(f->eps[i]->poll);
	http_free(f->http);
	for (size_t i = 0; i < f->neps; i++)
		free(f->eps[i]);
	free(f->eps);
	for (size_t i = 0; i < f->nrows; i++) {
		if (f->rows[i]->have)
			snapshot_release(&f->rows[i]->snap);
		free(f->rows[i]->raw);
		free(f->rows[i]);
	}
	free(f->rows);
	if (f->token) {
		memset(f->token, 0, strlen(f->token));
		free(f->token);
	}
	if (f->have_merged)
		snapshot_release(&f->merged);
	snapshot_release(&f->merge_spare);
	snapshot_release(&f->parse_spare);
	series_free(f->series);
	for (int k = 0; k < STAT_NMETRICS; k++)
		hist_free(f->empty[k]);
	if (f->hdr) {
		/* The token's line: wiped before it is freed. */
		for (struct curl_slist *l = f->hdr; l; l = l->next)
			memset(l->data, 0, strlen(l->data));
		curl_slist_free_all(f->hdr);
	}
	free(f);
}

bool fleet_finished(const struct fleet *f)
{
	return f->finished;
}

void fleet_finish(struct fleet *f, const char *reason)
{
	if (f->finished)
		return;
	update_reference(f);
	if (f->dirty)
		remerge(f, clock_now_ns());
	f->finished = true;
	f->t_end = clock_now_ns();
	snprintf(f->stop_reason, sizeof f->stop_reason, "%s", reason);
	if (f->on_tick)
		f->on_tick(f, f->tick_ud, f->t_end);
}

void fleet_set_on_tick(struct fleet *f, fleet_tick_fn fn, void *ud)
{
	f->on_tick = fn;
	f->tick_ud = ud;
}

void fleet_get_on_tick(const struct fleet *f, fleet_tick_fn *fn, void **ud)
{
	*fn = f->on_tick;
	*ud = f->tick_ud;
}

const char *fleet_output(const struct fleet *f)
{
	return f->cfg->output_path;
}

void fleet_set_auto_finish(struct fleet *f, bool on)
{
	f->auto_finish = on;
}

void fleet_view(const struct fleet *f, struct run_view *v)
{
	memset(v, 0, sizeof *v);
	v->cfg = &f->vcfg;
	/* Running from the first status until the fleet finishes: the keys
	 * act while any generator does (live_endpoints says which). */
	v->state = f->finished ? ENGINE_DONE : f->have_merged ? ENGINE_RUNNING : ENGINE_IDLE;
	v->stop_reason = f->finished ? f->stop_reason : NULL;
	v->run_id = f->have_merged ? "fleet" : "";
	v->model = f->have_merged ? f->merged.model : NULL;
	v->t_start = f->t_start;
	v->t_end = f->t_end;
	/* Before the first status: zeroed figures (a frame can still draw). */
	v->stats = &f->st;
	v->load = &f->ld;
	v->server = f->have_srv ? &f->srv : NULL;
	v->series = f->series;
	v->last_cmd = &f->last_cmd;
}

const struct snapshot *fleet_merged(const struct fleet *f)
{
	return f->have_merged ? &f->merged : NULL;
}

size_t fleet_nready(const struct fleet *f, int64_t now)
{
	size_t n = 0;
	for (size_t i = 0; i < f->neps; i++) {
		const struct endpoint *ep = f->eps[i];
		n += ep->last_ok_ns && now - ep->last_ok_ns <= FLEET_LOST_NS && !ep->refused;
	}
	return n;
}

void fleet_set_planned(struct fleet *f, size_t n, bool open_loop, double target)
{
	f->planned = n;
	f->planned_open = open_loop;
	f->planned_target = target;
}

size_t fleet_planned(const struct fleet *f, bool *open_loop, double *target)
{
	if (open_loop)
		*open_loop = f->planned_open;
	if (target)
		*target = f->planned_target;
	return f->planned;
}

/* The refused endpoints that have no run row (their message is the
 * row). */
static const struct endpoint *refused_ep(const struct fleet *f, size_t j)
{
	for (size_t i = 0; i < f->neps; i++)
		if (f->eps[i]->refused && !f->eps[i]->row && j-- == 0)
			return f->eps[i];
	return NULL;
}

size_t fleet_ngens(const struct fleet *f)
{
	size_t n = f->nfin + f->nrows;
	for (size_t i = 0; i < f->neps; i++)
		n += f->eps[i]->refused && !f->eps[i]->row;
	return n;
}

void fleet_gen_info(const struct fleet *f, size_t i, int64_t now, struct fleet_gen_info *out)
{
	memset(out, 0, sizeof *out);
	if (i < f->nfin) {
		size_t k = (f->fin_next + FLEET_FINISHED_MAX - f->nfin + i) % FLEET_FINISHED_MAX;
		*out = f->fin[k];
		out->last_seen_s = f->fin_seen_ns[k] ? (double)(now - f->fin_seen_ns[k]) / 1e9 : -1;
		return;
	}
	i -= f->nfin;
	if (i < f->nrows) {
		row_info(f, f->rows[i], now, out);
		return;
	}
	const struct endpoint *ep = refused_ep(f, i - f->nrows);
	if (ep) {
		snprintf(out->id, sizeof out->id, "%s", ep->id);
		out->state = FLEET_GEN_REFUSED;
		out->last_seen_s = ep->last_ok_ns ? (double)(now - ep->last_ok_ns) / 1e9 : -1;
		out->clock_offset_s = NAN;
		snprintf(out->msg, sizeof out->msg, "%s", ep->msg);
	}
}

/* ---- writing ---- */

int fleet_write_snapshot(const struct snapshot *m, const char *path, char *err, size_t errcap)
{
	int rc = -1;
	char *txt = snapshot_to_text(m);
	char p[4096];
	snprintf(p, sizeof p, "%s", path);
	if (!txt) {
		snprintf(err, errcap, "out of memory");
	} else {
		size_t len = strlen(txt);
		txt[len] = '\n';
		rc = snapshot_write_atomic(p, sizeof p, false, txt, len + 1, err, errcap);
	}
	free(txt);
	return rc;
}

int fleet_write_merged(const struct fleet *f, const char *path, char *err, size_t errcap)
{
	const struct snapshot **src = calloc(f->nrows ? f->nrows : 1, sizeof *src);
	if (!src) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	size_t n = 0;
	for (size_t i = 0; i < f->nrows; i++)
		if (counted(f, f->rows[i]))
			src[n++] = &f->rows[i]->snap;
	struct snapshot m;
	int rc = snapshot_merge(&m, src, n, err, errcap);
	free(src);
	if (rc != 0)
		return -1;
	/* Status documents carry no history, so the merge has none: the
	 * charts the fleet drew from its polls are the over-time record
	 * (as the dashboard showed them; a --start's merge of results has
	 * the generators' own). */
	if (!m.series && f->t_start) {
		int64_t elapsed = (f->t_end ? f->t_end : clock_now_ns()) - f->t_start;
		if (!(m.series = result_json_series(f->series, f->t_start, elapsed))) {
			snapshot_release(&m);
			snprintf(err, errcap, "out of memory");
			return -1;
		}
	}
	rc = fleet_write_snapshot(&m, path, err, errcap);
	snapshot_release(&m);
	return rc;
}

/* ---- commands ---- */

static void record(struct fleet *f, enum cmd_source src, enum cmd_status st, const char *msg)
{
	f->last_cmd.seq++;
	f->last_cmd.source = src;
	f->last_cmd.status = st;
	f->last_cmd.at_ns = clock_now_ns();
	snprintf(f->last_cmd.msg, sizeof f->last_cmd.msg, "%s", msg);
}

static enum cmd_status answer(struct fleet *f, enum cmd_source src, enum cmd_status st, struct cmd_result *out,
			      const char *msg)
{
	if (out) {
		out->status = st;
		snprintf(out->msg, sizeof out->msg, "%s", msg);
		out->path[0] = '\0';
	}
	record(f, src, st, msg);
	return st;
}

/* A generator's answer to a command: only a refusal is news. */
struct cmd_ctx {
	struct fleet *f;
	char id[FLEET_URL_MAX];
	char what[32];
};

static void on_cmd(void *ud, long code, const char *body, size_t len, const char *err)
{
	struct cmd_ctx *c = ud;
	(void)len;
	if (err || code < 200 || code >= 300) {
		/* Its words scrubbed whole before they are cut to fit: a token it
		 * echoed, escapes. */
		char msg[CMD_MSG_MAX], said[64];
		const char *m = strstr(body, "\"message\":\"");
		const char *t = err ? err : m ? m + 11 : "";
		fleet_text_scrub_into(said, sizeof said, t, err ? strlen(t) : strcspn(t, "\""), fleet_secrets(c->f));
		if (err)
			snprintf(msg, sizeof msg, "%.60s: %.20s failed: %.50s", c->id, c->what, said);
		else
			snprintf(msg, sizeof msg, "%.60s: %.20s: HTTP %ld%s%s", c->id, c->what, code, m ? " " : "", said);
		record(c->f, CMD_SRC_FLEET, CMD_FAILED, msg);
	}
	free(c);
}

static int send_cmd(struct fleet *f, struct endpoint *ep, const char *path, const char *body, const char *what)
{
	struct cmd_ctx *c = calloc(1, sizeof *c);
	if (!c)
		return -1;
	c->f = f;
	snprintf(c->id, sizeof c->id, "%s", ep->id);
	snprintf(c->what, sizeof c->what, "%s", what);
	char url[FLEET_URL_MAX + 32];
	snprintf(url, sizeof url, "%s%s", ep->url, path);
	if (fleet_http(f, "POST", url, body ? body : "{}", 0, on_cmd, c) != 0) {
		free(c);
		return -1;
	}
	return 0;
}

/* The endpoints a command goes to, those whose run goes on: a malloc'd
 * array of *k. NULL when there are none (or no memory): *st and msg then
 * say why. */
static struct endpoint **live_endpoints(const struct fleet *f, size_t *k, enum cmd_status *st, char *msg,
					size_t cap)
{
	struct endpoint **out = calloc(f->neps ? f->neps : 1, sizeof *out);
	*k = 0;
	*st = CMD_OK;
	if (!out) {
		*st = CMD_FAILED;
		snprintf(msg, cap, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < f->neps; i++) {
		struct endpoint *ep = f->eps[i];
		if (!ep->row || !counted(f, ep->row))
			continue;
		enum fleet_gen_state s = ep->row->state;
		if (s == FLEET_GEN_RUNNING || s == FLEET_GEN_WAITING)
			out[(*k)++] = ep;
	}
	if (*k == 0) {
		free(out);
		*st = CMD_REFUSED;
		snprintf(msg, cap, "no generator is running");
		return NULL;
	}
	return out;
}

long fleet_split_long(long total, size_t k, size_t i)
{
	if (k == 0)
		return 0;
	long base = total / (long)k, rem = total % (long)k;
	return base + ((long)i < rem ? 1 : 0);
}

/* A load change over the running generators: closed loop n users split
 * n / k (the remainder one each to the first ones), open loop r / k each. */
static enum cmd_status set_load(struct fleet *f, bool open, long n, double r, enum cmd_source src,
				struct cmd_result *out)
{
	char msg[CMD_MSG_MAX];
	enum cmd_status st;
	size_t k;
	struct endpoint **eps = live_endpoints(f, &k, &st, msg, sizeof msg);
	if (!eps) {
		/* st and msg say why */
	} else if (!open && n < (long)k) {
		st = CMD_INVALID;
		snprintf(msg, sizeof msg, "concurrency %ld is below one per generator (%zu)", n, k);
	} else if (open && (!(r / (double)k >= CMD_RATE_MIN) || r > CMD_RATE_MAX)) {
		st = CMD_INVALID;
		snprintf(msg, sizeof msg, "rate %.4g req/s is out of range over %zu generators", r, k);
	} else {
		int len = open ? snprintf(msg, sizeof msg, "rate %.4g req/s over %zu generators (%.4g each", r, k,
					  r / (double)k)
			       : snprintf(msg, sizeof msg, "concurrency %ld over %zu generators (", n, k);
		for (size_t i = 0; i < k; i++) {
			long share = fleet_split_long(n, k, i);
			char body[64];
			if (open)
				snprintf(body, sizeof body, "{\"rate\":%.17g,\"force\":true}", r / (double)k);
			else
				snprintf(body, sizeof body, "{\"concurrency\":%ld,\"force\":true}", share);
			if (send_cmd(f, eps[i], "/v1/load", body, "set load") != 0)
				st = CMD_FAILED;
			if (!open && len < (int)sizeof msg)
				len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%ld", i ? "+" : "", share);
		}
		if (len < (int)sizeof msg)
			snprintf(msg + len, sizeof msg - (size_t)len, ")");
		/* The statuses show the change a poll later: until then the
		 * view does, so a second + counts from the new total. */
		f->override_until = clock_now_ns() + 2 * CLOCK_NS_PER_S;
		f->ov_open = open;
		f->ov_conc = n;
		f->ov_rate = r;
		view_load(f);
	}
	free(eps);
	return answer(f, src, st, out, msg);
}

enum cmd_status fleet_cmd_set_concurrency(struct fleet *f, long n, enum cmd_source src, struct cmd_result *out)
{
	return set_load(f, false, n, 0, src, out);
}

enum cmd_status fleet_cmd_set_rate(struct fleet *f, double r, enum cmd_source src, struct cmd_result *out)
{
	return set_load(f, true, 0, r, src, out);
}

enum cmd_status fleet_cmd_post_all(struct fleet *f, const char *path, const char *what, struct cmd_result *out)
{
	char msg[CMD_MSG_MAX];
	enum cmd_status st;
	size_t k;
	struct endpoint **eps = live_endpoints(f, &k, &st, msg, sizeof msg);
	if (eps) {
		for (size_t i = 0; i < k; i++)
			if (send_cmd(f, eps[i], path, NULL, what) != 0)
				st = CMD_FAILED;
		snprintf(msg, sizeof msg, "%s: sent to %zu generators", what, k);
	}
	free(eps);
	return answer(f, CMD_SRC_KEY, st, out, msg);
}

/* ---- the command target ---- */

static void t_view(void *ud, struct run_view *v)
{
	fleet_view(ud, v);
}

static enum cmd_status t_conc(void *ud, long n, enum cmd_source src, struct cmd_result *out)
{
	return fleet_cmd_set_concurrency(ud, n, src, out);
}

static enum cmd_status t_rate(void *ud, double r, enum cmd_source src, struct cmd_result *out)
{
	return fleet_cmd_set_rate(ud, r, src, out);
}

static enum cmd_status t_pause(void *ud, enum cmd_source src, struct cmd_result *out)
{
	(void)src;
	return fleet_cmd_post_all(ud, "/v1/pause", "pause", out);
}

static enum cmd_status t_resume(void *ud, enum cmd_source src, struct cmd_result *out)
{
	(void)src;
	return fleet_cmd_post_all(ud, "/v1/resume", "resume", out);
}

/* The merged state, each generator's last status beside it, and every
 * generator asked to write its own snapshot where it runs. */
static enum cmd_status t_snapshot(void *ud, enum cmd_source src, struct cmd_result *out)
{
	struct fleet *f = ud;
	char path[4096], err[256];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snapshot_path(path, sizeof path, f->cfg->snapshot_dir, (double)ts.tv_sec);
	if (!f->have_merged)
		return answer(f, src, CMD_REFUSED, out, "no generator has answered yet");
	if (fleet_write_merged(f, path, err, sizeof err) != 0) {
		char msg[CMD_MSG_MAX];
		snprintf(msg, sizeof msg, "fleet snapshot failed: %.130s", err);
		return answer(f, src, CMD_FAILED, out, msg);
	}
	size_t base = strlen(path) > 5 ? strlen(path) - 5 : 0; /* before ".json" */
	for (size_t i = 0; i < f->nrows; i++) {
		const struct row *r = f->rows[i];
		if (!r->raw)
			continue;
		char gp[4200];
		snprintf(gp, sizeof gp, "%.*s-gen-%.8s.json", (int)base, path, r->run_id);
		/* As received, but scrubbed as all the fleet shows or saves. */
		char *raw = strdup(r->raw);
		if (!raw)
			snprintf(err, sizeof err, "out of memory");
		else
			fleet_text_scrub(raw, f->secrets);  /* control bytes are JSON whitespace or invalid anyway */
		if (!raw || snapshot_write_atomic(gp, sizeof gp, false, raw, strlen(raw), err, sizeof err) != 0)
			snprintf(f->last_cmd.msg, sizeof f->last_cmd.msg, "%.150s", err);
		free(raw);
	}
	struct cmd_result ignored;
	fleet_cmd_post_all(f, "/v1/snapshot", "snapshot", &ignored);
	char msg[CMD_MSG_MAX];
	snprintf(msg, sizeof msg, "fleet snapshot written to %.100s (and one per generator)", path);
	enum cmd_status st = answer(f, src, CMD_OK, out, msg);
	if (out)
		snprintf(out->path, sizeof out->path, "%s", path);
	return st;
}

static enum cmd_status t_stop(void *ud, enum cmd_source src, struct cmd_result *out)
{
	(void)src;
	return fleet_cmd_post_all(ud, "/v1/stop", "stop", out);
}

static enum cmd_status t_refuse(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return answer(ud, src, CMD_REFUSED, out, "not over a fleet: the generators' API has no such command");
}

static const struct cmd_target_ops fleet_ops = {
	.view = t_view,
	.set_concurrency = t_conc,
	.set_rate = t_rate,
	.pause = t_pause,
	.resume = t_resume,
	.snapshot = t_snapshot,
	.stop = t_stop,
	.window_reset = t_refuse,
	.plan_resume = t_refuse,
};

void fleet_cmd_target(struct fleet *f, struct cmd_target *t)
{
	*t = (struct cmd_target){
		.ops = &fleet_ops,
		.ud = f,
		.loop = f->loop,
		.writer = NULL,
		.draw_extra = fleet_panel_draw,
	};
}
