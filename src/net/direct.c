#include "config.h"

#include "infertop/direct.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"

/* Every transport of a thread reads into this: the parsers copy only what
 * they must keep (a part event, an error body). */
static _Thread_local char direct_rbuf[1 << 16];

static int direct_fd(const struct direct *d)
{
	return d->io.fd;
}

/* ok: the connection ends at a clean boundary (an answer read whole, or
 * idle), where a TLS session says close_notify and stays resumable. */
static void direct_close_as(struct direct *d, bool ok)
{
	ev_io_stop(http_loop(d->http), &d->io);
	if (d->tls) {
		tls_conn_free(d->tls, d->io.fd, ok && d->tls_ready);
		d->tls = NULL;
		d->tls_ready = false;
	}
	if (d->io.fd >= 0)
		close(d->io.fd);
	ev_io_set(&d->io, -1, 0);
}

static void direct_close(struct direct *d)
{
	direct_close_as(d, false);
}

/* keep: the connection may carry the next request. A kept one is closed
 * once idle past the reuse limit (the deadline timer, meanwhile free):
 * it would never carry another, and a load lowered from 300 streams to 2
 * kept 298 of them open to the end of the run. */
static void direct_end(struct direct *d, CURLcode rc, bool keep)
{
	struct ev_loop *loop = http_loop(d->http);
	ev_timer_stop(loop, &d->deadline);
	ev_io_stop(loop, &d->io);
	if (keep && !d->new_connection && http_keep_pays(d->http)) {
		d->conn_idle_since = clock_now_ns();
		d->conn_idle = true;
		ev_timer_set(&d->deadline, (double)http_reuse_limit(d->http), 0.);
		ev_timer_start(loop, &d->deadline);
	} else {
		direct_close_as(d, rc == CURLE_OK);
	}
	d->cb->on_done(d, rc, rc == CURLE_OK || !d->err[0] ? NULL : d->err);
}

static void direct_fail(struct direct *d, CURLcode rc, const char *fmt, const char *what)
{
	snprintf(d->err, sizeof d->err, fmt, what);
	direct_end(d, rc, false);
}

/* What a kept connection turned out to be, told once per reuse (http.h). */
static void direct_reuse_seen(struct direct *d, bool closed)
{
	if (!d->conn_reused)
		return;
	http_note_reuse(d->http, closed);
	d->conn_reused = false;
}

static void direct_arm(struct direct *d, int events)
{
	struct ev_loop *loop = http_loop(d->http);
	ev_io_stop(loop, &d->io);
	ev_io_set(&d->io, d->io.fd, events);
	ev_io_start(loop, &d->io);
}

static bool direct_sent(const struct direct *d)
{
	const char *p;
	return d->out_off >= d->head_len + d->body_len && (!d->tls || tls_out(d->tls, &p) == 0);
}

static int direct_connect(struct direct *d)
{
	d->connecting = true;
	d->xfer.take_socket = true;
	if (http_add(d->http, d->easy, true) != 0) {
		d->connecting = false;
		return -1;
	}
	return 0;
}

/* A kept connection the server has closed since (llama.cpp closes every
 * streamed answer's, whatever its Keep-Alive header says) shows its end,
 * or stray bytes, to a peek; one that looks alive may still be closing,
 * and a request dying on it unanswered is resent (direct_resend). */
