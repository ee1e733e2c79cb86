#ifndef INFERTOP_CMD_TARGET_H
#define INFERTOP_CMD_TARGET_H

/*
 * What the dashboard's keys act on: one run (an engine) or a fleet of
 * generators. Both offer the command interface of command.h and a
 * struct run_view, so ui.c and ui_actions.c call the same operations
 * whichever it is; the fleet's fan the command out over HTTP (fleet.h).
 *
 * A target is a table of functions and their argument, filled by
 * cmd_target_engine() or fleet_cmd_target(); it owns nothing.
 */

#include <stddef.h>

#include "infertop/command.h"

struct engine;
struct ev_loop;
struct run_view;
struct snapshot_writer;
struct rect;
struct dash;

struct cmd_target_ops {
	void (*view)(void *ud, struct run_view *v);
	enum cmd_status (*set_concurrency)(void *ud, long n, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*set_rate)(void *ud, double r, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*pause)(void *ud, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*resume)(void *ud, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*snapshot)(void *ud, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*stop)(void *ud, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*window_reset)(void *ud, enum cmd_source src, struct cmd_result *out);
	enum cmd_status (*plan_resume)(void *ud, enum cmd_source src, struct cmd_result *out);
};

/* Drawn after the dashboard's own panels, over the bottom rows (the
 * fleet's generators panel); NULL: nothing. w is a curses WINDOW. */
typedef void (*cmd_target_draw_fn)(void *ud, void *w, int rows, int cols, const struct dash *d);

struct cmd_target {
	const struct cmd_target_ops *ops;
	void *ud;
	struct ev_loop *loop;
	struct snapshot_writer *writer;  /* background snapshots; NULL: none */
	cmd_target_draw_fn draw_extra;
};

/* t acts on engine e (its loop and snapshot writer included). */
void cmd_target_engine(struct cmd_target *t, struct engine *e);

/* The operations, by name: t->ops->x(t->ud, ...). */
void cmd_target_view(const struct cmd_target *t, struct run_view *v);
enum cmd_status cmd_target_set_concurrency(const struct cmd_target *t, long n, enum cmd_source src,
				       struct cmd_result *out);
enum cmd_status cmd_target_set_rate(const struct cmd_target *t, double r, enum cmd_source src, struct cmd_result *out);
enum cmd_status cmd_target_pause(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out);
enum cmd_status cmd_target_resume(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out);
enum cmd_status cmd_target_snapshot(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out);
enum cmd_status cmd_target_stop(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out);
enum cmd_status cmd_target_window_reset(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out);
enum cmd_status cmd_target_plan_resume(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out);

#endif
