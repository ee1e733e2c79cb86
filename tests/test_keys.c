/* The key table: complete, unambiguous, and the single source of the key
 * bar, the help screen and the man page's KEYS section; and what the keys
 * do to a run (load changes, mode, pause, snapshot, window reset). */
#include "config.h"

#include <curses.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "infertop/clock.h"
#include "infertop/cmd_target.h"
#include "engine/engine_internal.h"
#include "infertop/keys.h"
#include "infertop/stats.h"
#include "infertop/ui.h"

static void test_every_action_documented(void **state)
{
	(void)state;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *d = keys_def((enum key_action)i);
		assert_non_null(d);
		assert_int_equal(d->action, i);
		assert_non_null(d->name);
		assert_true(strlen(d->name) > 0);
		assert_non_null(d->help);
		if (strlen(d->help) < 10)
			fail_msg("action %s: help text too short", d->name);
		assert_int_not_equal(d->key, 0);
		/* A bar entry has both its keys and its label. */
		assert_true((d->bar_keys == NULL) == (d->bar_label == NULL));
	}
	assert_null(keys_def(KEY_ACT_N));
	assert_null(keys_def(KEY_ACT_NONE));
}

static void test_no_duplicates(void **state)
{
	(void)state;
	int seen[3 * KEY_ACT_N];
	size_t n = 0;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *d = keys_def((enum key_action)i);
		int ks[3] = {d->key, d->alt, d->alt2};
		for (int k = 0; k < 3; k++) {
			if (!ks[k])
				continue;
			for (size_t j = 0; j < n; j++)
				if (seen[j] == ks[k])
					fail_msg("key %d bound twice (again by %s)", ks[k], d->name);
			seen[n++] = ks[k];
		}
		for (int j = 0; j < i; j++)
			assert_string_not_equal(keys_def((enum key_action)j)->name, d->name);
	}
}

static void test_lookup(void **state)
{
	(void)state;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *d = keys_def((enum key_action)i);
		assert_int_equal(keys_lookup(keys_to_curses(d->key)), i);
		if (d->alt)
			assert_int_equal(keys_lookup(keys_to_curses(d->alt)), i);
		if (d->alt2)
			assert_int_equal(keys_lookup(keys_to_curses(d->alt2)), i);
		assert_int_equal(keys_by_name(d->name), i);
	}
	/* The keys, by their characters. */
	assert_int_equal(keys_lookup('+'), KEY_ACT_LOAD_UP);
	assert_int_equal(keys_lookup('-'), KEY_ACT_LOAD_DOWN);
	assert_int_equal(keys_lookup(']'), KEY_ACT_LOAD_DOUBLE);
	assert_int_equal(keys_lookup('['), KEY_ACT_LOAD_HALVE);
	assert_int_equal(keys_lookup('c'), KEY_ACT_LOAD_SET);
	assert_int_equal(keys_lookup('m'), KEY_ACT_MODE);
	assert_int_equal(keys_lookup('p'), KEY_ACT_PAUSE);
	assert_int_equal(keys_lookup('s'), KEY_ACT_SNAPSHOT);
	assert_int_equal(keys_lookup('z'), KEY_ACT_WINDOW_RESET);
	assert_int_equal(keys_lookup('v'), KEY_ACT_VIEW_NEXT);
	assert_int_equal(keys_lookup('\t'), KEY_ACT_VIEW_NEXT);
	assert_int_equal(keys_lookup('t'), KEY_ACT_THEME);
	assert_int_equal(keys_lookup('?'), KEY_ACT_HELP);
	/* htop's: F1 and h for help, F10 quits. */
	assert_int_equal(keys_lookup('h'), KEY_ACT_HELP);
	assert_int_equal(keys_lookup(keys_to_curses(KEYC_F1)), KEY_ACT_HELP);
	assert_int_equal(keys_lookup(keys_to_curses(KEYC_F10)), KEY_ACT_QUIT);
	assert_int_equal(keys_lookup('q'), KEY_ACT_QUIT);
	assert_int_equal(keys_lookup(KEY_LEFT), KEY_ACT_ZOOM_OUT);
	assert_int_equal(keys_lookup(KEY_RIGHT), KEY_ACT_ZOOM_IN);
	/* Unbound keys, including function keys whose codes are large. */
	assert_int_equal(keys_lookup('x'), KEY_ACT_NONE);
	assert_int_equal(keys_lookup('5'), KEY_ACT_NONE); /* digits: free for typing numbers */
	assert_int_equal(keys_lookup(KEY_F(2)), KEY_ACT_NONE);
	assert_int_equal(keys_lookup(KEY_DOWN), KEY_ACT_FOCUS_NEXT);
	assert_int_equal(keys_lookup(KEY_UP), KEY_ACT_FOCUS_PREV);
	/* Enter, whichever way the terminal sends it, and F. */
	assert_int_equal(keys_lookup('\r'), KEY_ACT_MAXIMISE);
	assert_int_equal(keys_lookup('\n'), KEY_ACT_MAXIMISE);
	assert_int_equal(keys_lookup(KEY_ENTER), KEY_ACT_MAXIMISE);
	assert_int_equal(keys_lookup('F'), KEY_ACT_MAXIMISE);
	assert_int_equal(keys_lookup(KEY_HOME), KEY_ACT_NONE);
	assert_int_equal(keys_lookup(KEY_RESIZE), KEY_ACT_NONE);
	assert_int_equal(keys_lookup(0), KEY_ACT_NONE);
	assert_int_equal(keys_by_name("nope"), KEY_ACT_NONE);
}

