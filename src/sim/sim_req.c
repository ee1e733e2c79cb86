#include "config.h"

#include "infertop/errbuf.h"
#include "sim_req.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int is_punct(unsigned char c)
{
	return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) ||
	       (c >= 0x7b && c <= 0x7e);
}

/* Byte classes instead of <ctype.h>: the count must not depend on the
 * locale, or the client's calibration and the server's usage would differ
 * between machines. */
long sim_tokenize_text(const char *s, size_t len, sim_token_fn fn, void *ud)
{
	long n = 0;
	size_t i = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		if (is_space(c)) {
			i++;
			continue;
		}
		int p = is_punct(c);
		size_t j = i + 1;
		while (j < len) {
			unsigned char d = (unsigned char)s[j];
			if (is_space(d) || is_punct(d) != p)
				break;
			j++;
		}
		if (fn)
			fn(ud, s + i, j - i);
		n++;
		i = j;
	}
	return n;
}

uint32_t sim_token_id(const char *tok, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)tok[i];
		h *= 16777619u;
	}
	return h % SIM_VOCAB;
}

struct id_sink {
	uint32_t *ids;
	size_t cap, n;
	struct sim_blocks *blk;	/* NULL: no hashing */
	uint64_t h;		/* running hash of every token so far */
	uint64_t salt;		/* roles seen since the last token; 0: none */
	long blk_cap;
	int oom;
};

#define FNV64_PRIME 0x100000001b3ULL

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The running hash carries every earlier token, so the value stored at a
 * block boundary is the chained hash of that block. */
static void sink_put_id(struct id_sink *k, uint32_t id)
{
	if (k->ids && k->n < k->cap)
		k->ids[k->n] = id;
	k->n++;
	struct sim_blocks *b = k->blk;
	if (!b || k->oom)
		return;
	if (k->salt) {
		k->h = mix64(k->h ^ k->salt);
		k->salt = 0;
	}
	k->h = (k->h ^ ((uint64_t)id + 1)) * FNV64_PRIME;
	if (k->n % (size_t)b->block_tokens != 0)
		return;
	if (b->n == k->blk_cap) {
		long cap = k->blk_cap ? k->blk_cap * 2 : 64;
		uint64_t *nh = realloc(b->hash, (size_t)cap * sizeof *nh);
		if (!nh) {
			k->oom = 1;
			return;
		}
		b->hash = nh;
		k->blk_cap = cap;
	}
	b->hash[b->n++] = mix64(k->h);
}

/* A message's role, folded into the hash before its first token. */
static void sink_put_role(struct id_sink *k, const char *role)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = role; *p; p++)
		h = (h ^ (unsigned char)*p) * FNV64_PRIME;
	k->salt = mix64(k->salt ^ h) | 1;
}

static void id_put(void *ud, const char *tok, size_t len)
{
	sink_put_id(ud, sim_token_id(tok, len));
}

/* JSON numbers arrive as doubles; a count must be a whole number that fits. */
static int get_count(const cJSON *v, long min, long max, long *out)
{
	if (!cJSON_IsNumber(v))
		return -1;
	double d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
		return -1;
	*out = (long)d;
	return 0;
}

static int get_bool(const cJSON *obj, const char *key, int *out, char *err, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return errbuf_set(err, cap, "'%s' must be a boolean", key);
	*out = cJSON_IsTrue(v) ? 1 : 0;
	return 0;
}

static long text_tokens(const cJSON *v, struct id_sink *k)
{
	size_t before = k->n;
	sim_tokenize_text(v->valuestring, strlen(v->valuestring), id_put, k);
	return (long)(k->n - before);
}

/* A message's content: a string, null, or an array of parts whose "text"
 * fields count (image parts and the like count nothing). */
