/*
 * token_source: an exact-timing streaming source for the per-token cost
 * benchmark (bench/token_cost.sh). It answers POST .../completions with an
 * OpenAI-shaped SSE stream in which every token is its own write() (its own
 * HTTP chunk), the way a real server under load sends them: the first token
 * TTFT after the request, then one every ITL, then a usage chunk and
 * [DONE]. Keep-alive: the next request may follow on the same connection.
 *
 * The simulator (infertop sim) could play this role, but libmicrohttpd
 * coalesces what it has ready and rescans suspended connections on every
 * resume, so at 1,000 streams its own lateness would dominate. This source
 * is one epoll loop over a deadline heap, and it measures itself: every
 * write's lateness against its schedule goes into a histogram printed at
 * exit, so a late source is never blamed on the client. The schedule starts
 * at the kernel's receive time of the request's last bytes
 * (SO_TIMESTAMPING), so a request read late is the source's lateness too;
 * the last token's lateness is kept apart, as the source's share of a
 * client's E2E.
 *
 * With -c CERT -k KEY (PEM) it serves https instead (OpenSSL), in the same
 * shape: every token one SSL_write(), so one TLS record and one write() on
 * the socket; the ciphertext is read with recvmsg() (the kernel's receive
 * stamp kept) into a memory BIO, and the records go out through the
 * socket, non-blocking, a record the kernel would not take finished on
 * EPOLLOUT.
 *
 *   token_source [-t TOKENS] [-f TTFT_MS] [-i ITL_MS] [-l FILE] [-c CERT -k KEY]
 * It listens on a free loopback port and prints "port N" on stdout, then
 * "streaming" when the first stream starts; SIGTERM or SIGINT ends it and
 * prints its own lateness (stderr, and FILE if given).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#define MAX_FD 65536
#define IN_CAP 8192
#define OUT_CAP 16384
#define LAG_BUCKETS 1000000         /* 1 µs each, up to 1 s */
#define CIPHER_CAP 65536            /* one recvmsg() of ciphertext */

struct conn {
	int streaming;                  /* 0: reading a request */
	int chat;
	int tokens_sent;
	int64_t due;                    /* next token, CLOCK_MONOTONIC ns */
	/* The kernel's receive time of the last bytes read, 0: unknown. A
	 * request's schedule starts at that of the read that completed it:
	 * with one request at a time on a connection, the latest. (Not its
	 * first bytes': a client may send the head and the body apart, and
	 * the source cannot answer before the body.) */
	int64_t rx_at;
	size_t heap_pos;
	size_t in_len;
	char in[IN_CAP];
	size_t out_len, out_off;        /* bytes the kernel did not take yet */
	char *out;
	/* https: the session, and the memory BIO the ciphertext is fed into. */
	SSL *ssl;
	BIO *rbio;
	int hs_blocked;                 /* the handshake waits for EPOLLOUT */
};

static struct conn *conns[MAX_FD];
static int heap[MAX_FD];
static size_t heap_n;
static uint64_t lag_hist[LAG_BUCKETS + 1];
/* The lateness of each request's last token alone: what the source adds to
 * a client's E2E, to be told apart from the client's own error. */
static uint64_t last_hist[LAG_BUCKETS + 1];
static uint64_t writes, short_writes, requests;
static int64_t lag_max;
static volatile sig_atomic_t stop_flag;
static int n_tokens = 100;
static int64_t ttft_ns = 10000000, itl_ns = 10000000;
static SSL_CTX *tls_ctx;            /* NULL: plain http */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A binary min-heap of streaming fds keyed by their next due time. */
static void heap_swap(size_t a, size_t b)
{
	int t = heap[a];
	heap[a] = heap[b];
	heap[b] = t;
	conns[heap[a]]->heap_pos = a;
	conns[heap[b]]->heap_pos = b;
}