/* Every key shown on the bar does something. */
static void test_bar_keys_bound(void **state)
{
	(void)state;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *d = keys_def((enum key_action)i);
		if (!d->bar_keys)
			continue;
		for (const char *c = d->bar_keys; *c; c++)
			if (keys_lookup((unsigned char)*c) == KEY_ACT_NONE)
				fail_msg("bar of %s shows unbound key %c", d->name, *c);
		assert_int_equal(keys_lookup((unsigned char)d->bar_keys[0]), i);
	}
}

static void test_key_names(void **state)
{
	(void)state;
	char b[32];
	keys_key_name('\t', false, b, sizeof b);
	assert_string_equal(b, "Tab");
	keys_key_name(KEYC_LEFT, true, b, sizeof b);
	assert_string_equal(b, "Left");
	keys_key_name(KEYC_LEFT, false, b, sizeof b);
	assert_string_equal(b, "\xe2\x86\x90");
	keys_key_name(KEYC_CTRL_L, false, b, sizeof b);
	assert_string_equal(b, "^L");
	keys_key_name(KEYC_BTAB, false, b, sizeof b);
	assert_string_equal(b, "Shift-Tab");
	keys_key_name('+', false, b, sizeof b);
	assert_string_equal(b, "+");
}

static void test_help_lines(void **state)
{
	(void)state;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *d = keys_def((enum key_action)i);
		char line[256], k[16];
		size_t n = keys_help_line((enum key_action)i, true, 14, line, sizeof line);
		assert_int_equal(n, strlen(line));
		keys_key_name(d->key, true, k, sizeof k);
		assert_memory_equal(line, k, strlen(k));
		assert_non_null(strstr(line, d->help));
		/* The text starts in the same column on every line. */
		assert_string_equal(line + 14, d->help);
	}
	char small[8];
	assert_int_equal(keys_help_line(KEY_ACT_QUIT, false, 14, small, sizeof small), 7);
	assert_int_equal(keys_help_line(KEY_ACT_N, false, 14, small, sizeof small), 0);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* The man page's KEYS section is the one the table generates, word for
 * word, so the documentation cannot drift from the code. */
static void test_man_page_section(void **state)
{
	(void)state;
	char *gen = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&gen, &len);
	assert_non_null(m);
	keys_write_roff(m);
	fclose(m);
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *d = keys_def((enum key_action)i);
		/* Help text appears with roff's escaped hyphens. */
		char esc[256];
		size_t w = 0;
		for (const char *c = d->help; *c && w < sizeof esc - 3; c++) {
			if (*c == '-')
				esc[w++] = '\\';
			esc[w++] = *c;
		}
		esc[w] = '\0';
		if (!strstr(gen, esc))
			fail_msg("roff lacks the help of %s", d->name);
	}
	const char *src = getenv("INFERTOP_SRCDIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/man/infertop.1.in", src && *src ? src : ".");
	char *man = slurp(path);
	assert_non_null(man);
	const char *start = strstr(man, ".SH KEYS\n");
	const char *end = start ? strstr(start + 1, "\n.SH ") : NULL;
	size_t have = start ? (end ? (size_t)(end + 1 - start) : strlen(start)) : 0;
	if (!start || have != len || memcmp(start, gen, len) != 0) {
		fprintf(stderr, "%s: the KEYS section must read exactly:\n%s", path, gen);
		fail_msg("man page KEYS section differs from the key table");
	}
	free(man);
	free(gen);
}

