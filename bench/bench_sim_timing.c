/* How exactly does `infertop sim --timing fixed` send tokens on time when
 * it serves many streams at once?
 *
 * Starts the sim (--ttft 50ms --itl 10ms), opens N concurrent streaming
 * chat requests with libcurl's multi-socket API on one epoll loop, stamps
 * every token chunk in the write callback, and prints the distribution of
 * (measured gap between consecutive tokens - 10 ms) and of the TTFT error.
 * TTFT is taken two ways: from the role-only chunk, which the sim sends the
 * moment it has the request (a pure server-side interval), and from the
 * moment curl sent the request (stamped when curl pulls the body through a
 * read callback: what a client sees).
 * These client-side figures include the client's own delays: one thread
 * taking 100,000 chunks a second through curl on a small machine is late
 * itself. The sim's /metrics histogram infertop_sim_send_lag_seconds (due
 * time to hand-over to the socket, per chunk) is printed too: that is the
 * sim's error alone, at bucket resolution.
 *
 * Usage: bench_sim_timing [-n STREAMS] [-t TOKENS] [-b INFERTOP_BIN]
 * (default 1000 streams, 100 tokens, $INFERTOP_BIN or ./infertop). */
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/prom.h"
#include "infertop/sim.h"

#define TTFT_NS (50 * CLOCK_NS_PER_MS)
#define ITL_NS (10 * CLOCK_NS_PER_MS)

struct xfer {
	CURL *easy;
	int64_t t_sent;
	size_t body_off;
	int64_t t_role, t_first, t_prev;
	long tokens;
	int done_seen;
	char line[1024];	/* the current SSE line, enough to see its start */
	size_t line_len;
};

struct scrape {
	char *p;
	size_t n, cap;
};

static size_t on_scrape(char *d, size_t sz, size_t nm, void *ud)
{
	struct scrape *b = ud;
	size_t n = sz * nm;
	if (b->n + n + 1 > b->cap) {
		size_t cap = (b->n + n + 1) * 2;
		char *np = realloc(b->p, cap);
		if (!np)
			return 0;
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
	return n;
}

static void report_lag(int port)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
	struct scrape b = { NULL, 0, 0 };
	CURL *e = curl_easy_init();
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_scrape);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	CURLcode rc = curl_easy_perform(e);
	curl_easy_cleanup(e);
	struct prom_hist h;
	if (rc != CURLE_OK || !b.p ||
	    prom_hist_collect(b.p, b.n, "infertop_sim_send_lag_seconds", NULL, &h) != 0) {
		printf("sim send lag: not available\n");
		free(b.p);
		return;
	}
	double le_max = 0;
	for (int i = 0; i < h.n; i++)
		if (h.cum[i] < h.count)
			le_max = i + 1 < h.n ? h.le[i + 1] : h.le[i];
	printf("sim send lag (its /metrics, n=%.0f): p50 %.1f  p99 %.1f  p99.9 %.1f  max <= %.1f us\n",
	       h.count, prom_hist_quantile(&h, 0.5) * 1e6, prom_hist_quantile(&h, 0.99) * 1e6,
	       prom_hist_quantile(&h, 0.999) * 1e6, le_max * 1e6);
	free(b.p);
}

struct samples {
	int64_t *v;
	size_t n, cap;
};

static struct samples itl_err, ttft_role_err, ttft_send_err;
static int epfd;
static long long timeout_ms = -1;

static int push(struct samples *s, int64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		int64_t *nv = realloc(s->v, cap * sizeof *nv);
		if (!nv)
			return -1;
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

/* One complete SSE line: a token chunk carries non-empty content. */
static void on_line(struct xfer *x, int64_t now)
{
	const char *l = x->line;
	if (strncmp(l, "data: ", 6) != 0)
		return;
	if (strcmp(l + 6, "[DONE]") == 0) {
		x->done_seen = 1;
		return;
	}
	if (strstr(l, "\"role\":\"assistant\"")) {
		x->t_role = now;
		return;
	}
	if (!strstr(l, "\"content\":\" "))
		return;
	if (x->tokens == 0) {
		x->t_first = now;
	} else if (push(&itl_err, now - x->t_prev - ITL_NS) != 0) {
		fputs("bench: out of memory\n", stderr);
		exit(1);
	}
	x->t_prev = now;
	x->tokens++;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	int64_t now = clock_now_ns();
	size_t n = size * nmemb;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			x->line[x->line_len] = '\0';
			on_line(x, now);
			x->line_len = 0;
		} else if (x->line_len + 1 < sizeof x->line) {
			x->line[x->line_len++] = p[i];
		}
	}
	return n;
}

static const char *body_json;
static size_t body_len;

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	if (!x->t_sent)
		x->t_sent = clock_now_ns();
	size_t n = size * nmemb < body_len - x->body_off ? size * nmemb : body_len - x->body_off;
	memcpy(buf, body_json + x->body_off, n);
	x->body_off += n;
	return n;
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *up, void *sp)
{
	(void)e;
	CURLM *m = up;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(epfd, EPOLL_CTL_DEL, s, NULL);
		curl_multi_assign(m, s, NULL);
		return 0;
	}
	struct epoll_event ev = { 0, { .fd = s } };
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
	if (sp) {
		epoll_ctl(epfd, EPOLL_CTL_MOD, s, &ev);
	} else {
		epoll_ctl(epfd, EPOLL_CTL_ADD, s, &ev);
		curl_multi_assign(m, s, m);
	}
	return 0;
}

