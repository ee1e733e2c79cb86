#ifndef INFERTOP_DIST_H
#define INFERTOP_DIST_H

#include "infertop/rng.h"

/* Token-length distributions for --input-tokens / --output-tokens:
 * "128" fixed, "100:200" uniform on [100, 200], "normal:128,32" normal
 * with mean 128 and sd 32 (resampled outside [1, max]). */
enum dist_kind { DIST_FIXED, DIST_UNIFORM, DIST_NORMAL };

struct dist {
	enum dist_kind kind;
	double a, b;    /* fixed: a; uniform: [a, b]; normal: mean a, sd b */
	long max;       /* samples never exceed this */
};

/* 0, or -1 if s is not one of the forms above within [1, max]. */
int dist_parse(const char *s, long max, struct dist *out);
long dist_sample(const struct dist *d, struct rng *r);
double dist_mean(const struct dist *d);

#endif