/* The actions behind the keys, on a real load controller whose requests
 * only count themselves in flight. */
struct fake {
	struct engine e;
	struct cmd_target t;   /* the keys act on e through it */
	struct config cfg;
	struct ev_loop *loop;
};

static int fake_start(void *ud, int64_t t_intended)
{
	(void)t_intended;
	struct fake *f = ud;
	f->e.stats->in_flight++;
	f->e.stats->started++;
	return 0;
}

static uint64_t fake_in_flight(void *ud)
{
	struct fake *f = ud;
	return f->e.stats->in_flight;
}

static void fake_init(struct fake *f, long conc)
{
	memset(f, 0, sizeof *f);
	f->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(f->loop);
	f->cfg.url = "http://127.0.0.1:1";
	f->cfg.window_ns = 30 * CLOCK_NS_PER_S;
	f->e.cfg = &f->cfg;
	f->e.loop = f->loop;
	f->e.state = ENGINE_RUNNING;
	f->e.t_start = clock_now_ns();
	f->e.stats = stats_new(f->cfg.window_ns, f->e.t_start);
	assert_non_null(f->e.stats);
	load_init(&f->e.load, f->loop, 1, fake_start, fake_in_flight, f);
	load_set_concurrency(&f->e.load, conc);
	cmd_target_engine(&f->t, &f->e);
}

static void fake_free(struct fake *f)
{
	load_free(&f->e.load);
	stats_free(f->e.stats);
	ev_loop_destroy(f->loop);
}

