#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/options.h"
#include "infertop/plan.h"
#include "infertop/redact.h"
#include "infertop/transport.h"
#include "infertop/server.h"
#include "infertop/widget.h"
#include "infertop/view.h"

static const char *state_word(const struct run_view *e)
{
	switch (e->state) {
	case ENGINE_IDLE:
		return "starting";
	case ENGINE_RUNNING:
		if (e->load->paused)
			return "paused";
		/* "warming up", "manual", "draining", "cooling down" */
		if (plan_state_name(e->plan)[0] && strcmp(plan_state_name(e->plan), "running") != 0)
			return plan_state_name(e->plan);
		if (e->stats->run_c.completed + stats_errors_total(e->stats) == 0)
			return "warming up";
		return "running";
	case ENGINE_DRAINING:
		return "draining";
	case ENGINE_DONE:
		return "done";
	}
	return "?";
}

/* From the requests over the window: "ok" while any succeed, else what
 * the newest failure was ("refused", "HTTP 503", "timeout"). */
static void target_health(const struct run_view *e, char *out, size_t cap)
{
	const struct stats *st = e->stats;
	if (st->win_c.completed > 0 || st->win_c.failed == 0) {
		snprintf(out, cap, "%s", st->all_c.completed + st->all_c.failed ? "ok" : "-");
		return;
	}
	if (st->last_err == ERR_HTTP && st->last_http > 0)
		snprintf(out, cap, "failing (HTTP %d)", st->last_http);
	else
		snprintf(out, cap, "failing (%s)", stats_err_name(st->last_err));
}

void w_header_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	const struct run_view *e = d->v;
	unsigned long hd = wd_attr(d, THEME_R_HEADER), key = wd_attr(d, THEME_R_HEADER_KEY);
	wd_clear_row(w, r, 0, 0, hd);

	/* Right: the target's health (from the requests), the metrics
	 * endpoint's (from the scrapes), state, elapsed; always shown, the URL
	 * gives way. A dead /metrics is not a dead server. */
	char target[64], server[64], elapsed[32], right[320];
	target_health(e, target, sizeof target);
	const struct server_state *srv = d->v->server;
	if (!srv || srv->status == SERVER_OFF)
		snprintf(server, sizeof server, "%s", wd_dash(d));
	else if (srv->status == SERVER_UP)
		snprintf(server, sizeof server, "%s", srv->detected[0] ? srv->detected : "up");
	else
		snprintf(server, sizeof server, "%s%s%s", srv->detected, srv->detected[0] ? " " : "",
			 server_status_name(srv->status));
	wd_fmt_elapsed(elapsed, sizeof elapsed, run_view_elapsed(e, d->now));
	const char *state = state_word(e);
	/* The plan's stage ("step 2/5 c=16, 1m10s left") when there is one. */
	char stage[128] = "";
	if (plan_has_steps(e->plan) && e->state != ENGINE_DONE)
		plan_status(e->plan, d->now, stage, sizeof stage);
	/* The URL and model say what is measured: at 80 columns a healthy
	 * target's "ok" and a working /metrics' flavour give way to them
	 * first (a failing one stays: it is news). */
	bool srv_ok = !srv || srv->status == SERVER_OFF || srv->status == SERVER_UP;
	bool target_ok = strcmp(target, "ok") == 0 || strcmp(target, "-") == 0;
	char url[512], model[256], left[800];
	/* Never the URL's password or query (keys live there). */
	redact_url(e->cfg && e->cfg->url ? e->cfg->url : "", url, sizeof url);
	/* https says whose TLS it is: the direct path's ("tls") or libcurl's
	 * (a proxy, --http-client curl). */
	if (e->cfg && e->cfg->url && strncmp(url, "https:", 6) == 0) {
		const char *t = transport_name(e->cfg->url, e->cfg->http_client && !strcmp(e->cfg->http_client, "curl"),
					       e->cfg->headers, e->cfg->nheaders);
		size_t n = strlen(url);
		snprintf(url + n, sizeof url - n, "  %s%s", strcmp(t, "curl") == 0 ? "tls curl" : "tls",
			 e->cfg->insecure ? " -k" : "");
	}
	snprintf(model, sizeof model, "%s", e->model ? e->model : wd_dash(d));
	redact_controls(model); /* the server's /v1/models id */
	const int x0 = 10;      /* " infertop " */
	int want_left = x0 + wd_width(url) + 8 + wd_width(model) + 1;
	bool show_metrics = true, show_target = true;
	int rw = 0;
	for (int pass = 0; pass < 3; pass++) {
		show_metrics = pass < 1 || !srv_ok;
		show_target = pass < 2 || !target_ok;
		snprintf(right, sizeof right, " %s%s%s%s%s%s%s%s%s  %s ", stage, stage[0] ? "  " : "",
			 show_target ? "target " : "", show_target ? target : "", show_target ? "  " : "",
			 show_metrics ? "metrics " : "", show_metrics ? server : "", show_metrics ? "  " : "", state,
			 elapsed);
		rw = wd_width(right);
		if (d->done_hint && e->state == ENGINE_DONE)
			rw += wd_width(d->done_hint) + 1;
		if (want_left + rw <= r->w)
			break;
	}

	int x = wd_put(w, r, 0, 0, key, " infertop ");
	int room = r->w - rw - 1;
	/* URL and model share what is left; each is cut in the middle (its
	 * ends say more), not dropped. */
	int avail = room - x - 8; /* "  model " */
	if (wd_width(url) + wd_width(model) > avail) {
		int mw = wd_width(model), uw = avail - (mw < avail / 2 ? mw : avail / 2);
		wd_truncate_mid(url, sizeof url, uw, d->ascii);
		wd_truncate_mid(model, sizeof model, avail - wd_width(url), d->ascii);
	}
	snprintf(left, sizeof left, "%s  model %s", url, model);
	struct rect lr = *r;
	lr.w = room > 0 ? room : 0;
	wd_put(w, &lr, 0, x, hd, left);

	x = r->w - rw;
	if (x < 0)
		x = 0;
	if (stage[0]) {
		x = wd_put(w, r, 0, x, hd, " ");
		x = wd_put(w, r, 0, x, key, stage);
		x = wd_put(w, r, 0, x, hd, " ");
	}
	x = wd_put(w, r, 0, x, hd, " ");
	if (show_target) {
		x = wd_put(w, r, 0, x, hd, "target ");
		x = wd_put(w, r, 0, x, strcmp(target, "ok") != 0 ? key : hd, target);
		x = wd_put(w, r, 0, x, hd, "  ");
	}
	if (show_metrics) {
		x = wd_put(w, r, 0, x, hd, "metrics ");
		x = wd_put(w, r, 0, x, srv && srv->status != SERVER_UP ? key : hd, server);
		x = wd_put(w, r, 0, x, hd, "  ");
	}
	x = wd_put(w, r, 0, x, key, state);
	x = wd_put(w, r, 0, x, hd, "  ");
	x = wd_put(w, r, 0, x, hd, elapsed);
	x = wd_put(w, r, 0, x, hd, " ");
	if (d->done_hint && e->state == ENGINE_DONE)
		wd_put(w, r, 0, x, key, d->done_hint);
}
