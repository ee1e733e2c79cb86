/* The scraper against real processes over loopback: `infertop sim` for
 * every profile it imitates (detection, overload, values equal to a direct
 * GET at the same moment), endpoints that are down, die, answer HTML, 404,
 * garbage, too much, slowly, or fail and recover (backoff), gzip and the
 * Accept header, auto-discovery of the metrics path, a DCGM exporter and
 * energy per token. Misbehaving endpoints are a small libmicrohttpd server
 * inside this test. */
#include "config.h"

#include <arpa/inet.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <ev.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/http.h"
#include "infertop/prom.h"
#include "infertop/report.h"
#include "infertop/scrape.h"
#include "infertop/server.h"
#include "testutil.h"
#include "simutil.h"

#define MS CLOCK_NS_PER_MS

/* ---- a misbehaving metrics endpoint ---- */

enum tmode { TM_HTML, TM_GARBAGE, TM_LARGE, TM_SLOW, TM_FLAKY, TM_GZIP, TM_DCGM, TM_DISCOVER, TM_ALL404 };

#define TS_MAX_ARRIVALS 64
#define TS_SLOW_MS 700
#define TS_FLAKY_FAILS 3
#define TS_GPU_W 500.0 /* per GPU, two GPUs */

struct tsrv {
	struct MHD_Daemon *d;
	int port;
	enum tmode mode;
	atomic_int nreq, inflight, max_inflight, sent_gzip;
	int64_t arrival[TS_MAX_ARRIVALS];
	atomic_int headers_taken;
	char accept[160], accept_enc[160];
	char *vllm, *nim, *large, *gz;
	size_t vllm_len, nim_len, large_len, gz_len;
	int64_t t0;
};

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}

/* gzip with stored deflate blocks: valid, no zlib needed. */
static char *gzip_stored(const char *in, size_t n, size_t *out_len)
{
	size_t blocks = n / 65535 + 1;
	unsigned char *o = malloc(10 + n + blocks * 5 + 8);
	assert_non_null(o);
	size_t k = 0;
	static const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff };
	memcpy(o, hdr, 10);
	k = 10;
	size_t off = 0;
	do {
		size_t len = n - off > 65535 ? 65535 : n - off;
		o[k++] = off + len == n ? 1 : 0;
		o[k++] = (unsigned char)(len & 0xff);
		o[k++] = (unsigned char)(len >> 8);
		o[k++] = (unsigned char)(~len & 0xff);
		o[k++] = (unsigned char)((~len >> 8) & 0xff);
		memcpy(o + k, in + off, len);
		k += len;
		off += len;
	} while (off < n);
	uint32_t crc = crc32_of((const unsigned char *)in, n);
	for (int i = 0; i < 4; i++)
		o[k++] = (unsigned char)(crc >> (8 * i));
	for (int i = 0; i < 4; i++)
		o[k++] = (unsigned char)((uint32_t)n >> (8 * i));
	*out_len = k;
	return (char *)o;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *ctype, const char *body, size_t len,
			     int copy, const char *encoding)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	if (encoding)
		MHD_add_response_header(r, "Content-Encoding", encoding);
	enum MHD_Result rc = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result ts_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	(void)method;
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	struct tsrv *ts = cls;
	int n = atomic_fetch_add(&ts->nreq, 1);
	if (n < TS_MAX_ARRIVALS)
		ts->arrival[n] = clock_now_ns();
	int now_in = atomic_fetch_add(&ts->inflight, 1) + 1;
	int m = atomic_load(&ts->max_inflight);
	while (now_in > m && !atomic_compare_exchange_weak(&ts->max_inflight, &m, now_in))
		;
	if (atomic_exchange(&ts->headers_taken, 1) == 0) {
		const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
		const char *e = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
		snprintf(ts->accept, sizeof ts->accept, "%s", a ? a : "");
		snprintf(ts->accept_enc, sizeof ts->accept_enc, "%s", e ? e : "");
	}
	enum MHD_Result rc;
	static const char text[] = "text/plain; version=0.0.4; charset=utf-8";
	switch (ts->mode) {
	case TM_HTML: {
		static const char page[] = "<!DOCTYPE html>\n<html><body>Please log in</body></html>\n";
		rc = reply(c, 200, "text/html; charset=utf-8", page, sizeof page - 1, 0, NULL);
		break;
	}
	case TM_GARBAGE: {
		static const char g[] = "hello world {\nthis is not a metrics page\n";
		rc = reply(c, 200, "text/plain", g, sizeof g - 1, 0, NULL);
		break;
	}
	case TM_LARGE:
		rc = reply(c, 200, text, ts->large, ts->large_len, 0, NULL);
		break;
	case TM_SLOW: {
		struct timespec d = { 0, TS_SLOW_MS * 1000000L };
		nanosleep(&d, NULL);
		rc = reply(c, 200, text, ts->vllm, ts->vllm_len, 0, NULL);
		break;
	}
	case TM_FLAKY:
		if (n < TS_FLAKY_FAILS)
			rc = reply(c, 500, "text/plain", "oops\n", 5, 0, NULL);
		else
			rc = reply(c, 200, text, ts->vllm, ts->vllm_len, 0, NULL);
		break;
	case TM_GZIP: {
		const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
		if (ae && strstr(ae, "gzip")) {
			atomic_store(&ts->sent_gzip, 1);
			rc = reply(c, 200, text, ts->gz, ts->gz_len, 0, "gzip");
		} else {
			rc = reply(c, 200, text, ts->vllm, ts->vllm_len, 0, NULL);
		}
		break;
	}
	case TM_DCGM: {
		/* Each GPU draws TS_GPU_W; the energy counter (mJ) integrates it
		 * exactly on the shared monotonic clock. */
		double s = (double)(clock_now_ns() - ts->t0) / 1e9;
		char b[2048];
		int k = 0;
		for (int g = 0; g < 2; g++)
			k += snprintf(b + k, sizeof b - (size_t)k,
				      "DCGM_FI_DEV_POWER_USAGE{gpu=\"%d\",modelName=\"Test GPU\"} %.3f\n"
				      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\",modelName=\"Test GPU\"} %.6f\n"
				      "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",modelName=\"Test GPU\"} %d\n"
				      "DCGM_FI_DEV_FB_USED{gpu=\"%d\",modelName=\"Test GPU\"} 1000\n"
				      "DCGM_FI_DEV_FB_FREE{gpu=\"%d\",modelName=\"Test GPU\"} 3000\n",
				      g, TS_GPU_W, g, 1e9 + TS_GPU_W * 1000 * s, g, 50 + g, g, g);
		rc = reply(c, 200, text, b, (size_t)k, 1, NULL);
		break;
	}
	case TM_DISCOVER:
		/* trtllm-serve answers /metrics with JSON iteration stats. */
		if (strcmp(url, "/metrics") == 0)
			rc = reply(c, 200, "application/json", "[{\"iter\":1}]", 12, 0, NULL);
		else if (strcmp(url, "/v1/metrics") == 0)
			rc = reply(c, 200, text, ts->nim, ts->nim_len, 0, NULL);
		else
			rc = reply(c, 404, "text/plain", "not found\n", 10, 0, NULL);
		break;
	case TM_ALL404:
	default:
		rc = reply(c, 404, "text/html", "<html>Not Found</html>", 22, 0, NULL);
		break;
	}
	atomic_fetch_sub(&ts->inflight, 1);
	return rc;
}

