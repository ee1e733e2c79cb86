#include "config.h"

#include "infertop/profile.h"
#include "infertop/url.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the maps ---- */

enum entry_kind { EK_GAUGE, EK_COUNTER, EK_HIST, EK_WATCH };
/* How engines combine into one value. Ranks of one engine (tp_rank,
 * pp_rank) repeat the same scheduler state, so they are first folded into
 * one by max; what remains are independent engines (vLLM's engine label,
 * SGLang's dp_rank) or unrelated series (finished_reason), summed. */
enum comb { CB_SUM, CB_MEAN, CB_MAX };
/* Triton reports per-model series for every model in a pipeline; the
 * flagged entries read only the TensorRT-LLM backend's model, so one
 * request is not counted once per pipeline stage. */
#define MF_TRITON_MODEL 1u

struct map_entry {
	unsigned char profile;
	unsigned char kind;
	unsigned char slot;	/* enum profile_slot, or enum server_latency for EK_HIST */
	unsigned char prio;	/* 0 = current name; higher = older fallbacks */
	unsigned char comb;
	unsigned char flags;
	double scale;		/* to seconds for times */
	const char *name;
	const char *mk, *mv;	/* one label matcher, or NULL */
};

#define MF_NONE 0u
/* Triton's series that names the TensorRT-LLM backend's model. */
#define TRITON_MODEL_SERIES "nv_trt_llm_request_metrics"