static void heap_up(size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (conns[heap[p]]->due <= conns[heap[i]]->due)
			break;
		heap_swap(i, p);
		i = p;
	}
}

static void heap_down(size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < heap_n && conns[heap[l]]->due < conns[heap[m]]->due)
			m = l;
		if (r < heap_n && conns[heap[r]]->due < conns[heap[m]]->due)
			m = r;
		if (m == i)
			break;
		heap_swap(i, m);
		i = m;
	}
}

static void heap_push(int fd)
{
	heap[heap_n] = fd;
	conns[fd]->heap_pos = heap_n;
	heap_up(heap_n++);
}

static void heap_remove(int fd)
{
	size_t i = conns[fd]->heap_pos;
	heap_n--;
	if (i != heap_n) {
		heap_swap(i, heap_n);
		heap_down(i);
		heap_up(i);
	}
}

static void conn_close(int ep, int fd)
{
	struct conn *c = conns[fd];
	if (c->streaming)
		heap_remove(fd);
	epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	SSL_free(c->ssl);               /* and both BIOs */
	close(fd);
	free(c->out);
	free(c);
	conns[fd] = NULL;
}

/* One write per call, as a server flushing one token does. What the kernel
 * does not take waits for EPOLLOUT (and is counted: it distorts timing). */
static int conn_send(int ep, int fd, const char *buf, size_t len)
{
	struct conn *c = conns[fd];
	if (c->out_len > c->out_off) {
		if (c->out_len + len > OUT_CAP)
			return -1;
		memcpy(c->out + c->out_len, buf, len);
		c->out_len += len;
		return 0;
	}
	ssize_t w;
	if (c->ssl) {
		/* One record. One the kernel would not take whole stays in
		 * OpenSSL and is finished by a later SSL_write of the same bytes
		 * (from c->out: a moving buffer is allowed). */
		int n = SSL_write(c->ssl, buf, (int)len);
		w = n > 0 ? n : 0;
		if (n <= 0 && SSL_get_error(c->ssl, n) != SSL_ERROR_WANT_WRITE)
			return -1;
	} else {
		w = write(fd, buf, len);
		if (w < 0 && errno != EAGAIN)
			return -1;
		if (w < 0)
			w = 0;
	}
	writes++;
	if ((size_t)w < len) {
		short_writes++;
		if (!c->out && !(c->out = malloc(OUT_CAP)))
			return -1;
		memcpy(c->out, buf + w, len - (size_t)w);
		c->out_len = len - (size_t)w;
		c->out_off = 0;
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
		epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	}
	return 0;
}

/* Frames an SSE event as one HTTP/1.1 chunk. */
static int send_event(int ep, int fd, const char *event)
{
	char buf[1024];
	size_t el = strlen(event);
	int n = snprintf(buf, sizeof buf, "%zx\r\n%s\r\n", el, event);
	if (n < 0 || (size_t)n >= sizeof buf)
		return -1;
	return conn_send(ep, fd, buf, (size_t)n);
}

static void record_lag(int64_t lag, bool last)
{
	if (lag < 0)
		lag = 0;
	if (lag > lag_max)
		lag_max = lag;
	int64_t us = lag / 1000;
	lag_hist[us < LAG_BUCKETS ? us : LAG_BUCKETS]++;
	if (last)
		last_hist[us < LAG_BUCKETS ? us : LAG_BUCKETS]++;
}

static int send_token(int ep, int fd)
{
	struct conn *c = conns[fd];
	char ev[512];
	if (c->chat)
		snprintf(ev, sizeof ev, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
			 "\"created\":0,\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":"
			 "{\"content\":\" tok\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
	else
		snprintf(ev, sizeof ev, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\","
			 "\"created\":0,\"model\":\"bench\",\"choices\":[{\"index\":0,\"text\":\" tok\","
			 "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
	return send_event(ep, fd, ev);
}

static int send_end(int ep, int fd)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf,
			 "data: {\"id\":\"cmpl-1\",\"object\":\"%s\",\"created\":0,\"model\":\"bench\","
			 "\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":%d,"
			 "\"total_tokens\":%d}}\n\n",
			 conns[fd]->chat ? "chat.completion.chunk" : "text_completion",
			 n_tokens, n_tokens + 16);
	if (n < 0 || send_event(ep, fd, buf) < 0)
		return -1;
	if (send_event(ep, fd, "data: [DONE]\n\n") < 0)
		return -1;
	return conn_send(ep, fd, "0\r\n\r\n", 5);
}