static struct tsrv *ts_start(enum tmode mode)
{
	struct tsrv *ts = calloc(1, sizeof *ts);
	assert_non_null(ts);
	ts->mode = mode;
	ts->t0 = clock_now_ns();
	ts->vllm = testutil_fixture(NULL, "prom/vllm.txt", &ts->vllm_len);
	ts->nim = testutil_fixture(NULL, "prom/nim.txt", &ts->nim_len);
	ts->gz = gzip_stored(ts->vllm, ts->vllm_len, &ts->gz_len);
	if (mode == TM_LARGE) {
		ts->large_len = SCRAPE_MAX_BODY + (1u << 20);
		ts->large = malloc(ts->large_len);
		assert_non_null(ts->large);
		for (size_t i = 0; i < ts->large_len; i++)
			ts->large[i] = (i % 64 == 63) ? '\n' : (i % 64 == 0 ? '#' : 'x');
	}
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ts->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
				 ts_handler, ts, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	assert_non_null(ts->d);
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(ts->d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(di);
	ts->port = di->port;
	return ts;
}

static void ts_stop(struct tsrv *ts)
{
	if (!ts)
		return;
	MHD_stop_daemon(ts->d);
	free(ts->vllm);
	free(ts->nim);
	free(ts->large);
	free(ts->gz);
	free(ts);
}

/* A port nothing listens on for the whole test: bound, never listening. */
static int closed_port(int *fd)
{
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(*fd, (struct sockaddr *)&sa, sizeof sa), 0);
	socklen_t l = sizeof sa;
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&sa, &l), 0);
	return ntohs(sa.sin_port);
}

/* ---- the scraper alone on a loop ---- */

struct harness {
	struct ev_loop *loop;
	struct http *http;
	struct config cfg;
	struct server_state st;
	struct scrape *s;
	ev_timer check, deadline;
	int (*cond)(struct harness *);
	unsigned seen;		/* bit per status seen */
	bool met;
};

static void h_check(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	struct harness *h = w->data;
	h->seen |= 1u << h->st.status;
	if (h->cond(h)) {
		h->met = true;
		ev_break(loop, EVBREAK_ONE);
	}
}

