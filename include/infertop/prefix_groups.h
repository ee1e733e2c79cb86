#ifndef INFERTOP_PREFIX_GROUPS_H
#define INFERTOP_PREFIX_GROUPS_H

/* --prefix-groups G,PER_GROUP,SYSTEM_TOK,QUESTION_TOK: the shape of
 * inference-perf's shared_prefix data. G groups, each with a system prompt
 * of its own (SYSTEM_TOK tokens, the same bytes on every request of the
 * group, different between groups), and PER_GROUP questions per group
 * (QUESTION_TOK tokens each, all different). A prefix cache then finds
 * exactly the group's system prompt on every request of a group but its
 * first, and nothing of another group's.
 *
 * Order: round robin over the G x PER_GROUP (group, question) pairs,
 * groups interleaved: request k (from 0) is pair k mod (G x PER_GROUP),
 * group (pair mod G), question (pair / G): every pair once before any
 * repeats, consecutive requests in different groups. The texts are the
 * same on every run and on every generator of a fleet, whatever its
 * --seed (infertop fleet --start gives each generator a seed of its own,
 * and a group's prefix must be one). With --slice I/N, slice I's k-th
 * request is pair (k x N + I): the fleet together walks the pairs as one
 * generator would.
 *
 * Bodies: the chat API sends the system prompt as a "system" message and
 * the question as the "user" message; completions send the two joined by
 * a blank line. Lengths follow the dataset's calibration (dataset.h): the
 * system text is SYSTEM_TOK tokens as the server counts them, and the
 * question QUESTION_TOK with what the server adds to every prompt (chat
 * template, BOS) counted in it, so a request is SYSTEM_TOK + QUESTION_TOK
 * prompt tokens. max_tokens is --output-tokens.
 *
 * Memory: none per group or question: each text is drawn from a stream
 * seeded by its (group, question) alone, again per request. */

#include <stddef.h>
#include <stdint.h>

#define PREFIX_GROUPS_MAX 1000000L      /* groups, and questions per group */
#define PREFIX_GROUPS_MAX_TOKENS 10000000L  /* the length options' ceiling */

struct prefix_groups_spec {
	long groups, per_group, system_tokens, question_tokens;
};

/* "G,PER_GROUP,SYSTEM_TOK,QUESTION_TOK", whole numbers >= 1 (G and
 * PER_GROUP at most PREFIX_GROUPS_MAX, the lengths at most
 * PREFIX_GROUPS_MAX_TOKENS). 0, or -1 with what is wrong, naming the
 * field, in err. */
int prefix_groups_parse(const char *s, struct prefix_groups_spec *out, char *err, size_t errcap);

struct prefix_groups;

/* For --slice I/N (count 0: none). NULL on out of memory. */
struct prefix_groups *prefix_groups_new(const struct prefix_groups_spec *spec, long slice_index, long slice_count);
void prefix_groups_free(struct prefix_groups *pg);
const struct prefix_groups_spec *prefix_groups_spec(const struct prefix_groups *pg);

/* The next request's pair, and the seeds of its two texts' streams: the
 * system prompt's depends on the group alone, the question's on the group
 * and the question (not on --seed: see the top). */
struct prefix_groups_pick {
	long group, question;
	uint64_t system_seed, question_seed;
};
void prefix_groups_next(struct prefix_groups *pg, struct prefix_groups_pick *out);

/* The chat form's "messages" array: the system prompt sys[0..sl) as a
 * "system" message, the question q[0..ql) as the "user" one. A
 * NUL-terminated JSON array in a buffer of pg's, valid until the next
 * call; *len its length. NULL on out of memory. */
const char *prefix_groups_messages(struct prefix_groups *pg, const char *sys, size_t sl, const char *q, size_t ql,
				   size_t *len);

/* "prefix groups: 8 x 4, system 512 tok, question 64 tok" into buf. */
void prefix_groups_describe(const struct prefix_groups *pg, char *buf, size_t cap);

#endif
