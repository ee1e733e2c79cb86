#ifndef INFERTOP_FAILIF_H
#define INFERTOP_FAILIF_H

/*
 * `infertop compare --fail-if EXPR`: conditions on how B changed from A,
 * for CI gates. EXPR is conditions joined by ',':
 *
 *   KEY OP VALUE[%]     p99_ttft_ms>+10%   output_throughput<-5%
 *                       failed>0           error_share>=0.01
 *
 * KEY is a compare row's key (vLLM's names: mean_ttft_ms, median_itl_ms,
 * p99_e2el_ms, output_throughput, ...); OP is >, <, >= or <=; with '%'
 * VALUE is the change in percent of |A|, without it the change B - A in
 * the row's unit. Parsing is pure: names are checked against the rows by
 * the caller.
 */

#include <stdbool.h>
#include <stddef.h>

#define FAILIF_MAX 16

enum failif_op { FAILIF_GT, FAILIF_LT, FAILIF_GE, FAILIF_LE };

struct failif_cond {
	char key[48];
	enum failif_op op;
	double value;
	bool pct;
	char text[96]; /* the condition as written, trimmed (for messages) */
};

struct failif {
	int n;
	struct failif_cond c[FAILIF_MAX];
};

/* 0, or -1 with a message naming the bad condition in err. */
int failif_parse(const char *expr, struct failif *f, char *err, size_t errcap);
/* Whether the change (percent or absolute, as the condition says) makes
 * the condition hold; NaN never does. */
bool failif_holds(const struct failif_cond *c, double change);
const char *failif_op_name(enum failif_op op);

#endif
