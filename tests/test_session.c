/* The run's lifecycle (session.h): its phases in order, a probe that never
 * blocks the loop, --start-at waited for on the loop, and the exit policy.
 *
 * The probe test serves GET /v1/models from the session's own loop, after
 * a delay on that loop's timer: a probe that blocked the loop (as the
 * blocking curl_easy_perform did) could never be answered and fails here
 * after its 10 s timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <inttypes.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "infertop/engine.h"
#include "infertop/session.h"
#include "infertop/sim.h"
#include "infertop/stats.h"
#include "infertop/view.h"
#include "simutil.h"

/* ---- a one-shot HTTP server on the test's loop ---- */

struct slow {
	struct ev_loop *loop;
	int lfd, cfd;
	ev_io accept_w;
	ev_timer answer_t;
	double delay;
	int ticks;              /* a 10 ms timer's firings while the probe ran */
	ev_timer tick_t;
};

static void slow_answer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct slow *s = w->data;
	static const char body[] = "{\"data\":[{\"id\":\"slow-model\"}]}";
	char a[256];
	int an = snprintf(a, sizeof a,
			  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			  "Connection: close\r\n\r\n%s", sizeof body - 1, body);
	char req[4096];
	ssize_t n = read(s->cfd, req, sizeof req); /* the request, whole on loopback */
	(void)n;
	ssize_t w1 = write(s->cfd, a, (size_t)an);
	(void)w1;
	close(s->cfd);
	s->cfd = -1;
}

static void slow_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	struct slow *s = w->data;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return;
	if (s->cfd >= 0) {
		close(fd); /* one exchange is all this server makes */
		return;
	}
	s->cfd = fd;
	ev_timer_init(&s->answer_t, slow_answer, s->delay, 0.);
	s->answer_t.data = s;
	ev_timer_start(loop, &s->answer_t);
}

static void slow_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	((struct slow *)w->data)->ticks++;
}

static int slow_start(struct slow *s, struct ev_loop *loop, double delay)
{
	memset(s, 0, sizeof *s);
	s->loop = loop;
	s->delay = delay;
	s->cfd = -1;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->lfd, 8) != 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0)
		return -1;
	ev_io_init(&s->accept_w, slow_accept, s->lfd, EV_READ);
	s->accept_w.data = s;
	ev_io_start(loop, &s->accept_w);
	ev_timer_init(&s->tick_t, slow_tick, 0.01, 0.01);
	s->tick_t.data = s;
	ev_timer_start(loop, &s->tick_t);
	return ntohs(a.sin_port);
}

static void slow_stop(struct slow *s)
{
	ev_io_stop(s->loop, &s->accept_w);
	ev_timer_stop(s->loop, &s->answer_t);
	ev_timer_stop(s->loop, &s->tick_t);
	if (s->cfd >= 0)
		close(s->cfd);
	close(s->lfd);
}

static void parse(struct config *cfg, const char *const *argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	char err[512], field[64];
	enum cli_result r = cli_parse_capture(cfg, argc, (char **)argv, err, sizeof err, field, sizeof field);
	if (r != CLI_RUN)
		fail_msg("cli: %s", err);
}

struct probed {
	int calls, rc;
	char err[512];
	enum session_phase phase_then;
};

static void on_probed(struct session *s, int rc, const char *err, void *ud)
{
	struct probed *p = ud;
	p->calls++;
	p->rc = rc;
	p->phase_then = session_phase(s);
	snprintf(p->err, sizeof p->err, "%s", err);
	ev_break(s ? EV_DEFAULT : NULL, EVBREAK_ONE);
}

static void test_probe_on_the_loop(void **state)
{
	(void)state;
	struct ev_loop *loop = EV_DEFAULT;
	struct slow srv;
	int port = slow_start(&srv, loop, 0.3);
	assert_true(port > 0);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	/* No /tokenize on this server: the calibration falls back at once
	 * (connection refused after close) and the probe still succeeds. */
	struct config cfg;
	parse(&cfg, (const char *const[]){"infertop", "--no-tui", "-q", "-n", "1", url, NULL});
	char err[512];
	struct session *s = session_new(&cfg, loop, err, sizeof err);
	assert_non_null(s);
	assert_int_equal(session_phase(s), SESSION_BUILT);
	struct probed p = {0};
	int64_t t0 = clock_now_ns();
	assert_int_equal(session_probe(s, on_probed, &p), 0);
	assert_int_equal(session_phase(s), SESSION_PROBING);
	while (!p.calls)
		ev_run(loop, EVRUN_ONCE);
	double took = (double)(clock_now_ns() - t0) / 1e9;
	if (p.rc != 0)
		fail_msg("probe: %s", p.err);
	assert_int_equal(p.phase_then, SESSION_PROBED);
	struct run_view v;
	engine_view(session_engine(s), &v);
	assert_string_equal(v.model, "slow-model");
	/* The loop went on while the answer was 0.3 s away: its 10 ms timer
	 * fired all along (a blocked loop would show 0 or 1). */
	print_message("probe took %.3f s, the loop's 10 ms timer fired %d times meanwhile\n", took, srv.ticks);
	assert_true(took >= 0.3);
	assert_true(srv.ticks >= 10);
	session_free(s);
	slow_stop(&srv);
	cli_free(&cfg);
}