static bool direct_conn_dead(int fd)
{
	char c;
	ssize_t k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return k >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void direct_read(struct direct *d);
static void direct_write_tls(struct direct *d);

static void direct_write(struct direct *d)
{
	if (d->tls) {
		direct_write_tls(d);
		return;
	}
	struct iovec iov[2];
	int n_iov = 0;
	size_t off = d->out_off;
	if (off < d->head_len) {
		iov[n_iov].iov_base = (char *)(uintptr_t)d->head + off;
		iov[n_iov++].iov_len = d->head_len - off;
		off = 0;
	} else {
		off -= d->head_len;
	}
	if (d->body_len > off) {
		iov[n_iov].iov_base = (char *)(uintptr_t)d->body + off;
		iov[n_iov++].iov_len = d->body_len - off;
	}
	if (d->out_off == 0) {
		if (d->conn_reused && direct_conn_dead(direct_fd(d))) {
			direct_reuse_seen(d, true);
			direct_close(d);
			if (direct_connect(d) != 0)
				direct_fail(d, CURLE_COULDNT_CONNECT, "%s", "out of memory for a connection");
			return;
		}
		d->cb->on_send(d, clock_now_ns());
	}
	/* sendmsg for MSG_NOSIGNAL: a peer gone must not raise SIGPIPE. */
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n_iov};
	ssize_t n = n_iov ? sendmsg(direct_fd(d), &m, MSG_NOSIGNAL) : 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		/* A server that refuses the request (413) answers and closes
		 * before it has all of it: its answer is the outcome, read
		 * before the reset, not a send failure (nor resent). */
		d->send_errno = errno;
		direct_arm(d, EV_READ);
		direct_read(d);
		return;
	}
	d->out_off += (size_t)n;
	if (direct_sent(d))
		direct_arm(d, EV_READ);
}

static int direct_on_status(void *ud, int status)
{
	struct direct *d = ud;
	direct_reuse_seen(d, false);
	return d->cb->on_status(d, status);
}

static int direct_on_header(void *ud, const char *line, size_t len)
{
	struct direct *d = ud;
	return d->cb->on_header(d, line, len);
}

static int direct_on_body(void *ud, const char *data, size_t len)
{
	struct direct *d = ud;
	return d->cb->on_body(d, data, len);
}

static const struct h1_callbacks direct_h1 = {
	.on_header = direct_on_header,
	.on_status = direct_on_status,
	.on_body = direct_on_body,
};

/* The reader stopped (the owner's on_body failed the request) or found
 * the answer broken, counted as libcurl counts the same bytes
 * (h1_curl_code: a broken head is a "weird server reply", broken body
 * framing a transfer cut short). */
static void direct_h1_failed(struct direct *d, int rc)
{
	if (rc == H1_STOPPED) {
		direct_fail(d, CURLE_WRITE_ERROR, "%s", "the answer was refused by its reader");
		return;
	}
	direct_fail(d, h1_curl_code(&d->h1), "bad HTTP answer: %s", h1_error(&d->h1));
}

/* One read into direct_rbuf, with the kernel's receive time of the newest
 * bytes read in *rx (http.h: arrival stamps), 0 when it gives none. */
static inline __attribute__((always_inline)) ssize_t direct_recv(struct direct *d, int64_t *rx)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct timespec))];
	} cm;
	struct iovec iov = { direct_rbuf, sizeof direct_rbuf };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b };
	ssize_t n = recvmsg(direct_fd(d), &m, 0);
	*rx = 0;
	if (n > 0) {
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(c), sizeof ts);
			*rx = http_rx_mono_ns(d->http, (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
		}
	}
	return n;
}

/* The connection's end (n == 0 from a read) or a read's failure. */
static void direct_read_end(struct direct *d, ssize_t n)
{
	if (n == 0) {
		if (h1_eof(&d->h1) == H1_COMPLETE)
			direct_end(d, CURLE_OK, false);
		else if (!h1_started(&d->h1) && d->send_errno)
			direct_fail(d, CURLE_SEND_ERROR, "Send failure: %s", strerror(d->send_errno));
		else if (!h1_started(&d->h1))
			direct_fail(d, CURLE_GOT_NOTHING, "%s", "Empty reply from server");
		else
			direct_fail(d, CURLE_PARTIAL_FILE, "%s", h1_error(&d->h1));
		return;
	}
	if (!h1_started(&d->h1) && d->send_errno)
		direct_fail(d, CURLE_SEND_ERROR, "Send failure: %s", strerror(d->send_errno));
	else
		direct_fail(d, CURLE_RECV_ERROR, "Recv failure: %s", strerror(errno));
}

