#include "config.h"

/* The session runner (sessions.h): sessions live on the engine's loop,
 * each with its conversation in one buffer and, while it thinks, one
 * timer; the engine sends their turns (sessions_ops). */
#include "infertop/sessions.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/dataset.h"
#include "infertop/errbuf.h"
#include "infertop/json_str.h"
#include "infertop/options.h"

/* The system prompt's words come from a stream of their own, the same for
 * every session: a shorter one is the start of a longer one. */
#define SYSTEM_SEED 0x73797374656dULL
#define SESSIONS_SEED 0x73657373696f6eULL

struct session {
	struct sessions *ss;
	struct session *prev, *next;    /* live or spare list */
	ev_timer think;
	struct request_answer answer;   /* the turn in flight's, JSON-escaped */
	/* The conversation as it is sent: for chat "[" and the messages
	 * joined by ',' (the closing ']' added for each body), for
	 * completions the texts joined by blank lines. */
	char *conv;
	size_t conv_len, conv_cap;
	cJSON *script;                  /* a file session's conversation */
	const cJSON *cursor;            /* its next message */
	const cJSON *recorded;          /* the turn in flight's recorded answer: from here to cursor */
	const char *model;
	int model_index;
	uint32_t turn;                  /* turns sent */
	uint32_t turns;                 /* turns it has */
	uint32_t ok_turns;
	bool in_flight;
	bool parked;                    /* thought while the load was paused */
	long out_tokens;                /* max_tokens of the turn in flight */
	long file_max_tokens;           /* a JSONL record's max_tokens, 0: none */
	double tokens;                  /* of conv, estimated (calibration's slope) */
	int64_t t_first, t_end;
	int64_t t_next;                 /* when the next turn is due (end + think) */
	int64_t context_tokens;
};

struct sessions {
	const struct config *cfg;
	struct sessions_spec spec;
	bool recorded;
	struct dataset *d;
	const struct oai_request_opts *base;
	struct ev_loop *loop;
	struct stats *stats;
	struct sessions_ops ops;
	struct rng rng;
	struct session *live, *spare;
	uint64_t nlive;
	bool stopped;
	int calls;                      /* inside an engine call: ops.ended is not called */
	struct sessions_counts n;
	char *scratch;                  /* synthetic text, an answer read back */
	size_t scratch_cap;
	char *esc;                      /* text escaped for a chat message */
	size_t esc_cap;
	char desc[320];
};

static void list_push(struct session **head, struct session *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head)
		(*head)->prev = s;
	*head = s;
}

static void list_unlink(struct session **head, struct session *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
}

static int put(struct session *s, const char *p, size_t n)
{
	if (s->conv_len + n + 2 > SESSIONS_CONV_MAX)
		return -2;
	if (s->conv_len + n + 2 > s->conv_cap) {
		size_t cap = s->conv_cap ? s->conv_cap : 4096;
		while (cap < s->conv_len + n + 2)
			cap *= 2;
		char *q = realloc(s->conv, cap);
		if (!q)
			return -1;
		s->conv = q;
		s->conv_cap = cap;
	}
	memcpy(s->conv + s->conv_len, p, n);
	s->conv_len += n;
	s->conv[s->conv_len] = '\0';
	return 0;
}

static bool chat(const struct sessions *ss)
{
	return ss->cfg->api == OAI_CHAT;
}

/* One message: for chat {"role":R,"content":"TEXT"} after a ',' (text
 * escaped unless already), for completions TEXT after a blank line. */
static int put_message(struct sessions *ss, struct session *s, const char *role, const char *text, size_t n,
		       bool escaped)
{
	int rc;
	if (!chat(ss)) {
		if (s->conv_len && (rc = put(s, "\n\n", 2)) != 0)
			return rc;
		return put(s, text, n);
	}
	char head[64];
	int hl = snprintf(head, sizeof head, "%s{\"role\":\"%s\",\"content\":\"", s->conv_len > 1 ? "," : "", role);
	if ((rc = put(s, head, (size_t)hl)) != 0)
		return rc;
	if (escaped) {
		rc = put(s, text, n);
	} else {
		size_t len = n;
		size_t esc = json_str_len(text, &len, JSON_STR_CJSON);
		if (s->conv_len + esc + 2 > SESSIONS_CONV_MAX)
			return -2;
		/* Its own buffer: text is often the synthetic text in scratch. */
		if (esc + 1 > ss->esc_cap) {
			char *q = realloc(ss->esc, esc + 1);
			if (!q)
				return -1;
			ss->esc = q;
			ss->esc_cap = esc + 1;
		}
		json_str_put(ss->esc, text, len, esc, JSON_STR_CJSON);
		rc = put(s, ss->esc, esc);
	}
	return rc ? rc : put(s, "\"}", 2);
}

