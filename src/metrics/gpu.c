#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/profile.h"
#include "infertop/redact.h"

/* DCGM exporter fields (dcgm-exporter's default counters plus the
 * profiling ones when enabled). */
enum gfield {
	GF_UTIL,
	GF_FB_USED,
	GF_FB_FREE,
	GF_FB_RESERVED,
	GF_POWER,
	GF_TEMP,
	GF_SM_CLOCK,
	GF_GR_ACTIVE,
	GF_DRAM_ACTIVE,
	GF_TENSOR_ACTIVE,
	GF_ENERGY,
	GF_N
};

static const char *const gfield_names[GF_N] = {
	[GF_UTIL] = "DCGM_FI_DEV_GPU_UTIL",
	[GF_FB_USED] = "DCGM_FI_DEV_FB_USED",
	[GF_FB_FREE] = "DCGM_FI_DEV_FB_FREE",
	[GF_FB_RESERVED] = "DCGM_FI_DEV_FB_RESERVED",
	[GF_POWER] = "DCGM_FI_DEV_POWER_USAGE",
	[GF_TEMP] = "DCGM_FI_DEV_GPU_TEMP",
	[GF_SM_CLOCK] = "DCGM_FI_DEV_SM_CLOCK",
	[GF_GR_ACTIVE] = "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	[GF_DRAM_ACTIVE] = "DCGM_FI_PROF_DRAM_ACTIVE",
	[GF_TENSOR_ACTIVE] = "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
	[GF_ENERGY] = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
};

struct gctx {
	struct server_state *out;
	uint64_t key[SERVER_MAX_GPUS];
	double v[SERVER_MAX_GPUS][GF_N];
	bool have[SERVER_MAX_GPUS][GF_N];
	int n;
	bool overflow;
	int nsamples;
};

static uint64_t fnv_label(const struct prom_sample *s, const char *name, uint64_t h)
{
	const struct prom_label *l = prom_sample_label(s, name);
	if (!l)
		return h * 31 + 7;
	for (size_t i = 0; i < l->value_len; i++) {
		h ^= (unsigned char)l->value[i];
		h *= 1099511628211ULL;
	}
	return h ^ 0xff;
}

static int gpu_slot(struct gctx *c, const struct prom_sample *s)
{
	uint64_t k = 1469598103934665603ULL;
	k = fnv_label(s, "Hostname", k);
	k = fnv_label(s, "gpu", k);
	k = fnv_label(s, "UUID", k);
	for (int i = 0; i < c->n; i++)
		if (c->key[i] == k)
			return i;
	if (c->n == SERVER_MAX_GPUS) {
		c->overflow = true;
		return -1;
	}
	int i = c->n++;
	c->key[i] = k;
	struct server_gpu *g = &c->out->gpu[i];
	memset(g, 0, sizeof *g);
	g->index = -1;
	const struct prom_label *l = prom_sample_label(s, "gpu");
	char buf[16];
	if (l && l->value_len < sizeof buf) {
		prom_label_unescape(l->value, l->value_len, buf, sizeof buf);
		char *end;
		long idx = strtol(buf, &end, 10);
		if (*buf && !*end && idx >= 0 && idx < 1000000)
			g->index = (int)idx;
	}
	l = prom_sample_label(s, "modelName");
	if (l) {
		prom_label_unescape(l->value, l->value_len, g->name, sizeof g->name);
		redact_controls(g->name); /* the exporter's text, shown and saved */
	} else if (g->index >= 0)
		snprintf(g->name, sizeof g->name, "GPU %d", g->index);
	else
		snprintf(g->name, sizeof g->name, "GPU");
	return i;
}

static int gpu_cb(void *ud, const struct prom_sample *s)
{
	struct gctx *c = ud;
	c->nsamples++;
	if (s->name_len < 8 || memcmp(s->name, "DCGM_FI_", 8) != 0 || !isfinite(s->value))
		return 0;
	for (int f = 0; f < GF_N; f++) {
		if (strlen(gfield_names[f]) != s->name_len || memcmp(gfield_names[f], s->name, s->name_len) != 0)
			continue;
		int i = gpu_slot(c, s);
		if (i >= 0) {
			c->v[i][f] = s->value;
			c->have[i][f] = true;
		}
		break;
	}
	return 0;
}

