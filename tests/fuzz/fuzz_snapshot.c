/* snapshot_parse() on arbitrary bytes (saved files are user input to
 * report, merge and compare): it must never crash; whatever it accepts
 * must write back (snapshot_to_json) as a document that parses again to
 * the very same text, and must merge, print and render as HTML. */
#include "config.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/hist.h"
#include "infertop/result.h"
#include "infertop/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *print_of(const struct snapshot *s)
{
	cJSON *j = snapshot_to_json(s);
	char *t = j ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot a, b, m;
	char err[256];
	if (snapshot_parse(&a, (const char *)data, size, err, sizeof err) != 0)
		return 0;
	char *t1 = print_of(&a);
	if (!t1)
		abort();
	if (snapshot_parse(&b, t1, strlen(t1), err, sizeof err) != 0)
		abort();
	char *t2 = print_of(&b);
	if (!t2 || strcmp(t1, t2) != 0)
		abort();
	const struct snapshot *both[] = {&a, &b};
	if (snapshot_merge(&m, both, 2, err, sizeof err) != 0)
		abort();
	for (int k = 0; k < STAT_NMETRICS; k++)
		if (hist_count(m.run[k]) != 2 * hist_count(a.run[k]))
			abort();
	/* The cache's and sessions' histograms too (absent: no sample). */
	for (int x = 0; x < XH_N; x++) {
		const struct hist *ha = snapshot_xhist(&a, (enum stats_xhist)x);
		const struct hist *hm = snapshot_xhist(&m, (enum stats_xhist)x);
		if ((ha ? 2 * hist_count(ha) : 0) != (hm ? hist_count(hm) : 0))
			abort();
	}
	if (m.sessions_done != 2 * a.sessions_done || m.run_c.prompt_cached != 2 * a.run_c.prompt_cached)
		abort();
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		snapshot_print_summary(null, &m);
		if (result_html_report(null, "fuzz", &a) != 0)
			abort();
		fclose(null);
	}
	snapshot_release(&m);
	snapshot_release(&b);
	snapshot_release(&a);
	free(t1);
	free(t2);
	return 0;
}