/* A file message as it is: printed by cJSON (chat), or its text. */
static int put_file_message(struct sessions *ss, struct session *s, const cJSON *m)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
	const char *text = cJSON_IsString(c) ? c->valuestring : "";
	if (!chat(ss))
		return put_message(ss, s, NULL, text, strlen(text), false);
	char *p = cJSON_PrintUnformatted(m);
	if (!p)
		return -1;
	int rc = s->conv_len > 1 ? put(s, ",", 1) : 0;
	rc = rc ? rc : put(s, p, strlen(p));
	free(p);
	return rc;
}

static bool is_role(const cJSON *m, const char *role)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
	return cJSON_IsString(r) && strcmp(r->valuestring, role) == 0;
}

static double text_tokens(const struct sessions *ss, const cJSON *m)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
	if (!cJSON_IsString(c))
		return 0;
	long chars = dataset_utf8_chars(c->valuestring, strlen(c->valuestring));
	return chars > 0 ? (double)chars * ss->d->slope : 0;
}

/* Synthetic text of `tokens` tokens (by calibration's slope) in scratch. */
static char *synthetic_text(struct sessions *ss, struct rng *r, long tokens, size_t *len, double *got)
{
	long units = lround((double)tokens / ss->d->slope);
	if (units < 1)
		units = 1;
	*len = 0;
	if (dataset_synthetic_units(r, units, &ss->scratch, len, &ss->scratch_cap) != 0)
		return NULL;
	*got = (double)units * ss->d->slope;
	return ss->scratch;
}

const char *sessions_describe(const struct sessions *ss)
{
	return ss->desc;
}

static void sessions_update_desc(struct sessions *ss)
{
	char think[64], sys[64] = "", user[64], out[64];
	sessions_think_text(&ss->spec.think, think, sizeof think);
	const char *answers = ss->recorded ? "recorded answers" : "actual answers";
	if (ss->spec.file) {
		snprintf(ss->desc, sizeof ss->desc, "sessions from %.160s (%zu conversations), think %s, %s",
			 ss->cfg->dataset, ss->d->nrecs, think, answers);
		return;
	}
	const struct dist *u = ss->spec.have_user ? &ss->spec.user : &ss->cfg->input_dist;
	if (u->kind == DIST_UNIFORM)
		snprintf(user, sizeof user, "%.0f:%.0f", u->a, u->b);
	else if (u->kind == DIST_NORMAL)
		snprintf(user, sizeof user, "normal:%.0f,%g", u->a, u->b);
	else
		snprintf(user, sizeof user, "%.0f", u->a);
	if (ss->spec.have_system)
		snprintf(sys, sizeof sys, ", system %.0f tok", dist_mean(&ss->spec.system));
	snprintf(out, sizeof out, "%.0f", dist_mean(&ss->cfg->output_dist));
	snprintf(ss->desc, sizeof ss->desc, "sessions: %ld turns, think %s%s, user %s tok, out %s tok, %s",
		 ss->spec.turns, think, sys, user, out, answers);
}

struct sessions *sessions_new(const struct config *cfg, struct dataset *d, const struct oai_request_opts *base,
			      struct ev_loop *loop, struct stats *stats, const struct sessions_ops *ops, char *err,
			      size_t errcap)
{
	if (sessions_config_check(cfg, err, errcap) != 0)
		return NULL;
	struct sessions *ss = calloc(1, sizeof *ss);
	if (!ss) {
		errbuf_set(err, errcap, "out of memory");
		return NULL;
	}
	ss->cfg = cfg;
	sessions_spec_parse(cfg->sessions, &ss->spec, err, errcap);
	sessions_answers_parse(cfg->session_answers, &ss->recorded);
	if (ss->spec.file && !d->sessions) {
		/* The dataset must have kept whole conversations. */
		errbuf_set(err, errcap, "--sessions file: the dataset was not read as conversations");
		free(ss);
		return NULL;
	}
	ss->d = d;
	ss->base = base;
	ss->loop = loop;
	ss->stats = stats;
	ss->ops = *ops;
	rng_seed(&ss->rng, cfg->seed ^ SESSIONS_SEED);
	sessions_update_desc(ss);
	return ss;
}

