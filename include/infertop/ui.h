#ifndef INFERTOP_UI_H
#define INFERTOP_UI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "infertop/keys.h"

/* The live dashboard: ncursesw on the engine's libev loop. A frame timer
 * redraws at --refresh, an ev_io on stdin reads keys without blocking,
 * SIGWINCH re-lays out. While the screen is up, standard error is caught
 * (shown on the bottom line) and replayed on the terminal by ui_stop(). */

struct cmd_target;
struct config;
struct engine;
struct ui;

/* Standard input and output are terminals and --no-tui was not given. */
bool ui_wanted(const struct config *cfg);

/* Loads the theme (a bad or missing one is a warning on stderr, and the
 * default is used). NULL with a message in err on failure. */
struct ui *ui_new(struct engine *e, const struct config *cfg, char *err, size_t errcap);
/* The same over any command target (a fleet: fleet.h); *t is copied. */
struct ui *ui_new_target(const struct cmd_target *t, const struct config *cfg, char *err, size_t errcap);
/* Takes over the terminal and starts the watchers. From here on every way
 * out (ui_stop, exit, a fatal signal) restores the terminal. 0, or -1 with
 * a message in err (the run can then go on headless). */
int ui_start(struct ui *u, char *err, size_t errcap);
/* After engine_run: keeps the final screen until q (or a signal). Returns
 * at once when the user already asked to quit (q, Ctrl-C) or the screen
 * is not up. */
/* After the run: waits for q (or a signal), the status line saying the run
 * is over and `saved` (where the result went; may be empty). */
void ui_wait_quit(struct ui *u, const char *saved);
/* Restores the terminal and replays what was written to stderr meanwhile.
 * Idempotent. */
void ui_stop(struct ui *u);
void ui_free(struct ui *u);

/* What the keys do to the run, apart from the screen (so they can be
 * tested without a terminal). Each reads the run's view and acts through
 * the command interface (command.h) of its target, one engine or a fleet
 * (cmd_target.h), as the control API does.
 * Each returns 0 when it changed something, -1 when it did not; msg gets
 * a line for the status bar either way. max_conc (0: none) bounds the
 * concurrency below the file descriptor limit the command applies. */
int ui_action_load(const struct cmd_target *t, enum key_action a, long max_conc, char *msg, size_t cap);
/* The text typed after `c`: a concurrency, or a rate in open loop. */
int ui_action_set(const struct cmd_target *t, const char *typed, long max_conc, char *msg, size_t cap);
/* A load change held for confirmation (over --max-change, command.h). */
struct ui_load_change {
	bool active;
	bool rate;          /* value is a rate in req/s, else a concurrency */
	double value;
	char why[160];      /* cmd_change_too_big's sentence */
};
/* The same, asking first: a change over --max-change is held in *ask and
 * 1 returned, msg the question ("apply? y/n: ..."). ask NULL: never asks. */
int ui_action_load_ask(const struct cmd_target *t, enum key_action a, long max_conc, struct ui_load_change *ask,
		       char *msg, size_t cap);
int ui_action_set_ask(const struct cmd_target *t, const char *typed, long max_conc, struct ui_load_change *ask,
		      char *msg, size_t cap);
/* The answer to the question: yes applies the held change, no keeps the
 * load. Either way ask is cleared. */
int ui_action_confirm(const struct cmd_target *t, struct ui_load_change *ask, bool yes, long max_conc, char *msg,
		      size_t cap);
/* Closed loop -> open loop at the measured (or previous) rate, and back. */
int ui_action_mode(const struct cmd_target *t, int64_t now_ns, long max_conc, char *msg, size_t cap);
int ui_action_pause(const struct cmd_target *t, char *msg, size_t cap);
/* Empties the sliding window (whole-run figures stay). */
int ui_action_window_reset(const struct cmd_target *t, char *msg, size_t cap);
/* r: a plan held by a manual change takes the load back. */
int ui_action_plan_resume(const struct cmd_target *t, char *msg, size_t cap);

#endif
