#include "config.h"

#include "infertop/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/tls.h"

/* Transfers are spread over several curl multi handles ("shards") of at
 * most HTTP_SHARD_XFERS transfers each, all on the one loop. libcurl 7.88
 * walks every cached connection of a multi when a transfer is removed
 * (curl_multi_remove_handle looks for a connect-only connection to close)
 * and every connection to the host when one is added (the reuse search):
 * with one multi that is O(streams) per request, a quarter of the client's
 * CPU at 1,000 streams and seconds of a blocked loop over a ramp to
 * 15,000. A transfer keeps its shard for life, so a pooled request finds
 * the connection it left idle there. */
#define HTTP_SHARD_XFERS 32
#define HTTP_PEAKS 64                  /* seconds of transfer peaks kept a shard */

struct http_sock {
	ev_io io;
	curl_socket_t fd;
	int events;                    /* what io is armed for */
	struct http_shard *sh;
};

struct http_shard {
	struct http *h;
	CURLM *multi;
	ev_timer timer;
	long timer_ms;                 /* curl's last timeout, -1: none */
	int running;
	long xfers_assigned;           /* transfers given this shard for life */
	long conns;                    /* open connections, idle ones included */
	long xfers;                    /* transfers in the multi */
	long fresh_pending;            /* of which sent fresh, not connected yet */
	curl_socket_t keep_fd;         /* being handed to its owner: not to be closed */
	bool kept;                     /* curl closed keep_fd, which was left open */
	int64_t idle_since;            /* when its last transfer left */
	/* Most transfers at once in each of the last sweeps' seconds (a
	 * ring), and since the last sweep. */
	long peaks[HTTP_PEAKS];
	uint64_t npeaks;
	long cur_peak;
};

struct http {
	struct ev_loop *loop;
	ev_check wake;                 /* stamps wake_ns after every wait */
	int64_t wake_ns;
	/* Kernel receive stamps (CLOCK_REALTIME) to CLOCK_MONOTONIC: the
	 * difference of the two clocks at the last wake-up; 0: not kept. */
	bool rx_stamps;
	int64_t wake_rt_off;
	/* Batched wake-ups: the read rate of each window decides (http.h). */
	bool batching;
	uint64_t reads;
	uint64_t reads_then;
	int64_t rate_since;
	struct http_shard **shards;
	size_t nshards;
	ev_timer sweep;                /* closes the idle connections of idle shards */
	long cache;                    /* CURLMOPT_MAXCONNECTS of every shard */
	long sockets;
	long keepalive_s;              /* the server's idle limit, as last told */
	int reuse_closed_run;          /* kept connections found closed in a row */
	bool keep_futile;              /* the server closes every one after its answer */
	long answers_unkept;           /* since it was found so: every Nth is kept, a probe */
	struct tls_ctx *tls;           /* the direct path's https (http_tls), made on first use */
};

static void http_forget(struct http_shard *sh, CURL *easy)
{
	struct http_xfer *x = NULL;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	curl_multi_remove_handle(sh->multi, easy);
	/* Removing a handle that was not added is allowed; the floors keep
	 * the counts from going below what they can be. */
	if (x && x->awaiting_socket) {
		x->awaiting_socket = false;
		if (sh->fresh_pending > 0)
			sh->fresh_pending--;
	}
	if (sh->xfers > 0 && --sh->xfers == 0)
		sh->idle_since = clock_now_ns();
}

static void http_drain(struct http_shard *sh)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(sh->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		CURL *easy = msg->easy_handle;
		CURLcode rc = msg->data.result;
		struct http_xfer *x = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
		curl_socket_t take = CURL_SOCKET_BAD;
		if (x && x->take_socket) {
			x->taken_fd = -1;
			x->taken_errno = 0;
			if (rc == CURLE_OK && (curl_easy_getinfo(easy, CURLINFO_ACTIVESOCKET, &take) != CURLE_OK ||
					       take == CURL_SOCKET_BAD)) {
				take = CURL_SOCKET_BAD;
				x->taken_errno = ENOTCONN; /* curl no longer has it */
			}
			/* Removing the handle makes curl close the connection:
			 * http_close_socket leaves this one open, for x. */
			sh->keep_fd = take;
			sh->kept = false;
		}
		/* Removed first so done() may reuse the handle at once. */
		http_forget(sh, easy);
		if (take != CURL_SOCKET_BAD) {
			/* Not closed by curl (kept in its cache after all): a copy. */
			x->taken_fd = sh->kept ? take : fcntl(take, F_DUPFD_CLOEXEC, 0);
			if (x->taken_fd < 0)
				x->taken_errno = errno;
			sh->keep_fd = CURL_SOCKET_BAD;
			sh->kept = false;
		}
		if (x && x->done)
			x->done(x, rc);
	}
}