static void session_reset(struct session *s)
{
	cJSON_Delete(s->script);
	s->script = NULL;
	s->cursor = s->recorded = NULL;
	s->conv_len = 0;
	/* A long conversation's buffer is not kept for the next session. */
	if (s->conv_cap > ((size_t)1 << 20)) {
		free(s->conv);
		s->conv = NULL;
		s->conv_cap = 0;
	}
	if (s->answer.cap > ((size_t)1 << 20)) {
		free(s->answer.buf);
		s->answer.buf = NULL;
		s->answer.cap = 0;
	}
	s->answer.len = 0;
	s->answer.too_long = false;
	s->turn = s->turns = s->ok_turns = 0;
	s->in_flight = s->parked = false;
	s->tokens = 0;
	s->t_first = s->t_end = 0;
	s->context_tokens = 0;
}

static void session_destroy(struct session *s)
{
	cJSON_Delete(s->script);
	free(s->conv);
	free(s->answer.buf);
	free(s);
}

void sessions_free(struct sessions *ss)
{
	if (!ss)
		return;
	struct session *lists[2] = {ss->live, ss->spare};
	for (int i = 0; i < 2; i++) {
		while (lists[i]) {
			struct session *s = lists[i];
			lists[i] = s->next;
			if (ss->loop)
				ev_timer_stop(ss->loop, &s->think);
			session_destroy(s);
		}
	}
	free(ss->scratch);
	free(ss->esc);
	free(ss);
}

enum session_end { END_DONE, END_FAILED, END_CONTEXT, END_INCOMPLETE, END_TOO_LONG };

static void session_end(struct sessions *ss, struct session *s, enum session_end how)
{
	ev_timer_stop(ss->loop, &s->think);
	struct session_result r = {
		.ok = how == END_DONE || how == END_INCOMPLETE,
		.context_limit = how == END_CONTEXT || how == END_TOO_LONG,
		.incomplete = how == END_INCOMPLETE,
		.turns = s->ok_turns,
		.duration_ns = s->t_end > s->t_first ? s->t_end - s->t_first : 0,
		.context_tokens = s->context_tokens,
	};
	stats_session_done(ss->stats, &r);
	switch (how) {
	case END_DONE:
		ss->n.done++;
		break;
	case END_FAILED:
		ss->n.failed++;
		break;
	case END_TOO_LONG:
		ss->n.too_long++;
		/* fall through */
	case END_CONTEXT:
		ss->n.context++;
		break;
	case END_INCOMPLETE:
		ss->n.incomplete++;
		break;
	}
	list_unlink(&ss->live, s);
	ss->nlive--;
	session_reset(s);
	list_push(&ss->spare, s);
	if (!ss->calls && ss->ops.ended)
		ss->ops.ended(ss->ops.ud);
}

/* The next user turn into the conversation and out as a request. 0, -1
 * (out of memory, the request could not start), -2 (too long). */
static int session_send(struct sessions *ss, struct session *s, int64_t t_intended)
{
	struct oai_request_opts o = *ss->base;
	o.model = s->model;
	struct rng *r = &ss->rng;
	int rc = 0;
	double add = 0;
	if (s->script) {
		/* The user message, then what follows it up to the next
		 * user message is the recorded answer. */
		const cJSON *u = s->cursor;
		rc = put_file_message(ss, s, u);
		add = text_tokens(ss, u);
		s->cursor = u->next;
		s->recorded = s->cursor;
		double reply = 0;
		while (s->cursor && !is_role(s->cursor, "user")) {
			if (is_role(s->cursor, "assistant"))
				reply += text_tokens(ss, s->cursor);
			s->cursor = s->cursor->next;
		}
		/* --output-tokens, else the record's max_tokens, else the
		 * recorded answer's length. */
		if (ss->d->output_override)
			s->out_tokens = dist_sample(&ss->d->output_dist, r);
		else if (s->file_max_tokens > 0)
			s->out_tokens = s->file_max_tokens;
		else
			s->out_tokens = reply >= 1 ? lround(reply) : dist_sample(&ss->d->output_dist, r);
	} else {
		const struct dist *ud = ss->spec.have_user ? &ss->spec.user : &ss->d->input_dist;
		size_t n;
		char *text = synthetic_text(ss, r, dist_sample(ud, r), &n, &add);
		rc = text ? put_message(ss, s, "user", text, n, false) : -1;
		s->out_tokens = dist_sample(&ss->d->output_dist, r);
	}
	if (rc != 0)
		return rc;
	if (s->out_tokens > DATASET_MAX_TOKENS)
		s->out_tokens = DATASET_MAX_TOKENS;
	o.max_tokens = (int)s->out_tokens;
	s->tokens += add;
	long in = lround(ss->d->overhead + s->tokens);
	char *body;
	size_t len = 0;
	if (chat(ss)) {
		s->conv[s->conv_len] = ']';
		s->conv[s->conv_len + 1] = '\0';
		body = oai_body_build_messages(&o, s->conv, &len);
		s->conv[s->conv_len] = '\0';
	} else {
		body = oai_body_build(&o, s->conv, &len);
	}
	if (!body)
		return -1;
	s->answer.len = 0;
	s->answer.too_long = false;
	s->turn++;
	s->context_tokens = in;
	s->in_flight = true;
	ss->calls++;
	rc = ss->ops.send(ss->ops.ud, s, s->model, body, len, in, s->turn, &s->answer, t_intended);
	ss->calls--;
	if (rc != 0) {
		s->in_flight = false;
		return -1;
	}
	return 0;
}