static int respond_plain(int ep, int fd, const char *status, const char *body)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf,
			 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 status, strlen(body), body);
	return conn_send(ep, fd, buf, (size_t)n);
}

/* A whole request in c->in: answer it. Returns bytes consumed, 0 when the
 * request is still incomplete, -1 on a protocol error. */
static long handle_request(int ep, int fd)
{
	struct conn *c = conns[fd];
	char *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	if (!end)
		return c->in_len >= IN_CAP ? -1 : 0;
	size_t head = (size_t)(end - c->in) + 4;
	size_t body = 0;
	for (char *p = c->in; p < end; p++) {
		if (*p == '\n' && strncasecmp(p + 1, "content-length:", 15) == 0) {
			body = strtoul(p + 16, NULL, 10);
			break;
		}
	}
	if (head + body > IN_CAP)
		return -1;
	if (c->in_len < head + body)
		return 0;
	requests++;
	int is_post = strncmp(c->in, "POST ", 5) == 0;
	char *line_end = memchr(c->in, '\r', head);
	int completions = is_post && memmem(c->in, (size_t)(line_end - c->in), "completions", 11);
	if (completions) {
		c->chat = memmem(c->in, (size_t)(line_end - c->in), "/chat/", 6) != NULL;
		const char *h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
				"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
		if (conn_send(ep, fd, h, strlen(h)) < 0)
			return -1;
		c->streaming = 1;
		c->tokens_sent = 0;
		c->due = (c->rx_at ? c->rx_at : now_ns()) + ttft_ns;
		heap_push(fd);
		/* For a script that must act once a run is under way
		 * (token_cost.sh STOP_SOURCE_MS). */
		static bool said;
		if (!said) {
			said = true;
			printf("streaming\n");
			fflush(stdout);
		}
	} else if (strncmp(c->in, "GET /v1/models ", 15) == 0) {
		if (respond_plain(ep, fd, "200 OK",
				  "{\"object\":\"list\",\"data\":[{\"id\":\"bench\",\"object\":\"model\"}]}") < 0)
			return -1;
	} else if (respond_plain(ep, fd, "404 Not Found", "{}") < 0) {
		return -1;
	}
	return (long)(head + body);
}

/* The kernel's receive time of what recvmsg() just read (SO_TIMESTAMPING)
 * on CLOCK_MONOTONIC, 0 when it gave none. A request's schedule starts
 * there, not when this loop got round to reading it, so a busy source's
 * delay shows as its own lateness instead of moving the whole stream late
 * (a client's E2E error). */
static int64_t rx_stamp(struct msghdr *m)
{
	for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h; h = CMSG_NXTHDR(m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_TIMESTAMPING)
			continue;
		struct scm_timestamping st;
		memcpy(&st, CMSG_DATA(h), sizeof st);
		struct timespec rt;
		clock_gettime(CLOCK_REALTIME, &rt);
		int64_t real_now = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec;
		int64_t real_at = (int64_t)st.ts[0].tv_sec * 1000000000 + st.ts[0].tv_nsec;
		if (real_at > 0 && real_at <= real_now)
			return now_ns() - (real_now - real_at);
	}
	return 0;
}

/* One recvmsg() into buf: > 0 bytes (and *at their stamp), 0 at the end,
 * -1 on EAGAIN, -2 on an error. */