static void http_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	struct http_sock *s = (struct http_sock *)w;
	struct http_shard *sh = s->sh;
	int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
		     ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
	curl_multi_socket_action(sh->multi, s->fd, action, &sh->running);
	http_drain(sh);
}

static void http_on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct http_shard *sh = w->data;
	sh->timer_ms = -1;
	curl_multi_socket_action(sh->multi, CURL_SOCKET_TIMEOUT, 0, &sh->running);
	http_drain(sh);
}

static int http_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy;
	struct http_shard *sh = userp;
	struct http *h = sh->h;
	struct http_sock *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			ev_io_stop(h->loop, &s->io);
			free(s);
			h->sockets--;
			curl_multi_assign(sh->multi, fd, NULL);
		}
		return 0;
	}
	int events = ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			return -1; /* curl fails the transfer: counted, not fatal */
		s->fd = fd;
		s->sh = sh;
		ev_init(&s->io, http_on_io);
		curl_multi_assign(sh->multi, fd, s);
		h->sockets++;
	} else if (s->events == events && ev_is_active(&s->io)) {
		return 0; /* armed as asked already: no epoll_ctl */
	} else {
		ev_io_stop(h->loop, &s->io);
	}
	s->events = events;
	ev_io_set(&s->io, fd, events);
	ev_io_start(h->loop, &s->io);
	return 0;
}

static int http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct http_shard *sh = userp;
	struct http *h = sh->h;
	/* The same timeout again: the timer already runs for it. curl calls
	 * only when its deadline moved, so an equal figure means a later
	 * deadline: the running timer fires early at worst (curl then tells
	 * the rest), never late. 0 ("now") is always armed. */
	if (timeout_ms == sh->timer_ms && timeout_ms > 0 && ev_is_active(&sh->timer))
		return 0;
	ev_timer_stop(h->loop, &sh->timer);
	sh->timer_ms = timeout_ms;
	if (timeout_ms >= 0) {
		/* Milliseconds as a double: integer division would turn every
		 * sub-second timeout into 0 and spin. */
		ev_timer_set(&sh->timer, (double)timeout_ms / 1000.0, 0.);
		ev_timer_start(h->loop, &sh->timer);
	}
	return 0;
}

/* A new multi for sh, set up as every shard's. */
static int http_shard_multi(struct http_shard *sh)
{
	CURLM *m = curl_multi_init();
	if (!m)
		return -1;
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, http_socket_cb);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, sh);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, http_timer_cb);
	curl_multi_setopt(m, CURLMOPT_TIMERDATA, sh);
	if (sh->h->cache > 0)
		curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, sh->h->cache);
	sh->multi = m;
	return 0;
}

static struct http_shard *http_shard_new(struct http *h)
{
	struct http_shard **more = realloc(h->shards, (h->nshards + 1) * sizeof *more);
	if (!more)
		return NULL;
	h->shards = more;
	struct http_shard *sh = calloc(1, sizeof *sh);
	if (!sh)
		return NULL;
	sh->h = h;
	sh->timer_ms = -1;
	sh->keep_fd = CURL_SOCKET_BAD;
	ev_timer_init(&sh->timer, http_on_timer, 0., 0.);
	sh->timer.data = sh;
	if (http_shard_multi(sh) != 0) {
		free(sh);
		return NULL;
	}
	h->shards[h->nshards++] = sh;
	return sh;
}

/* A shard whose transfers have all left (the load went down) keeps their
 * connections in its multi's cache, and libcurl prunes a cache only when
 * a transfer of that multi connects: 300 streams lowered to 2 kept 298
 * connections open to the end of the run. Once its connections are past
 * the reuse limit (never to be reused), a new multi replaces the old one,
 * whose cleanup closes them. A shard with transfers left prunes itself
 * (CURLOPT_MAXAGE_CONN at its next connect).
 *
 * A shard is also swept when in none of the last reuse limit's seconds
 * it had as many transfers at once as it has connections: the rest idled
 * past the limit. A /metrics scrape each second, landing in a shard a lowered load
 * had left, reused one of its connections and so kept the shard from ever
 * going idle: 64 of 300 connections stayed open to the end of the run.
 * The connection the scrape uses is closed with the others and remade. */