/* Every SERVER_METRIC line of servers.def, in its order. */
static const struct map_entry map[] = {
#define SERVER_METRIC(id, kind, slot, prio, comb, flags, scale, name, label, value) \
	{ PROFILE_##id, EK_##kind, SLOT_OF_##kind(slot), prio, CB_##comb, MF_##flags, scale, name, label, value },
#define SLOT_OF_GAUGE(s) PSLOT_##s
#define SLOT_OF_COUNTER(s) PSLOT_##s
#define SLOT_OF_HIST(s) SRVL_##s
#include "infertop/servers.def"
#undef SLOT_OF_GAUGE
#undef SLOT_OF_COUNTER
#undef SLOT_OF_HIST
};

#define NMAP ((int)(sizeof map / sizeof map[0]))
#define NENTRIES (NMAP + SERVER_MAX_WATCH)
#define WATCH_PROFILE 255

static const struct {
	const char *name, *path, *help;
} servers[] = {
#define SERVER(id, name, path, help) [PROFILE_##id] = { name, path, help },
#include "infertop/servers.def"
};
_Static_assert(sizeof servers / sizeof servers[0] == PROFILE_COUNT, "servers.def and enum profile_id");

const char *profile_name(int id)
{
	if (id == PROFILE_AUTO)
		return "auto";
	if (id >= 0 && id < PROFILE_COUNT)
		return servers[id].name;
	return "unknown";
}

int profile_parse(const char *name, int *id)
{
	if (!name)
		return -1;
	if (strcmp(name, "auto") == 0) {
		*id = PROFILE_AUTO;
		return 0;
	}
	for (int i = 0; i < PROFILE_COUNT; i++) {
		if (strcmp(name, servers[i].name) == 0) {
			*id = i;
			return 0;
		}
	}
	return -1;
}

const char *profile_metrics_path(int id)
{
	return id >= 0 && id < PROFILE_COUNT ? servers[id].path : "/metrics";
}

const char *profile_help(int id)
{
	return id >= 0 && id < PROFILE_COUNT ? servers[id].help : NULL;
}

/* ---- default URLs ---- */

void profile_series_names(int want, void (*fn)(void *ud, const char *name), void *ud)
{
	static const char *const suf[] = { "_bucket", "_sum", "_count" };
	for (int i = 0; i < NMAP; i++) {
		const struct map_entry *m = &map[i];
		if (want != PROFILE_AUTO && m->profile != want)
			continue;
		int k;
		for (k = 0; k < i && (strcmp(map[k].name, m->name) != 0 ||
				      (want != PROFILE_AUTO && map[k].profile != want));
		     k++)
			;
		if (k < i)
			continue;
		if (m->kind != EK_HIST) {
			fn(ud, m->name);
			continue;
		}
		for (size_t j = 0; j < sizeof suf / sizeof suf[0]; j++) {
			char n[160];
			snprintf(n, sizeof n, "%s%s", m->name, suf[j]);
			fn(ud, n);
		}
	}
	if (want == PROFILE_AUTO || want == PROFILE_TRITON)
		fn(ud, TRITON_MODEL_SERIES);
}

static int join_url(const char *base, const char *path, char *out)
{
	return url_join(base, path, out, PROFILE_URL_MAX);
}

/* Triton serves the API on one port (8000 HTTP/KServe, 9000 for the
 * OpenAI frontend) and metrics on 8002, with no path prefix. */
static int triton_url(const char *base, char *out)
{
	return url_on_port(base, "8002", "/metrics", out, PROFILE_URL_MAX);
}

int profile_default_urls(int id, const char *base, char urls[][PROFILE_URL_MAX], int cap)
{
	if (!base || (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0) || cap < 1)
		return -1;
	if (id == PROFILE_TRITON)
		return triton_url(base, urls[0]) == 0 ? 1 : -1;
	if (id != PROFILE_AUTO)
		return join_url(base, profile_metrics_path(id), urls[0]) == 0 ? 1 : -1;
	/* Every server's path once, in the order of servers.def. */
	int n = 0;
	for (int i = 0; i < PROFILE_COUNT && n < cap; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = strcmp(servers[j].path, servers[i].path) == 0;
		if (seen)
			continue;
		if (join_url(base, servers[i].path, urls[n]) != 0)
			return -1;
		n++;
	}
	if (n < cap) {
		if (triton_url(base, urls[n]) != 0)
			return -1;
		if (strcmp(urls[n], urls[0]) != 0)
			n++;
	}
	return n;
}

/* ---- watch expressions ---- */

static bool name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static const char *skip_sp(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

int profile_watch_parse(const char *expr, struct profile_watch_expr *out, char *err, size_t errcap)
{
	const char *p = skip_sp(expr);
	size_t n = 0;
	memset(out, 0, sizeof *out);
	if (!name_start(*p)) {
		snprintf(err, errcap, "expected a metric name, then optionally {label=\"value\",...}");
		return -1;
	}
	while (name_char(p[n]))
		n++;
	if (n >= sizeof out->name) {
		snprintf(err, errcap, "metric name longer than %zu characters", sizeof out->name - 1);
		return -1;
	}
	memcpy(out->name, p, n);
	p = skip_sp(p + n);
	if (*p == '\0')
		return 0;
	if (*p != '{') {
		snprintf(err, errcap, "unexpected '%c' after the metric name", *p);
		return -1;
	}
	p = skip_sp(p + 1);
	while (*p != '}') {
		if (out->nm == PROFILE_WATCH_MATCHERS) {
			snprintf(err, errcap, "more than %d label matchers", PROFILE_WATCH_MATCHERS);
			return -1;
		}
		if (!name_start(*p) || *p == ':') {
			snprintf(err, errcap, "expected a label name or '}'");
			return -1;
		}
		n = 0;
		while (name_char(p[n]) && p[n] != ':')
			n++;
		if (n >= sizeof out->m[0].k) {
			snprintf(err, errcap, "label name too long");
			return -1;
		}
		memcpy(out->m[out->nm].k, p, n);
		p = skip_sp(p + n);
		if (p[0] == '!' || (p[0] == '=' && p[1] == '~')) {
			snprintf(err, errcap, "only label=\"value\" matchers are supported");
			return -1;
		}
		if (*p != '=') {
			snprintf(err, errcap, "expected '=' after label %s", out->m[out->nm].k);
			return -1;
		}
		p = skip_sp(p + 1);
		if (*p != '"') {
			snprintf(err, errcap, "the value of label %s must be in double quotes", out->m[out->nm].k);
			return -1;
		}
		p++;
		size_t o = 0;
		char *v = out->m[out->nm].v;
		for (;;) {
			char c = *p++;
			if (c == '\0') {
				snprintf(err, errcap, "unterminated label value");
				return -1;
			}
			if (c == '"')
				break;
			if (c == '\\') {
				c = *p++;
				if (c == 'n')
					c = '\n';
				else if (c != '\\' && c != '"') {
					snprintf(err, errcap, "bad escape in label value (use \\\\, \\\" or \\n)");
					return -1;
				}
			}
			if (o + 1 >= sizeof out->m[0].v) {
				snprintf(err, errcap, "label value too long");
				return -1;
			}
			v[o++] = c;
		}
		out->nm++;
		p = skip_sp(p);
		if (*p == ',')
			p = skip_sp(p + 1);
		else if (*p != '}') {
			snprintf(err, errcap, "expected ',' or '}' after a label value");
			return -1;
		}
	}
	p = skip_sp(p + 1);
	if (*p != '\0') {
		snprintf(err, errcap, "unexpected text after '}'");
		return -1;
	}
	return 0;
}

/* ---- the tracker ---- */

#define ACC_GROUPS 32
#define HASH_SIZE 512 /* power of two, well above the number of distinct names */
#define RING_MAX 64
#define MAX_HIST_ENTRIES 48 /* histogram entries in map[] */
#define NQ (PSLOT_COUNT + SERVER_MAX_WATCH) /* counter quantities with history */

struct acc {
	int hits;
	int ngroups;
	uint64_t key[ACC_GROUPS];
	double val[ACC_GROUPS];
	/* EK_WATCH */
	double sum;
	bool counter;
	/* EK_HIST */
	struct prom_hist *h;
	bool overflow, have_count;
};

struct entry {
	struct map_entry m;
	struct acc a;
	int next;		/* next entry with the same name, -1 */
	size_t name_len;
	const struct profile_watch_expr *w;
	int watch_idx;
};

struct snap {
	int64_t t;
	double mono[NQ];
	uint32_t epoch[NQ];
	bool valid[NQ];
	struct prom_hist h[SRVL_N];
	uint32_t hepoch[SRVL_N];
	bool hvalid[SRVL_N];
};

struct qstate {
	double last, mono;
	bool have_last;
	uint32_t epoch;
	/* The run's first value of this epoch. */
	bool run_set;
	double run_mono;
	uint32_t run_epoch;
};

struct hstate {
	bool have_last;
	int src;		/* map entry it came from */
	uint32_t epoch;
	bool run_set;
	uint32_t run_epoch;
	struct prom_hist run;
};

struct profile_tracker {
	int want, locked;
	int64_t span_ns, spacing_ns;
	int nent;
	struct entry ent[NENTRIES];
	int16_t hash[HASH_SIZE];
	struct prom_hist hists[MAX_HIST_ENTRIES];
	int nhists;
	struct profile_watch_expr wexpr[SERVER_MAX_WATCH];
	char wtext[SERVER_MAX_WATCH][128];
	int nwatch;
	char triton_model[128];
	struct profile_raw raw;
	int hist_src[SRVL_N];

	struct qstate q[NQ];
	struct hstate hs[SRVL_N];
	struct snap cur;
	struct snap ring[RING_MAX];
	int ring_head, ring_n;
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 1099511628211ULL;
	}
	return h;
}
#define FNV0 1469598103934665603ULL

static int hash_find(const struct profile_tracker *t, const char *name, size_t len)
{
	unsigned i = (unsigned)fnv(name, len, FNV0) & (HASH_SIZE - 1);
	for (;;) {
		int e = t->hash[i];
		if (e < 0)
			return -1;
		if (t->ent[e].name_len == len && memcmp(t->ent[e].m.name, name, len) == 0)
			return e;
		i = (i + 1) & (HASH_SIZE - 1);
	}
}

static void hash_insert(struct profile_tracker *t, int idx)
{
	struct entry *en = &t->ent[idx];
	unsigned i = (unsigned)fnv(en->m.name, en->name_len, FNV0) & (HASH_SIZE - 1);
	for (;;) {
		int e = t->hash[i];
		if (e < 0) {
			t->hash[i] = (int16_t)idx;
			return;
		}
		if (t->ent[e].name_len == en->name_len && memcmp(t->ent[e].m.name, en->m.name, en->name_len) == 0) {
			while (t->ent[e].next >= 0)
				e = t->ent[e].next;
			t->ent[e].next = idx;
			return;
		}
		i = (i + 1) & (HASH_SIZE - 1);
	}
}

struct profile_tracker *profile_tracker_new(int want, const char *const *watch, size_t nwatch,
					    int64_t window_ns, int64_t interval_ns, char *err,
					    size_t errcap)
{
	if (nwatch > SERVER_MAX_WATCH) {
		snprintf(err, errcap, "at most %d --watch-metric expressions", SERVER_MAX_WATCH);
		return NULL;
	}
	struct profile_tracker *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	t->want = want;
	t->locked = want;
	if (interval_ns <= 0)
		interval_ns = 1000000000LL;
	t->span_ns = window_ns;
	if (t->span_ns < interval_ns * 2 + interval_ns / 2)
		t->span_ns = interval_ns * 2 + interval_ns / 2;
	t->spacing_ns = t->span_ns / (RING_MAX - 8);
	for (int i = 0; i < HASH_SIZE; i++)
		t->hash[i] = -1;
	for (int i = 0; i < NMAP; i++) {
		struct entry *en = &t->ent[t->nent];
		en->m = map[i];
		en->next = -1;
		en->name_len = strlen(map[i].name);
		en->watch_idx = -1;
		if (map[i].kind == EK_HIST) {
			if (t->nhists == MAX_HIST_ENTRIES) {
				snprintf(err, errcap, "internal error: MAX_HIST_ENTRIES too small");
				free(t);
				return NULL;
			}
			en->a.h = &t->hists[t->nhists++];
		}
		hash_insert(t, t->nent++);
	}
	for (size_t i = 0; i < nwatch; i++) {
		char e2[160];
		if (profile_watch_parse(watch[i], &t->wexpr[i], e2, sizeof e2) != 0) {
			snprintf(err, errcap, "--watch-metric '%s': %s", watch[i], e2);
			free(t);
			return NULL;
		}
		snprintf(t->wtext[i], sizeof t->wtext[i], "%s", watch[i]);
		struct entry *en = &t->ent[t->nent];
		en->m.profile = WATCH_PROFILE;
		en->m.kind = EK_WATCH;
		en->m.name = t->wexpr[i].name;
		en->m.scale = 1.0;
		en->name_len = strlen(t->wexpr[i].name);
		en->next = -1;
		en->w = &t->wexpr[i];
		en->watch_idx = (int)i;
		hash_insert(t, t->nent++);
	}
	t->nwatch = (int)nwatch;
	for (int i = 0; i < SRVL_N; i++)
		t->hist_src[i] = -1;
	return t;
}

void profile_tracker_free(struct profile_tracker *t)
{
	free(t);
}

int profile_tracker_profile(const struct profile_tracker *t)
{
	return t->locked;
}

/* ---- one pass ---- */

static bool is_replica_label(const struct prom_label *l)
{
	return (l->name_len == 7 && memcmp(l->name, "tp_rank", 7) == 0) ||
	       (l->name_len == 7 && memcmp(l->name, "pp_rank", 7) == 0) ||
	       (l->name_len == 2 && memcmp(l->name, "le", 2) == 0);
}

static uint64_t engine_key(const struct prom_sample *s)
{
	uint64_t h = FNV0;
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct prom_label *l = &s->labels[i];
		if (is_replica_label(l))
			continue;
		h = fnv(l->name, l->name_len, h);
		h = fnv("=", 1, h);
		h = fnv(l->value, l->value_len, h);
		h = fnv(",", 1, h);
	}
	return h;
}