static void direct_read(struct direct *d)
{
	/* What the token will touch besides the block libev has just read,
	 * asked for now: the recv() below spends a microsecond in the kernel,
	 * time enough for the memory to arrive instead of being waited for. */
	d->cb->prefetch(d);
	/* Every chunk of a read arrived together, before the loop woke for
	 * it; a second read of the same wake-up is stamped when it is made. */
	int64_t now = http_wake_ns(d->http);
	for (;;) {
		int64_t rx;
		ssize_t n = direct_recv(d, &rx);
		if (n > 0) {
			d->cb->on_read(d, rx ? rx : now ? now : clock_now_ns());
			now = 0;
			size_t used = 0;
			int rc = h1_feed(&d->h1, direct_rbuf, (size_t)n, &direct_h1, d, &used);
			if (rc == H1_COMPLETE) {
				/* Bytes after the answer belong to no request, and
				 * one answered before it was all sent leaves the
				 * rest unsent: the connection is not trusted with
				 * another. */
				direct_end(d, CURLE_OK, d->h1.keep_alive && used == (size_t)n && direct_sent(d));
				return;
			}
			if (rc != H1_MORE) {
				direct_h1_failed(d, rc);
				return;
			}
			/* Read while still writing: a refusal (status 300 and
			 * up) ends the sending, as libcurl does; the answer is
			 * read to its end. */
			if (__builtin_expect(d->io.events & EV_WRITE, 0) && d->h1.status >= 300)
				direct_arm(d, EV_READ);
			if ((size_t)n < sizeof direct_rbuf)
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		direct_read_end(d, n);
		return;
	}
}


/* ---- https: the TLS session over the same socket (tls.h) ---------------- */

/* The session's failure, as curl names it. */
static void direct_tls_failed(struct direct *d)
{
	const char *msg;
	CURLcode rc = tls_error(d->tls, &msg);
	direct_fail(d, rc, "%s", msg);
}

/* Sends what the session has written. 0 (all sent, or the socket full:
 * the rest waits for EV_WRITE), or -1 with errno. */
static int direct_tls_flush(struct direct *d)
{
	const char *p;
	size_t n;
	while ((n = tls_out(d->tls, &p)) > 0) {
		ssize_t k = send(direct_fd(d), p, n, MSG_NOSIGNAL);
		if (k < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
		tls_out_done(d->tls, (size_t)k);
	}
	return 0;
}

/* Drives the handshake on. 0: not done yet (the watcher armed for what it
 * waits on); 1: done, the request is going out; -1: the request ended
 * (failed), d is its owner's again. */
static int direct_tls_shake(struct direct *d)
{
	int rc = tls_handshake(d->tls);
	if (direct_tls_flush(d) != 0) {
		direct_fail(d, CURLE_SSL_CONNECT_ERROR, "Send failure: %s", strerror(errno));
		return -1;
	}
	if (rc == TLS_FAILED) {
		direct_tls_failed(d);
		return -1;
	}
	const char *p;
	if (rc == TLS_MORE) {
		direct_arm(d, EV_READ | (tls_out(d->tls, &p) ? EV_WRITE : 0));
		return 0;
	}
	d->tls_ready = true;
	/* As on a plain connection once curl has made it (direct_connected). */
	direct_write(d);
	if (direct_fd(d) >= 0 && !d->connecting && !d->send_errno && !direct_sent(d))
		direct_arm(d, EV_READ | EV_WRITE);
	return 1;
}

/* The request through the session: all of it at once (a memory buffer
 * takes it all), then its ciphertext out as the socket takes it. */
static void direct_read_tls(struct direct *d);

static void direct_write_tls(struct direct *d)
{
	if (d->out_off == 0) {
		if (d->conn_reused && direct_conn_dead(direct_fd(d))) {
			direct_reuse_seen(d, true);
			direct_close(d);
			if (direct_connect(d) != 0)
				direct_fail(d, CURLE_COULDNT_CONNECT, "%s", "out of memory for a connection");
			return;
		}
		d->cb->on_send(d, clock_now_ns());
		if (tls_write(d->tls, d->head, d->head_len) != 0 ||
		    (d->body_len && tls_write(d->tls, d->body, d->body_len) != 0)) {
			direct_tls_failed(d);
			return;
		}
		d->out_off = d->head_len + d->body_len;
	}
	if (direct_tls_flush(d) != 0) {
		/* As on plain http: an answer sent before the refusal is read. */
		d->send_errno = errno;
		direct_arm(d, EV_READ);
		direct_read_tls(d);
		return;
	}
	if (direct_sent(d))
		direct_arm(d, EV_READ);
}

/* direct_read's twin for https: each read of ciphertext is stamped, fed to
 * the session, and the plaintext it gives goes through the reader with
 * that stamp. */
static void direct_read_tls(struct direct *d)
{
	d->cb->prefetch(d);
	int64_t now = http_wake_ns(d->http);
	for (;;) {
		int64_t rx;
		ssize_t n = direct_recv(d, &rx);
		if (n > 0) {
			if (tls_feed(d->tls, direct_rbuf, (size_t)n) != 0) {
				direct_fail(d, CURLE_OUT_OF_MEMORY, "%s", "out of memory for TLS");
				return;
			}
			if (!d->tls_ready) {
				if (direct_tls_shake(d) != 0 || (size_t)n < sizeof direct_rbuf)
					return;
				continue;
			}
			d->cb->on_read(d, rx ? rx : now ? now : clock_now_ns());
			now = 0;
			/* The ciphertext is the session's now: the buffer takes
			 * the plaintext. */
			for (;;) {
				ssize_t k = tls_read(d->tls, direct_rbuf, sizeof direct_rbuf);
				if (k == TLS_MORE)
					break;
				if (k == TLS_CLOSED) { /* close_notify: the end, as a TCP close */
					direct_read_end(d, 0);
					return;
				}
				if (k == TLS_FAILED) {
					direct_tls_failed(d);
					return;
				}
				size_t used = 0;
				int hr = h1_feed(&d->h1, direct_rbuf, (size_t)k, &direct_h1, d, &used);
				if (hr == H1_COMPLETE) {
					/* As plain http, and nothing else buffered in the
					 * session: bytes past the answer are no request's. */
					direct_end(d, CURLE_OK,
						   d->h1.keep_alive && used == (size_t)k && direct_sent(d) &&
							   !tls_buffered(d->tls));
					return;
				}
				if (hr != H1_MORE) {
					direct_h1_failed(d, hr);
					return;
				}
			}
			/* What reading made the session write (a key update's
			 * answer, a refused renegotiation's alert). */
			if (direct_tls_flush(d) != 0) {
				direct_fail(d, CURLE_SEND_ERROR, "Send failure: %s", strerror(errno));
				return;
			}
			if (__builtin_expect(d->io.events & EV_WRITE, 0) && d->h1.status >= 300)
				direct_arm(d, EV_READ);
			if ((size_t)n < sizeof direct_rbuf)
				return;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (n == 0 && !d->tls_ready) {
			tls_note_eof(d->tls);
			direct_tls_failed(d);
			return;
		}
		if (!d->tls_ready) { /* a reset in the handshake: curl's code and words */
			direct_fail(d, CURLE_SSL_CONNECT_ERROR, "Recv failure: %s", strerror(errno));
			return;
		}
		/* A TCP close without close_notify is read as plain http's
		 * close: a body it cuts is truncated. */
		direct_read_end(d, n);
		return;
	}
}

static void direct_on_io_tls(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	struct direct *d = w->data;
	if (!d->tls_ready) {
		if (revents & EV_READ)
			direct_read_tls(d);
		else
			direct_tls_shake(d);
		return;
	}
	if (!(revents & EV_WRITE) || ((revents & EV_READ) && d->out_off))
		direct_read_tls(d);
	else
		direct_write(d);
}

static void direct_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	struct direct *d = w->data;
	/* While it writes it reads too (an early answer): one of the two
	 * per wake-up, as the first may end the request; before the first
	 * byte, the write, which finds a kept connection closed since
	 * (direct_conn_dead) without a resend. */
	if (!(revents & EV_WRITE) || ((revents & EV_READ) && d->out_off))
		direct_read(d);
	else
		direct_write(d);
}

static void direct_on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct direct *d = w->data;
	if (d->conn_idle) { /* no request: its kept connection idled out */
		d->conn_idle = false;
		direct_close_as(d, true);
		return;
	}
	if (d->init_rc != CURLE_OK) { /* the request could not start (direct_start) */
		snprintf(d->err, sizeof d->err, "%s", d->err0);
		direct_end(d, d->init_rc, false);
		return;
	}
	if (d->connecting) {
		d->connecting = false;
		http_remove(d->http, d->easy);
	}
	snprintf(d->err, sizeof d->err, "Operation timed out after %ld milliseconds with %llu bytes received",
		 d->timeout_ms, (unsigned long long)(d->h1.header_bytes + d->h1.body_bytes));
	direct_end(d, CURLE_OPERATION_TIMEDOUT, false);
}

static void direct_connected(struct http_xfer *x, CURLcode rc)
{
	struct direct *d = (struct direct *)((char *)x - offsetof(struct direct, xfer));
	d->connecting = false;
	if (rc == CURLE_OK && d->xfer.taken_fd < 0) {
		snprintf(d->err, sizeof d->err, "no socket after connecting: %s", strerror(d->xfer.taken_errno));
		rc = CURLE_COULDNT_CONNECT;
	}
	if (rc != CURLE_OK) {
		ev_timer_stop(http_loop(d->http), &d->deadline);
		d->cb->on_done(d, rc, d->err[0] ? d->err : NULL);
		return;
	}
	ev_io_set(&d->io, d->xfer.taken_fd, 0);
	d->xfer.taken_fd = -1;
	int one = 1;
	if (setsockopt(direct_fd(d), SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) == 0)
		http_rx_stamps_on(d->http);
	d->cb->on_connect(d);
	if (d->tls_target) {
		if (!(d->tls = tls_conn_new(d->tls_target))) {
			direct_fail(d, CURLE_OUT_OF_MEMORY, "%s", "out of memory for TLS");
			return;
		}
		d->tls_ready = false;
		direct_tls_shake(d);
		return;
	}
	direct_write(d);
	/* The write may have ended the request, and its owner started the
	 * next (on a new connection: none is kept after a failed write). */
	if (direct_fd(d) >= 0 && !d->connecting && !d->send_errno && !direct_sent(d))
		direct_arm(d, EV_READ | EV_WRITE);
}

/* https: the TLS settings and target, and the http:// URL of the same
 * host and port for curl to connect to. curl would make its own TLS
 * session on an https URL even as CONNECT_ONLY (and CURLOPT_CONNECT_TO
 * keeps the scheme), so it is told plain http with the port made explicit:
 * it resolves and connects as before and hands over a bare TCP socket.
 * NULL: not https (url as it is), or out of memory (d->init_rc says). */
static char *direct_tls_setup(struct direct *d, const char *url, const struct tls_opts *opts)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *plain = NULL;
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || strcmp(scheme, "https") != 0 ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
		goto out;
	/* An IPv6 address comes bracketed: the certificate names it bare. */
	size_t hl = strlen(host);
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	struct tls_ctx *ctx = http_tls(d->http, opts, d->err0, sizeof d->err0);
	if (!ctx) {
		d->init_rc = CURLE_SSL_CACERT_BADFILE;
	} else if (!(d->tls_target = tls_target_get(ctx, host, strtol(port, NULL, 10)))) {
		d->init_rc = CURLE_OUT_OF_MEMORY;
		snprintf(d->err0, sizeof d->err0, "%s", "out of memory for TLS");
	}
	if (curl_url_set(u, CURLUPART_SCHEME, "http", 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_PORT, port, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &plain, 0) != CURLUE_OK)
		plain = NULL;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return plain;
}

