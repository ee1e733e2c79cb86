#include "config.h"

#include "infertop/dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/units.h"

static int parse_pos(const char *s, long max, double *out)
{
	long v;
	if (units_parse_long(s, 1, max, &v) != 0)
		return -1;
	*out = (double)v;
	return 0;
}

int dist_parse(const char *s, long max, struct dist *out)
{
	char buf[64];
	if (!s || strlen(s) >= sizeof buf)
		return -1;
	strcpy(buf, s);
	struct dist d = {.max = max};
	char *colon = strchr(buf, ':');
	if (!colon) {
		d.kind = DIST_FIXED;
		if (parse_pos(buf, max, &d.a) != 0)
			return -1;
	} else if (strncmp(buf, "normal:", 7) == 0) {
		char *comma = strchr(buf + 7, ',');
		if (!comma)
			return -1;
		*comma = '\0';
		d.kind = DIST_NORMAL;
		if (parse_pos(buf + 7, max, &d.a) != 0 || units_parse_double(comma + 1, &d.b) != 0 || d.b < 0)
			return -1;
	} else {
		*colon = '\0';
		d.kind = DIST_UNIFORM;
		if (parse_pos(buf, max, &d.a) != 0 || parse_pos(colon + 1, max, &d.b) != 0 || d.b < d.a)
			return -1;
	}
	*out = d;
	return 0;
}

/* Box-Muller; one of the pair is dropped: lengths are drawn per request,
 * not per token, so the cost does not matter. */
static double normal01(struct rng *r)
{
	double u1 = rng_unit(r), u2 = rng_unit(r);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

long dist_sample(const struct dist *d, struct rng *r)
{
	switch (d->kind) {
	case DIST_UNIFORM:
		return (long)d->a + (long)rng_below(r, (uint64_t)(d->b - d->a) + 1);
	case DIST_NORMAL:
		for (int i = 0; i < 64; i++) {
			long v = lround(d->a + d->b * normal01(r));
			if (v >= 1 && v <= d->max)
				return v;
		}
		return (long)d->a; /* a pathological sd: fall back to the mean */
	case DIST_FIXED:
	default:
		return (long)d->a;
	}
}

double dist_mean(const struct dist *d)
{
	return d->kind == DIST_UNIFORM ? (d->a + d->b) / 2.0 : d->a;
}
