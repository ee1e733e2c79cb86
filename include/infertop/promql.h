#ifndef INFERTOP_PROMQL_H
#define INFERTOP_PROMQL_H

/* Server replicas read through Prometheus's HTTP API (--metrics-prometheus
 * URL --metrics-selector '{...}'): the selector parsed and checked, the
 * one instant query built from it, and the answer cut into one Prometheus
 * text exposition per replica (its `instance` label), which the profile
 * tracker then reads as if it were that replica's own /metrics. Pure: no
 * I/O, no clock; unit-tested (tests/test_promql.c) and fuzzed. */

#include <stdbool.h>
#include <stddef.h>

#define PROMQL_MAX_MATCHERS 16
#define PROMQL_NAME_MAX 128
#define PROMQL_VALUE_MAX 256

struct promql_matcher {
	char name[PROMQL_NAME_MAX];
	char op[3];			/* "=", "!=", "=~" or "!~" */
	char value[PROMQL_VALUE_MAX];	/* unescaped */
};

struct promql_selector {
	int n;
	struct promql_matcher m[PROMQL_MAX_MATCHERS];
};

/* A PromQL label selector: `{}` or `{name op "value", ...}` (values in
 * double or single quotes with the \\ \" \' \n \t escapes; a trailing
 * comma allowed; spaces around anything). __name__ is refused: the names
 * come from the server profile. NULL or "" is `{}` (every series). 0, or
 * -1 with a message in err that says the expected form. */
int promql_selector_parse(const char *text, struct promql_selector *out, char *err, size_t errcap);

/* `{__name__=~"a|b|...",<the selector's matchers>}` into out. 0, or -1
 * when it does not fit. */
int promql_query_build(const struct promql_selector *sel, const char *const *names, size_t nnames, char *out,
		       size_t cap);

/* One replica's series as Prometheus text, `name{labels} value` a line
 * (labels without __name__), from an instant vector. */
struct promql_group {
	char instance[PROMQL_VALUE_MAX];	/* its instance label ("" when none) */
	char *text;
	size_t len, cap;
	int nseries;
};

struct promql_split {
	int n;
	struct promql_group *g;		/* n of them, by first appearance */
	int dropped;			/* series of groups beyond maxgroups */
	int skipped;			/* series with bad names or values */
};

/* Reads an /api/v1/query answer (len bytes, no terminator needed):
 * {"status":"success","data":{"resultType":"vector","result":[...]}}.
 * Groups its series by instance, at most maxgroups (the other groups'
 * series counted in dropped). 0 with out filled (free with promql_split_free), or -1 with a
 * message in err: Prometheus's own error ("Prometheus: bad_data: ..."),
 * not JSON, not a vector, or no series at all. */
int promql_vector_split(const char *body, size_t len, int maxgroups, struct promql_split *out, char *err,
			size_t errcap);
void promql_split_free(struct promql_split *s);

#endif