static bool label_is(const struct prom_sample *s, const char *k, const char *v)
{
	const struct prom_label *l = prom_sample_label(s, k);
	if (!l)
		return v[0] == '\0';
	return prom_label_value_eq(l, v);
}

static void acc_value(struct acc *a, uint64_t key, double v)
{
	for (int i = 0; i < a->ngroups; i++) {
		if (a->key[i] == key) {
			/* Ranks of one engine: the same state repeated. */
			if (v > a->val[i])
				a->val[i] = v;
			return;
		}
	}
	if (a->ngroups < ACC_GROUPS) {
		a->key[a->ngroups] = key;
		a->val[a->ngroups++] = v;
	} else {
		/* More engines than slots: fold the rest into the last one,
		 * which keeps sums right and only blurs the max. */
		a->val[ACC_GROUPS - 1] += v;
	}
}

static void acc_hist(struct acc *a, const struct prom_sample *s, size_t flen, double scale)
{
	struct prom_hist *h = a->h;
	const char *suf = s->name + flen;
	size_t slen = s->name_len - flen;
	double v = s->value;
	if (slen == 4 && memcmp(suf, "_sum", 4) == 0) {
		h->sum += v * scale;
		return;
	}
	if (slen == 6 && memcmp(suf, "_count", 6) == 0) {
		h->count += v;
		a->have_count = true;
		return;
	}
	const struct prom_label *l = prom_sample_label(s, "le");
	double le;
	if (!l || prom_parse_float(l->value, l->value_len, &le) != 0 || isnan(le))
		return;
	if (!isinf(le))
		le *= scale;
	int k;
	for (k = 0; k < h->n && h->le[k] < le; k++)
		;
	if (k < h->n && h->le[k] == le) {
		h->cum[k] += v;
		return;
	}
	if (h->n == PROM_HIST_MAX) {
		a->overflow = true;
		return;
	}
	memmove(&h->le[k + 1], &h->le[k], (size_t)(h->n - k) * sizeof h->le[0]);
	memmove(&h->cum[k + 1], &h->cum[k], (size_t)(h->n - k) * sizeof h->cum[0]);
	h->le[k] = le;
	h->cum[k] = v;
	h->n++;
}