#define HTTP_SWEEP_S 1.0

static void http_on_sweep(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct http *h = w->data;
	int64_t now = clock_now_ns();
	int64_t limit = (int64_t)http_reuse_limit(h) * CLOCK_NS_PER_S;
	for (size_t i = 0; i < h->nshards; i++) {
		struct http_shard *sh = h->shards[i];
		sh->peaks[sh->npeaks++ % HTTP_PEAKS] = sh->cur_peak;
		sh->cur_peak = sh->xfers;
		/* The seconds of one reuse limit (the ring's, when longer:
		 * then an idle connection may go a little early, to be made
		 * again if wanted). */
		uint64_t n = (uint64_t)http_reuse_limit(h);
		if (n > HTTP_PEAKS)
			n = HTTP_PEAKS;
		long recent = 0;
		for (uint64_t k = 0; k < n && k < sh->npeaks; k++) {
			long p = sh->peaks[(sh->npeaks - 1 - k) % HTTP_PEAKS];
			if (p > recent)
				recent = p;
		}
		bool surplus = sh->npeaks >= n && sh->conns > recent;
		if (sh->xfers || sh->conns <= 0 || (now - sh->idle_since < limit && !surplus))
			continue;
		CURLM *old = sh->multi;
		if (http_shard_multi(sh) != 0) {
			sh->multi = old; /* tried again at the next sweep */
			continue;
		}
		ev_timer_stop(h->loop, &sh->timer);
		sh->timer_ms = -1;
		/* Its sockets call back to this shard as they close. */
		curl_multi_cleanup(old);
	}
}

/* libev queues check watchers after the turn's I/O and invokes pending
 * watchers last-queued first: this runs before any read of the turn. */
static void http_on_wake(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	struct http *h = w->data;
	int64_t now = clock_now_ns();
	h->wake_ns = now;
	if (!h->rx_stamps)
		return;
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	int64_t m2 = clock_now_ns();
	h->wake_rt_off = (int64_t)rt.tv_sec * 1000000000LL + rt.tv_nsec - (now + (m2 - now) / 2);
	if (now - h->rate_since < HTTP_BATCH_WINDOW_NS)
		return;
	double rate = (double)(h->reads - h->reads_then) * 1e9 / (double)(now - h->rate_since);
	h->reads_then = h->reads;
	h->rate_since = now;
	/* Not while curl is connecting: a ramp's turns are long already, and
	 * waiting before each made the first progress line of a 15,000-stream
	 * ramp 0.23 s later. */
	long connecting = 0;
	for (size_t i = 0; i < h->nshards; i++)
		connecting += h->shards[i]->xfers;
	bool on = !connecting && (h->batching ? rate >= HTTP_BATCH_OFF_RATE : rate >= HTTP_BATCH_ON_RATE);
	if (on != h->batching) {
		h->batching = on;
		ev_set_io_collect_interval(h->loop, on ? HTTP_BATCH_S : 0.);
	}
}

void http_rx_stamps_on(struct http *h)
{
	if (h->rx_stamps)
		return;
	h->rx_stamps = true;
	h->rate_since = clock_now_ns();
}

int64_t http_rx_mono_ns(struct http *h, int64_t rt_ns)
{
	h->reads++;
	if (!h->wake_rt_off)
		return 0;
	int64_t mono = rt_ns - h->wake_rt_off;
	/* A realtime clock stepped between the packet and the wake-up: the
	 * stamp means nothing then. */
	if (mono > h->wake_ns + CLOCK_NS_PER_S || mono < h->wake_ns - 10 * CLOCK_NS_PER_S)
		return 0;
	return mono;
}