static void h_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ONE);
}

static struct harness *h_new(const char **args)
{
	struct harness *h = calloc(1, sizeof *h);
	assert_non_null(h);
	const char *argv[32] = { "infertop", "--no-tui", "-q" };
	int argc = 3;
	for (int i = 0; args[i]; i++)
		argv[argc++] = args[i];
	assert_int_equal(cli_parse(&h->cfg, argc, (char **)argv), CLI_RUN);
	h->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(h->loop);
	h->http = http_new(h->loop);
	assert_non_null(h->http);
	char err[256];
	h->s = scrape_new(h->loop, h->http, &h->cfg, &h->st, err, sizeof err);
	if (!h->s)
		fail_msg("scrape_new: %s", err);
	return h;
}

/* Runs the loop until cond holds (true) or timeout_s passes (false). */
static bool h_run(struct harness *h, int (*cond)(struct harness *), double timeout_s)
{
	h->cond = cond;
	h->met = false;
	ev_timer_init(&h->check, h_check, 0.005, 0.005);
	ev_timer_init(&h->deadline, h_deadline, timeout_s, 0);
	h->check.data = h->deadline.data = h;
	ev_timer_start(h->loop, &h->check);
	ev_timer_start(h->loop, &h->deadline);
	scrape_start(h->s);
	ev_run(h->loop, 0);
	ev_timer_stop(h->loop, &h->check);
	ev_timer_stop(h->loop, &h->deadline);
	return h->met;
}

static void h_free(struct harness *h)
{
	scrape_stop(h->s);
	scrape_free(h->s);
	http_free(h->http);
	ev_loop_destroy(h->loop);
	cli_free(&h->cfg);
	free(h);
}

static int until_up(struct harness *h)
{
	return h->st.status == SERVER_UP;
}

static int until_down(struct harness *h)
{
	return h->st.status == SERVER_DOWN;
}

static int until_two_scrapes(struct harness *h)
{
	return h->st.scrapes >= 2;
}

static int until_recovered(struct harness *h)
{
	return (h->seen & (1u << SERVER_DOWN)) && h->st.status == SERVER_UP;
}

static int never(struct harness *h)
{
	(void)h;
	return 0;
}

static char *url_of(int port, const char *path, char *buf, size_t cap)
{
	snprintf(buf, cap, "http://127.0.0.1:%d%s", port, path);
	return buf;
}

/* A failing endpoint: the run of the scraper ends in "down" with the reason. */
static void expect_down(enum tmode mode, const char *reason)
{
	struct tsrv *ts = ts_start(mode);
	char u[128];
	const char *args[] = { "--metrics-interval", "100ms", "--metrics-url", url_of(ts->port, "/metrics", u, sizeof u),
			       "http://127.0.0.1:1", NULL };
	struct harness *h = h_new(args);
	assert_true(h_run(h, until_down, 10));
	if (!strstr(h->st.last_error, reason))
		fail_msg("error '%s' does not say '%s'", h->st.last_error, reason);
	assert_int_equal(h->st.scrapes, 0);
	assert_true(h->st.failures >= 1);
	for (int g = 0; g < SRV_NGAUGES; g++)
		assert_false(h->st.gauge[g].valid);
	char brief[160];
	server_format_brief(&h->st, brief, sizeof brief);
	assert_non_null(strstr(brief, "server metrics: down ("));
	h_free(h);
	ts_stop(ts);
}

static void test_html(void **state)
{
	(void)state;
	expect_down(TM_HTML, "HTML instead of metrics");
}

static void test_garbage(void **state)
{
	(void)state;
	expect_down(TM_GARBAGE, "not Prometheus text: line 1");
}

static void test_too_large(void **state)
{
	(void)state;
	expect_down(TM_LARGE, "too large");
}

static void test_slow_one_in_flight(void **state)
{
	(void)state;
	struct tsrv *ts = ts_start(TM_SLOW);
	char u[128];
	const char *args[] = { "--metrics-interval", "100ms", "--metrics-url", url_of(ts->port, "/metrics", u, sizeof u),
			       "http://127.0.0.1:1", NULL };
	struct harness *h = h_new(args);
	assert_true(h_run(h, until_two_scrapes, 10));
	/* Each answer takes 700 ms, ticks come every 100 ms: skipped, never
	 * stacked. */
	assert_true(h->st.skipped >= 2);
	assert_int_equal(atomic_load(&ts->max_inflight), 1);
	assert_int_equal(h->st.status, SERVER_UP);
	assert_string_equal(h->st.detected, "vllm");
	print_message("slow endpoint: %llu scrapes, %llu ticks skipped\n", (unsigned long long)h->st.scrapes,
		      (unsigned long long)h->st.skipped);
	h_free(h);
	ts_stop(ts);
}