static void put(struct server_value *sv, const struct gctx *c, int i, enum gfield f, double scale)
{
	sv->valid = c->have[i][f];
	sv->v = sv->valid ? c->v[i][f] * scale : 0;
}

int gpu_parse_dcgm(const char *text, size_t len, unsigned prom_flags, struct server_state *out,
		   struct gpu_reading *rd, char *err, size_t errcap)
{
	struct gctx cx;
	struct gctx *c = &cx;
	struct prom_error perr;
	memset(rd, 0, sizeof *rd);
	memset(c, 0, sizeof *c);
	c->out = out;
	prom_parse(text, len, PROM_LENIENT | (prom_flags & PROM_OPENMETRICS), gpu_cb, c, &perr);
	if (c->n == 0) {
		if (c->nsamples == 0 && perr.nbad)
			snprintf(err, errcap, "not Prometheus text: line %u: %s", perr.line, perr.msg);
		else
			snprintf(err, errcap, "no DCGM_FI_ GPU metrics in the response");
		out->ngpus = 0;
		out->power_total_w.valid = false;
		return -1;
	}
	double power = 0, energy = 0;
	bool any_power = false, all_energy = true;
	for (int i = 0; i < c->n; i++) {
		struct server_gpu *g = &out->gpu[i];
		put(&g->util_pct, c, i, GF_UTIL, 1);
		put(&g->mem_used_mib, c, i, GF_FB_USED, 1);
		/* Total = used + free (+ reserved on newer drivers). */
		g->mem_total_mib.valid = c->have[i][GF_FB_USED] && c->have[i][GF_FB_FREE];
		g->mem_total_mib.v = g->mem_total_mib.valid
					     ? c->v[i][GF_FB_USED] + c->v[i][GF_FB_FREE] +
						       (c->have[i][GF_FB_RESERVED] ? c->v[i][GF_FB_RESERVED] : 0)
					     : 0;
		put(&g->power_w, c, i, GF_POWER, 1);
		put(&g->temp_c, c, i, GF_TEMP, 1);
		put(&g->sm_clock_mhz, c, i, GF_SM_CLOCK, 1);
		put(&g->gr_active, c, i, GF_GR_ACTIVE, 1);
		put(&g->dram_active, c, i, GF_DRAM_ACTIVE, 1);
		put(&g->tensor_active, c, i, GF_TENSOR_ACTIVE, 1);
		if (c->have[i][GF_POWER]) {
			power += c->v[i][GF_POWER];
			any_power = true;
		}
		if (c->have[i][GF_ENERGY])
			energy += c->v[i][GF_ENERGY] / 1000.0; /* mJ */
		else
			all_energy = false;
	}
	out->ngpus = c->n;
	out->power_total_w.valid = any_power;
	out->power_total_w.v = any_power ? power : 0;
	rd->ngpus = c->n;
	rd->power_w = power;
	rd->power_valid = any_power;
	rd->energy_j = energy;
	rd->energy_valid = all_energy;
	return c->n;
}

void gpu_ring_push(struct gpu_power_ring *r, int64_t t_ns, const struct gpu_reading *rd)
{
	int i = (r->head + r->n) % GPU_RING;
	if (r->n == GPU_RING)
		r->head = (r->head + 1) % GPU_RING;
	else
		r->n++;
	r->e[i].t = t_ns;
	r->e[i].power_w = rd->power_w;
	r->e[i].power_valid = rd->power_valid;
	r->e[i].energy_j = rd->energy_j;
	r->e[i].energy_valid = rd->energy_valid;
}

bool gpu_ring_mean_power(const struct gpu_power_ring *r, int64_t now_ns, int64_t span_ns, double *watts)
{
	int first = -1, last = -1, npow = 0;
	double psum = 0, prev_e = 0;
	bool energy_ok = true;
	for (int k = 0; k < r->n; k++) {
		int i = (r->head + k) % GPU_RING;
		if (r->e[i].t <= now_ns - span_ns || r->e[i].t > now_ns)
			continue;
		if (first < 0)
			first = i;
		else if (!r->e[i].energy_valid || r->e[i].energy_j < prev_e)
			energy_ok = false;
		if (!r->e[i].energy_valid)
			energy_ok = false;
		prev_e = r->e[i].energy_j;
		last = i;
		if (r->e[i].power_valid) {
			psum += r->e[i].power_w;
			npow++;
		}
	}
	if (first < 0)
		return false;
	/* The energy counter integrates every millisecond; sampled power
	 * misses what happens between scrapes, so it is only the fallback. */
	if (energy_ok && last != first && r->e[last].t > r->e[first].t) {
		*watts = (r->e[last].energy_j - r->e[first].energy_j) / ((double)(r->e[last].t - r->e[first].t) / 1e9);
		return true;
	}
	if (npow == 0)
		return false;
	*watts = psum / npow;
	return true;
}

