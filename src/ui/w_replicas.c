#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infertop/server.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* The server's replicas (2+ --metrics-url, or found by --metrics-discover
 * or --metrics-prometheus, whose source the title names), one row each:
 * status ("gone" once it left the source's answer), running, waiting, KV
 * usage, its share of the tokens generated over the run, the age of its
 * last good scrape; and the imbalance of the load now (max over mean of
 * running + waiting, over the replicas read), or the source's error when
 * it has one (no address, Prometheus's own message). Reads the view's
 * server state only. */

bool w_replicas_shown(const struct server_state *s)
{
	return s && (s->nreplicas >= 2 || s->replicas_source[0]);
}

static void fmt_val(char *b, size_t cap, const struct server_value *v, double scale, const char *fmt,
		    const struct dash *d)
{
	if (v->valid)
		snprintf(b, cap, fmt, v->v * scale);
	else
		snprintf(b, cap, "%s", wd_dash(d));
}

/* Column ends (right-aligned figures) after the URL column. */
enum { C_STATUS = 8, C_RUN = 6, C_WAIT = 6, C_KV = 7, C_SHARE = 7, C_AGE = 8 };
#define FIGS_W (C_STATUS + C_RUN + C_WAIT + C_KV + C_SHARE + C_AGE)

static void row(WINDOW *w, const struct rect *r, int y, unsigned long attr, const char *name, const char *cells[6])
{
	static const int cw[6] = { C_STATUS, C_RUN, C_WAIT, C_KV, C_SHARE, C_AGE };
	int x_end = r->w - 1 - FIGS_W;
	wd_put(w, r, y, 1, attr, name);
	for (int i = 0; i < 6; i++) {
		x_end += cw[i];
		wd_put_right(w, r, y, x_end, attr, cells[i]);
	}
}

void w_replicas_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	const struct server_state *s = d->v->server;
	char extra[260];
	snprintf(extra, sizeof extra, "%d of %d read%s%s", s ? s->replicas_read : 0, s ? s->nreplicas : 0,
		 s && s->replicas_source[0] ? ", " : "", s ? s->replicas_source : "");
	wd_title(w, r, d, "Replicas", extra);
	if (!w_replicas_shown(s))
		return;
	unsigned long lab = wd_attr(d, THEME_R_LABEL), val = wd_attr(d, THEME_R_VALUE);
	const char *head[6] = { "status", "run", "wait", "KV", "tok %", "scraped" };
	row(w, r, 1, lab, "replica", head);
	double tokens = 0, load_sum = 0, load_max = 0;
	int nload = 0;
	for (int i = 0; i < s->nreplicas && i < SERVER_MAX_REPLICAS; i++) {
		const struct server_replica *p = &s->replica[i];
		if (p->run_gen_tokens.valid)
			tokens += p->run_gen_tokens.v;
		bool live = p->status == SERVER_UP || p->status == SERVER_STALE;
		if (live && p->running.valid && p->waiting.valid) {
			double l = p->running.v + p->waiting.v;
			load_sum += l;
			load_max = fmax(load_max, l);
			nload++;
		}
	}
	int rows = r->h - 3;	/* rows 2 .. h-2: below the header, above the imbalance */
	for (int i = 0; i < s->nreplicas && i < SERVER_MAX_REPLICAS && i < rows; i++) {
		const struct server_replica *p = &s->replica[i];
		if (i == rows - 1 && s->nreplicas > rows) {
			char more[32];
			snprintf(more, sizeof more, "+%d more", s->nreplicas - i);
			wd_put(w, r, 2 + i, 1, wd_attr(d, THEME_R_DIM), more);
			break;
		}
		char st[16], run[16], wait[16], kv[16], share[16], age[16];
		snprintf(st, sizeof st, "%s", p->gone ? "gone" : server_status_name(p->status));
		fmt_val(run, sizeof run, &p->running, 1, "%.0f", d);
		fmt_val(wait, sizeof wait, &p->waiting, 1, "%.0f", d);
		fmt_val(kv, sizeof kv, &p->kv, 100, "%.0f%%", d);
		if (p->run_gen_tokens.valid && tokens > 0)
			snprintf(share, sizeof share, "%.0f%%", 100.0 * p->run_gen_tokens.v / tokens);
		else
			snprintf(share, sizeof share, "%s", wd_dash(d));
		if (p->last_ok_ns > 0 && d->now >= p->last_ok_ns)
			snprintf(age, sizeof age, "%.1fs", (double)(d->now - p->last_ok_ns) / 1e9);
		else
			snprintf(age, sizeof age, "%s", wd_dash(d));
		/* The URL's host and port: its tail is what tells pods apart. */
		char name[64];
		const char *u = strstr(p->url, "://");
		u = u ? u + 3 : p->url;
		snprintf(name, sizeof name, "%d %.*s", i + 1, (int)strcspn(u, "/"), u);
		const char *cells[6] = { st, run, wait, kv, share, age };
		bool down = p->status == SERVER_DOWN;
		row(w, r, 2 + i, p->gone ? wd_attr(d, THEME_R_DIM) : down ? wd_attr(d, THEME_R_CRIT) : val, name, cells);
	}
	int y = r->h - 1;
	if (y > 2 && s->replicas_error[0]) {
		wd_put(w, r, y, 1, wd_attr(d, THEME_R_CRIT), s->replicas_error);
	} else if (y > 2) {
		char b[64];
		if (nload > 0 && load_sum > 0)
			snprintf(b, sizeof b, "%.2f", load_max / (load_sum / nload));
		else
			snprintf(b, sizeof b, "%s", wd_dash(d));
		int x = wd_put(w, r, y, 1, lab, "imbalance (max/mean of running+waiting)");
		wd_put(w, r, y, x + 1, val, b);
	}
}