/* Stopping with a scrape in flight removes it; never answered = down. */
static void test_stop_in_flight(void **state)
{
	(void)state;
	struct tsrv *ts = ts_start(TM_SLOW);
	char u[128];
	const char *args[] = { "--metrics-url", url_of(ts->port, "/metrics", u, sizeof u), "http://127.0.0.1:1", NULL };
	struct harness *h = h_new(args);
	assert_false(h_run(h, never, 0.2));
	assert_int_equal(h->st.status, SERVER_PENDING);
	scrape_stop(h->s);
	assert_int_equal(h->st.status, SERVER_DOWN);
	assert_non_null(strstr(h->st.last_error, "no answer before the run ended"));
	scrape_stop(h->s); /* idempotent */
	h_free(h);
	ts_stop(ts);
}

static void test_flaky_backoff_recovers(void **state)
{
	(void)state;
	struct tsrv *ts = ts_start(TM_FLAKY);
	char u[128];
	const char *args[] = { "--metrics-interval", "100ms", "--metrics-url", url_of(ts->port, "/metrics", u, sizeof u),
			       "http://127.0.0.1:1", NULL };
	struct harness *h = h_new(args);
	assert_true(h_run(h, until_recovered, 15));
	assert_int_equal(h->st.failures, TS_FLAKY_FAILS);
	assert_true(h->st.scrapes >= 1);
	assert_non_null(strstr(h->st.last_error, "HTTP 500"));
	assert_true(h->st.gauge[SRV_RUNNING].valid);
	/* Interval x 2, x 4, x 8 between attempts after 1, 2, 3 failures. */
	for (int k = 1; k <= TS_FLAKY_FAILS; k++) {
		int64_t gap = ts->arrival[k] - ts->arrival[k - 1];
		print_message("attempt %d after %.0f ms\n", k + 1, (double)gap / 1e6);
		assert_true(gap >= (100 * MS) << k);
	}
	h_free(h);
	ts_stop(ts);
}

static void test_gzip_and_accept(void **state)
{
	(void)state;
	struct tsrv *ts = ts_start(TM_GZIP);
	char u[128];
	const char *args[] = { "--metrics-url", url_of(ts->port, "/metrics", u, sizeof u), "http://127.0.0.1:1", NULL };
	struct harness *h = h_new(args);
	assert_true(h_run(h, until_up, 10));
	assert_true(atomic_load(&ts->sent_gzip));
	assert_true(strncmp(ts->accept, "text/plain;version=0.0.4", 24) == 0);
	assert_non_null(strstr(ts->accept_enc, "gzip"));
	double want;
	assert_true(prom_sum(ts->vllm, ts->vllm_len, "vllm:num_requests_running", NULL, &want) > 0);
	assert_true(h->st.gauge[SRV_RUNNING].valid && h->st.gauge[SRV_RUNNING].v == want);
	h_free(h);
	ts_stop(ts);
}

/* Auto: /metrics is JSON (trtllm-serve's stats), /prometheus/metrics is
 * 404, /v1/metrics has NIM's metrics: found and kept. */
static void test_discovery(void **state)
{
	(void)state;
	struct tsrv *ts = ts_start(TM_DISCOVER);
	char u[128];
	const char *args[] = { "--metrics-interval", "100ms", url_of(ts->port, "", u, sizeof u), NULL };
	struct harness *h = h_new(args);
	assert_true(h_run(h, until_two_scrapes, 10));
	assert_string_equal(h->st.detected, "nim");
	assert_true(strlen(h->st.url) > 11 && strcmp(h->st.url + strlen(h->st.url) - 11, "/v1/metrics") == 0);
	assert_int_equal(h->st.failures, 0);
	double want;
	assert_true(prom_sum(ts->nim, ts->nim_len, "num_requests_running", NULL, &want) > 0);
	assert_true(h->st.gauge[SRV_RUNNING].v == want);
	/* Locked: after the first round only /v1/metrics is asked. */
	int before = atomic_load(&ts->nreq);
	assert_true(h_run(h, never, 0.35) == false);
	int after = atomic_load(&ts->nreq);
	assert_true(after - before <= 5 && after > before);
	h_free(h);
	ts_stop(ts);

	/* Nothing anywhere: one error naming each path. */
	ts = ts_start(TM_ALL404);
	const char *args2[] = { "--metrics-interval", "100ms", url_of(ts->port, "", u, sizeof u), NULL };
	h = h_new(args2);
	assert_true(h_run(h, until_down, 10));
	print_message("all paths failing: %s\n", h->st.last_error);
	assert_non_null(strstr(h->st.last_error, "/metrics: HTTP 404"));
	assert_non_null(strstr(h->st.last_error, "/prometheus/metrics: HTTP 404"));
	assert_non_null(strstr(h->st.last_error, "/v1/metrics: HTTP 404"));
	assert_int_equal(h->st.failures, 1);
	h_free(h);
	ts_stop(ts);
}