static int content_tokens(const cJSON *content, struct id_sink *k, char *err, size_t cap)
{
	if (!content || cJSON_IsNull(content))
		return 0;
	if (cJSON_IsString(content)) {
		text_tokens(content, k);
		return 0;
	}
	if (!cJSON_IsArray(content))
		return errbuf_set(err, cap, "message content must be a string or an array of parts");
	const cJSON *part;
	cJSON_ArrayForEach(part, content) {
		if (!cJSON_IsObject(part))
			return errbuf_set(err, cap, "content parts must be objects");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (t && !cJSON_IsString(t))
			return errbuf_set(err, cap, "content part 'text' must be a string");
		if (t)
			text_tokens(t, k);
	}
	return 0;
}

static int messages_tokens(const cJSON *msgs, struct id_sink *k, char *err, size_t cap)
{
	if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
		return errbuf_set(err, cap, "'messages' must be a non-empty array");
	const cJSON *m;
	cJSON_ArrayForEach(m, msgs) {
		if (!cJSON_IsObject(m))
			return errbuf_set(err, cap, "each message must be an object");
		const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
		if (!cJSON_IsString(role))
			return errbuf_set(err, cap, "each message needs a string 'role'");
		sink_put_role(k, role->valuestring);
		if (content_tokens(cJSON_GetObjectItemCaseSensitive(m, "content"), k, err, cap) != 0)
			return -1;
	}
	return 0;
}

static int token_id_array(const cJSON *arr, struct id_sink *k, char *err, size_t cap)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, arr) {
		long id;
		if (get_count(e, 0, (long)UINT32_MAX, &id) != 0)
			return errbuf_set(err, cap, "token ids must be non-negative integers");
		sink_put_id(k, (uint32_t)id);
	}
	return 0;
}

/* "prompt": a string, an array of token ids, or a one-element array of
 * either (a batch of one). Larger batches are refused: one request, one
 * stream. */
static int prompt_tokens(const cJSON *p, struct id_sink *k, char *err, size_t cap)
{
	if (!p)
		return errbuf_set(err, cap, "'prompt' is required");
	if (cJSON_IsString(p)) {
		text_tokens(p, k);
		return 0;
	}
	if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) == 0)
		return errbuf_set(err, cap, "'prompt' must be a string, token ids, or a list of one of those");
	const cJSON *first = p->child;
	if (cJSON_IsNumber(first))
		return token_id_array(p, k, err, cap);
	if (cJSON_GetArraySize(p) != 1)
		return errbuf_set(err, cap, "batched prompts are not supported; send one prompt per request");
	if (cJSON_IsString(first)) {
		text_tokens(first, k);
		return 0;
	}
	if (cJSON_IsArray(first))
		return token_id_array(first, k, err, cap);
	return errbuf_set(err, cap, "'prompt' must be a string, token ids, or a list of one of those");
}

static int parse_fields(const cJSON *root, enum sim_api api, struct sim_req *out, struct id_sink *k,
			char *err, size_t cap)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (model && !cJSON_IsNull(model)) {
		if (!cJSON_IsString(model))
			return errbuf_set(err, cap, "'model' must be a string");
		size_t ml = strlen(model->valuestring);
		size_t keep = ml > SIM_MODEL_MAX ? SIM_MODEL_MAX : ml;
		memcpy(out->model, model->valuestring, keep);
		out->model[keep] = '\0';
		out->model_len = ml > SIM_MODEL_MAX ? SIM_MODEL_MAX + 1 : (int)ml;
	}

	const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
	if (api == SIM_API_TOKENIZE)
		api = msgs ? SIM_API_CHAT : SIM_API_COMPLETIONS;
	out->api = api;
	int rc = api == SIM_API_CHAT
			 ? messages_tokens(msgs, k, err, cap)
			 : prompt_tokens(cJSON_GetObjectItemCaseSensitive(root, "prompt"), k, err, cap);
	if (rc != 0)
		return -1;
	out->prompt_tokens = (long)k->n;

	const char *mt_key = "max_completion_tokens";
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, mt_key);
	if (!mt || cJSON_IsNull(mt)) {
		mt_key = "max_tokens";
		mt = cJSON_GetObjectItemCaseSensitive(root, mt_key);
	}
	if (mt && !cJSON_IsNull(mt) && get_count(mt, 1, 1L << 30, &out->max_tokens) != 0)
		return errbuf_set(err, cap, "'%s' must be an integer >= 1", mt_key);

	const cJSON *mn = cJSON_GetObjectItemCaseSensitive(root, "min_tokens");
	if (mn && !cJSON_IsNull(mn) && get_count(mn, 0, 1L << 30, &out->min_tokens) != 0)
		return errbuf_set(err, cap, "'min_tokens' must be an integer >= 0");
	if (out->max_tokens >= 0 && out->min_tokens > out->max_tokens)
		return errbuf_set(err, cap, "'min_tokens' (%ld) must not exceed '%s' (%ld)", out->min_tokens,
			    mt_key, out->max_tokens);

	if (get_bool(root, "stream", &out->stream, err, cap) != 0 ||
	    get_bool(root, "ignore_eos", &out->ignore_eos, err, cap) != 0)
		return -1;
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
	if (so && !cJSON_IsNull(so)) {
		if (!cJSON_IsObject(so))
			return errbuf_set(err, cap, "'stream_options' must be an object");
		if (get_bool(so, "include_usage", &out->include_usage, err, cap) != 0)
			return -1;
	}
	return 0;
}