int direct_init(struct direct *d, struct http *http, const char *url, long timeout_ms, bool new_connection,
		const struct tls_opts *tls, const struct direct_callbacks *cb)
{
	d->http = http;
	d->cb = cb;
	d->timeout_ms = timeout_ms;
	d->new_connection = new_connection;
	ev_init(&d->io, direct_on_io);
	ev_io_set(&d->io, -1, 0);
	ev_init(&d->deadline, direct_on_deadline);
	d->io.data = d->deadline.data = d;
	d->xfer.done = direct_connected;
	d->xfer.taken_fd = -1;
	h1_reset(&d->h1, false);
	d->init_rc = CURLE_OK;
	char *plain = NULL;
	if (strncasecmp(url, "https:", 6) == 0) {
		if (!(plain = direct_tls_setup(d, url, tls)))
			return -1;
		ev_init(&d->io, direct_on_io_tls);
		ev_io_set(&d->io, -1, 0);
		d->io.data = d;
	}
	if (!(d->easy = curl_easy_init())) {
		curl_free(plain);
		return -1;
	}
	CURL *e = d->easy;
	curl_easy_setopt(e, CURLOPT_URL, plain ? plain : url); /* curl copies it */
	curl_free(plain);
	curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)&d->xfer);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, d->err);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 30000 ? timeout_ms : 30000L);
	/* curl only connects: the rest is the transport's. */
	curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 1024L);
	return 0;
}