/* --server X without --metrics-url: the profile's own path. */
static void test_given_profile_path(void **state)
{
	(void)state;
	static const struct {
		const char *profile, *path;
	} cases[] = { { "trtllm", "/prometheus/metrics" }, { "nim", "/v1/metrics" }, { "tgi", "/metrics" } };
	static struct sim_child sim; /* registered with simutil until stopped */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sim.pid = -1;
		const char *sargs[] = { "--profile", cases[i].profile, NULL };
		assert_int_equal(su_spawn(sargs, &sim), 0);
		char u[128];
		const char *args[] = { "--server", cases[i].profile, url_of(sim.port, "", u, sizeof u), NULL };
		struct harness *h = h_new(args);
		assert_true(h_run(h, until_up, 10));
		char want[160];
		url_of(sim.port, cases[i].path, want, sizeof want);
		assert_string_equal(h->st.url, want);
		assert_string_equal(h->st.detected, cases[i].profile);
		assert_string_equal(h->st.note, "");
		h_free(h);
		su_stop(&sim);
	}
}

/* ---- the engine and the simulator ---- */

struct fx {
	struct sim_child sim, sim2;
	struct config cfg;
	struct ev_loop *loop;
	struct engine *e;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	f->sim.pid = f->sim2.pid = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	engine_free(f->e);
	if (f->loop)
		ev_loop_destroy(f->loop);
	cli_free(&f->cfg);
	su_teardown(NULL);
	free(f);
	return 0;
}

static void make_engine(struct fx *f, const char **tail)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", f->sim.port);
	const char *argv[64] = { "infertop", "--no-tui", "-q" };
	int argc = 3;
	for (int i = 0; tail[i]; i++)
		argv[argc++] = tail[i];
	argv[argc++] = url;
	assert_int_equal(cli_parse(&f->cfg, argc, (char **)argv), CLI_RUN);
	f->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(f->loop);
	char err[256];
	f->e = engine_new(&f->cfg, f->loop, err, sizeof err);
	if (!f->e)
		fail_msg("engine_new: %s", err);
	if (engine_probe(f->e, err, sizeof err) != 0)
		fail_msg("engine_probe: %s", err);
	assert_non_null(f->e->server);
}

static cJSON *result_server(struct engine *e)
{
	struct run_view v;
	engine_view(e, &v);
	char *txt = report_json(&v);
	assert_non_null(txt);
	cJSON *j = cJSON_Parse(txt);
	free(txt);
	assert_non_null(j);
	cJSON *s = cJSON_DetachItemFromObject(cJSON_GetObjectItem(j, "infertop"), "server");
	cJSON_Delete(j);
	assert_non_null(s);
	return s;
}

static void progress_contains(struct engine *e, const char *want)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_non_null(m);
	struct run_view v;
	engine_view(e, &v);
	report_progress(m, &v, clock_now_ns());
	fclose(m);
	if (!strstr(buf, want))
		fail_msg("progress line '%s' lacks '%s'", buf, want);
	free(buf);
}

/* Names as each simulated server exposes them (METRICS.md section 2). */
struct simprof {
	const char *name, *running, *waiting, *kv;
};