static void feed(struct profile_tracker *t, int e, const struct prom_sample *s, size_t flen)
{
	for (; e >= 0; e = t->ent[e].next) {
		struct entry *en = &t->ent[e];
		const struct map_entry *m = &en->m;
		bool hist_part = flen < s->name_len;
		if ((m->kind == EK_HIST) != hist_part)
			continue;
		if (m->kind == EK_WATCH) {
			const struct profile_watch_expr *w = en->w;
			int i;
			for (i = 0; i < w->nm && label_is(s, w->m[i].k, w->m[i].v); i++)
				;
			if (i < w->nm)
				continue;
			en->a.hits++;
			en->a.sum += s->value;
			if (s->type == PROM_COUNTER)
				en->a.counter = true;
			continue;
		}
		if (m->mk && !label_is(s, m->mk, m->mv))
			continue;
		if ((m->flags & MF_TRITON_MODEL) && t->triton_model[0] && !label_is(s, "model", t->triton_model))
			continue;
		en->a.hits++;
		/* Another profile's names only count towards detection. */
		if (t->locked != PROFILE_AUTO && m->profile != t->locked)
			continue;
		if (!isfinite(s->value))
			continue;
		if (m->kind == EK_HIST)
			acc_hist(&en->a, s, flen, m->scale);
		else
			acc_value(&en->a, engine_key(s), s->value * m->scale);
	}
}

static int on_sample(void *ud, const struct prom_sample *s)
{
	struct profile_tracker *t = ud;
	t->raw.nsamples++;
	int e = hash_find(t, s->name, s->name_len);
	if (e >= 0)
		feed(t, e, s, s->name_len);
	static const struct {
		const char *s;
		size_t n;
	} sufs[] = { { "_bucket", 7 }, { "_sum", 4 }, { "_count", 6 } };
	for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++) {
		size_t n = sufs[i].n;
		if (s->name_len > n && memcmp(s->name + s->name_len - n, sufs[i].s, n) == 0) {
			e = hash_find(t, s->name, s->name_len - n);
			if (e >= 0)
				feed(t, e, s, s->name_len - n);
			break;
		}
	}
	return 0;
}

/* The TensorRT-LLM backend's model name in a Triton exposition, from the
 * first nv_trt_llm_request_metrics line; found by a byte search so that
 * the per-model series before it can be filtered in the same pass. */
struct model_ctx {
	char *out;
	size_t cap;
};

static int model_cb(void *ud, const struct prom_sample *s)
{
	struct model_ctx *c = ud;
	const struct prom_label *l = prom_sample_label(s, "model");
	if (l)
		prom_label_unescape(l->value, l->value_len, c->out, c->cap);
	return 1;
}

static void find_triton_model(struct profile_tracker *t, const char *text, size_t len)
{
	static const char key[] = TRITON_MODEL_SERIES "{";
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *q = memmem(p, (size_t)(end - p), key, sizeof key - 1);
		if (!q)
			return;
		if (q == text || q[-1] == '\n') {
			const char *nl = memchr(q, '\n', (size_t)(end - q));
			size_t n = nl ? (size_t)(nl - q) : (size_t)(end - q);
			char model[sizeof t->triton_model] = "";
			struct model_ctx c = { model, sizeof model };
			prom_parse(q, n, PROM_LENIENT, model_cb, &c, NULL);
			if (model[0])
				memcpy(t->triton_model, model, sizeof model);
			return;
		}
		p = q + 1;
	}
}

static void reset_acc(struct profile_tracker *t)
{
	for (int i = 0; i < t->nent; i++) {
		struct acc *a = &t->ent[i].a;
		a->hits = 0;
		a->ngroups = 0;
		a->sum = 0;
		a->counter = false;
		a->overflow = a->have_count = false;
		if (a->h) {
			a->h->n = 0;
			a->h->sum = a->h->count = 0;
		}
	}
}

static bool finish_hist(struct acc *a)
{
	struct prom_hist *h = a->h;
	if (h->n == 0 || a->overflow)
		return false;
	if (!isinf(h->le[h->n - 1]) || h->le[h->n - 1] < 0) {
		if (!a->have_count || h->n == PROM_HIST_MAX)
			return false;
		h->le[h->n] = HUGE_VAL;
		h->cum[h->n] = h->count;
		h->n++;
	}
	if (!a->have_count)
		h->count = h->cum[h->n - 1];
	return true;
}