static int parse_body(const char *body, size_t len, enum sim_api api, struct sim_req *out,
		      struct id_sink *k, char *err, size_t errcap)
{
	memset(out, 0, sizeof *out);
	out->model_len = -1;
	out->max_tokens = -1;
	if (errcap)
		err[0] = '\0';
	if (!body || len == 0)
		return errbuf_set(err, errcap, "the request body is empty; expected a JSON object");
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
	if (!root)
		return errbuf_set(err, errcap, "the request body is not valid JSON");
	/* cJSON stops after the first value; a real server's parser rejects
	 * anything but whitespace after it. */
	for (const char *p = end; p && p < body + len; p++) {
		if (!is_space((unsigned char)*p)) {
			cJSON_Delete(root);
			return errbuf_set(err, errcap, "the request body is not valid JSON (data after the object)");
		}
	}
	int rc;
	if (!cJSON_IsObject(root)) {
		rc = errbuf_set(err, errcap, "the request body must be a JSON object");
	} else {
		rc = parse_fields(root, api, out, k, err, errcap);
	}
	cJSON_Delete(root);
	return rc;
}

int sim_req_parse(const char *body, size_t len, enum sim_api api, struct sim_req *out,
		  uint32_t *ids, size_t idcap, size_t *nids, char *err, size_t errcap)
{
	struct id_sink k = { .ids = ids, .cap = idcap };
	if (nids)
		*nids = 0;
	int rc = parse_body(body, len, api, out, &k, err, errcap);
	if (rc == 0 && nids)
		*nids = k.n < idcap ? k.n : idcap;
	return rc;
}

int sim_req_parse_blocks(const char *body, size_t len, enum sim_api api, struct sim_req *out,
			 struct sim_blocks *blk, char *err, size_t errcap)
{
	blk->hash = NULL;
	blk->n = 0;
	struct id_sink k = { .blk = blk };
	int rc = parse_body(body, len, api, out, &k, err, errcap);
	if (rc == 0 && k.oom)
		rc = errbuf_set(err, errcap, "out of memory hashing the prompt");
	if (rc != 0) {
		free(blk->hash);
		blk->hash = NULL;
		blk->n = 0;
		return rc;
	}
	blk->tokens = (long)k.n;
	blk->state = k.h;
	blk->salt = k.salt;
	blk->cap = k.blk_cap;
	return 0;
}

int sim_blocks_append(struct sim_blocks *blk, const char *role, const char *text, size_t len)
{
	struct id_sink k = { .n = (size_t)blk->tokens, .blk = blk, .h = blk->state, .salt = blk->salt,
			     .blk_cap = blk->cap };
	if (role)
		sink_put_role(&k, role);
	sim_tokenize_text(text, len, id_put, &k);
	blk->tokens = (long)k.n;
	blk->state = k.h;
	blk->salt = k.salt;
	blk->cap = k.blk_cap;
	return k.oom ? -1 : 0;
}