void direct_cleanup(struct direct *d)
{
	if (!d->http)
		return;
	ev_timer_stop(http_loop(d->http), &d->deadline);
	if (d->connecting)
		http_remove(d->http, d->easy);
	direct_close(d);
	if (d->easy)
		curl_easy_cleanup(d->easy);
	d->easy = NULL;
}

int direct_start(struct direct *d, const char *head, size_t head_len, const char *body, size_t body_len,
		 bool fresh)
{
	struct ev_loop *loop = http_loop(d->http);
	int64_t idle_limit = (int64_t)http_reuse_limit(d->http) * CLOCK_NS_PER_S;
	if (direct_fd(d) >= 0 &&
	    (fresh || d->new_connection || clock_now_ns() - d->conn_idle_since >= idle_limit))
		direct_close(d);
	d->head = head;
	d->head_len = head_len;
	d->body = body;
	d->body_len = body_len;
	d->out_off = 0;
	d->send_errno = 0;
	d->conn_idle = false;
	d->err[0] = '\0';
	h1_reset(&d->h1, false);
	ev_timer_stop(loop, &d->deadline);
	if (d->init_rc != CURLE_OK) {
		/* It fails from the loop (direct_on_deadline): failing here
		 * would start its owner's next request inside this call. */
		ev_timer_set(&d->deadline, 0., 0.);
		ev_timer_start(loop, &d->deadline);
		return 0;
	}
	if (d->timeout_ms > 0) {
		ev_timer_set(&d->deadline, (double)d->timeout_ms / 1000.0, 0.);
		ev_timer_start(loop, &d->deadline);
	}
	d->conn_reused = direct_fd(d) >= 0;
	if (d->conn_reused) {
		/* Written from the loop, not from here: a failed write ends
		 * the request, and its owner may be starting it right now. */
		direct_arm(d, EV_READ | EV_WRITE);
		return 0;
	}
	if (direct_connect(d) != 0) {
		ev_timer_stop(loop, &d->deadline);
		return -1;
	}
	return 0;
}

int direct_resend(struct direct *d)
{
	direct_reuse_seen(d, true); /* a kept connection died under it */
	return direct_start(d, d->head, d->head_len, d->body, d->body_len, true);
}

void direct_abort(struct direct *d)
{
	/* Cut mid-answer: the connection cannot carry another. */
	if (d->connecting) {
		d->connecting = false;
		http_remove(d->http, d->easy);
	}
	ev_timer_stop(http_loop(d->http), &d->deadline);
	direct_close(d);
}
