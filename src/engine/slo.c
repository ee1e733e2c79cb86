#include "config.h"

#include "infertop/slo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/units.h"

static const char *const slo_names[SLO_N] = {
	[SLO_TTFT] = "ttft",
	[SLO_TPOT] = "tpot",
	[SLO_E2E] = "e2e",
};

const char *slo_name(enum slo_kind k)
{
	return (unsigned)k < SLO_N ? slo_names[k] : "?";
}

static int slo_key(const char *k)
{
	if (strcmp(k, "ttft") == 0)
		return SLO_TTFT;
	if (strcmp(k, "tpot") == 0)
		return SLO_TPOT;
	/* vLLM calls it e2el. */
	if (strcmp(k, "e2e") == 0 || strcmp(k, "e2el") == 0)
		return SLO_E2E;
	return -1;
}

int slo_parse(const char *spec, struct slo *out, char *err, size_t cap)
{
	memset(out, 0, sizeof *out);
	if (!spec || !*spec)
		return 0;
	char *buf = strdup(spec);
	if (!buf) {
		snprintf(err, cap, "--slo: out of memory");
		return -1;
	}
	int rc = -1, items = 0;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		char *sep = strpbrk(tok, "=:");
		if (!sep) {
			snprintf(err, cap, "--slo: \"%s\": expected KEY=LIMIT, e.g. ttft=500ms", tok);
			goto out;
		}
		*sep = '\0';
		int k = slo_key(tok);
		if (k < 0) {
			snprintf(err, cap, "--slo: unknown SLO \"%s\" (expected ttft, tpot or e2e)", tok);
			goto out;
		}
		if (out->set[k]) {
			snprintf(err, cap, "--slo: %s given twice", slo_names[k]);
			goto out;
		}
		int64_t ns;
		if (units_parse_duration(sep + 1, CLOCK_NS_PER_MS, &ns) != 0 || ns <= 0) {
			snprintf(err, cap, "--slo: %s=\"%s\": expected a time > 0 such as 500ms or 2s "
				 "(a bare number is milliseconds)", slo_names[k], sep + 1);
			goto out;
		}
		out->set[k] = true;
		out->limit_ns[k] = ns;
		items++;
	}
	if (items == 0) {
		snprintf(err, cap, "--slo: no SLO given (e.g. ttft=500ms,tpot=50ms,e2e=10s)");
		goto out;
	}
	rc = 0;
out:
	free(buf);
	if (rc != 0)
		memset(out, 0, sizeof *out);
	return rc;
}

bool slo_active(const struct slo *s)
{
	if (!s)
		return false;
	for (int k = 0; k < SLO_N; k++)
		if (s->set[k])
			return true;
	return false;
}

void slo_start(struct slo *s, int64_t window_ns, int64_t now_ns)
{
	s->slice_ns = window_ns / STATS_SLICES;
	if (s->slice_ns <= 0)
		s->slice_ns = 1;
	slo_reset(s, now_ns);
}

unsigned slo_check(const struct slo *s, const struct req_result *r)
{
	if (!r->ok)
		return 0;
	int64_t v[SLO_N];
	v[SLO_TTFT] = r->ttft_ns;
	v[SLO_E2E] = r->e2e_ns;
	v[SLO_TPOT] = r->output_tokens > 1 ? (r->e2e_ns - r->ttft_ns) / (r->output_tokens - 1) : 0;
	unsigned bits = 0;
	bool all = true;
	for (int k = 0; k < SLO_N; k++) {
		if (!s->set[k])
			continue;
		if (v[k] >= 0 && v[k] <= s->limit_ns[k])
			bits |= 1u << k;
		else
			all = false;
	}
	if (all)
		bits |= SLO_ALL_MET;
	return bits;
}

void slo_counts_add(const struct slo *s, struct slo_counts *c, unsigned bits)
{
	c->ended++;
	if (bits & SLO_ALL_MET)
		c->met_all++;
	for (int k = 0; k < SLO_N; k++)
		if (s->set[k] && (bits & (1u << k)))
			c->met[k]++;
}

void slo_counts_sub(struct slo_counts *a, const struct slo_counts *b)
{
	a->ended -= b->ended;
	a->met_all -= b->met_all;
	for (int k = 0; k < SLO_N; k++)
		a->met[k] -= b->met[k];
}

unsigned slo_record(struct slo *s, const struct req_result *r)
{
	unsigned bits = slo_check(s, r);
	if (!s->frozen)
		slo_counts_add(s, &s->run, bits);
	slo_counts_add(s, &s->win, bits);
	slo_counts_add(s, &s->slice[s->cur], bits);
	return bits;
}

void slo_tick(struct slo *s, int64_t now_ns)
{
	if (s->slice_ns <= 0)
		return;
	/* After a long stall, skip whole windows (as stats_tick does). */
	if (now_ns - s->slice_start_ns > (int64_t)STATS_SLICES * 2 * s->slice_ns) {
		int64_t behind = (now_ns - s->slice_start_ns) / s->slice_ns;
		s->slice_start_ns += (behind - STATS_SLICES) * s->slice_ns;
	}
	while (now_ns - s->slice_start_ns >= s->slice_ns) {
		s->cur = (s->cur + 1) % STATS_SLICES;
		slo_counts_sub(&s->win, &s->slice[s->cur]);
		memset(&s->slice[s->cur], 0, sizeof s->slice[s->cur]);
		if (s->slices_used < STATS_SLICES)
			s->slices_used++;
		s->slice_start_ns += s->slice_ns;
	}
}

void slo_window_reset(struct slo *s, int64_t now_ns)
{
	memset(&s->win, 0, sizeof s->win);
	memset(s->slice, 0, sizeof s->slice);
	s->slice_start_ns = now_ns;
	s->cur = 0;
	s->slices_used = 1;
}

void slo_reset(struct slo *s, int64_t now_ns)
{
	memset(&s->run, 0, sizeof s->run);
	s->frozen = false;
	s->start_ns = now_ns;
	slo_window_reset(s, now_ns);
}

void slo_freeze(struct slo *s)
{
	s->frozen = true;
}

double slo_window_seconds(const struct slo *s, int64_t now_ns)
{
	int64_t span = (int64_t)(s->slices_used - 1) * s->slice_ns + (now_ns - s->slice_start_ns);
	int64_t since_start = now_ns - s->start_ns;
	if (span > since_start)
		span = since_start;
	return span > 0 ? (double)span / 1e9 : 0.0;
}

double slo_share(const struct slo_counts *c, int k)
{
	if (!c->ended)
		return 0.0;
	uint64_t met = k >= 0 && k < SLO_N ? c->met[k] : c->met_all;
	return (double)met / (double)c->ended;
}

void slo_describe(const struct slo *s, char *buf, size_t cap)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int k = 0; k < SLO_N && off < cap; k++) {
		if (!s->set[k])
			continue;
		char d[32];
		units_format_duration(s->limit_ns[k], d, sizeof d);
		int n = snprintf(buf + off, cap - off, "%s%s<=%s", off ? " " : "", slo_names[k], d);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}