struct http *http_new(struct ev_loop *loop)
{
	struct http *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->loop = loop;
	if (!http_shard_new(h)) {
		free(h->shards);
		free(h);
		return NULL;
	}
	ev_check_init(&h->wake, http_on_wake);
	h->wake.data = h;
	ev_check_start(loop, &h->wake);
	ev_unref(loop); /* it must not keep the loop running on its own */
	ev_timer_init(&h->sweep, http_on_sweep, HTTP_SWEEP_S, HTTP_SWEEP_S);
	h->sweep.data = h;
	ev_timer_start(loop, &h->sweep);
	ev_unref(loop); /* nor this */
	return h;
}

void http_easy_tls(CURL *e, const struct tls_opts *o)
{
	if (o->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o->cafile)
		curl_easy_setopt(e, CURLOPT_CAINFO, o->cafile);
}

int64_t http_wake_ns(const struct http *h)
{
	return h->wake_ns;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	ev_ref(h->loop);
	ev_check_stop(h->loop, &h->wake);
	ev_ref(h->loop);
	ev_timer_stop(h->loop, &h->sweep);
	if (h->batching) /* the loop may serve others after this */
		ev_set_io_collect_interval(h->loop, 0.);
	for (size_t i = 0; i < h->nshards; i++) {
		struct http_shard *sh = h->shards[i];
		ev_timer_stop(h->loop, &sh->timer);
		/* Cleanup closes cached connections, which calls back with
		 * CURL_POLL_REMOVE for each socket and frees its watcher. */
		curl_multi_cleanup(sh->multi);
	}
	/* Freed after every multi: a connection's close callback counts on
	 * the shard that opened it. */
	for (size_t i = 0; i < h->nshards; i++)
		free(h->shards[i]);
	free(h->shards);
	tls_ctx_free(h->tls);
	free(h);
}

struct tls_ctx *http_tls(struct http *h, const struct tls_opts *o, char *err, size_t cap)
{
	if (!h->tls)
		h->tls = tls_ctx_new(o, err, cap);
	return h->tls;
}

/* Connections counted where they are made and closed: curl's socket
 * callback only sees sockets it watches, not idle cached ones. */
static curl_socket_t http_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)purpose;
	struct http_xfer *x = ud;
	struct http_shard *sh = x->shard;
	curl_socket_t fd = socket(a->family, a->socktype, a->protocol);
	if (fd == CURL_SOCKET_BAD)
		return fd;
	sh->conns++;
	if (x->awaiting_socket) {
		x->awaiting_socket = false;
		sh->fresh_pending--;
	}
	return fd;
}

static int http_close_socket(void *ud, curl_socket_t fd)
{
	struct http_shard *sh = ud;
	sh->conns--;
	if (fd == sh->keep_fd && fd != CURL_SOCKET_BAD) {
		sh->kept = true; /* the CONNECT_ONLY transfer's owner takes it */
		return 0;
	}
	return close(fd);
}

/* Connections are busy or idle. Transfers are busy ones, ones waiting
 * for their fresh connection, and ones waiting for an idle one (which
 * they get before a newcomer): open connections beyond the first two
 * kinds are idle ones nobody has claimed yet. */
static bool http_idle_free(const struct http_shard *sh)
{
	return sh->conns - (sh->xfers - sh->fresh_pending) > 0;
}

/* The shard a transfer lives in: the first one with room, else a new
 * one. Transfers are few next to their requests (pooled), so this runs
 * once per pooled transfer, not per request; a transfer freed for good
 * gives its place back (http_release), or a client that makes one per
 * request (the fleet's polls) would add a multi every 32 requests. */
static struct http_shard *http_shard_for(struct http *h, struct http_xfer *x)
{
	if (x->shard)
		return x->shard;
	struct http_shard *sh = NULL;
	for (size_t i = 0; i < h->nshards && !sh; i++)
		if (h->shards[i]->xfers_assigned < HTTP_SHARD_XFERS)
			sh = h->shards[i];
	if (!sh && !(sh = http_shard_new(h)))
		return NULL;
	sh->xfers_assigned++;
	x->shard = sh;
	return sh;
}

int http_add(struct http *h, CURL *easy, bool fresh)
{
	struct http_xfer *x = NULL;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	if (!x)
		return -1;
	struct http_shard *sh = http_shard_for(h, x);
	if (!sh)
		return -1;
	fresh = fresh || !http_idle_free(sh);
	x->awaiting_socket = fresh;
	curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, (long)fresh);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, http_open_socket);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, x);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, http_close_socket);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, sh);
	if (curl_multi_add_handle(sh->multi, easy) != CURLM_OK) {
		x->awaiting_socket = false;
		return -1;
	}
	if (++sh->xfers > sh->cur_peak)
		sh->cur_peak = sh->xfers;
	if (fresh)
		sh->fresh_pending++;
	return 0;
}