static const struct simprof simprofs[] = {
	{ "vllm", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc" },
	{ "sglang", "sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage" },
	{ "tgi", "tgi_batch_current_size", "tgi_queue_size", NULL },
	{ "llamacpp", "llamacpp:requests_processing", "llamacpp:requests_deferred", NULL },
	{ "trtllm", "trtllm_num_requests_running", "trtllm_num_requests_waiting", "trtllm_kv_cache_utilization" },
	{ "nim", "num_requests_running", "num_requests_waiting", "gpu_cache_usage_perc" },
};

struct observe {
	const struct simprof *p;
	int port;
	ev_timer timer;
	struct engine *e;
	/* The previous direct GET. */
	char *prev;
	int64_t prev_end;
	uint64_t prev_scrapes;
	int compared;
	double max_waiting, last_kv;
	bool kv_rose, kv_seen_valid, have_last_kv;
	uint64_t kv_scrapes;
};

static double sum_of(const char *body, const char *name)
{
	double v;
	if (prom_sum(body, strlen(body), name, NULL, &v) != 1)
		fail_msg("direct GET: %s missing or repeated", name);
	return v;
}

/* Every 7 ms: a direct blocking GET of the sim's /metrics. When exactly
 * one scrape happened between two direct GETs whose bodies are identical,
 * the server's state did not change around it, so the scraped values
 * must equal what the direct GET says. */
static void obs_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct observe *o = w->data;
	const struct server_state *st = o->e->server;
	int64_t t0 = clock_now_ns();
	struct su_resp r;
	memset(&r, 0, sizeof r);
	CURLcode rc = su_request(o->port, "GET", "/metrics", NULL, 2000, &r);
	int64_t t1 = clock_now_ns();
	if (rc != CURLE_OK || r.status != 200) {
		su_resp_free(&r);
		return;
	}
	/* Compared only when the scrape read the very state of this GET: the
	 * sim's scheduler-event counter (watched as watch[1]) equal on both.
	 * Equal bodies around the scrape were not enough: under ASan a state
	 * can change and change back between two GETs. */
	const char *ev = "infertop_sim_scheduler_events_total";
	if (o->prev && st->scrapes == o->prev_scrapes + 1 && st->last_attempt_ns >= o->prev_end &&
	    st->last_ok_ns <= t0 && strcmp(o->prev, r.body) == 0 && st->nwatch == 2 &&
	    st->watch[1].value.valid && st->watch[1].value.v == sum_of(r.body, ev)) {
		double run = sum_of(r.body, o->p->running), wait = sum_of(r.body, o->p->waiting);
		if (!st->gauge[SRV_RUNNING].valid || st->gauge[SRV_RUNNING].v != run)
			fail_msg("%s: scraped running %g, direct GET %g", o->p->name, st->gauge[SRV_RUNNING].v, run);
		if (!st->gauge[SRV_WAITING].valid || st->gauge[SRV_WAITING].v != wait)
			fail_msg("%s: scraped waiting %g, direct GET %g", o->p->name, st->gauge[SRV_WAITING].v, wait);
		if (o->p->kv) {
			double kv = sum_of(r.body, o->p->kv);
			if (!st->gauge[SRV_KV_USAGE].valid || st->gauge[SRV_KV_USAGE].v != kv)
				fail_msg("%s: scraped kv %g, direct GET %g", o->p->name, st->gauge[SRV_KV_USAGE].v, kv);
		}
		if (st->nwatch > 0 && (!st->watch[0].value.valid || st->watch[0].value.v != run))
			fail_msg("%s: watched %s = %g, direct GET %g", o->p->name, st->watch[0].expr,
				 st->watch[0].value.v, run);
		o->compared++;
	}
	free(o->prev);
	o->prev = r.body;
	r.body = NULL;
	su_resp_free(&r);
	o->prev_end = t1;
	if (st->scrapes != o->prev_scrapes) {
		if (st->gauge[SRV_WAITING].valid && st->gauge[SRV_WAITING].v > o->max_waiting)
			o->max_waiting = st->gauge[SRV_WAITING].v;
		if (st->gauge[SRV_KV_USAGE].valid) {
			o->kv_seen_valid = true;
			if (o->have_last_kv && st->scrapes == o->kv_scrapes + 1 && st->gauge[SRV_KV_USAGE].v > o->last_kv)
				o->kv_rose = true;
			o->last_kv = st->gauge[SRV_KV_USAGE].v;
			o->have_last_kv = true;
			o->kv_scrapes = st->scrapes;
		}
	}
	o->prev_scrapes = st->scrapes;
}

static void run_profile(const struct simprof *p)
{
	struct fx *f = calloc(1, sizeof *f);
	assert_non_null(f);
	/* 4 slots, 16 clients: a queue of 12 at once. Slow steps so the
	 * state holds still between most pairs of direct GETs. */
	const char *sargs[] = { "--profile", p->name, "--max-running", "4", "--step-time", "100ms",
				"--step-time-per-seq", "0", "--kv-tokens", "1000", NULL };
	assert_int_equal(su_spawn(sargs, &f->sim), 0);
	/* Scrape period and direct GETs out of phase with the 100 ms steps. */
	const char *args[] = { "-c", "16", "-d", "1.5s", "--output-tokens", "5", "--input-tokens", "32",
			       "--metrics-interval", "130ms", "--watch-metric", p->running,
			       "--watch-metric", "infertop_sim_scheduler_events_total", NULL };
	make_engine(f, args);
	struct observe o;
	memset(&o, 0, sizeof o);
	o.p = p;
	o.port = f->sim.port;
	o.e = f->e;
	ev_timer_init(&o.timer, obs_tick, 0.007, 0.007);
	o.timer.data = &o;
	ev_timer_start(f->loop, &o.timer);
	engine_run(f->e);
	ev_timer_stop(f->loop, &o.timer);
	free(o.prev);

	const struct server_state *st = f->e->server;
	print_message("%s: %llu scrapes, %d compared with a direct GET, max waiting %g, kv %s\n", p->name,
		      (unsigned long long)st->scrapes, o.compared, o.max_waiting,
		      o.kv_rose ? "rose" : (o.kv_seen_valid ? "seen" : "unknown"));
	assert_string_equal(st->detected, p->name);
	assert_int_equal(st->status, SERVER_UP);
	assert_true(o.compared >= 3);
	assert_true(o.max_waiting > 0);
	if (p->kv) {
		assert_true(o.kv_rose);
	} else {
		assert_false(o.kv_seen_valid);
		assert_false(st->agg[SRV_KV_USAGE].n);
	}
	/* The run itself completed untouched. */
	assert_int_equal(stats_errors_total(f->e->stats), 0);
	assert_true(f->e->stats->run_c.completed >= 16);
	assert_int_equal(f->e->stats->run_c.completed, f->e->stats->started);
	assert_true(st->agg[SRV_WAITING].max > 0);
	cJSON *js = result_server(f->e);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(js, "available")));
	assert_string_equal(cJSON_GetObjectItem(js, "profile")->valuestring, p->name);
	cJSON_Delete(js);

	void *fs = f;
	teardown(&fs);
}

