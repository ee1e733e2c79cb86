#include "config.h"

#include "infertop/view.h"

int64_t run_view_elapsed(const struct run_view *v, int64_t now_ns)
{
	if (!v->t_start)
		return 0;
	return (v->state == ENGINE_DONE ? v->t_end : now_ns) - v->t_start;
}