static int on_timer(CURLM *m, long ms, void *up)
{
	(void)m;
	(void)up;
	timeout_ms = ms;
	return 0;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static double pct(const struct samples *s, double p)
{
	if (s->n == 0)
		return 0;
	size_t i = (size_t)(p / 100.0 * (double)(s->n - 1) + 0.5);
	return (double)s->v[i] / 1e3;
}

static void report(const char *what, struct samples *s)
{
	qsort(s->v, s->n, sizeof *s->v, cmp64);
	if (s->n == 0) {
		printf("%-28s no samples\n", what);
		return;
	}
	printf("%-28s n=%-7zu min %8.1f  p50 %8.1f  p99 %8.1f  p99.9 %8.1f  max %8.1f us\n", what, s->n,
	       (double)s->v[0] / 1e3, pct(s, 50), pct(s, 99), pct(s, 99.9),
	       (double)s->v[s->n - 1] / 1e3);
}

int main(int argc, char **argv)
{
	long nstreams = 1000, ntokens = 100;
	const char *bin = getenv("INFERTOP_BIN");
	if (!bin)
		bin = "./infertop";
	int opt;
	while ((opt = getopt(argc, argv, "n:t:b:")) != -1) {
		switch (opt) {
		case 'n': nstreams = atol(optarg); break;
		case 't': ntokens = atol(optarg); break;
		case 'b': bin = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-n STREAMS] [-t TOKENS] [-b INFERTOP_BIN]\n", argv[0]);
			return 2;
		}
	}
	if (nstreams < 1 || ntokens < 2)
		return 2;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}

	static const char *const args[] = { "--timing", "fixed", "--ttft", "50ms", "--itl", "10ms",
					    "--max-connections", "100000", NULL };
	struct sim_child child;
	char err[256];
	if (sim_spawn(bin, args, &child, err, sizeof err) != 0) {
		fprintf(stderr, "bench: %s\n", err);
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, m);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);

	char url[64], body[256];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", child.port);
	snprintf(body, sizeof body,
		 "{\"model\":\"infertop-sim\",\"messages\":[{\"role\":\"user\",\"content\":\"time me\"}],"
		 "\"max_tokens\":%ld,\"ignore_eos\":true,\"stream\":true}",
		 ntokens);
	body_json = body;
	body_len = strlen(body);
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
	struct xfer *xs = calloc((size_t)nstreams, sizeof *xs);
	if (!xs || epfd < 0 || !m)
		return 1;
	int64_t t0 = clock_now_ns();
	for (long i = 0; i < nstreams; i++) {
		struct xfer *x = &xs[i];
		x->easy = curl_easy_init();
		curl_easy_setopt(x->easy, CURLOPT_URL, url);
		curl_easy_setopt(x->easy, CURLOPT_POST, 1L);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE, (long)body_len);
		curl_easy_setopt(x->easy, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(x->easy, CURLOPT_READDATA, x);
		curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_write);
		curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
		curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
		curl_easy_setopt(x->easy, CURLOPT_TCP_NODELAY, 1L);
		curl_multi_add_handle(m, x->easy);
	}
	int running = 1;
	curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, &running);
	struct epoll_event evs[256];
	long failed = 0;
	while (running) {
		int n = epoll_wait(epfd, evs, 256, timeout_ms < 0 ? 100 : (int)timeout_ms);
		if (n <= 0) {
			curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, &running);
		} else {
			for (int i = 0; i < n; i++) {
				int mask = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
					   (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
					   (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
				curl_multi_socket_action(m, evs[i].data.fd, mask, &running);
			}
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct xfer *x;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
			if (msg->data.result != CURLE_OK || !x->done_seen || x->tokens != ntokens)
				failed++;
			if (x->tokens > 0) {
				push(&ttft_role_err, x->t_first - x->t_role - TTFT_NS);
				push(&ttft_send_err, x->t_first - x->t_sent - TTFT_NS);
			}
		}
	}
	double wall = (double)(clock_now_ns() - t0) / 1e9;
	report_lag(child.port);
	int st = sim_child_stop(&child);

	printf("bench_sim_timing: %ld streams x %ld tokens, --ttft 50ms --itl 10ms, %.2f s wall, %ld failed, "
	       "sim exit %d\n",
	       nstreams, ntokens, wall, failed, st);
	printf("errors (measured - scheduled), microseconds:\n");
	report("ITL - 10ms", &itl_err);
	report("TTFT(role chunk) - 50ms", &ttft_role_err);
	report("TTFT(request sent) - 50ms", &ttft_send_err);

	for (long i = 0; i < nstreams; i++) {
		curl_multi_remove_handle(m, xs[i].easy);
		curl_easy_cleanup(xs[i].easy);
	}
	curl_multi_cleanup(m);
	curl_slist_free_all(hdr);
	curl_global_cleanup();
	free(xs);
	free(itl_err.v);
	free(ttft_role_err.v);
	free(ttft_send_err.v);
	close(epfd);
	return failed ? 1 : 0;
}
