#include "config.h"

#include "infertop/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct http_sock {
	ev_io io;
	curl_socket_t fd;
	struct http *h;
};

struct http {
	struct ev_loop *loop;
	CURLM *multi;
	ev_timer timer;
	int running;
	long sockets;
	long keepalive_s;              /* the server's idle limit, as last told */
	long conns;                    /* open connections, idle ones included */
	long xfers;                    /* transfers in the multi */
	long fresh_pending;            /* of which sent fresh, not connected yet */
};

static void http_forget(struct http *h, CURL *easy)
{
	struct http_xfer *x = NULL;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	curl_multi_remove_handle(h->multi, easy);
	/* Removing a handle that was not added is allowed; the floors keep
	 * the counts from going below what they can be. */
	if (x && x->awaiting_socket) {
		x->awaiting_socket = false;
		if (h->fresh_pending > 0)
			h->fresh_pending--;
	}
	if (h->xfers > 0)
		h->xfers--;
}

static void http_drain(struct http *h)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(h->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		CURL *easy = msg->easy_handle;
		CURLcode rc = msg->data.result;
		struct http_xfer *x = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
		/* Removed first so done() may reuse the handle at once. */
		http_forget(h, easy);
		if (x && x->done)
			x->done(x, rc);
	}
}

static void http_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	struct http_sock *s = (struct http_sock *)w;
	struct http *h = s->h;
	int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
		     ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
	curl_multi_socket_action(h->multi, s->fd, action, &h->running);
	http_drain(h);
}

static void http_on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct http *h = w->data;
	curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &h->running);
	http_drain(h);
}

static int http_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
	(void)easy;
	struct http *h = userp;
	struct http_sock *s = socketp;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			ev_io_stop(h->loop, &s->io);
			free(s);
			h->sockets--;
			curl_multi_assign(h->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof *s);
		if (!s)
			return -1; /* curl fails the transfer: counted, not fatal */
		s->fd = fd;
		s->h = h;
		ev_init(&s->io, http_on_io);
		curl_multi_assign(h->multi, fd, s);
		h->sockets++;
	} else {
		ev_io_stop(h->loop, &s->io);
	}
	int events = ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
	ev_io_set(&s->io, fd, events);
	ev_io_start(h->loop, &s->io);
	return 0;
}

static int http_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	(void)multi;
	struct http *h = userp;
	ev_timer_stop(h->loop, &h->timer);
	if (timeout_ms >= 0) {
		/* Milliseconds as a double: integer division would turn every
		 * sub-second timeout into 0 and spin. */
		ev_timer_set(&h->timer, (double)timeout_ms / 1000.0, 0.);
		ev_timer_start(h->loop, &h->timer);
	}
	return 0;
}

struct http *http_new(struct ev_loop *loop)
{
	struct http *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->loop = loop;
	h->multi = curl_multi_init();
	if (!h->multi) {
		free(h);
		return NULL;
	}
	ev_timer_init(&h->timer, http_on_timer, 0., 0.);
	h->timer.data = h;
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, http_socket_cb);
	curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, http_timer_cb);
	curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
	return h;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	ev_timer_stop(h->loop, &h->timer);
	/* Cleanup closes cached connections, which calls back with
	 * CURL_POLL_REMOVE for each socket and frees its watcher. */
	curl_multi_cleanup(h->multi);
	free(h);
}

/* Connections counted where they are made and closed: curl's socket
 * callback only sees sockets it watches, not idle cached ones. */
static curl_socket_t http_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)purpose;
	struct http_xfer *x = ud;
	struct http *h = x->h;
	curl_socket_t fd = socket(a->family, a->socktype, a->protocol);
	if (fd == CURL_SOCKET_BAD)
		return fd;
	h->conns++;
	if (x->awaiting_socket) {
		x->awaiting_socket = false;
		h->fresh_pending--;
	}
	return fd;
}

static int http_close_socket(void *ud, curl_socket_t fd)
{
	struct http *h = ud;
	h->conns--;
	return close(fd);
}

/* Connections are busy or idle. Transfers are busy ones, ones waiting
 * for their fresh connection, and ones waiting for an idle one (which
 * they get before a newcomer): open connections beyond the first two
 * kinds are idle ones nobody has claimed yet. */
static bool http_idle_free(const struct http *h)
{
	return h->conns - (h->xfers - h->fresh_pending) > 0;
}

int http_add(struct http *h, CURL *easy, bool fresh)
{
	struct http_xfer *x = NULL;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	if (!x)
		return -1;
	fresh = fresh || !http_idle_free(h);
	x->h = h;
	x->awaiting_socket = fresh;
	curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, (long)fresh);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, http_open_socket);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, x);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, http_close_socket);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, h);
	if (curl_multi_add_handle(h->multi, easy) != CURLM_OK) {
		x->awaiting_socket = false;
		return -1;
	}
	h->xfers++;
	if (fresh)
		h->fresh_pending++;
	return 0;
}

void http_remove(struct http *h, CURL *easy)
{
	http_forget(h, easy);
}


void http_set_cache(struct http *h, long connections)
{
	curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, connections);
}

long http_sockets(const struct http *h)
{
	return h->sockets;
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