static ssize_t recv_stamped(int fd, char *buf, size_t cap, int64_t *at)
{
	struct iovec iov = {.iov_base = buf, .iov_len = cap};
	union {
		char buf[CMSG_SPACE(sizeof(struct scm_timestamping))];
		struct cmsghdr align;
	} ctl;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
	ssize_t r;
	do
		r = recvmsg(fd, &m, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN ? -1 : -2;
	if (r > 0)
		*at = rx_stamp(&m);
	return r;
}

/* https: the plaintext OpenSSL has from the ciphertext fed so far, into
 * c->in. 0, or -1 when the connection must close (an alert, a bad record,
 * the peer's close_notify). */
static int tls_drain(int ep, int fd)
{
	struct conn *c = conns[fd];
	while (c->in_len < IN_CAP) {
		int n = SSL_read(c->ssl, c->in + c->in_len, (int)(IN_CAP - c->in_len));
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		int e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ)
			return 0;
		if (e == SSL_ERROR_WANT_WRITE) {
			/* A handshake message the kernel would not take. */
			c->hs_blocked = 1;
			struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd};
			epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
			return 0;
		}
		return -1;
	}
	return 0;
}

/* Reads what came in, to EAGAIN or a full c->in: 0, or -1 when the
 * connection is gone (closed, or an error). */
static int read_in(int ep, int fd)
{
	struct conn *c = conns[fd];
	if (c->ssl) {
		static char cipher[CIPHER_CAP];
		if (!c->hs_blocked && tls_drain(ep, fd) < 0)
			return -1;
		while (c->in_len < IN_CAP && !c->hs_blocked) {
			ssize_t r = recv_stamped(fd, cipher, sizeof cipher, &c->rx_at);
			if (r == -1)
				break;
			if (r <= 0 || BIO_write(c->rbio, cipher, (int)r) != (int)r || tls_drain(ep, fd) < 0)
				return -1;
		}
		return 0;
	}
	while (c->in_len < IN_CAP) {
		ssize_t r = recv_stamped(fd, c->in + c->in_len, IN_CAP - c->in_len, &c->rx_at);
		if (r == -1)
			break;
		if (r <= 0)
			return -1;
		c->in_len += (size_t)r;
	}
	return 0;
}

static void on_readable(int ep, int fd)
{
	struct conn *c = conns[fd];
	if (read_in(ep, fd) < 0) {
		conn_close(ep, fd);
		return;
	}
	/* A stream in progress answers its next request only when it is done. */
	while (!c->streaming && c->in_len) {
		long used = handle_request(ep, fd);
		if (used < 0) {
			conn_close(ep, fd);
			return;
		}
		if (used == 0)
			break;
		memmove(c->in, c->in + used, c->in_len - (size_t)used);
		c->in_len -= (size_t)used;
	}
}

static void on_writable(int ep, int fd)
{
	struct conn *c = conns[fd];
	if (c->hs_blocked) {
		c->hs_blocked = 0;
		struct epoll_event ev = {.events = EPOLLIN | (c->out_len > c->out_off ? EPOLLOUT : 0), .data.fd = fd};
		epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
		on_readable(ep, fd);
		return;
	}
	while (c->out_off < c->out_len) {
		ssize_t w;
		if (c->ssl) {
			int n = SSL_write(c->ssl, c->out + c->out_off, (int)(c->out_len - c->out_off));
			if (n <= 0 && SSL_get_error(c->ssl, n) != SSL_ERROR_WANT_WRITE) {
				conn_close(ep, fd);
				return;
			}
			w = n > 0 ? n : -1;
		} else {
			w = write(fd, c->out + c->out_off, c->out_len - c->out_off);
			if (w < 0 && errno != EAGAIN) {
				conn_close(ep, fd);
				return;
			}
		}
		if (w <= 0)
			break;
		c->out_off += (size_t)w;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
		epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
	}
}

