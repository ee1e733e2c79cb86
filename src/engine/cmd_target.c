/* The command target of the keys (cmd_target.h): an engine's side, and
 * the dispatch both kinds share. */
#include "config.h"

#include "infertop/cmd_target.h"

#include "infertop/engine.h"
#include "infertop/view.h"

static void eng_view(void *ud, struct run_view *v)
{
	engine_view(ud, v);
}

static enum cmd_status eng_conc(void *ud, long n, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_set_concurrency(ud, n, src, out);
}

static enum cmd_status eng_rate(void *ud, double r, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_set_rate(ud, r, src, out);
}

static enum cmd_status eng_pause(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_pause(ud, src, out);
}

static enum cmd_status eng_resume(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_resume(ud, src, out);
}

static enum cmd_status eng_snapshot(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_snapshot(ud, src, out);
}

static enum cmd_status eng_stop(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_stop(ud, src, out);
}

static enum cmd_status eng_window_reset(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_window_reset(ud, src, out);
}

static enum cmd_status eng_plan_resume(void *ud, enum cmd_source src, struct cmd_result *out)
{
	return engine_cmd_plan_resume(ud, src, out);
}

static const struct cmd_target_ops engine_ops = {
	.view = eng_view,
	.set_concurrency = eng_conc,
	.set_rate = eng_rate,
	.pause = eng_pause,
	.resume = eng_resume,
	.snapshot = eng_snapshot,
	.stop = eng_stop,
	.window_reset = eng_window_reset,
	.plan_resume = eng_plan_resume,
};

void cmd_target_engine(struct cmd_target *t, struct engine *e)
{
	*t = (struct cmd_target){
		.ops = &engine_ops,
		.ud = e,
		.loop = engine_loop(e),
		.writer = engine_snapshot_writer(e),
	};
}

void cmd_target_view(const struct cmd_target *t, struct run_view *v)
{
	t->ops->view(t->ud, v);
}

enum cmd_status cmd_target_set_concurrency(const struct cmd_target *t, long n, enum cmd_source src,
				       struct cmd_result *out)
{
	return t->ops->set_concurrency(t->ud, n, src, out);
}

enum cmd_status cmd_target_set_rate(const struct cmd_target *t, double r, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->set_rate(t->ud, r, src, out);
}

enum cmd_status cmd_target_pause(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->pause(t->ud, src, out);
}

enum cmd_status cmd_target_resume(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->resume(t->ud, src, out);
}

enum cmd_status cmd_target_snapshot(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->snapshot(t->ud, src, out);
}

enum cmd_status cmd_target_stop(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->stop(t->ud, src, out);
}

enum cmd_status cmd_target_window_reset(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->window_reset(t->ud, src, out);
}

enum cmd_status cmd_target_plan_resume(const struct cmd_target *t, enum cmd_source src, struct cmd_result *out)
{
	return t->ops->plan_resume(t->ud, src, out);
}