static void test_sim_profiles(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof simprofs / sizeof simprofs[0]; i++)
		run_profile(&simprofs[i]);
}

static void test_down_at_start(void **state)
{
	struct fx *f = *state;
	int fd;
	int port = closed_port(&fd);
	const char *sargs[] = { "--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL };
	assert_int_equal(su_spawn(sargs, &f->sim), 0);
	char u[128];
	const char *args[] = { "-c", "4", "-d", "1s", "--output-tokens", "8", "--metrics-interval", "100ms",
			       "--metrics-url", url_of(port, "/metrics", u, sizeof u), NULL };
	make_engine(f, args);
	engine_run(f->e);
	close(fd);
	const struct server_state *st = f->e->server;
	assert_int_equal(st->status, SERVER_DOWN);
	assert_string_equal(st->last_error, "connection refused");
	assert_int_equal(st->scrapes, 0);
	assert_true(st->failures >= 2);
	assert_true(f->e->stats->run_c.completed > 0);
	assert_int_equal(stats_errors_total(f->e->stats), 0);
	progress_contains(f->e, "server metrics: down (connection refused)");
	cJSON *js = result_server(f->e);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(js, "available")));
	assert_string_equal(cJSON_GetObjectItem(js, "status")->valuestring, "down");
	assert_string_equal(cJSON_GetObjectItem(js, "error")->valuestring, "connection refused");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(js, "latest"), "running")));
	cJSON_Delete(js);
}

static void test_404_path(void **state)
{
	struct fx *f = *state;
	const char *sargs[] = { "--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL };
	assert_int_equal(su_spawn(sargs, &f->sim), 0);
	char u[128];
	const char *args[] = { "-c", "2", "-d", "0.5s", "--output-tokens", "8", "--metrics-interval", "100ms",
			       "--metrics-url", url_of(f->sim.port, "/no/such/metrics", u, sizeof u), NULL };
	make_engine(f, args);
	engine_run(f->e);
	const struct server_state *st = f->e->server;
	assert_int_equal(st->status, SERVER_DOWN);
	assert_string_equal(st->last_error, "HTTP 404 Not Found");
	assert_true(f->e->stats->run_c.completed > 0);
	cJSON *js = result_server(f->e);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(js, "available")));
	assert_string_equal(cJSON_GetObjectItem(js, "error")->valuestring, "HTTP 404 Not Found");
	cJSON_Delete(js);
}

struct death {
	struct fx *f;
	bool killed, saw_stale_with_values, saw_down_invalid;
	int64_t attempts[16];
	int nattempts;
	int64_t last_attempt;
	ev_timer timer;
};

static void death_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct death *d = w->data;
	const struct server_state *st = d->f->e->server;
	if (!d->killed && st->scrapes >= 3) {
		assert_int_equal(su_stop(&d->f->sim2), 0);
		d->killed = true;
		d->last_attempt = st->last_attempt_ns;
		return;
	}
	if (!d->killed)
		return;
	if (st->last_attempt_ns != d->last_attempt && d->nattempts < 16) {
		d->attempts[d->nattempts++] = st->last_attempt_ns;
		d->last_attempt = st->last_attempt_ns;
	}
	if (st->status == SERVER_STALE && st->gauge[SRV_RUNNING].valid)
		d->saw_stale_with_values = true;
	if (st->status == SERVER_DOWN && !st->gauge[SRV_RUNNING].valid)
		d->saw_down_invalid = true;
}

/* The metrics endpoint (a second sim) dies mid-run: stale with the last
 * values, then down with them cleared, backing off; the load never notices. */