static void fire_due(int ep)
{
	int64_t now = now_ns();
	while (heap_n && conns[heap[0]]->due <= now) {
		int fd = heap[0];
		struct conn *c = conns[fd];
		record_lag(now - c->due, c->tokens_sent + 1 >= n_tokens);
		if (send_token(ep, fd) < 0) {
			conn_close(ep, fd);
			continue;
		}
		if (++c->tokens_sent >= n_tokens) {
			heap_remove(fd);
			c->streaming = 0;
			if (send_end(ep, fd) < 0) {
				conn_close(ep, fd);
				continue;
			}
			on_readable(ep, fd);  /* a request already waiting */
		} else {
			c->due += itl_ns;
			heap_down(0);
		}
		now = now_ns();
	}
}

static double hist_quantile(const uint64_t *hist, double q)
{
	uint64_t total = 0, seen = 0;
	for (size_t i = 0; i <= LAG_BUCKETS; i++)
		total += hist[i];
	if (!total)
		return 0;
	for (size_t i = 0; i < LAG_BUCKETS; i++) {
		seen += hist[i];
		if ((double)seen >= q * (double)total)
			return (double)(i + 1) / 1000.0;
	}
	/* Past the last bucket: the largest, a bound that is never low. */
	return (double)lag_max / 1e6;
}

static void print_report(FILE *f)
{
	fprintf(f, "source: %llu requests%s, %llu writes (%llu short), lateness p50 %.3f ms "
		"p99 %.3f ms p99.9 %.3f ms max %.3f ms\n",
		(unsigned long long)requests, tls_ctx ? " over https" : "", (unsigned long long)writes,
		(unsigned long long)short_writes, hist_quantile(lag_hist, 0.5), hist_quantile(lag_hist, 0.99),
		hist_quantile(lag_hist, 0.999), (double)lag_max / 1e6);
	fprintf(f, "source: last token lateness p50 %.3f ms p99 %.3f ms\n", hist_quantile(last_hist, 0.5),
		hist_quantile(last_hist, 0.99));
}

