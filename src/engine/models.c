#include "config.h"

#include "infertop/plan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/units.h"

/* Copies s without leading and trailing blanks; NULL on OOM. */
static char *trimmed(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	char *t = malloc(n + 1);
	if (t) {
		memcpy(t, s, n);
		t[n] = '\0';
	}
	return t;
}

/* Splits a comma list into trimmed items; returns the count, or -1 on OOM
 * or more than max items. Items are malloc'd into v. */
static int split_list(const char *s, char **v, int max)
{
	int n = 0;
	for (const char *p = s;; n++) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (n >= max)
			goto fail;
		if (!(v[n] = trimmed(p, len)))
			goto fail;
		if (!c)
			return n + 1;
		p = c + 1;
	}
fail:
	for (int i = 0; i < n; i++)
		free(v[i]);
	return -1;
}

void models_free(struct models *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->m[i].name);
		hist_free(m->m[i].ttft);
		hist_free(m->m[i].tpot);
		hist_free(m->m[i].e2e);
	}
	free(m);
}

static int parse_split(struct models *m, const char *split, char *err, size_t cap)
{
	char *w[MODELS_MAX + 1];
	int n = split_list(split, w, MODELS_MAX + 1);
	if (n < 0) {
		snprintf(err, cap, "--traffic-split: more than %d values (or out of memory)", MODELS_MAX);
		return -1;
	}
	int rc = -1;
	if ((size_t)n != m->n) {
		snprintf(err, cap, "--traffic-split: %d value%s for %zu model%s; give one share per model", n,
			 n == 1 ? "" : "s", m->n, m->n == 1 ? "" : "s");
		goto out;
	}
	double sum = 0;
	for (int i = 0; i < n; i++) {
		double d;
		if (units_parse_double(w[i], &d) != 0 || d < 0) {
			snprintf(err, cap, "--traffic-split: \"%s\" is not a share >= 0 (e.g. 0.9,0.1)", w[i]);
			goto out;
		}
		m->m[i].share = d;
		sum += d;
	}
	if (!(sum > 0)) {
		snprintf(err, cap, "--traffic-split: the shares add up to 0; at least one must be > 0");
		goto out;
	}
	for (size_t i = 0; i < m->n; i++)
		m->m[i].share /= sum;
	rc = 0;
out:
	for (int i = 0; i < n; i++)
		free(w[i]);
	return rc;
}

int models_new(const char *models, const char *split, uint64_t seed, struct models **out, char *err, size_t cap)
{
	*out = NULL;
	if (!models) {
		if (split) {
			snprintf(err, cap, "--traffic-split needs --models");
			return -1;
		}
		return 0;
	}
	struct models *m = calloc(1, sizeof *m);
	char *names[MODELS_MAX + 1];
	int n = m ? split_list(models, names, MODELS_MAX + 1) : -1;
	if (n < 0) {
		if (m)
			snprintf(err, cap, "--models: more than %d models (or out of memory)", MODELS_MAX);
		else
			snprintf(err, cap, "out of memory");
		free(m);
		return -1;
	}
	/* The names move into m as they are checked, so models_free cleans
	 * up whatever was taken; the rest are freed here. */
	int taken = 0;
	for (; taken < n; taken++) {
		struct model_stats *ms = &m->m[taken];
		ms->name = names[taken];
		m->n = (size_t)taken + 1;
		if (!*ms->name) {
			snprintf(err, cap, "--models: model %d has an empty name", taken + 1);
			goto fail;
		}
		for (int j = 0; j < taken; j++) {
			if (strcmp(m->m[j].name, ms->name) == 0) {
				snprintf(err, cap, "--models: \"%s\" is listed twice", ms->name);
				goto fail;
			}
		}
		ms->ttft = hist_new();
		ms->tpot = hist_new();
		ms->e2e = hist_new();
		if (!ms->ttft || !ms->tpot || !ms->e2e) {
			snprintf(err, cap, "out of memory");
			goto fail;
		}
		ms->share = 1.0 / n;
	}
	if (split && parse_split(m, split, err, cap) != 0)
		goto fail;
	double c = 0;
	for (size_t i = 0; i < m->n; i++) {
		c += m->m[i].share;
		m->cum[i] = c;
	}
	/* Rounding must not leave the top of the last share uncovered. */
	for (size_t i = m->n; i-- > 0;) {
		if (m->m[i].share > 0) {
			m->cum[i] = 1.0;
			break;
		}
	}
	rng_seed(&m->rng, seed ^ 0x6d6f64656c73ULL);
	*out = m;
	return 0;
fail:
	for (int i = taken + 1; i < n; i++)
		free(names[i]);
	models_free(m);
	return -1;
}

size_t models_pick(struct models *m)
{
	/* u in (0, 1]: the first cumulative share >= u belongs to a model
	 * with a share > 0, so a zero share is never picked. */
	double u = rng_unit(&m->rng);
	size_t i = 0;
	while (i + 1 < m->n && m->cum[i] < u)
		i++;
	if (!m->frozen)
		m->m[i].picked++;
	return i;
}

static inline int64_t ns_to_us(int64_t ns)
{
	return ns < 0 ? 0 : (ns + 500) / 1000;
}

void models_record(struct models *m, size_t idx, const struct req_result *r, const struct slo *slo,
		   unsigned slo_bits)
{
	if (!m || idx >= m->n || m->frozen)
		return;
	struct model_stats *ms = &m->m[idx];
	if (r->incomplete)   /* cut by the run's end: neither done nor failed */
		return;
	if (slo && slo_active(slo))
		slo_counts_add(slo, &ms->slo, slo_bits);
	if (!r->ok) {
		ms->failed++;
		return;
	}
	ms->completed++;
	ms->output_tokens += r->output_tokens > 0 ? (uint64_t)r->output_tokens : 0;
	ms->input_tokens += r->prompt_tokens > 0 ? (uint64_t)r->prompt_tokens : 0;
	hist_record(ms->ttft, ns_to_us(r->ttft_ns));
	hist_record(ms->e2e, ns_to_us(r->e2e_ns));
	if (r->output_tokens > 1)
		hist_record(ms->tpot, ns_to_us((r->e2e_ns - r->ttft_ns) / (r->output_tokens - 1)));
}

void models_reset(struct models *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		struct model_stats *ms = &m->m[i];
		ms->picked = ms->completed = ms->failed = 0;
		ms->input_tokens = ms->output_tokens = 0;
		memset(&ms->slo, 0, sizeof ms->slo);
		hist_reset(ms->ttft);
		hist_reset(ms->tpot);
		hist_reset(ms->e2e);
	}
	m->frozen = false;
}

void models_freeze(struct models *m)
{
	if (m)
		m->frozen = true;
}