static void test_dies_mid_run(void **state)
{
	struct fx *f = *state;
	const char *sargs[] = { "--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL };
	assert_int_equal(su_spawn(sargs, &f->sim), 0);
	assert_int_equal(su_spawn(NULL, &f->sim2), 0);
	char u[128];
	const char *args[] = { "-c", "4", "-d", "3s", "--output-tokens", "8", "--metrics-interval", "100ms",
			       "--metrics-url", url_of(f->sim2.port, "/metrics", u, sizeof u), NULL };
	make_engine(f, args);
	struct death d;
	memset(&d, 0, sizeof d);
	d.f = f;
	ev_timer_init(&d.timer, death_tick, 0.005, 0.005);
	d.timer.data = &d;
	ev_timer_start(f->loop, &d.timer);
	engine_run(f->e);
	ev_timer_stop(f->loop, &d.timer);
	const struct server_state *st = f->e->server;
	assert_true(d.killed);
	assert_true(d.saw_stale_with_values);
	assert_true(d.saw_down_invalid);
	assert_int_equal(st->status, SERVER_DOWN);
	assert_string_equal(st->last_error, "connection refused");
	assert_true(st->scrapes >= 3);
	/* Backoff: the k-th retry waits at least interval x 2^k. */
	assert_true(d.nattempts >= 3);
	for (int k = 1; k < d.nattempts && k <= 4; k++) {
		int64_t gap = d.attempts[k] - d.attempts[k - 1];
		print_message("retry %d after %.0f ms\n", k, (double)gap / 1e6);
		assert_true(gap >= (100 * MS) << k);
	}
	assert_int_equal(stats_errors_total(f->e->stats), 0);
	assert_int_equal(f->e->stats->run_c.completed, f->e->stats->started);
	cJSON *js = result_server(f->e);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(js, "available")));
	assert_string_equal(cJSON_GetObjectItem(js, "status")->valuestring, "down");
	assert_string_equal(cJSON_GetObjectItem(js, "error")->valuestring, "connection refused");
	/* What was seen before the death stays in the run figures. */
	cJSON *run = cJSON_GetObjectItem(cJSON_GetObjectItem(js, "run"), "running");
	assert_true(cJSON_GetObjectItem(run, "samples")->valuedouble >= 3);
	cJSON_Delete(js);
}

/* A DCGM exporter next to a server without metrics: GPU figures and
 * joules per token over the client's window. */
static void test_gpu_energy(void **state)
{
	struct fx *f = *state;
	struct tsrv *ts = ts_start(TM_DCGM);
	const char *sargs[] = { "--timing", "fixed", "--ttft", "5ms", "--itl", "2ms", NULL };
	assert_int_equal(su_spawn(sargs, &f->sim), 0);
	char u[128];
	const char *args[] = { "-c", "8", "-d", "1.5s", "--output-tokens", "16", "--metrics-interval", "100ms",
			       "--metrics-url", "none", "--gpu-metrics-url", url_of(ts->port, "/metrics", u, sizeof u),
			       NULL };
	make_engine(f, args);
	engine_run(f->e);
	const struct server_state *st = f->e->server;
	assert_int_equal(st->status, SERVER_OFF);
	assert_int_equal(st->gpu_status, SERVER_UP);
	assert_int_equal(st->ngpus, 2);
	assert_string_equal(st->gpu[1].name, "Test GPU");
	assert_true(st->gpu[1].util_pct.v == 51);
	assert_true(st->gpu[0].mem_total_mib.v == 4000);
	assert_true(st->power_total_w.valid && st->power_total_w.v == 2 * TS_GPU_W);
	/* Energy grows at exactly 2 x 500 W, so J/token over the window is
	 * 1000 W x window seconds / window output tokens. */
	const struct stats *s = f->e->stats;
	double win = stats_window_seconds(s, f->e->t_end);
	double want = 2 * TS_GPU_W * win / (double)s->win_c.output_tokens;
	print_message("J/token %.4f (window %.2f s, %llu tokens)\n", st->joules_per_token.v, win,
		      (unsigned long long)s->win_c.output_tokens);
	assert_true(st->joules_per_token.valid);
	/* Scrape times are the client's, energy readings the exporter's:
	 * a few ms of skew over a second or more. */
	assert_true(fabs(st->joules_per_token.v - want) <= 0.03 * want);
	assert_true(st->jpt_agg.n > 0);
	progress_contains(f->e, "1000 W");
	cJSON *js = result_server(f->e);
	cJSON *gpu = cJSON_GetObjectItem(js, "gpu");
	assert_non_null(gpu);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(gpu, "gpus")), 2);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(js, "available")));
	assert_string_equal(cJSON_GetObjectItem(js, "status")->valuestring, "off");
	cJSON_Delete(js);
	ts_stop(ts);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_html),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_slow_one_in_flight),
		cmocka_unit_test(test_stop_in_flight),
		cmocka_unit_test(test_flaky_backoff_recovers),
		cmocka_unit_test(test_gzip_and_accept),
		cmocka_unit_test(test_discovery),
		cmocka_unit_test_teardown(test_given_profile_path, su_teardown),
		cmocka_unit_test_setup_teardown(test_down_at_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_404_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dies_mid_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gpu_energy, setup, teardown),
		cmocka_unit_test_teardown(test_sim_profiles, su_teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
