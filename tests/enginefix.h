#ifndef INFERTOP_ENGINEFIX_H
#define INFERTOP_ENGINEFIX_H

#include <ev.h>

#include "infertop/cli.h"
#include "engine/engine_internal.h"
#include "infertop/sim.h"

/* The engine in-process against a simulator child: what the integration
 * tests share. Zero-initialise, then enginefix_sim and enginefix_engine;
 * enginefix_free undoes whatever was done. */
struct enginefix {
	struct sim_child sim;
	struct config cfg;
	struct ev_loop *loop;
	struct engine *e;
};

/* `$INFERTOP_BIN sim --listen 127.0.0.1:0 ARGS...`; fails the test if it
 * does not come up. */
void enginefix_sim(struct enginefix *f, const char *const *args);
/* `infertop --no-tui -q TAIL... http://127.0.0.1:PORT/v1`, parsed, built
 * and probed exactly as main() would; fails the test on any error. */
void enginefix_engine(struct enginefix *f, const char *const *tail);
void enginefix_free(struct enginefix *f);
/* cmocka setup and teardown: *state is a zeroed struct enginefix, freed
 * with all it started. */
int enginefix_setup(void **state);
int enginefix_teardown(void **state);

#endif