/* libev counts a timer from the loop's cached time, which is behind the
 * clock by however long this iteration has run so far: armed from a stale
 * time a think would end early by that much (seen: a 100 ms think over
 * in 97 ms). The cached time is brought up to date first, and a timer
 * that still fires early is armed again for the rest. */
static void session_arm(struct sessions *ss, struct session *s)
{
	ev_now_update(ss->loop);
	double at = (double)(s->t_next - clock_now_ns()) / 1e9;
	ev_timer_set(&s->think, at > 0 ? at : 0., 0.);
	ev_timer_start(ss->loop, &s->think);
}

static void session_think_over(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct session *s = w->data;
	struct sessions *ss = s->ss;
	if (clock_now_ns() < s->t_next) {
		session_arm(ss, s);
		return;
	}
	if (ss->ops.held && ss->ops.held(ss->ops.ud)) {
		s->parked = true;
		return;
	}
	int rc = session_send(ss, s, s->t_next);
	if (rc != 0)
		session_end(ss, s, rc == -2 ? END_TOO_LONG : END_FAILED);
}

void sessions_release(struct sessions *ss)
{
	struct session *s = ss->live;
	while (s) {
		struct session *next = s->next;
		if (s->parked && !ss->stopped) {
			s->parked = false;
			int rc = session_send(ss, s, s->t_next);
			if (rc != 0)
				session_end(ss, s, rc == -2 ? END_TOO_LONG : END_FAILED);
		}
		s = next;
	}
}

int sessions_start(struct sessions *ss, const char *model, int model_index, int64_t t_intended)
{
	if (ss->stopped)
		return -1;
	struct session *s = ss->spare;
	if (s) {
		list_unlink(&ss->spare, s);
	} else {
		s = calloc(1, sizeof *s);
		if (!s)
			return -1;
		s->ss = ss;
		ev_timer_init(&s->think, session_think_over, 0., 0.);
		s->think.data = s;
	}
	s->model = model;
	s->model_index = model_index;
	int rc = chat(ss) ? put(s, "[", 1) : 0;
	if (rc == 0 && ss->spec.file) {
		const struct dataset_rec *rec = dataset_next_record(ss->d, &ss->rng);
		s->script = rec ? cJSON_ParseWithLength(rec->text, rec->len) : NULL;
		s->file_max_tokens = rec ? rec->max_tokens : 0;
		rc = s->script ? 0 : -1;
		const cJSON *m = s->script ? s->script->child : NULL;
		for (; rc == 0 && m && !is_role(m, "user"); m = m->next) {
			rc = put_file_message(ss, s, m);
			s->tokens += text_tokens(ss, m);
		}
		s->cursor = m;
		for (; m; m = m->next)
			s->turns += is_role(m, "user");
		/* Refused when the file was read: a conversation has one. */
		if (rc == 0 && s->turns == 0)
			rc = -1;
	} else if (rc == 0) {
		s->turns = (uint32_t)ss->spec.turns;
		if (ss->spec.have_system) {
			struct rng sr;
			rng_seed(&sr, ss->cfg->seed ^ SYSTEM_SEED);
			size_t n;
			double got = 0;
			char *text = synthetic_text(ss, &sr, dist_sample(&ss->spec.system, &ss->rng), &n, &got);
			rc = text ? put_message(ss, s, "system", text, n, false) : -1;
			s->tokens += got;
		}
	}
	if (rc == 0) {
		list_push(&ss->live, s);
		ss->nlive++;
		s->t_first = clock_now_ns();
		rc = session_send(ss, s, t_intended);
		if (rc != 0) {
			list_unlink(&ss->live, s);
			ss->nlive--;
		}
	}
	if (rc != 0) {
		session_reset(s);
		list_push(&ss->spare, s);
		return -1;
	}
	ss->n.started++;
	return 0;
}