static void resolve(struct profile_tracker *t, int prof)
{
	struct profile_raw *r = &t->raw;
	int best_prio[PSLOT_COUNT];
	int hbest[SRVL_N];
	for (int i = 0; i < PSLOT_COUNT; i++)
		best_prio[i] = 256;
	for (int i = 0; i < SRVL_N; i++) {
		hbest[i] = 256;
		t->hist_src[i] = -1;
	}
	for (int i = 0; i < t->nent; i++) {
		struct entry *en = &t->ent[i];
		const struct map_entry *m = &en->m;
		struct acc *a = &en->a;
		if (m->kind == EK_WATCH) {
			int w = en->watch_idx;
			r->watch_valid[w] = a->hits > 0 && isfinite(a->sum);
			r->watch[w] = a->hits > 0 ? a->sum : 0;
			r->watch_counter[w] = a->counter;
			continue;
		}
		if (prof == PROFILE_NONE || m->profile != prof || a->hits == 0)
			continue;
		if (m->kind == EK_HIST) {
			if (m->prio >= hbest[m->slot] || !finish_hist(a))
				continue;
			hbest[m->slot] = m->prio;
			r->hist[m->slot] = *a->h;
			r->hist_valid[m->slot] = true;
			t->hist_src[m->slot] = i;
			continue;
		}
		if (m->prio >= best_prio[m->slot] || a->ngroups == 0)
			continue;
		best_prio[m->slot] = m->prio;
		double sum = 0, max = -HUGE_VAL;
		for (int g = 0; g < a->ngroups; g++) {
			sum += a->val[g];
			if (a->val[g] > max)
				max = a->val[g];
		}
		struct profile_value *pv = &r->slot[m->slot];
		pv->valid = true;
		pv->engines = a->ngroups;
		pv->max = max;
		pv->v = m->comb == CB_MEAN ? sum / a->ngroups : m->comb == CB_MAX ? max : sum;
	}
}

const struct profile_raw *profile_extract(struct profile_tracker *t, const char *text, size_t len,
					  unsigned prom_flags, char *err, size_t errcap)
{
	struct profile_raw *r = &t->raw;
	memset(r, 0, sizeof *r);
	reset_acc(t);
	if (t->locked == PROFILE_TRITON || t->locked == PROFILE_AUTO)
		find_triton_model(t, text, len);
	prom_parse(text, len, PROM_LENIENT | (prom_flags & PROM_OPENMETRICS), on_sample, t, &r->perr);
	if (r->nsamples == 0) {
		if (r->perr.nbad)
			snprintf(err, errcap, "not Prometheus text: line %u: %s", r->perr.line, r->perr.msg);
		else
			snprintf(err, errcap, "no metrics in the response");
		return NULL;
	}
	for (int i = 0; i < NMAP; i++)
		if (t->ent[i].a.hits > 0)
			r->score[t->ent[i].m.profile]++;
	int prof = t->locked;
	if (prof == PROFILE_AUTO) {
		prof = PROFILE_NONE;
		int best = 0;
		for (int p = 0; p < PROFILE_COUNT; p++) {
			if (r->score[p] > best) {
				best = r->score[p];
				prof = p;
			}
		}
	}
	resolve(t, prof);
	r->profile = prof;
	return r;
}

/* ---- history ---- */

static void q_observe(struct qstate *q, bool valid, double v)
{
	if (!valid) {
		q->have_last = false;
		return;
	}
	if (!q->have_last) {
		/* A new continuous stretch: deltas never cross a gap. */
		q->epoch++;
		q->have_last = true;
	} else {
		/* A drop is a restart: the counter began again from 0. */
		q->mono += v >= q->last ? v - q->last : v;
	}
	q->last = v;
	if (!q->run_set) {
		q->run_set = true;
		q->run_mono = q->mono;
		q->run_epoch = q->epoch;
	}
}

/* The window's baseline for quantities qa and qb (qb < 0: qa alone): the
 * oldest scrape inside the window where they were seen in the same
 * continuous stretch as now. */
static const struct snap *qbase(const struct profile_tracker *t, const struct snap *now, int qa, int qb)
{
	if (!now->valid[qa] || (qb >= 0 && !now->valid[qb]))
		return NULL;
	for (int i = 0; i < t->ring_n; i++) {
		const struct snap *s = &t->ring[(t->ring_head + RING_MAX - t->ring_n + i) % RING_MAX];
		if (s->t < now->t - t->span_ns)
			continue;
		if (s->t >= now->t)
			break;
		if (s->valid[qa] && s->epoch[qa] == now->epoch[qa] &&
		    (qb < 0 || (s->valid[qb] && s->epoch[qb] == now->epoch[qb])))
			return s;
	}
	return NULL;
}

static const struct snap *hbase(const struct profile_tracker *t, const struct snap *now, int l)
{
	if (!now->hvalid[l])
		return NULL;
	for (int i = 0; i < t->ring_n; i++) {
		const struct snap *s = &t->ring[(t->ring_head + RING_MAX - t->ring_n + i) % RING_MAX];
		if (s->t < now->t - t->span_ns)
			continue;
		if (s->t >= now->t)
			break;
		if (s->hvalid[l] && s->hepoch[l] == now->hepoch[l])
			return s;
	}
	return NULL;
}

static bool q_delta(const struct snap *now, const struct snap *b, int q, double *d, double *dt)
{
	if (!b)
		return false;
	*d = now->mono[q] - b->mono[q];
	*dt = (double)(now->t - b->t) / 1e9;
	return *dt > 0;
}

static void set(struct server_value *sv, bool valid, double v)
{
	sv->valid = valid && isfinite(v);
	sv->v = sv->valid ? v : 0;
	sv->lo = sv->hi = 0;
}

