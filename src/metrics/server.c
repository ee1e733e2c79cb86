#include "config.h"

#include "infertop/server.h"

/* The server's state, as the scraper fills it: names and aggregates.
 * Rendered by the result layer: server_to_json in src/result/json_write.c,
 * server_print_summary, server_format_brief and server_format_ms in
 * src/result/text.c. */

#include <math.h>
#include <string.h>

const char *server_status_name(enum server_status s)
{
	switch (s) {
	case SERVER_OFF:
		return "off";
	case SERVER_PENDING:
		return "pending";
	case SERVER_UP:
		return "up";
	case SERVER_STALE:
		return "stale";
	case SERVER_DOWN:
		return "down";
	}
	return "?";
}

void server_state_init(struct server_state *st)
{
	memset(st, 0, sizeof *st);
	st->status = SERVER_OFF;
	st->gpu_status = SERVER_OFF;
}

void server_agg_add(struct server_agg *a, double v)
{
	if (!isfinite(v))
		return;
	if (a->n == 0 || v < a->min)
		a->min = v;
	if (a->n == 0 || v > a->max)
		a->max = v;
	a->sum += v;
	a->n++;
}

double server_agg_mean(const struct server_agg *a)
{
	return a->n ? a->sum / (double)a->n : NAN;
}
