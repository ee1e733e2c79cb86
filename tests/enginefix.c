#include "config.h"

#include "enginefix.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

void enginefix_sim(struct enginefix *f, const char *const *args)
{
	const char *bin = getenv("INFERTOP_BIN");
	char err[256];
	if (sim_spawn(bin ? bin : "./infertop", args, &f->sim, err, sizeof err) != 0)
		fail_msg("sim_spawn: %s", err);
}

void enginefix_engine(struct enginefix *f, const char *const *tail)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", f->sim.port);
	const char *argv[64] = {"infertop", "--no-tui", "-q"};
	int argc = 3;
	for (int i = 0; tail && tail[i] && argc < 62; i++)
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
}

int enginefix_setup(void **state)
{
	struct enginefix *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	*state = f;
	return 0;
}

int enginefix_teardown(void **state)
{
	struct enginefix *f = *state;
	enginefix_free(f);
	free(f);
	return 0;
}

void enginefix_free(struct enginefix *f)
{
	engine_free(f->e);
	if (f->loop)
		ev_loop_destroy(f->loop);
	cli_free(&f->cfg);
	if (f->sim.pid > 0)
		sim_child_stop(&f->sim);
}