bool gpu_joules_per_token(double watts, double window_s, uint64_t tokens, double *jpt)
{
	if (tokens == 0 || !(window_s > 0) || !isfinite(watts) || watts < 0)
		return false;
	*jpt = watts * window_s / (double)tokens;
	return true;
}

static float gauge_or_nan(const struct server_value *v, double scale)
{
	return v->valid && isfinite(v->v) ? (float)(v->v * scale) : NAN;
}

void gpu_history_push(struct gpu_history *h, int64_t t_ns, const struct server_state *s)
{
	int i = h->head;
	h->t[i] = t_ns;
	for (int g = 0; g < SERVER_MAX_GPUS; g++) {
		const struct server_gpu *gp = &s->gpu[g];
		bool here = g < s->ngpus;
		double total = gp->mem_total_mib.valid ? gp->mem_total_mib.v : 0;
		h->v[GPU_HIST_UTIL][g][i] = here ? gauge_or_nan(&gp->util_pct, 1) : NAN;
		h->v[GPU_HIST_MEM][g][i] = here && total > 0 ? gauge_or_nan(&gp->mem_used_mib, 1 / total) : NAN;
		h->v[GPU_HIST_POWER][g][i] = here ? gauge_or_nan(&gp->power_w, 1) : NAN;
	}
	h->head = (h->head + 1) % GPU_HIST_POINTS;
	if (h->n < GPU_HIST_POINTS)
		h->n++;
}

int gpu_history_extent(const struct gpu_history *h, int64_t *first_ns, int64_t *last_ns)
{
	if (!h || h->n == 0)
		return -1;
	*first_ns = h->t[(h->head - h->n + GPU_HIST_POINTS) % GPU_HIST_POINTS];
	*last_ns = h->t[(h->head - 1 + GPU_HIST_POINTS) % GPU_HIST_POINTS];
	return 0;
}

size_t gpu_history_read(const struct gpu_history *h, int gpu, enum gpu_hist_metric m, int64_t to_ns,
			int64_t span_ns, double *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NAN;
	if (!h || gpu < 0 || gpu >= SERVER_MAX_GPUS || (unsigned)m >= GPU_HIST_N || span_ns <= 0 || n == 0)
		return 0;
	size_t got = 0;
	int64_t from = to_ns - span_ns;
	/* Oldest first. A gauge holds its value until the next scrape, so
	 * the slots up to the next point get it too, unless scrapes stopped
	 * for longer than GPU_HIST_HOLD_NS (then it is a gap). */
	const int64_t hold = 5000000000LL;
	int prev_slot = -1;
	int64_t prev_t = 0;
	double prev_v = NAN;
	/* The oldest point in the span, found from the newest end: a short
	 * span reads only its own points. */
	int k0 = 0;
	while (k0 < h->n && h->t[(h->head - 1 - k0 + 2 * GPU_HIST_POINTS) % GPU_HIST_POINTS] > from)
		k0++;
	for (int k = k0 - 1; k >= 0; k--) {
		int i = (h->head - 1 - k + 2 * GPU_HIST_POINTS) % GPU_HIST_POINTS;
		if (h->t[i] > to_ns)
			continue;
		int slot = (int)((double)(h->t[i] - from) / (double)span_ns * (double)n);
		if (slot >= (int)n)
			slot = (int)n - 1;
		if (prev_slot >= 0 && !isnan(prev_v) && h->t[i] - prev_t <= hold)
			for (int j = prev_slot + 1; j < slot; j++)
				out[j] = prev_v;
		double v = h->v[m][gpu][i];
		if (!isnan(v)) {
			out[slot] = v;
			got++;
		}
		prev_slot = slot;
		prev_t = h->t[i];
		prev_v = v;
	}
	return got;
}