void http_remove(struct http *h, CURL *easy)
{
	(void)h;
	if (!easy) /* a request on the direct path has none (direct.h) */
		return;
	struct http_xfer *x = NULL;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	if (x && x->shard)
		http_forget(x->shard, easy);
}

void http_release(struct http *h, struct http_xfer *x)
{
	(void)h;
	if (x->shard && x->shard->xfers_assigned > 0)
		x->shard->xfers_assigned--;
	x->shard = NULL;
}

long http_shards(const struct http *h)
{
	return (long)h->nshards;
}

void http_set_cache(struct http *h, long connections)
{
	/* Per shard, the whole figure: a shard never holds more connections
	 * than its transfers opened, and none is closed for want of room. */
	h->cache = connections;
	for (size_t i = 0; i < h->nshards; i++)
		curl_multi_setopt(h->shards[i]->multi, CURLMOPT_MAXCONNECTS, connections);
}

long http_sockets(const struct http *h)
{
	return h->sockets;
}

struct ev_loop *http_loop(const struct http *h)
{
	return h->loop;
}

long http_keepalive_parse(const char *value, size_t len)
{
	/* "timeout=5, max=100": parameters in any order, any case. */
	for (size_t i = 0; i + 8 <= len; i++) {
		if ((i > 0 && value[i - 1] != ' ' && value[i - 1] != ',' && value[i - 1] != '\t') ||
		    strncasecmp(value + i, "timeout=", 8) != 0)
			continue;
		long n = 0;
		size_t j = i + 8;
		if (j >= len || value[j] < '0' || value[j] > '9')
			return -1;
		for (; j < len && value[j] >= '0' && value[j] <= '9'; j++) {
			if (n > 86400)
				return -1;
			n = n * 10 + (value[j] - '0');
		}
		return n;
	}
	return -1;
}

void http_note_keepalive(struct http *h, long timeout_s)
{
	if (timeout_s >= 0)
		h->keepalive_s = timeout_s;
}

void http_note_reuse(struct http *h, bool closed)
{
	if (!closed) {
		h->reuse_closed_run = 0;
		h->keep_futile = false;
		return;
	}
	if (++h->reuse_closed_run >= HTTP_REUSE_CLOSED_RUN)
		h->keep_futile = true;
}

bool http_keep_pays(struct http *h)
{
	if (!h->keep_futile)
		return true;
	/* Now and then one is kept: a server that changed its mind is seen. */
	return ++h->answers_unkept % HTTP_REUSE_PROBE_EVERY == 0;
}

long http_reuse_limit(const struct http *h)
{
	long t = h->keepalive_s > 0 ? h->keepalive_s : HTTP_KEEPALIVE_DEFAULT_S;
	/* A second under the server's limit: its clock started when it sent
	 * the last byte, ours when we read it. */
	return t > 1 ? t - 1 : 1;
}

int64_t http_retry_after_parse(const char *value, size_t len, time_t now_unix)
{
	char buf[64];
	while (len && (*value == ' ' || *value == '\t')) {
		value++;
		len--;
	}
	while (len && (value[len - 1] == '\r' || value[len - 1] == '\n' || value[len - 1] == ' '))
		len--;
	if (!len || len >= sizeof buf)
		return -1;
	memcpy(buf, value, len);
	buf[len] = '\0';
	int64_t s = -1;
	if (buf[0] >= '0' && buf[0] <= '9') {
		char *end;
		long long v = strtoll(buf, &end, 10);
		if (*end || v < 0)
			return -1;
		s = v;
	} else {
		/* IMF-fixdate, as RFC 9110 sends it: "Sun, 06 Nov 1994 08:49:37 GMT". */
		struct tm tm = {0};
		char *end = strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		if (!end || *end)
			return -1;
		time_t at = timegm(&tm);
		s = at > now_unix ? (int64_t)(at - now_unix) : 0;
	}
	if (s > HTTP_RETRY_AFTER_MAX_S)
		s = HTTP_RETRY_AFTER_MAX_S;
	return s * 1000000000LL;
}