static void set_rate(struct server_value *sv, const struct profile_tracker *t, const struct snap *now, int q)
{
	double d, dt;
	bool ok = q_delta(now, qbase(t, now, q, -1), q, &d, &dt);
	set(sv, ok, ok ? d / dt : 0);
}

static void set_quantile(struct server_value *sv, bool any, const struct prom_hist *d, double q)
{
	double lo = 0, hi = 0;
	set(sv, any, any ? prom_hist_quantile_bucket(d, q, &lo, &hi) : 0);
	sv->lo = sv->valid && !isnan(lo) ? lo : 0;
	sv->hi = sv->valid && !isnan(hi) ? hi : 0;
}

static void percentiles(const struct prom_hist *d, struct server_value *p50, struct server_value *p90,
			struct server_value *p99, struct server_value *mean)
{
	/* No request finished in the span: unknown, not 0. */
	bool any = d->n > 0 && d->cum[d->n - 1] > 0;
	set_quantile(p50, any, d, 0.5);
	set_quantile(p90, any, d, 0.9);
	set_quantile(p99, any, d, 0.99);
	set(mean, any && d->count > 0, d->count > 0 ? d->sum / d->count : 0);
	mean->lo = mean->hi = 0;
}

/* A histogram's cumulative counts as counts per bucket (a count that went
 * down, which a delta never leaves, counts 0). */
static void per_bucket(const struct prom_hist *d, struct server_buckets *b)
{
	_Static_assert(SERVER_BUCKETS_MAX >= PROM_HIST_MAX, "a prom_hist fits a server_buckets");
	b->n = d->n > 0 && d->n <= SERVER_BUCKETS_MAX ? d->n : 0;
	for (int i = 0; i < b->n; i++) {
		double c = d->cum[i] - (i ? d->cum[i - 1] : 0);
		b->le[i] = d->le[i];
		b->count[i] = c > 0 ? c : 0;
	}
}

static void invalid4(struct server_value *a, struct server_value *b, struct server_value *c,
		     struct server_value *d)
{
	a->valid = b->valid = c->valid = d->valid = false;
	a->v = b->v = c->v = d->v = 0;
}

/* Counter-based means (Triton): sum of seconds over requests. */
static void counter_mean(struct server_value *out, const struct profile_tracker *t, const struct snap *now,
			 int qsum, int qcount)
{
	double ds, dc, dt;
	const struct snap *b = qbase(t, now, qsum, qcount);
	if (q_delta(now, b, qsum, &ds, &dt) && q_delta(now, b, qcount, &dc, &dt) && dc > 0)
		set(out, true, ds / dc);
}

static void run_counter_mean(struct server_value *out, const struct profile_tracker *t, int qsum, int qcount)
{
	const struct qstate *s = &t->q[qsum], *c = &t->q[qcount];
	if (!s->run_set || !c->run_set || !s->have_last || !c->have_last || s->run_epoch != s->epoch ||
	    c->run_epoch != c->epoch)
		return;
	double dc = c->mono - c->run_mono;
	if (dc > 0)
		set(out, true, (s->mono - s->run_mono) / dc);
}

static void run_total(struct server_value *out, const struct qstate *q)
{
	bool ok = q->run_set && q->have_last && q->run_epoch == q->epoch;
	set(out, ok, ok ? q->mono - q->run_mono : 0);
}

static void push_ring(struct profile_tracker *t)
{
	if (t->ring_n > 0) {
		const struct snap *last = &t->ring[(t->ring_head + RING_MAX - 1) % RING_MAX];
		if (t->cur.t - last->t < t->spacing_ns)
			return;
	}
	t->ring[t->ring_head] = t->cur;
	t->ring_head = (t->ring_head + 1) % RING_MAX;
	if (t->ring_n < RING_MAX)
		t->ring_n++;
}

void profile_invalidate_live(struct server_state *out)
{
	for (int g = 0; g < SRV_NGAUGES; g++)
		out->gauge[g].valid = false;
	for (int l = 0; l < SRVL_N; l++)
		out->p50[l].valid = out->p90[l].valid = out->p99[l].valid = out->mean[l].valid = false;
	for (int w = 0; w < out->nwatch; w++)
		out->watch[w].value.valid = out->watch[w].rate.valid = false;
}

int profile_tracker_update(struct profile_tracker *t, const char *text, size_t len, unsigned prom_flags,
			   int64_t now_ns, struct server_state *out, char *err, size_t errcap)
{
	const struct profile_raw *r = profile_extract(t, text, len, prom_flags, err, errcap);
	if (!r)
		return -1;
	profile_tracker_apply(t, r, now_ns, out);
	return 0;
}

static bool is_counter_slot(int q)
{
	return q == PSLOT_PREEMPT || q == PSLOT_PREFIX_HITS || q == PSLOT_PREFIX_QUERIES || q == PSLOT_PROMPT ||
	       q == PSLOT_GEN || q == PSLOT_QUEUE_SUM || q == PSLOT_E2E_SUM || q == PSLOT_REQ_COUNT;
}

void profile_tracker_summable(const struct profile_tracker *t, struct profile_raw *out)
{
	*out = t->raw;
	for (int q = 0; q < PSLOT_COUNT; q++) {
		if (!is_counter_slot(q))
			continue;
		out->slot[q].valid = t->q[q].have_last;
		out->slot[q].v = t->q[q].mono;
	}
	for (int w = 0; w < t->nwatch; w++)
		if (out->watch_counter[w]) {
			out->watch_valid[w] = t->q[PSLOT_COUNT + w].have_last;
			out->watch[w] = t->q[PSLOT_COUNT + w].mono;
		}
	for (int l = 0; l < SRVL_N; l++) {
		const struct hstate *hs = &t->hs[l];
		out->hist_valid[l] = t->cur.hvalid[l] && hs->run_set && hs->run_epoch == hs->epoch;
		if (out->hist_valid[l])
			prom_hist_delta(&t->cur.h[l], &hs->run, &out->hist[l]);
	}
}