static void test_probe_fails_named(void **state)
{
	(void)state;
	struct ev_loop *loop = EV_DEFAULT;
	/* A port nobody listens on: the probe's failure, as the user reads it. */
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
	close(fd);
	struct config cfg;
	parse(&cfg, (const char *const[]){"infertop", "--no-tui", "-q", "-n", "1", url, NULL});
	char err[512];
	struct session *s = session_new(&cfg, loop, err, sizeof err);
	assert_non_null(s);
	assert_int_equal(session_run(s, NULL, NULL, err, sizeof err), SESSION_EXIT_USAGE);
	assert_non_null(strstr(err, "cannot reach"));
	assert_int_equal(session_phase(s), SESSION_FAILED);
	session_free(s);
	cli_free(&cfg);
}

struct seen {
	enum session_phase at_ready;
	int ready_calls;
};

static int on_ready(struct session *s, void *ud)
{
	struct seen *w = ud;
	w->at_ready = session_phase(s);
	w->ready_calls++;
	return 0;
}

/* Against the simulator: the phases in order, --start-at waited for on
 * the loop, the result written before session_run returns. */
static void test_phases_and_start_at(void **state)
{
	(void)state;
	struct sim_child sim;
	assert_int_equal(su_spawn((const char *const[]){"--ttft", "5ms", "--itl", "1ms", NULL}, &sim), 0);
	char url[64], out[128], at[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", sim.port);
	snprintf(out, sizeof out, "/tmp/infertop-test-session-%d.json", (int)getpid());
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	double start_at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + 0.5;
	snprintf(at, sizeof at, "%.3f", start_at);
	struct config cfg;
	parse(&cfg, (const char *const[]){"infertop", "--no-tui", "-q", "-n", "4", "-c", "2", "--output-tokens", "4",
					  "--start-at", at, "-o", out, url, NULL});
	struct ev_loop *loop = EV_DEFAULT;
	char err[512];
	struct session *s = session_new(&cfg, loop, err, sizeof err);
	assert_non_null(s);
	struct seen w = {0};
	unlink(out);
	assert_int_equal(session_run(s, on_ready, &w, err, sizeof err), 0);
	assert_int_equal(w.ready_calls, 1);
	assert_int_equal(w.at_ready, SESSION_PROBED);
	assert_int_equal(session_phase(s), SESSION_WRITTEN);
	assert_int_equal(session_write_failed(s), 0);
	assert_int_equal(access(out, R_OK), 0);
	struct run_view v;
	engine_view(session_engine(s), &v);
	/* Nothing was sent before --start-at. */
	clock_gettime(CLOCK_REALTIME, &ts);
	assert_true((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 >= start_at);
	assert_int_equal(v.stats->run_c.completed, 4);
	assert_int_equal(session_exit_code(s, stderr), SESSION_EXIT_OK);
	unlink(out);
	session_free(s);
	cli_free(&cfg);
	su_stop(&sim);
}

/* The exit policy: none succeeded is 4, above --max-error-rate is 3. */
static void test_exit_policy(void **state)
{
	(void)state;
	struct sim_child sim;
	assert_int_equal(su_spawn((const char *const[]){"--fail-rate", "1", "--fail-kinds", "500", NULL}, &sim), 0);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", sim.port);
	struct config cfg;
	parse(&cfg, (const char *const[]){"infertop", "--no-tui", "-q", "-n", "3", "-c", "1", url, NULL});
	char err[512];
	struct session *s = session_new(&cfg, EV_DEFAULT, err, sizeof err);
	assert_non_null(s);
	assert_int_equal(session_run(s, NULL, NULL, err, sizeof err), 0);
	assert_int_equal(session_exit_code(s, stderr), SESSION_EXIT_NONE_OK);
	session_free(s);
	cli_free(&cfg);
	su_stop(&sim);

	assert_int_equal(su_spawn((const char *const[]){"--fail-rate", "0.5", "--fail-kinds", "500", "--seed", "7", NULL}, &sim), 0);
	snprintf(url, sizeof url, "http://127.0.0.1:%d", sim.port);
	parse(&cfg, (const char *const[]){"infertop", "--no-tui", "-q", "-n", "40", "-c", "2",
					  "--max-error-rate", "0.05", url, NULL});
	s = session_new(&cfg, EV_DEFAULT, err, sizeof err);
	assert_non_null(s);
	assert_int_equal(session_run(s, NULL, NULL, err, sizeof err), 0);
	struct run_view v;
	engine_view(session_engine(s), &v);
	print_message("%" PRIu64 " failed of 40\n", stats_errors_total(v.stats));
	assert_true(stats_errors_total(v.stats) > 2 && v.stats->run_c.completed > 0);
	assert_int_equal(session_exit_code(s, stderr), SESSION_EXIT_ERROR_RATE);
	session_free(s);
	cli_free(&cfg);
	su_stop(&sim);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_on_the_loop),
		cmocka_unit_test(test_probe_fails_named),
		cmocka_unit_test(test_phases_and_start_at),
		cmocka_unit_test(test_exit_policy),
	};
	int rc = cmocka_run_group_tests(tests, NULL, su_teardown);
	curl_global_cleanup();
	return rc;
}