/* The answer the next turn resends. 0, -1, -2 (too long). */
static int session_keep_answer(struct sessions *ss, struct session *s, const struct req_result *res)
{
	int rc = 0;
	if (ss->recorded && s->script) {
		for (const cJSON *m = s->recorded; rc == 0 && m && m != s->cursor; m = m->next) {
			rc = put_file_message(ss, s, m);
			s->tokens += text_tokens(ss, m);
		}
		return rc;
	}
	if (ss->recorded) {
		size_t n;
		double got = 0;
		char *text = synthetic_text(ss, &ss->rng, s->out_tokens, &n, &got);
		rc = text ? put_message(ss, s, "assistant", text, n, false) : -1;
		s->tokens += got;
		return rc;
	}
	s->tokens += res->output_tokens > 0 ? (double)res->output_tokens : 0;
	if (chat(ss))
		return put_message(ss, s, "assistant", s->answer.buf ? s->answer.buf : "", s->answer.len, true);
	/* A completions prompt is text: the escaped answer read back. */
	if (!s->answer.len)
		return put_message(ss, s, NULL, "", 0, false);
	size_t need = s->answer.len + 3;
	if (need > ss->scratch_cap) {
		char *q = realloc(ss->scratch, need);
		if (!q)
			return -1;
		ss->scratch = q;
		ss->scratch_cap = need;
	}
	ss->scratch[0] = '"';
	memcpy(ss->scratch + 1, s->answer.buf, s->answer.len);
	ss->scratch[s->answer.len + 1] = '"';
	ss->scratch[s->answer.len + 2] = '\0';
	cJSON *str = cJSON_ParseWithLength(ss->scratch, s->answer.len + 2);
	if (!cJSON_IsString(str)) {
		cJSON_Delete(str);
		return put_message(ss, s, NULL, "", 0, false);
	}
	rc = put_message(ss, s, NULL, str->valuestring, strlen(str->valuestring), false);
	cJSON_Delete(str);
	return rc;
}

void sessions_turn_done(struct sessions *ss, struct session *s, const struct req_result *res, int64_t now)
{
	ss->calls++;
	s->in_flight = false;
	s->t_end = now;
	if (res->ok) {
		s->ok_turns++;
		if (res->prompt_tokens > 0)
			s->context_tokens = res->prompt_tokens;
	}
	if (!res->ok) {
		enum session_end how = res->err == ERR_CONTEXT ? END_CONTEXT
				       : ss->stopped && res->err == ERR_ABORTED ? END_INCOMPLETE
										  : END_FAILED;
		session_end(ss, s, how);
	} else if (s->turn >= s->turns) {
		session_end(ss, s, END_DONE);
	} else if (ss->stopped) {
		session_end(ss, s, END_INCOMPLETE);
	} else {
		int rc = session_keep_answer(ss, s, res);
		if (rc != 0) {
			session_end(ss, s, rc == -2 ? END_TOO_LONG : END_FAILED);
		} else {
			int64_t think = sessions_think_sample(&ss->spec.think, &ss->rng);
			if (think <= 0) {
				rc = session_send(ss, s, now);
				if (rc != 0)
					session_end(ss, s, rc == -2 ? END_TOO_LONG : END_FAILED);
			} else {
				/* From the end of this turn, not from when the
				 * loop gets round to it. */
				s->t_next = now + think;
				session_arm(ss, s);
			}
		}
	}
	ss->calls--;
}

void sessions_stop(struct sessions *ss)
{
	ss->stopped = true;
	ss->calls++;
	struct session *s = ss->live;
	while (s) {
		struct session *next = s->next;
		if (!s->in_flight)
			session_end(ss, s, END_INCOMPLETE);
		s = next;
	}
	ss->calls--;
}

int sessions_model_index(const struct session *s)
{
	return s->model_index;
}

uint64_t sessions_live(const struct sessions *ss)
{
	return ss ? ss->nlive : 0;
}

void sessions_get_counts(const struct sessions *ss, struct sessions_counts *out)
{
	*out = ss->n;
}