static bool same_bounds(const struct prom_hist *a, const struct prom_hist *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->le[i] != b->le[i])
			return false;
	return true;
}

void profile_raw_add(struct profile_raw *acc, int *nadded, const struct profile_raw *r, bool live)
{
	if (*nadded == 0) {
		memset(acc, 0, sizeof *acc);
		acc->profile = PROFILE_NONE;
	}
	(*nadded)++;
	if (acc->profile == PROFILE_NONE)
		acc->profile = r->profile;
	for (int p = 0; p < PROFILE_COUNT; p++)
		acc->score[p] += r->score[p];
	acc->nsamples += r->nsamples;
	for (int q = 0; q < PSLOT_COUNT; q++) {
		const struct profile_value *v = &r->slot[q];
		struct profile_value *a = &acc->slot[q];
		/* Gauges only from replicas read now; counters keep a down
		 * replica's last total so the sum never goes back. */
		if (!v->valid || (!is_counter_slot(q) && !live))
			continue;
		a->max = a->valid ? fmax(a->max, v->max) : v->max;
		a->v += v->v;           /* KV and the prefix ratio: divided in finish */
		a->engines++;
		a->valid = true;
	}
	for (int l = 0; l < SRVL_N; l++) {
		if (!r->hist_valid[l])
			continue;
		if (!acc->hist_valid[l] && acc->hist[l].n == 0) {
			acc->hist[l] = r->hist[l];
			acc->hist_valid[l] = true;
		} else if (acc->hist_valid[l] && same_bounds(&acc->hist[l], &r->hist[l])) {
			for (int i = 0; i < r->hist[l].n; i++)
				acc->hist[l].cum[i] += r->hist[l].cum[i];
			acc->hist[l].sum += r->hist[l].sum;
			acc->hist[l].count += r->hist[l].count;
		} else {
			/* Different buckets cannot be summed exactly: unknown. */
			acc->hist_valid[l] = false;
			acc->hist[l].n = -1;
		}
	}
	for (int w = 0; w < SERVER_MAX_WATCH; w++) {
		if (!r->watch_valid[w] || (!r->watch_counter[w] && !live))
			continue;
		acc->watch[w] += r->watch[w];
		acc->watch_valid[w] = true;
		acc->watch_counter[w] = r->watch_counter[w];
	}
}

void profile_raw_finish(struct profile_raw *acc)
{
	static const int mean_slots[] = { PSLOT_KV, PSLOT_PREFIX_RATE };
	for (size_t i = 0; i < sizeof mean_slots / sizeof mean_slots[0]; i++) {
		struct profile_value *a = &acc->slot[mean_slots[i]];
		if (a->valid && a->engines > 0)
			a->v /= a->engines;
	}
	for (int l = 0; l < SRVL_N; l++)
		if (acc->hist[l].n < 0)
			acc->hist[l].n = 0;
}

void profile_tracker_apply(struct profile_tracker *t, const struct profile_raw *r, int64_t now_ns,
			   struct server_state *out)
{
	if (t->locked == PROFILE_AUTO && r->profile != PROFILE_NONE)
		t->locked = r->profile;

	/* The current snapshot. */
	struct snap *c = &t->cur;
	c->t = now_ns;
	for (int q = 0; q < PSLOT_COUNT; q++) {
		bool valid = is_counter_slot(q) && r->slot[q].valid;
		q_observe(&t->q[q], valid, r->slot[q].v);
	}
	for (int w = 0; w < t->nwatch; w++) {
		bool valid = r->watch_valid[w] && r->watch_counter[w];
		q_observe(&t->q[PSLOT_COUNT + w], valid, r->watch[w]);
	}
	for (int q = 0; q < NQ; q++) {
		c->mono[q] = t->q[q].mono;
		c->epoch[q] = t->q[q].epoch;
		c->valid[q] = t->q[q].have_last;
	}
	for (int l = 0; l < SRVL_N; l++) {
		struct hstate *hs = &t->hs[l];
		bool valid = r->hist_valid[l];
		if (valid && (!hs->have_last || hs->src != t->hist_src[l])) {
			hs->epoch++;
			hs->src = t->hist_src[l];
		}
		hs->have_last = valid;
		c->hvalid[l] = valid;
		c->hepoch[l] = hs->epoch;
		if (valid) {
			c->h[l] = r->hist[l];
			if (!hs->run_set) {
				hs->run_set = true;
				hs->run_epoch = hs->epoch;
				hs->run = r->hist[l];
			}
		}
	}
	/* Gauges. */
	const struct profile_value *s = r->slot;
	set(&out->gauge[SRV_RUNNING], s[PSLOT_RUNNING].valid, s[PSLOT_RUNNING].v);
	set(&out->gauge[SRV_WAITING], s[PSLOT_WAITING].valid, s[PSLOT_WAITING].v);
	if (s[PSLOT_KV].valid && s[PSLOT_KV].v >= 0) {
		set(&out->gauge[SRV_KV_USAGE], true, s[PSLOT_KV].v);
		set(&out->gauge[SRV_KV_USAGE_MAX], true, s[PSLOT_KV].max);
	} else if (s[PSLOT_KV_USED].valid && s[PSLOT_KV_TOTAL].valid && s[PSLOT_KV_TOTAL].v > 0) {
		double u = s[PSLOT_KV_USED].v / s[PSLOT_KV_TOTAL].v;
		set(&out->gauge[SRV_KV_USAGE], true, u);
		set(&out->gauge[SRV_KV_USAGE_MAX], true, u);
	} else {
		set(&out->gauge[SRV_KV_USAGE], false, 0);
		set(&out->gauge[SRV_KV_USAGE_MAX], false, 0);
	}
	set_rate(&out->gauge[SRV_PREEMPT_RATE], t, c, PSLOT_PREEMPT);
	set_rate(&out->gauge[SRV_PROMPT_TOK_S], t, c, PSLOT_PROMPT);
	set_rate(&out->gauge[SRV_GEN_TOK_S], t, c, PSLOT_GEN);
	double dh, dq, dt;
	if (s[PSLOT_PREFIX_HITS].valid && s[PSLOT_PREFIX_QUERIES].valid) {
		const struct snap *b = qbase(t, c, PSLOT_PREFIX_HITS, PSLOT_PREFIX_QUERIES);
		bool ok = q_delta(c, b, PSLOT_PREFIX_HITS, &dh, &dt) && q_delta(c, b, PSLOT_PREFIX_QUERIES, &dq, &dt) &&
			  dq > 0;
		set(&out->gauge[SRV_PREFIX_HIT], ok, ok ? dh / dq : 0);
	} else {
		/* vLLM V0 says -1 when prefix caching is off. */
		bool ok = s[PSLOT_PREFIX_RATE].valid && s[PSLOT_PREFIX_RATE].v >= 0 && s[PSLOT_PREFIX_RATE].v <= 1;
		set(&out->gauge[SRV_PREFIX_HIT], ok, s[PSLOT_PREFIX_RATE].v);
	}
	for (int g = 0; g < SRV_NGAUGES; g++)
		if (out->gauge[g].valid)
			server_agg_add(&out->agg[g], out->gauge[g].v);

