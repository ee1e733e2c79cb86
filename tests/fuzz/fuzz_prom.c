/* Fuzz target for the Prometheus / OpenMetrics parser: strict, lenient and
 * OpenMetrics parses of arbitrary bytes, the helpers on top of them, and a
 * check that every pointer handed to the callback stays inside the input. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct span {
	const char *lo, *hi;
	int n;
};

static void require(int ok)
{
	if (!ok)
		abort();
}

static int touch(void *ud, const struct prom_sample *s)
{
	struct span *sp = ud;
	char tmp[8];

	require(s->name >= sp->lo && s->name + s->name_len <= sp->hi && s->name_len > 0);
	require(s->family >= sp->lo && s->family + s->family_len <= sp->hi && s->family_len <= s->name_len);
	require(s->nlabels <= PROM_MAX_LABELS && s->line >= 1);
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct prom_label *l = &s->labels[i];
		require(l->name >= sp->lo && l->name + l->name_len <= sp->hi);
		require(l->value >= sp->lo && l->value + l->value_len <= sp->hi);
		/* Small buffer on purpose: exercises truncation. */
		prom_label_unescape(l->value, l->value_len, tmp, sizeof tmp);
		(void)prom_label_value_eq(l, "0");
	}
	(void)prom_sample_label(s, "le");
	(void)prom_type_name(s->type);
	sp->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy: the parser must never need a terminator. */
	char *text = malloc(size ? size : 1);
	struct prom_error es, el;
	struct span sp;
	struct prom_hist h, prev, d;
	double v;
	int rs, rl;

	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	sp.lo = text;
	sp.hi = text + size;

	sp.n = 0;
	rs = prom_parse(text, size, 0, touch, &sp, &es);
	require(rs == -1 || rs == sp.n);
	sp.n = 0;
	rl = prom_parse(text, size, PROM_LENIENT, touch, &sp, &el);
	require(rl == sp.n);
	/* Strict success means lenient saw the same, with nothing skipped. */
	require(rs < 0 ? el.nbad > 0 : (rl == rs && el.nbad == 0));
	sp.n = 0;
	(void)prom_parse(text, size, PROM_OPENMETRICS, touch, &sp, NULL);
	(void)prom_parse(text, size, PROM_OPENMETRICS | PROM_LENIENT, NULL, NULL, &el);

	(void)prom_sum(text, size, "vllm:num_requests_running", NULL, &v);
	(void)prom_sum(text, size, "a", "le=1,b=\"x,y\"", &v);
	if (prom_hist_collect(text, size, "vllm:time_to_first_token_seconds", "engine=0", &prev) != 0)
		memset(&prev, 0, sizeof prev);
	if (prom_hist_collect(text, size, "a", NULL, &h) == 0) {
		require(h.n >= 1 && h.n <= PROM_HIST_MAX && isinf(h.le[h.n - 1]));
		prom_hist_delta(&h, &prev, &d);
		(void)prom_hist_quantile(&d, 0.5);
		(void)prom_hist_quantile(&h, 0.99);
	}
	if (size)
		(void)prom_parse_float(text, size < 64 ? size : 64, &v);
	free(text);
	return 0;
}
