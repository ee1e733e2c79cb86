#include "config.h"

#include "infertop/loop.h"

#include <signal.h>
#include <stddef.h>

static const int signums[LOOP_NSIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGWINCH};

/* Process-wide, as signals are. */
static struct slot {
	ev_signal w;
	struct ev_loop *loop;       /* where w is started; NULL: stopped */
	loop_signal_fn fn;
	void *ud;
} slots[LOOP_NSIGNALS];

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	struct slot *s = w->data;
	if (s->fn)
		s->fn(s->ud, w->signum);
}

static void stop(enum loop_signal s)
{
	struct slot *sl = &slots[s];
	if (sl->loop)
		ev_signal_stop(sl->loop, &sl->w);
	sl->loop = NULL;
	sl->fn = NULL;
	sl->ud = NULL;
	if (signums[s] == SIGUSR1)
		signal(SIGUSR1, SIG_IGN);
}

void loop_signal_set(struct ev_loop *loop, enum loop_signal s, loop_signal_fn fn, void *ud)
{
	if ((unsigned)s >= LOOP_NSIGNALS)
		return;
	struct slot *sl = &slots[s];
	if (!fn || !loop) {
		stop(s);
		return;
	}
	if (sl->loop && sl->loop != loop)
		stop(s);
	sl->fn = fn;
	sl->ud = ud;
	if (!sl->loop) {
		ev_signal_init(&sl->w, on_signal, signums[s]);
		sl->w.data = sl;
		ev_signal_start(loop, &sl->w);
		sl->loop = loop;
	}
}

void loop_signal_release(enum loop_signal s, loop_signal_fn fn, void *ud)
{
	if ((unsigned)s < LOOP_NSIGNALS && slots[s].fn == fn && slots[s].ud == ud)
		stop(s);
}

loop_signal_fn loop_signal_handler(enum loop_signal s, void **ud)
{
	if ((unsigned)s >= LOOP_NSIGNALS)
		return NULL;
	if (ud)
		*ud = slots[s].ud;
	return slots[s].fn;
}
