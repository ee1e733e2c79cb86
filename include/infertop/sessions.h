#ifndef INFERTOP_SESSIONS_H
#define INFERTOP_SESSIONS_H

/* Sessions (--sessions): a session is an ordered list of turns; each turn
 * is sent with the whole conversation so far (system prompt, earlier user
 * turns and answers), after a think time measured from the end of the
 * turn before. The load counts sessions: -c N is N users each running one
 * session at a time, -r R starts R sessions a second (--max-concurrency
 * caps the live ones, thinking included), -n N ends the run after N
 * sessions were started.
 *
 * Sources. Synthetic, "turns=N,think=DUR,system=TOK,user=LEN": N turns of
 * LEN tokens (--input-tokens' forms; default --input-tokens) after a
 * system prompt of TOK tokens, which is the start of one text shared by
 * every session (a deployment's system prompt: a prefix cache sees it
 * shared). From a file, "file[,think=DUR]" with --dataset sharegpt:FILE
 * (every conversation is a session of all its human turns) or
 * --dataset jsonl:FILE (records with a "messages" array, split at its
 * user messages; system messages before the first lead; a "prompt"
 * record is a session of one turn). A conversation without a user turn
 * is refused, FILE:LINE.
 *
 * Think times (DUR): a duration ("2s", "500ms"; a bare number is
 * seconds), MIN:MAX (uniform), exp:MEAN (exponential) or normal:MEAN,SD
 * (cut at 0); default 0.
 *
 * Answers (--session-answers): "actual" (default) resends the model's own
 * answer (request.h: request_answer); "recorded" resends the file's
 * answer (the messages between a user turn and the next), or for
 * synthetic sessions synthetic text of the turn's output length.
 *
 * Ends. A failed turn ends its session (failed); a context-length 400
 * (ERR_CONTEXT) ends it at the context limit. When the run stops (-d,
 * Ctrl-C, a plan's end), thinking sessions end at once and a session
 * whose turn is in flight ends with that turn: incomplete, not failed (a
 * turn aborted at the end of the grace period is an aborted request).
 * While the load is paused no session starts and none sends its next
 * turn; turns in flight finish. A
 * conversation past SESSIONS_CONV_MAX bytes ends its session at the
 * context limit too: no server takes that much.
 *
 * Memory: a live session holds its conversation as it will be sent (one
 * buffer), the answer streaming in, and for a file session the parsed
 * conversation; nothing per token. */

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/dist.h"
#include "infertop/openai.h"
#include "infertop/request.h"
#include "infertop/rng.h"
#include "infertop/stats.h"

struct config;
struct dataset;

#define SESSIONS_MAX_TURNS 10000L
#define SESSIONS_MAX_THINK_NS (86400LL * 1000000000LL)   /* a day */
/* A conversation's bound: a 2M-token context is about 12 MB of escaped
 * text, so this is past every server's context, and bounds what one
 * session can hold whatever the server answers. */
#define SESSIONS_CONV_MAX ((size_t)32 << 20)

enum sessions_think_kind { THINK_FIXED, THINK_UNIFORM, THINK_EXP, THINK_NORMAL };

struct sessions_think {
	enum sessions_think_kind kind;
	int64_t a_ns, b_ns;    /* fixed: a; uniform [a, b]; exp: mean a; normal: mean a, sd b */
};

struct sessions_spec {
	bool file;              /* turns from the --dataset file */
	long turns;             /* synthetic: turns per session */
	struct sessions_think think;
	bool have_system;
	struct dist system;     /* synthetic: system prompt tokens */
	bool have_user;
	struct dist user;       /* synthetic: tokens of each user turn; else --input-tokens */
};

/* SPEC as above. 0, or -1 with what is wrong in err. */
int sessions_spec_parse(const char *spec, struct sessions_spec *out, char *err, size_t errcap);
/* A duration distribution: "2s", "1s:3s", "exp:2s", "normal:2s,500ms". */
int sessions_think_parse(const char *s, struct sessions_think *out);
int64_t sessions_think_sample(const struct sessions_think *t, struct rng *r);
/* "2s", "exp:2s", ... for descriptions. */
const char *sessions_think_text(const struct sessions_think *t, char *buf, size_t cap);
/* "actual" or "recorded" (NULL: actual); 0, or -1. */
int sessions_answers_parse(const char *s, bool *recorded);
/* --sessions against the rest of cfg (the dataset kind, options that do
 * not go with sessions). 0, or -1 with a message in err. */
int sessions_config_check(const struct config *cfg, char *err, size_t errcap);

/* ---- The runner, on the engine's loop. ---- */

struct sessions;
struct session;

/* The engine's side. send: start one turn's request (owner s, its turn
 * from 1, the session's answer buffer, body ownership passed); 0, or -1
 * (body freed). ended: a session ended outside an engine call (its think
 * timer fired and the next turn could not start): the load may start
 * another and the run may be over. */
struct sessions_ops {
	int (*send)(void *ud, struct session *s, const char *model, char *body, size_t len, long input_tokens,
		    uint32_t turn, struct request_answer *answer, int64_t t_intended);
	void (*ended)(void *ud);
	/* Whether the load is paused: a session whose think time ends then
	 * waits (NULL: never) until sessions_release(). */
	bool (*held)(void *ud);
	void *ud;
};

/* NULL with a message in err when cfg->sessions does not parse or does
 * not fit the dataset. base (the engine's request options) is read at
 * each turn, d is the run's dataset (lengths, calibration, records). */
struct sessions *sessions_new(const struct config *cfg, struct dataset *d, const struct oai_request_opts *base,
			      struct ev_loop *loop, struct stats *stats, const struct sessions_ops *ops, char *err,
			      size_t errcap);
void sessions_free(struct sessions *ss);

/* A new session on model (index model_index of a --models mix, owned by
 * the run), its first turn sent now (meant at t_intended). 0, or -1 when
 * it could not start (nothing is left of it). */
int sessions_start(struct sessions *ss, const char *model, int model_index, int64_t t_intended);
/* Its turn's request ended (res): the answer is kept and the next turn
 * waits its think time, or the session ends. Call after the request is
 * released: the next turn may reuse it at once. */
void sessions_turn_done(struct sessions *ss, struct session *s, const struct req_result *res, int64_t now);
/* The run stops: thinking sessions end now (incomplete), sessions with a
 * turn in flight end with it; nothing more starts. ops.ended is not
 * called from here. */
void sessions_stop(struct sessions *ss);

/* The load is no longer paused: the sessions that finished thinking
 * meanwhile send their next turns now, each meant for when its think
 * time ended (the wait shows as queue time). */
void sessions_release(struct sessions *ss);

/* The --models index of a session's model. */
int sessions_model_index(const struct session *s);
/* Sessions started and not ended (thinking ones included). */
uint64_t sessions_live(const struct sessions *ss);

struct sessions_counts {
	uint64_t started;
	uint64_t done;          /* every turn given succeeded, all turns run */
	uint64_t failed;        /* a turn failed */
	uint64_t context;       /* ended by the context limit (of which too_long) */
	uint64_t incomplete;    /* ended by the run's end */
	uint64_t too_long;      /* the conversation passed SESSIONS_CONV_MAX */
};
void sessions_get_counts(const struct sessions *ss, struct sessions_counts *out);

/* One line for the banner and results, e.g. "sessions: 4 turns, think
 * 2s, system 256 tok, user 128 tok, out 128 tok, actual answers". */
const char *sessions_describe(const struct sessions *ss);

#endif
