/* The engine's command interface, driven the way the dashboard's keys and
 * the control API drive it: on a live run against the simulator, from a
 * timer on the run's own loop, reading the outcome back through the view. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "enginefix.h"
#include "infertop/command.h"
#include "infertop/engine.h"
#include "infertop/load.h"
#include "infertop/snapshot.h"
#include "infertop/view.h"

struct script {
	struct engine *e;
	ev_timer t;
	int step;
	char snap_path[CMD_PATH_MAX];
	bool checked;
};

static const struct load *view_load(struct engine *e, struct run_view *v)
{
	engine_view(e, v);
	return v->load;
}

/* Checks one command's status, its message and what the engine recorded. */
static void expect(struct engine *e, enum cmd_status got, enum cmd_status want, const struct cmd_result *r,
		   enum cmd_source src, const char *msg_has)
{
	struct run_view v;
	engine_view(e, &v);
	if (got != want)
		fail_msg("status %s, wanted %s (%s)", cmd_status_name(got), cmd_status_name(want), r->msg);
	assert_int_equal(r->status, got);
	if (!strstr(r->msg, msg_has))
		fail_msg("message \"%s\" lacks \"%s\"", r->msg, msg_has);
	/* Every command, refused or not, is the engine's last one, with who
	 * sent it: the dashboard shows "... (by api)". */
	assert_int_equal(v.last_cmd->source, src);
	assert_int_equal(v.last_cmd->status, got);
	assert_string_equal(v.last_cmd->msg, r->msg);
}

