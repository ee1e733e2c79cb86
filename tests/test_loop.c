/* The loop module: one watcher per signal, one handler at a time. */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "infertop/loop.h"

static int got_a, got_b, last_sig;

static void handler_a(void *ud, int signum)
{
	(void)ud;
	got_a++;
	last_sig = signum;
}

static void handler_b(void *ud, int signum)
{
	(void)ud;
	got_b++;
	last_sig = signum;
}

static void deliver(struct ev_loop *loop, int sig)
{
	raise(sig);
	ev_run(loop, EVRUN_NOWAIT);
	ev_run(loop, EVRUN_NOWAIT);
}

static void test_one_handler_at_a_time(void **state)
{
	(void)state;
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(loop);
	int a = 1, b = 2;
	loop_signal_set(loop, LOOP_SIGUSR1, handler_a, &a);
	deliver(loop, SIGUSR1);
	assert_int_equal(got_a, 1);
	assert_int_equal(last_sig, SIGUSR1);
	/* A new owner takes the signal: the old one no longer hears it. */
	loop_signal_set(loop, LOOP_SIGUSR1, handler_b, &b);
	deliver(loop, SIGUSR1);
	assert_int_equal(got_a, 1);
	assert_int_equal(got_b, 1);
	/* The old owner letting go does not take it from the new one. */
	loop_signal_release(LOOP_SIGUSR1, handler_a, &a);
	void *ud = NULL;
	assert_ptr_equal(loop_signal_handler(LOOP_SIGUSR1, &ud), handler_b);
	assert_ptr_equal(ud, &b);
	deliver(loop, SIGUSR1);
	assert_int_equal(got_b, 2);
	/* Released by its owner, SIGUSR1 is ignored, not fatal. */
	loop_signal_release(LOOP_SIGUSR1, handler_b, &b);
	assert_null(loop_signal_handler(LOOP_SIGUSR1, NULL));
	deliver(loop, SIGUSR1);
	assert_int_equal(got_b, 2);
	/* One handler for several signals tells them apart. */
	loop_signal_set(loop, LOOP_SIGHUP, handler_a, &a);
	loop_signal_set(loop, LOOP_SIGTERM, handler_a, &a);
	deliver(loop, SIGHUP);
	assert_int_equal(last_sig, SIGHUP);
	deliver(loop, SIGTERM);
	assert_int_equal(last_sig, SIGTERM);
	assert_int_equal(got_a, 3);
	loop_signal_release(LOOP_SIGHUP, handler_a, &a);
	loop_signal_release(LOOP_SIGTERM, handler_a, &a);
	ev_loop_destroy(loop);
}

/* A signal moves with its owner to another loop (tests and runs make a
 * loop each). */
static void test_new_loop(void **state)
{
	(void)state;
	struct ev_loop *l1 = ev_loop_new(EVFLAG_AUTO), *l2 = ev_loop_new(EVFLAG_AUTO);
	int a = 0;
	got_a = 0;
	loop_signal_set(l1, LOOP_SIGUSR1, handler_a, &a);
	loop_signal_set(l2, LOOP_SIGUSR1, handler_a, &a);
	deliver(l2, SIGUSR1);
	assert_int_equal(got_a, 1);
	loop_signal_set(l2, LOOP_SIGUSR1, NULL, NULL);
	ev_loop_destroy(l1);
	ev_loop_destroy(l2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_handler_at_a_time),
		cmocka_unit_test(test_new_loop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
