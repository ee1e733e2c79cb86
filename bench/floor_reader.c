/*
 * floor_reader: the floor for the per-token cost benchmark. The least a
 * client can do with a token stream: one epoll loop, one read per wake-up,
 * one clock stamp per read, and counting `data:` lines. Whatever infertop
 * spends above this (bench/token_cost.sh prints the ratio) is ours to
 * remove; what this spends is the kernel's.
 *
 * With -s it speaks TLS (bench/token_source -c/-k): the TLS floor, a bare
 * OpenSSL epoll reader. Each wake-up is still one read(), of ciphertext,
 * fed to a memory BIO (read ahead: a record is one BIO read, not a header
 * and a body), then SSL_read() until OpenSSL wants more: the least
 * a TLS client can do (a socket BIO would add a read() that finds nothing,
 * or two per record without read-ahead). The certificate is not checked
 * (as -k); handshakes are done before the clock starts, as connects are.
 *
 * With -S the streams' first requests go out spread evenly over one ITL
 * (or the TTFT, if shorter: no token can arrive while they are sent), not
 * all at once. A client that connects its streams one after another (a
 * TLS handshake costs ~1 ms of CPU here) starts them spread in phase, and
 * streams in phase share wake-ups: a floor whose streams all start
 * together is woken 3x less often than such a client on the same load.
 *
 *   floor_reader -p PORT [-s] [-S] [-c STREAMS] [-n REQUESTS] [-t TOKENS] [-f TTFT_MS] [-i ITL_MS]
 * Closed loop over keep-alive connections to bench/token_source. Prints one
 * line of figures: CPU per token (user, sys) and TTFT/E2E/ITL against the
 * source's schedule (-t/-f/-i must match the source's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#define BUF_CAP 65536
#define CARRY 16                    /* > strlen("\ndata: [DONE]") */
#define HIST_US 1000000             /* 1 µs buckets up to 1 s */

struct stream {
	int fd;
	SSL *ssl;                   /* -s: the session, reading from rbio */
	BIO *rbio;
	int64_t t_send, t_first, t_prev;
	int data_lines;
	size_t carry;
	char tail[CARRY];
};

static uint32_t *itl_hist, *ttft_hist, *e2e_hist;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void hist_add(uint32_t *h, int64_t ns)
{
	int64_t us = ns / 1000;
	if (us < 0)
		us = 0;
	h[us < HIST_US ? us : HIST_US - 1]++;
}

static double hist_q(const uint32_t *h, double q)
{
	uint64_t total = 0, seen = 0;
	for (int i = 0; i < HIST_US; i++)
		total += h[i];
	for (int i = 0; i < HIST_US && total; i++) {
		seen += h[i];
		if ((double)seen >= q * (double)total)
			return (i + 0.5) / 1000.0;
	}
	return 0;
}

static int send_request(struct stream *s, int tokens)
{
	char body[256], req[512];
	int bl = snprintf(body, sizeof body,
			  "{\"model\":\"bench\",\"prompt\":\"hello\",\"max_tokens\":%d,\"stream\":true}", tokens);
	int rl = snprintf(req, sizeof req,
			  "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
			  "Content-Length: %d\r\n\r\n%s", bl, body);
	s->t_send = now_ns();
	s->t_first = s->t_prev = 0;
	s->data_lines = 0;
	s->carry = 0;
	if (s->ssl)
		return SSL_write(s->ssl, req, rl) == rl ? 0 : -1;
	return write(s->fd, req, (size_t)rl) == rl ? 0 : -1;
}

/* -s: a TLS session on the connected (blocking) socket, handshake done:
 * what the server sends is read here and fed to the memory BIO, what
 * OpenSSL sends goes straight to the socket. */
static int tls_connect(SSL_CTX *ctx, struct stream *s, char *buf, size_t cap)
{
	BIO *wbio = BIO_new_socket(s->fd, BIO_NOCLOSE);
	s->rbio = BIO_new(BIO_s_mem());
	s->ssl = SSL_new(ctx);
	if (!wbio || !s->rbio || !s->ssl)
		return -1;
	BIO_set_mem_eof_return(s->rbio, -1);    /* empty: want more, not the end */
	SSL_set_bio(s->ssl, s->rbio, wbio);
	SSL_set_read_ahead(s->ssl, 1); /* a record in one BIO read, not two */
	SSL_set_tlsext_host_name(s->ssl, "localhost");
	for (;;) {
		int r = SSL_connect(s->ssl);
		if (r == 1)
			return 0;
		if (SSL_get_error(s->ssl, r) != SSL_ERROR_WANT_READ)
			break;
		ssize_t n = read(s->fd, buf, cap);
		if (n <= 0 || BIO_write(s->rbio, buf, (int)n) != (int)n)
			break;
	}
	char why[256];
	ERR_error_string_n(ERR_get_error(), why, sizeof why);
	fprintf(stderr, "floor_reader: TLS handshake: %s\n", why);
	return -1;
}