static void on_step(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct script *s = w->data;
	struct engine *e = s->e;
	struct cmd_result r;
	struct run_view v;
	uint64_t seq0;

	engine_view(e, &v);
	seq0 = v.last_cmd->seq;
	assert_int_equal(v.state, ENGINE_RUNNING);

	/* Concurrency: set, same again, out of range. */
	expect(e, engine_cmd_set_concurrency(e, 6, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "concurrency 6");
	assert_int_equal(view_load(e, &v)->concurrency, 6);
	assert_int_equal(v.last_cmd->seq, seq0 + 1);
	expect(e, engine_cmd_set_concurrency(e, 6, CMD_SRC_KEY, &r), CMD_UNCHANGED, &r, CMD_SRC_KEY, "stays 6");
	expect(e, engine_cmd_set_concurrency(e, 0, CMD_SRC_API, &r), CMD_INVALID, &r, CMD_SRC_API, "out of range");
	expect(e, engine_cmd_set_concurrency(e, -5, CMD_SRC_API, &r), CMD_INVALID, &r, CMD_SRC_API, "out of range");
	assert_int_equal(view_load(e, &v)->concurrency, 6);

	/* Rate: out of range and not a number are refused; a good one
	 * switches to an open loop. */
	expect(e, engine_cmd_set_rate(e, -1, CMD_SRC_API, &r), CMD_INVALID, &r, CMD_SRC_API, "out of range");
	expect(e, engine_cmd_set_rate(e, NAN, CMD_SRC_API, &r), CMD_INVALID, &r, CMD_SRC_API, "out of range");
	expect(e, engine_cmd_set_rate(e, 2e6, CMD_SRC_API, &r), CMD_INVALID, &r, CMD_SRC_API, "out of range");
	assert_int_equal(view_load(e, &v)->mode, LOAD_CLOSED);
	expect(e, engine_cmd_set_rate(e, 40, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "rate 40");
	assert_int_equal(view_load(e, &v)->mode, LOAD_OPEN);
	assert_true(v.load->rate == 40);
	expect(e, engine_cmd_set_rate(e, 40, CMD_SRC_API, &r), CMD_UNCHANGED, &r, CMD_SRC_API, "stays");
	/* And back to a closed loop. */
	expect(e, engine_cmd_set_concurrency(e, 3, CMD_SRC_KEY, &r), CMD_OK, &r, CMD_SRC_KEY, "concurrency 3");
	assert_int_equal(view_load(e, &v)->mode, LOAD_CLOSED);

	/* Pause and resume, each only once. */
	expect(e, engine_cmd_pause(e, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "paused");
	assert_true(view_load(e, &v)->paused);
	expect(e, engine_cmd_pause(e, CMD_SRC_API, &r), CMD_UNCHANGED, &r, CMD_SRC_API, "paused already");
	expect(e, engine_cmd_resume(e, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "resumed");
	assert_false(view_load(e, &v)->paused);
	expect(e, engine_cmd_resume(e, CMD_SRC_API, &r), CMD_UNCHANGED, &r, CMD_SRC_API, "not paused");

	/* No plan: nothing to hand the load back to. */
	expect(e, engine_cmd_plan_resume(e, CMD_SRC_KEY, &r), CMD_REFUSED, &r, CMD_SRC_KEY, "no plan");
	expect(e, engine_cmd_window_reset(e, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "window emptied");

	/* A snapshot names the file being written. */
	expect(e, engine_cmd_snapshot(e, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "snapshot");
	assert_true(r.path[0] != '\0');
	snprintf(s->snap_path, sizeof s->snap_path, "%s", r.path);

	/* Stop: graceful, then nothing may change the load. */
	expect(e, engine_cmd_stop(e, CMD_SRC_API, &r), CMD_OK, &r, CMD_SRC_API, "stopping");
	engine_view(e, &v);
	assert_int_equal(v.state, ENGINE_DRAINING);
	assert_string_equal(v.stop_reason, "stopped by the control API");
	expect(e, engine_cmd_set_concurrency(e, 9, CMD_SRC_API, &r), CMD_REFUSED, &r, CMD_SRC_API, "stopping");
	expect(e, engine_cmd_pause(e, CMD_SRC_API, &r), CMD_REFUSED, &r, CMD_SRC_API, "stopping");
	s->checked = true;
}

/* Runs the engine with fn called once, after `after` seconds, on its loop;
 * the script must have run, and the run must be over. */
static void run_with(struct enginefix *f, struct script *s, void (*fn)(struct ev_loop *, ev_timer *, int),
		     double after, struct run_view *v)
{
	s->e = f->e;
	ev_timer_init(&s->t, fn, after, 0.);
	s->t.data = s;
	ev_timer_start(f->loop, &s->t);
	engine_run(f->e);
	assert_true(s->checked);
	engine_view(f->e, v);
	assert_int_equal(v->state, ENGINE_DONE);
}

static void test_commands_on_a_live_run(void **state)
{
	(void)state;
	char dir[] = "/tmp/infertop-cmd-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "2", "-d", "30s", "--output-tokens", "20", "--grace", "10s",
			      "--metrics-url", "none", "--snapshot-dir", dir, NULL};
	enginefix_engine(&f, args);

	struct script s = {0};
	struct run_view v;
	run_with(&f, &s, on_step, 0.3, &v);
	/* The run ended by the stop, well before -d, with its in-flight
	 * requests finished (--grace is long). */
	assert_string_equal(v.stop_reason, "stopped by the control API");
	assert_true(run_view_elapsed(&v, 0) < 10 * 1000000000LL);

	/* After the end: nothing changes, and a stop says so. */
	struct cmd_result r;
	expect(f.e, engine_cmd_stop(f.e, CMD_SRC_API, &r), CMD_UNCHANGED, &r, CMD_SRC_API, "the run is over");
	expect(f.e, engine_cmd_set_rate(f.e, 5, CMD_SRC_KEY, &r), CMD_REFUSED, &r, CMD_SRC_KEY, "the run is over");

	/* The snapshot's file is in the directory it was asked for, and says
	 * who asked (engine_free waits for the writer). */
	assert_int_equal(strncmp(s.snap_path, dir, strlen(dir)), 0);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	enginefix_free(&f);
	struct snapshot snap;
	char err[256];
	if (snapshot_read_file(&snap, s.snap_path, err, sizeof err) != 0)
		fail_msg("%s: %s", s.snap_path, err);
	assert_int_equal(snap.reason, SNAPSHOT_API);
	snapshot_release(&snap);
	assert_int_equal(system(cmd), 0);
}

/* A second stop while draining aborts what is in flight, as a second
 * Ctrl-C does; the key's reasons are the ones runs always recorded. */
static void on_stop_twice(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct script *s = w->data;
	struct cmd_result r;
	expect(s->e, engine_cmd_stop(s->e, CMD_SRC_KEY, &r), CMD_OK, &r, CMD_SRC_KEY, "stopping");
	expect(s->e, engine_cmd_stop(s->e, CMD_SRC_KEY, &r), CMD_OK, &r, CMD_SRC_KEY, "aborting");
	s->checked = true;
}

static void test_stop_twice_aborts(void **state)
{
	(void)state;
	struct enginefix f = {0};
	/* Requests that take 10 s: only an abort ends the run quickly. */
	const char *sim[] = {"--timing", "fixed", "--ttft", "10s", "--itl", "1ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "2", "-d", "60s", "--output-tokens", "2", "--grace", "60s",
			      "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	struct script s = {0};
	struct run_view v;
	run_with(&f, &s, on_stop_twice, 0.2, &v);
	assert_string_equal(v.stop_reason, "quit (q)");
	assert_true(run_view_elapsed(&v, 0) < 5 * 1000000000LL);
	/* Cut by the run's end: incomplete, not failed. */
	assert_true(v.stats->run_c.incomplete >= 1);
	assert_int_equal(v.stats->errors[ERR_ABORTED], 0);
	assert_int_equal(v.stats->run_c.failed, 0);
	enginefix_free(&f);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(cmd_source_name(CMD_SRC_API), "api");
	assert_string_equal(cmd_source_name(CMD_SRC_KEY), "key");
	assert_string_equal(cmd_status_name(CMD_INVALID), "invalid");
	assert_string_equal(cmd_status_name((enum cmd_status)99), "?");
	assert_true(cmd_concurrency_limit() >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_commands_on_a_live_run),
		cmocka_unit_test(test_stop_twice_aborts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
