/* hist_decode() on arbitrary bytes: it must never crash or read past the
 * string, must leave the histogram empty on failure, and anything it
 * accepts must be canonical (re-encode to the same string) and give sane
 * percentiles. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/hist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* One histogram for all runs: allocating 184 KiB per input would
	 * dominate, and reuse also checks that decode resets properly. */
	static struct hist *h;
	if (!h && !(h = hist_new()))
		return 0;
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (hist_decode(h, s) != 0) {
		if (hist_count(h) != 0 || hist_min(h) != 0 || hist_max(h) != 0)
			abort();
		free(s);
		return 0;
	}
	char *again = hist_encode(h);
	if (again && strcmp(again, s) != 0)
		abort();
	free(again);
	int64_t lo = hist_min(h), hi = hist_max(h), prev = lo;
	if (lo > hi)
		abort();
	for (int p = 0; p <= 100; p += 5) {
		int64_t v = hist_percentile(h, p);
		if (v < prev || v > hi)
			abort();
		prev = v;
	}
	(void)hist_mean(h);
	(void)hist_stddev(h);
	free(s);
	return 0;
}
