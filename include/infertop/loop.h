#ifndef INFERTOP_LOOP_H
#define INFERTOP_LOOP_H

/*
 * The process's signals on the one libev loop. Signals belong to the
 * process, not to a module: two modules watching SIGINT at once would both
 * act on one Ctrl-C. So each signal infertop handles has one watcher, here,
 * and one handler at a time: the engine's while a run goes on (stop, then
 * abort), the dashboard's while it waits for q after the run, the snapshot
 * writer's for SIGUSR1, the dashboard's for SIGWINCH.
 */

#include <ev.h>

enum loop_signal {
	LOOP_SIGINT,
	LOOP_SIGTERM,
	LOOP_SIGHUP,
	LOOP_SIGUSR1,
	LOOP_SIGWINCH,
	LOOP_NSIGNALS
};

/* signum is the signal's number (SIGINT, ...), for handlers shared by
 * several signals. */
typedef void (*loop_signal_fn)(void *ud, int signum);

/* Routes the signal to fn(ud) on loop, replacing whoever had it; fn NULL
 * stops watching it (its default disposition returns, except that SIGUSR1
 * is then ignored: its default would end the run). */
void loop_signal_set(struct ev_loop *loop, enum loop_signal s, loop_signal_fn fn, void *ud);
/* Stops watching s only if fn(ud) still has it: a module lets go of what
 * it set without taking a signal from whoever set it since. */
void loop_signal_release(enum loop_signal s, loop_signal_fn fn, void *ud);
/* The handler the signal has now (NULL: none), for tests. */
loop_signal_fn loop_signal_handler(enum loop_signal s, void **ud);

#endif