/* -s: one read() of ciphertext, then all the plaintext it completes, into
 * buf[0..cap): its length, 0 when it completed none (a partial record, a
 * session ticket), -1 at the end or on an error (errno EAGAIN: nothing). */
static ssize_t tls_read(struct stream *s, char *buf, size_t cap, char *cipher, size_t ccap)
{
	ssize_t n = read(s->fd, cipher, ccap);
	if (n <= 0)
		return -1;
	if (BIO_write(s->rbio, cipher, (int)n) != (int)n)
		return -1;
	size_t len = 0;
	while (len < cap) {
		int r = SSL_read(s->ssl, buf + len, (int)(cap - len));
		if (r > 0) {
			len += (size_t)r;
			continue;
		}
		if (SSL_get_error(s->ssl, r) != SSL_ERROR_WANT_READ) {
			errno = EPROTO;
			return -1;
		}
		break;
	}
	return (ssize_t)len;
}

int main(int argc, char **argv)
{
	int port = 0, streams = 100, requests = 1000, tokens = 100, tls = 0, spread = 0, opt;
	double ttft_ms = 10, itl_ms = 10;
	while ((opt = getopt(argc, argv, "p:sSc:n:t:f:i:")) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 's': tls = 1; break;
		case 'S': spread = 1; break;
		case 'c': streams = atoi(optarg); break;
		case 'n': requests = atoi(optarg); break;
		case 't': tokens = atoi(optarg); break;
		case 'f': ttft_ms = atof(optarg); break;
		case 'i': itl_ms = atof(optarg); break;
		default:
			fprintf(stderr, "usage: floor_reader -p PORT [-s] [-S] [-c STREAMS] [-n REQUESTS] [-t TOKENS] [-f TTFT_MS] "
				"[-i ITL_MS]\n");
			return 2;
		}
	}
	if (port <= 0 || streams < 1 || requests < streams || tokens < 1) {
		fprintf(stderr, "floor_reader: need -p PORT, STREAMS >= 1, REQUESTS >= STREAMS, TOKENS >= 1\n");
		return 2;
	}
	itl_hist = calloc(HIST_US, sizeof *itl_hist);
	ttft_hist = calloc(HIST_US, sizeof *ttft_hist);
	e2e_hist = calloc(HIST_US, sizeof *e2e_hist);
	struct stream *ss = calloc((size_t)streams, sizeof *ss);
	char *buf = malloc(BUF_CAP + CARRY);
	/* -s: the ciphertext of one read; records carry ~22 bytes more than
	 * their plaintext, so a read of BUF_CAP never yields more than it. */
	char *cipher = malloc(BUF_CAP);
	if (!itl_hist || !ttft_hist || !e2e_hist || !ss || !buf || !cipher)
		return 1;
	SSL_CTX *ctx = NULL;
	if (tls) {
		ctx = SSL_CTX_new(TLS_client_method());
		if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION))
			return 1;
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	}

	int ep = epoll_create1(0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int sent = 0, done = 0, failed = 0;
	uint64_t tokens_seen = 0;
	for (int i = 0; i < streams; i++) {
		ss[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		if (ss[i].fd < 0 || connect(ss[i].fd, (struct sockaddr *)&a, sizeof a) < 0) {
			perror("floor_reader: connect");
			return 1;
		}
		setsockopt(ss[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (ctx && tls_connect(ctx, &ss[i], cipher, BUF_CAP) != 0)
			return 1;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ss[i]};
		epoll_ctl(ep, EPOLL_CTL_ADD, ss[i].fd, &ev);
	}
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	int64_t t0 = now_ns();
	double window_ms = ttft_ms < itl_ms ? ttft_ms : itl_ms;
	for (int i = 0; i < streams; i++, sent++) {
		if (send_request(&ss[i], tokens) < 0)
			return 1;
		if (spread && i + 1 < streams) {
			long gap = (long)(window_ms * 1e6 / streams);
			struct timespec ts = {gap / 1000000000L, gap % 1000000000L};
			nanosleep(&ts, NULL);
		}
	}

	struct epoll_event evs[256];
	while (done + failed < sent) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int k = 0; k < n; k++) {
			struct stream *s = evs[k].data.ptr;
			/* The tail of the last read goes first, so a `data:` split
			 * between two reads is still seen once. */
			memcpy(buf, s->tail, s->carry);
			ssize_t r = s->ssl ? tls_read(s, buf + s->carry, BUF_CAP, cipher, BUF_CAP)
					   : read(s->fd, buf + s->carry, BUF_CAP);
			if (r == 0 && s->ssl)
				continue;
			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				failed++;
				epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
				continue;
			}
			int64_t t = now_ns();
			size_t len = s->carry + (size_t)r;
			int before = s->data_lines, finished = 0;
			const char *p = buf, *end = buf + len;
			while ((p = memmem(p, (size_t)(end - p), "\ndata: ", 7)) != NULL) {
				p += 7;
				if (p < end && *p == '[') {
					finished = 1;
					break;
				}
				s->data_lines++;
			}
			/* Keep the bytes after the last newline: a `data:` line may
			 * start in them. */
			const char *nl = memrchr(buf, '\n', len);
			size_t keep = nl ? (size_t)(end - nl) : 0;
			if (keep > CARRY)
				keep = 0;
			memcpy(s->tail, end - keep, keep);
			s->carry = keep;
			if (s->data_lines > before && before < tokens) {   /* a token came in this read */
				if (!s->t_first) {
					s->t_first = t;
					hist_add(ttft_hist, t - s->t_send);
				} else {
					hist_add(itl_hist, t - s->t_prev);
				}
				s->t_prev = t;
			}
			if (finished) {
				/* data lines = tokens + the usage chunk */
				tokens_seen += (uint64_t)(s->data_lines > 0 ? s->data_lines - 1 : 0);
				hist_add(e2e_hist, s->t_prev - s->t_send);
				done++;
				if (sent < requests) {
					sent++;
					if (send_request(s, tokens) < 0)
						failed++;
				}
			}
		}
	}
	int64_t wall = now_ns() - t0;
	getrusage(RUSAGE_SELF, &r1);
	double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
		      (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6;
	double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
		     (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	/* And the whole process's, start-up and handshakes included: what a
	 * client's whole run is held against. */
	double whole_user = (double)r1.ru_utime.tv_sec + (double)r1.ru_utime.tv_usec / 1e6;
	double whole_sys = (double)r1.ru_stime.tv_sec + (double)r1.ru_stime.tv_usec / 1e6;
	double tok = (double)(tokens_seen ? tokens_seen : 1);
	double e2e_truth = ttft_ms + (tokens - 1) * itl_ms;
	char tls_used[128] = "none";
	if (ss[0].ssl)
		snprintf(tls_used, sizeof tls_used, "%s/%s", SSL_get_version(ss[0].ssl), SSL_get_cipher_name(ss[0].ssl));
	printf("floor streams=%d requests=%d failed=%d tokens=%llu tls=%s wall_s=%.2f user_s=%.3f sys_s=%.3f "
	       "whole_user_s=%.3f whole_sys_s=%.3f user_us_per_token=%.3f sys_us_per_token=%.3f ttft_p50_err_ms=%+.2f e2e_p50_err_ms=%+.2f "
	       "itl_p50_ms=%.2f itl_p99_ms=%.2f\n",
	       streams, done, failed, (unsigned long long)tokens_seen, tls_used, (double)wall / 1e9, user, sys,
	       whole_user, whole_sys, user * 1e6 / tok, sys * 1e6 / tok, hist_q(ttft_hist, 0.5) - ttft_ms,
	       hist_q(e2e_hist, 0.5) - e2e_truth, hist_q(itl_hist, 0.5), hist_q(itl_hist, 0.99));
	for (int i = 0; i < streams; i++) {
		SSL_free(ss[i].ssl);
		close(ss[i].fd);
	}
	SSL_CTX_free(ctx);
	free(ss);
	free(buf);
	free(cipher);
	free(itl_hist);
	free(ttft_hist);
	free(e2e_hist);
	return failed ? 1 : 0;
}