/* https: the server context (TLS 1.2 and up, OpenSSL's default ciphers). */
static int tls_setup(const char *cert, const char *key)
{
	tls_ctx = SSL_CTX_new(TLS_server_method());
	if (!tls_ctx || !SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION) ||
	    SSL_CTX_use_certificate_chain_file(tls_ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(tls_ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(tls_ctx) != 1) {
		char why[256];
		ERR_error_string_n(ERR_get_error(), why, sizeof why);
		fprintf(stderr, "token_source: cannot use -c %s -k %s: %s\n", cert, key, why);
		return -1;
	}
	/* A record the kernel took only in part is finished from c->out,
	 * whose address differs from the first call's. */
	SSL_CTX_set_mode(tls_ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return 0;
}

/* A session on an accepted socket: ciphertext in through a memory BIO (fed
 * by recvmsg, for the receive stamp), out straight to the socket. */
static int tls_accept(struct conn *c, int fd)
{
	BIO *wbio = BIO_new_socket(fd, BIO_NOCLOSE);
	c->rbio = BIO_new(BIO_s_mem());
	c->ssl = SSL_new(tls_ctx);
	if (!wbio || !c->rbio || !c->ssl) {
		BIO_free(wbio);
		BIO_free(c->rbio);
		SSL_free(c->ssl);
		return -1;
	}
	BIO_set_mem_eof_return(c->rbio, -1);    /* empty: want more, not the end */
	SSL_set_bio(c->ssl, c->rbio, wbio);
	SSL_set_accept_state(c->ssl);
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

int main(int argc, char **argv)
{
	const char *log_path = NULL, *cert = NULL, *key = NULL;
	int opt;
	while ((opt = getopt(argc, argv, "t:f:i:l:c:k:")) != -1) {
		switch (opt) {
		case 't': n_tokens = atoi(optarg); break;
		case 'f': ttft_ns = (int64_t)(atof(optarg) * 1e6); break;
		case 'i': itl_ns = (int64_t)(atof(optarg) * 1e6); break;
		case 'l': log_path = optarg; break;
		case 'c': cert = optarg; break;
		case 'k': key = optarg; break;
		default:
			fprintf(stderr, "usage: token_source [-t TOKENS] [-f TTFT_MS] [-i ITL_MS] [-l FILE] "
				"[-c CERT -k KEY]\n");
			return 2;
		}
	}
	if (n_tokens < 1 || ttft_ns < 0 || itl_ns < 0) {
		fprintf(stderr, "token_source: tokens must be >= 1 and times >= 0\n");
		return 2;
	}
	if (!cert != !key) {
		fprintf(stderr, "token_source: -c CERT and -k KEY go together\n");
		return 2;
	}
	if (cert && tls_setup(cert, key) != 0)
		return 2;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4096) < 0 ||
	    getsockname(ls, (struct sockaddr *)&a, &al) < 0) {
		perror("token_source: listen");
		return 1;
	}
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);

	int ep = epoll_create1(0);
	struct epoll_event lev = {.events = EPOLLIN, .data.fd = ls};
	epoll_ctl(ep, EPOLL_CTL_ADD, ls, &lev);
	struct epoll_event evs[256];
	int deferred = 0;
	while (!stop_flag) {
		struct timespec ts, *tp = NULL;
		if (deferred) {
			ts.tv_sec = ts.tv_nsec = 0;
			tp = &ts;
		} else if (heap_n) {
			int64_t wait = conns[heap[0]]->due - now_ns();
			if (wait < 0)
				wait = 0;
			ts.tv_sec = wait / 1000000000;
			ts.tv_nsec = wait % 1000000000;
			tp = &ts;
		}
		int n = epoll_pwait2(ep, evs, 256, tp, NULL);
		if (n < 0 && errno != EINTR) {
			perror("token_source: epoll");
			return 1;
		}
		/* https: a ClientHello costs the source a few hundred µs (key
		 * exchange, signature), and a client opening a thousand streams
		 * sends a thousand at once. Taken all in one batch, the requests
		 * of the connections done first would wait behind the rest and
		 * their streams start late; so one new handshake a turn, and the
		 * others (level-triggered) come back on the next. */
		int fresh_handshakes = 0;
		deferred = 0;
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd != ls && conns[fd] && conns[fd]->ssl && SSL_in_before(conns[fd]->ssl) &&
			    fresh_handshakes++ > 0) {
				deferred = 1;
				continue;
			}
			if (fd == ls) {
				int cfd;
				while ((cfd = accept4(ls, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					if (cfd >= MAX_FD || !(conns[cfd] = calloc(1, sizeof **conns))) {
						close(cfd);
						continue;
					}
					setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					int stamp = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
					setsockopt(cfd, SOL_SOCKET, SO_TIMESTAMPING, &stamp, sizeof stamp);
					if (tls_ctx && tls_accept(conns[cfd], cfd) != 0) {
						free(conns[cfd]);
						conns[cfd] = NULL;
						close(cfd);
						continue;
					}
					struct epoll_event ev = {.events = EPOLLIN, .data.fd = cfd};
					epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
				}
				continue;
			}
			if (!conns[fd])
				continue;
			if (evs[i].events & EPOLLOUT)
				on_writable(ep, fd);
			if (conns[fd] && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
				on_readable(ep, fd);
			/* Tokens due go before the next event: a TLS handshake
			 * takes a few hundred µs of CPU, and a thousand new
			 * connections in one batch would make every stream
			 * already running that much later. */
			fire_due(ep);
		}
		fire_due(ep);
	}
	print_report(stderr);
	if (log_path) {
		FILE *f = fopen(log_path, "w");
		if (f) {
			print_report(f);
			fclose(f);
		}
	}
	return 0;
}