static void test_load_actions(void **state)
{
	(void)state;
	struct fake f;
	fake_init(&f, 4);
	char msg[256];
	assert_int_equal(f.e.stats->in_flight, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(ui_action_load(&f.t, KEY_ACT_LOAD_UP, 0, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.concurrency, 8);
	assert_int_equal(f.e.stats->in_flight, 8); /* raising starts requests at once */
	assert_string_equal(msg, "concurrency 8");
	ui_action_load(&f.t, KEY_ACT_LOAD_DOUBLE, 0, msg, sizeof msg);
	assert_int_equal(f.e.load.concurrency, 16);
	assert_int_equal(f.e.stats->in_flight, 16);
	ui_action_load(&f.t, KEY_ACT_LOAD_HALVE, 0, msg, sizeof msg);
	assert_int_equal(f.e.load.concurrency, 8);
	ui_action_load(&f.t, KEY_ACT_LOAD_DOWN, 0, msg, sizeof msg);
	assert_int_equal(f.e.load.concurrency, 7);
	/* Never below one user (p pauses); -1 when nothing changes. */
	assert_int_equal(ui_action_set(&f.t, "1", 0, msg, sizeof msg), 0);
	assert_int_equal(ui_action_load(&f.t, KEY_ACT_LOAD_HALVE, 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_load(&f.t, KEY_ACT_LOAD_DOWN, 0, msg, sizeof msg), -1);
	assert_int_equal(f.e.load.concurrency, 1);
	/* c 32 Enter, and what is not a number. */
	assert_int_equal(ui_action_set(&f.t, "32", 0, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.concurrency, 32);
	assert_int_equal(f.e.stats->in_flight, 32);
	assert_int_equal(ui_action_set(&f.t, "", 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_set(&f.t, "0", 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_set(&f.t, "1.5", 0, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "not a concurrency"));
	assert_int_equal(f.e.load.concurrency, 32);
	/* The file descriptor cap. */
	assert_int_equal(ui_action_set(&f.t, "100000", 40, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.concurrency, 40);
	assert_non_null(strstr(msg, "file descriptor"));
	ui_action_load(&f.t, KEY_ACT_LOAD_DOUBLE, 40, msg, sizeof msg);
	assert_int_equal(f.e.load.concurrency, 40);
	assert_int_equal(ui_action_load(&f.t, KEY_ACT_PAUSE, 40, msg, sizeof msg), -1); /* not a load key */
	/* Every change is a timed event of the load controller. */
	uint32_t before = f.e.load.nevents;
	ui_action_load(&f.t, KEY_ACT_LOAD_DOWN, 0, msg, sizeof msg);
	assert_int_equal(f.e.load.nevents, before + 1);
	const struct load_event *ev = &f.e.load.events[(f.e.load.nevents - 1) % LOAD_EVENTS];
	assert_true(ev->value == 39 && ev->mode == LOAD_CLOSED && ev->t_ns > 0);
	fake_free(&f);
}

static void test_mode_pause_actions(void **state)
{
	(void)state;
	struct fake f;
	fake_init(&f, 8);
	char msg[256];
	/* Closed -> open at the rate measured in the window: 20 requests
	 * finished over the 2 s the window covers -> 10 req/s. */
	for (int i = 0; i < 20; i++) {
		struct req_result r = {.ok = true, .output_tokens = 1, .e2e_ns = 2 * CLOCK_NS_PER_S};
		stats_request_done(f.e.stats, &r);
	}
	int64_t now = f.e.stats->slice_start_ns + 2 * CLOCK_NS_PER_S;
	f.e.stats->start_ns = f.e.stats->slice_start_ns;
	assert_int_equal(ui_action_mode(&f.t, now, 0, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.mode, LOAD_OPEN);
	assert_true(fabs(f.e.load.rate - 10.0) < 1e-9);
	assert_string_equal(msg, "open loop: 10 req/s (Poisson arrivals)");
	/* In open loop the load keys move the rate. */
	ui_action_load(&f.t, KEY_ACT_LOAD_UP, 0, msg, sizeof msg);
	assert_true(fabs(f.e.load.rate - 11.0) < 1e-9);
	ui_action_load(&f.t, KEY_ACT_LOAD_DOUBLE, 0, msg, sizeof msg);
	assert_true(fabs(f.e.load.rate - 22.0) < 1e-9);
	ui_action_load(&f.t, KEY_ACT_LOAD_HALVE, 0, msg, sizeof msg);
	ui_action_load(&f.t, KEY_ACT_LOAD_DOWN, 0, msg, sizeof msg);
	assert_true(fabs(f.e.load.rate - 10.0) < 1e-9);
	assert_int_equal(ui_action_set(&f.t, "2.5", 0, msg, sizeof msg), 0);
	assert_true(f.e.load.rate == 2.5);
	assert_int_equal(ui_action_set(&f.t, "-3", 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_set(&f.t, "fast", 0, msg, sizeof msg), -1);
	assert_non_null(strstr(msg, "not a rate"));
	/* Open -> closed with the users that offer the same load (Little's
	 * law: 2.5 req/s x 2 s mean E2E = 5), not the in-flight count, which an
	 * overload has inflated (50 here). */
	f.e.stats->in_flight = 50;
	assert_int_equal(ui_action_mode(&f.t, now, 0, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.mode, LOAD_CLOSED);
	assert_int_equal(f.e.load.concurrency, 5);
	/* With a cap on in-flight requests, the cap. */
	assert_int_equal(ui_action_mode(&f.t, now, 0, msg, sizeof msg), 0);
	load_set_max_concurrency(&f.e.load, 7);
	assert_int_equal(ui_action_mode(&f.t, now, 0, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.concurrency, 7);
	load_set_max_concurrency(&f.e.load, 0);
	load_set_concurrency(&f.e.load, 5);
	f.e.stats->in_flight = 5;
	/* p stops starting requests, p again resumes and refills. */
	assert_int_equal(ui_action_pause(&f.t, msg, sizeof msg), 0);
	assert_true(f.e.load.paused);
	f.e.stats->in_flight = 0;
	load_on_done(&f.e.load);
	assert_int_equal(f.e.stats->in_flight, 0);
	assert_int_equal(ui_action_pause(&f.t, msg, sizeof msg), 0);
	assert_false(f.e.load.paused);
	assert_int_equal(f.e.stats->in_flight, 5);
	/* z: the window is emptied, the run keeps its counts. */
	int64_t before_reset = clock_now_ns();
	assert_int_equal(ui_action_window_reset(&f.t, msg, sizeof msg), 0);
	assert_int_equal(f.e.stats->win_c.completed, 0);
	assert_int_equal(f.e.stats->run_c.completed, 20);
	/* The window starts again at the moment of the command. */
	assert_true(f.e.stats->slice_start_ns >= before_reset && f.e.stats->slice_start_ns <= clock_now_ns());
	/* Nothing changes once the run stops. */
	f.e.state = ENGINE_DRAINING;
	assert_int_equal(ui_action_load(&f.t, KEY_ACT_LOAD_UP, 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_set(&f.t, "9", 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_mode(&f.t, now, 0, msg, sizeof msg), -1);
	assert_int_equal(ui_action_pause(&f.t, msg, sizeof msg), -1);
	f.e.state = ENGINE_DONE;
	assert_int_equal(ui_action_load(&f.t, KEY_ACT_LOAD_UP, 0, msg, sizeof msg), -1);
	assert_string_equal(msg, "the run is over");
	assert_int_equal(f.e.load.concurrency, 5);
	fake_free(&f);
}

/* --max-change through the keys: a jump is held and asked (1), n keeps
 * the load, y applies it; ] ] ] ... count from the lowest load of the
 * last 10 s; 0 turns the guard off. */
static void test_max_change(void **state)
{
	(void)state;
	struct fake f;
	fake_init(&f, 2);
	f.e.load.max_change = 4;
	char msg[256];
	struct ui_load_change ask = {0};
	assert_int_equal(ui_action_set_ask(&f.t, "258", 0, &ask, msg, sizeof msg), 0);   /* 2 + 256 */
	assert_int_equal(f.e.load.concurrency, 258);
	assert_int_equal(ui_action_set_ask(&f.t, "2", 0, &ask, msg, sizeof msg), 0);     /* down: never asks */
	assert_int_equal(ui_action_set_ask(&f.t, "999999", 0, &ask, msg, sizeof msg), 1);
	assert_true(ask.active);
	assert_int_equal(f.e.load.concurrency, 2);
	assert_non_null(strstr(msg, "apply? y/n: concurrency 999999 is over 4x the current 2 or +256 (--max-change)"));
	assert_int_equal(ui_action_confirm(&f.t, &ask, false, 0, msg, sizeof msg), -1);
	assert_false(ask.active);
	assert_int_equal(f.e.load.concurrency, 2);
	assert_string_equal(msg, "not applied: concurrency stays 2");
	assert_int_equal(ui_action_set_ask(&f.t, "300", 0, &ask, msg, sizeof msg), 1);
	assert_int_equal(ui_action_confirm(&f.t, &ask, true, 0, msg, sizeof msg), 0);
	assert_int_equal(f.e.load.concurrency, 300);
	/* Doubling from 2: each step is under 4x, together they are not. */
	ui_action_set(&f.t, "2", 0, msg, sizeof msg);
	int rc = 0, steps = 0;
	while ((rc = ui_action_load_ask(&f.t, KEY_ACT_LOAD_DOUBLE, 0, &ask, msg, sizeof msg)) == 0)
		steps++;
	assert_int_equal(rc, 1);
	assert_int_equal(f.e.load.concurrency, 256);
	assert_int_equal(steps, 7);
	assert_non_null(strstr(msg, "concurrency 512 is over 4x 2 (lowest in 10 s)"));
	ask.active = false;
	f.e.load.max_change = 0;
	assert_int_equal(ui_action_set_ask(&f.t, "5000", 0, &ask, msg, sizeof msg), 0);
	assert_false(ask.active);
	fake_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_change),
		cmocka_unit_test(test_every_action_documented),
		cmocka_unit_test(test_no_duplicates),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_bar_keys_bound),
		cmocka_unit_test(test_key_names),
		cmocka_unit_test(test_help_lines),
		cmocka_unit_test(test_man_page_section),
		cmocka_unit_test(test_load_actions),
		cmocka_unit_test(test_mode_pause_actions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