	/* Server-side latencies over the window and over the run. */
	for (int l = 0; l < SRVL_N; l++) {
		invalid4(&out->p50[l], &out->p90[l], &out->p99[l], &out->mean[l]);
		invalid4(&out->run_p50[l], &out->run_p90[l], &out->run_p99[l], &out->run_mean[l]);
		out->run_buckets[l].n = 0;
		if (!c->hvalid[l])
			continue;
		struct prom_hist d;
		const struct snap *b = hbase(t, c, l);
		if (b) {
			prom_hist_delta(&c->h[l], &b->h[l], &d);
			percentiles(&d, &out->p50[l], &out->p90[l], &out->p99[l], &out->mean[l]);
		}
		const struct hstate *hs = &t->hs[l];
		if (hs->run_set && hs->run_epoch == hs->epoch) {
			prom_hist_delta(&c->h[l], &hs->run, &d);
			percentiles(&d, &out->run_p50[l], &out->run_p90[l], &out->run_p99[l], &out->run_mean[l]);
			per_bucket(&d, &out->run_buckets[l]);
		}
	}
	if (!out->mean[SRVL_QUEUE].valid)
		counter_mean(&out->mean[SRVL_QUEUE], t, c, PSLOT_QUEUE_SUM, PSLOT_REQ_COUNT);
	if (!out->mean[SRVL_E2E].valid)
		counter_mean(&out->mean[SRVL_E2E], t, c, PSLOT_E2E_SUM, PSLOT_REQ_COUNT);
	if (!out->run_mean[SRVL_QUEUE].valid)
		run_counter_mean(&out->run_mean[SRVL_QUEUE], t, PSLOT_QUEUE_SUM, PSLOT_REQ_COUNT);
	if (!out->run_mean[SRVL_E2E].valid)
		run_counter_mean(&out->run_mean[SRVL_E2E], t, PSLOT_E2E_SUM, PSLOT_REQ_COUNT);
	run_total(&out->run_prompt_tokens, &t->q[PSLOT_PROMPT]);
	run_total(&out->run_gen_tokens, &t->q[PSLOT_GEN]);
	run_total(&out->run_preemptions, &t->q[PSLOT_PREEMPT]);

	/* Watched metrics. */
	out->nwatch = t->nwatch;
	for (int w = 0; w < t->nwatch; w++) {
		struct server_watch *sw = &out->watch[w];
		snprintf(sw->expr, sizeof sw->expr, "%s", t->wtext[w]);
		set(&sw->value, r->watch_valid[w], r->watch[w]);
		set_rate(&sw->rate, t, c, PSLOT_COUNT + w);
	}

	/* What was read, and a hint when it is not what was asked for. */
	snprintf(out->detected, sizeof out->detected, "%s", r->profile == PROFILE_NONE ? "unknown"
											: profile_name(r->profile));
	out->note[0] = '\0';
	int best = PROFILE_NONE;
	for (int p = 0; p < PROFILE_COUNT; p++)
		if (r->score[p] > 0 && (best == PROFILE_NONE || r->score[p] > r->score[best]))
			best = p;
	if (r->profile == PROFILE_NONE)
		snprintf(out->note, sizeof out->note, "no known inference-server metric names in the response");
	else if (r->score[r->profile] == 0 && best != PROFILE_NONE)
		snprintf(out->note, sizeof out->note, "no %s metric names found; they look like %s (--server %s)",
			 profile_name(r->profile), profile_name(best), profile_name(best));
	else if (r->score[r->profile] == 0)
		snprintf(out->note, sizeof out->note, "no %s metric names found", profile_name(r->profile));
	else if (r->perr.nbad)
		snprintf(out->note, sizeof out->note, "%u malformed lines skipped (first at line %u: %.80s)",
			 r->perr.nbad, r->perr.line, r->perr.msg);

	push_ring(t);
}
