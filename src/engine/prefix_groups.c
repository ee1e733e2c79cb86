/* --prefix-groups: shared system prompts per group (prefix_groups.h).
 * The pairs' order, the texts' seeds and the chat messages; the texts
 * themselves and the bodies are the synthetic dataset's (dataset.c). */
#include "config.h"

#include "infertop/prefix_groups.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/errbuf.h"
#include "infertop/json_str.h"

/* The texts' streams: never the request's own generator, so the same
 * pair is the same bytes on every request; nor --seed, which infertop
 * fleet --start makes each generator's own: a group's system prompt is
 * the same bytes on every generator of a fleet, as a prefix cache shared
 * by their server must see it. */
#define PG_SYSTEM_SEED 0x70672d73797374ULL
#define PG_QUESTION_SEED 0x70672d7175657374ULL
#define GOLDEN 0x9E3779B97F4A7C15ULL

struct prefix_groups {
	struct prefix_groups_spec spec;
	long slice_index, slice_count;
	uint64_t next;          /* this generator's requests so far */
	char *msgs;             /* the chat messages, kept for the next request */
	size_t msgs_cap;
};

static const char *const field_name[4] = { "G", "PER_GROUP", "SYSTEM_TOK", "QUESTION_TOK" };

int prefix_groups_parse(const char *s, struct prefix_groups_spec *out, char *err, size_t errcap)
{
	long v[4];
	const char *p = s ? s : "";
	for (int k = 0; k < 4; k++) {
		long hi = k < 2 ? PREFIX_GROUPS_MAX : PREFIX_GROUPS_MAX_TOKENS;
		char *end = (char *)p;
		long l = 0;
		errno = 0;
		if (*p >= '0' && *p <= '9')
			l = strtol(p, &end, 10);
		if (end == p || errno || l < 1 || l > hi || (*end != ',' && *end != '\0'))
			return errbuf_set(err, errcap, "%s: expected a whole number from 1 to %ld "
				"(G,PER_GROUP,SYSTEM_TOK,QUESTION_TOK)", field_name[k], hi);
		if ((*end == '\0') != (k == 3))
			return errbuf_set(err, errcap, "expected four numbers G,PER_GROUP,SYSTEM_TOK,QUESTION_TOK, "
				"got %s", k < 3 ? "fewer" : "more");
		v[k] = l;
		p = end + 1;
	}
	*out = (struct prefix_groups_spec){ v[0], v[1], v[2], v[3] };
	return 0;
}

struct prefix_groups *prefix_groups_new(const struct prefix_groups_spec *spec, long slice_index, long slice_count)
{
	struct prefix_groups *pg = calloc(1, sizeof *pg);
	if (!pg)
		return NULL;
	pg->spec = *spec;
	pg->slice_index = slice_index;
	pg->slice_count = slice_count;
	return pg;
}

void prefix_groups_free(struct prefix_groups *pg)
{
	if (!pg)
		return;
	free(pg->msgs);
	free(pg);
}

const struct prefix_groups_spec *prefix_groups_spec(const struct prefix_groups *pg)
{
	return &pg->spec;
}

void prefix_groups_next(struct prefix_groups *pg, struct prefix_groups_pick *out)
{
	const struct prefix_groups_spec *sp = &pg->spec;
	uint64_t pairs = (uint64_t)sp->groups * (uint64_t)sp->per_group;
	uint64_t k = pg->next++;
	/* A slice's k-th request is the fleet's (k * N + I)-th. */
	if (pg->slice_count)
		k = k * (uint64_t)pg->slice_count + (uint64_t)pg->slice_index;
	uint64_t pair = k % pairs;
	uint64_t g = pair % (uint64_t)sp->groups, q = pair / (uint64_t)sp->groups;
	out->group = (long)g;
	out->question = (long)q;
	out->system_seed = PG_SYSTEM_SEED + g * GOLDEN;
	out->question_seed = PG_QUESTION_SEED + (g * (uint64_t)sp->per_group + q) * GOLDEN;
}

static int msgs_reserve(struct prefix_groups *pg, size_t need)
{
	if (need <= pg->msgs_cap)
		return 0;
	char *m = realloc(pg->msgs, need * 2);
	if (!m)
		return -1;
	pg->msgs = m;
	pg->msgs_cap = need * 2;
	return 0;
}

/* {"role":ROLE,"content":TEXT} at *n of pg->msgs, after a comma unless
 * it is the first. 0, or -1 when out of memory. */
static int put_message(struct prefix_groups *pg, size_t *n, const char *role, const char *text, size_t len)
{
	size_t tl = len;
	size_t esc = json_str_len(text, &tl, JSON_STR_CJSON);
	/* Room for this message, the closing ']' and the NUL. */
	if (msgs_reserve(pg, *n + esc + strlen(role) + 64) != 0)
		return -1;
	*n += (size_t)sprintf(pg->msgs + *n, "%s{\"role\":\"%s\",\"content\":\"", *n > 1 ? "," : "", role);
	char *e = json_str_put(pg->msgs + *n, text, tl, esc, JSON_STR_CJSON);
	*n = (size_t)(e - pg->msgs);
	*n += (size_t)sprintf(pg->msgs + *n, "\"}");
	return 0;
}

const char *prefix_groups_messages(struct prefix_groups *pg, const char *sys, size_t sl, const char *q, size_t ql,
				   size_t *len)
{
	size_t n = 0;
	if (msgs_reserve(pg, 2) != 0)
		return NULL;
	pg->msgs[n++] = '[';
	if (put_message(pg, &n, "system", sys, sl) != 0 || put_message(pg, &n, "user", q, ql) != 0)
		return NULL;
	pg->msgs[n++] = ']';
	pg->msgs[n] = '\0';
	*len = n;
	return pg->msgs;
}

void prefix_groups_describe(const struct prefix_groups *pg, char *buf, size_t cap)
{
	snprintf(buf, cap, "prefix groups: %ld x %ld, system %ld tok, question %ld tok", pg->spec.groups,
		 pg->spec.per_group, pg->spec.system_tokens, pg->spec.question_tokens);
}
