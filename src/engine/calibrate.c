#include "config.h"

#include "infertop/dataset.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/fetch.h"
#include "infertop/http.h"
#include "infertop/redact.h"
#include "infertop/tls.h"
#include "infertop/url.h"

/* Calibration asks the server's own tokenizer (POST /tokenize: vLLM, the
 * sim; llama.cpp reads "content") for the tokens of a sample of the
 * dataset's text, and of the sample twice over, and fits
 * tokens = overhead + slope * units through the two points. With the same
 * text in both, the difference is exactly one copy's tokens, so the
 * overhead (what the server adds to every prompt: BOS, and in the chat
 * form the chat template) comes out exact whatever the text. The slope
 * converts the dataset's units (synthetic words and periods, or file
 * characters) to tokens. A prefix is then built and measured until its
 * count is within half a token (at most 3 tries). Each POST goes out on
 * the loop (fetch.h) and its answer takes the next step, so nothing
 * waits: a control API or a serve on the same loop goes on answering. */

#define SAMPLE_UNITS_SYNTH 500
#define SAMPLE_UNITS_FILE 8000
#define MIN_UNITS 100
#define TOKENIZE_TIMEOUT_MS 30000L
#define ANSWER_MAX ((size_t)16 << 20)
#define PREFIX_TRIES 3

/* What the answer in hand measures. */
enum calib_step {
	STEP_A,         /* the sample */
	STEP_B,         /* the sample twice */
	STEP_PREFIX,    /* the prefix as built */
};

struct calib {
	struct dataset *d;
	struct fetch *f;
	char *url;
	char *a, *b;
	const char *model;
	const char *const *secrets;
	long units, sep_units, ta;
	bool messages;          /* chat form: {"messages": [...]} */
	enum calib_step step;
	int prefix_try;
	char why[160];          /* the last failure, for the note */
	long status;            /* the last HTTP status, 0 = none */
	calibrate_fn fn;
	void *ud;
	bool *ending;           /* set when it ends inside dataset_calibrate_start */
	char err[256];
};

static char *request_json(const struct calib *c, const char *text)
{
	cJSON *root = cJSON_CreateObject();
	bool ok = root && (!c->model || cJSON_AddStringToObject(root, "model", c->model));
	if (ok && c->messages) {
		cJSON *msgs = cJSON_AddArrayToObject(root, "messages");
		cJSON *m = cJSON_CreateObject();
		ok = msgs && m && cJSON_AddItemToArray(msgs, m);
		if (!ok)
			cJSON_Delete(m);
		ok = ok && cJSON_AddStringToObject(m, "role", "user") && cJSON_AddStringToObject(m, "content", text);
	} else if (ok) {
		/* vLLM reads "prompt", llama.cpp "content"; each ignores the other. */
		ok = cJSON_AddStringToObject(root, "prompt", text) && cJSON_AddStringToObject(root, "content", text);
	}
	char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	return s;
}

/* The token count in an answer: "count" (vLLM, the sim), else the length
 * of "tokens" (llama.cpp), else of a top-level array (TGI). -1 if none. */
static long answer_count(const char *s, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(s, len);
	long n = -1;
	const cJSON *count = cJSON_GetObjectItemCaseSensitive(root, "count");
	const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
	if (cJSON_IsNumber(count) && count->valuedouble >= 0 && count->valuedouble < 1e12)
		n = (long)count->valuedouble;
	else if (cJSON_IsArray(tokens))
		n = cJSON_GetArraySize(tokens);
	else if (cJSON_IsArray(root))
		n = cJSON_GetArraySize(root);
	cJSON_Delete(root);
	return n;
}

/* Tokens in an answer, or -1 with c->why and c->status set. */
static long answer_tokens(struct calib *c, long status, const char *body, size_t len, const char *err)
{
	c->status = status;
	if (err) {
		snprintf(c->why, sizeof c->why, "POST /tokenize failed: %.120s", err);
		return -1;
	}
	if (status < 200 || status > 299) {
		char m[96];
		oai_error_body_message(body, len, m, sizeof m);
		snprintf(c->why, sizeof c->why, "POST /tokenize answered HTTP %ld%s%s", status, m[0] ? ": " : "", m);
		return -1;
	}
	long n = answer_count(body, len);
	/* Text always makes tokens: none means the server did not read it
	 * (llama.cpp answers {"tokens": []} to the chat form). */
	if (n <= 0) {
		snprintf(c->why, sizeof c->why, "POST /tokenize gave no token count");
		return -1;
	}
	return n;
}

static void calib_end(struct calib *c, int rc)
{
	calibrate_fn fn = c->fn;
	void *ud = c->ud;
	if (c->ending)
		*c->ending = true;
	char err[sizeof c->err];
	memcpy(err, c->err, sizeof err);
	fetch_free(c->f);
	free(c->url);
	free(c->a);
	free(c->b);
	free(c);
	fn(ud, rc, err);
}

static void calib_fallback(struct calib *c, const char *why)
{
	struct dataset *d = c->d;
	snprintf(d->note, sizeof d->note, "%s", why);
	dataset_update_desc(d);
	snprintf(c->err, sizeof c->err, "%s; prompt lengths are estimated", why);
	calib_end(c, 0);
}

static void calib_oom(struct calib *c)
{
	snprintf(c->err, sizeof c->err, "out of memory");
	calib_end(c, -1);
}

static void calib_ok(struct calib *c)
{
	dataset_update_desc(c->d);
	c->err[0] = '\0';
	calib_end(c, 0);
}

/* Asks for the tokens of text; the answer comes to calib_on_answer. */
static void calib_ask(struct calib *c, enum calib_step step, const char *text)
{
	c->step = step;
	char *body = request_json(c, text);
	if (!body) {
		calib_oom(c);
		return;
	}
	CURLcode cc = curl_easy_setopt(fetch_easy(c->f), CURLOPT_COPYPOSTFIELDS, body);
	free(body);
	if (cc != CURLE_OK) {
		calib_oom(c);
		return;
	}
	if (fetch_send(c->f) != 0)
		calib_fallback(c, "POST /tokenize could not be sent");
}

/* The prefix as built measured n tokens: rebuilt until close. A failure
 * here keeps the estimate for the prefix, the slope stays. */
static void calib_prefix(struct calib *c, long n)
{
	struct dataset *d = c->d;
	if (n < 0) {
		calib_ok(c);
		return;
	}
	double got = (double)n - d->overhead;
	if (got < 1)
		got = 1;
	d->prefix_tok = got;
	if (fabs(got - (double)d->prefix_tokens) <= 0.5 || ++c->prefix_try >= PREFIX_TRIES) {
		calib_ok(c);
		return;
	}
	d->prefix_scale *= (double)d->prefix_tokens / got;
	if (dataset_build_prefix(d) != 0) {
		calib_oom(c);
		return;
	}
	calib_ask(c, STEP_PREFIX, d->prefix);
}

/* Both points are in: the fit, then the prefix. */
static void calib_fit(struct calib *c, long tb)
{
	struct dataset *d = c->d;
	double slope = (double)(tb - c->ta) / (double)(c->units + c->sep_units);
	double overhead = (double)c->ta - slope * (double)c->units;
	if (!(slope > 0) || !isfinite(slope)) {
		calib_fallback(c, "POST /tokenize counts did not grow with the text");
		return;
	}
	d->slope = slope;
	d->overhead = overhead > 0 ? overhead : 0;
	d->calibrated = true;
	d->note[0] = '\0';
	d->prefix_scale = 1.0;
	c->prefix_try = 0;
	if (dataset_build_prefix(d) != 0) {
		calib_oom(c);
		return;
	}
	if (!d->prefix_len) {
		calib_ok(c);
		return;
	}
	calib_ask(c, STEP_PREFIX, d->prefix);
}

static void calib_on_answer(void *ud, long status, const char *body, size_t len, const char *err)
{
	struct calib *c = ud;
	long n = answer_tokens(c, status, body, len, err);
	switch (c->step) {
	case STEP_A:
		if (n < 0 && c->messages && c->status != 404) {
			/* No chat form (llama.cpp): the plain form still gives
			 * the slope; the chat template is then not counted. */
			c->messages = false;
			calib_ask(c, STEP_A, c->a);
			return;
		}
		break;
	case STEP_B:
		break;
	case STEP_PREFIX:
		calib_prefix(c, n);
		return;
	}
	if (n < 0) {
		/* The server's words go into the description, which is shown
		 * and saved: scrubbed first. */
		redact_secrets(c->why, c->secrets);
		calib_fallback(c, c->status == 404 ? "no /tokenize (HTTP 404)" : c->why);
		return;
	}
	if (c->step == STEP_A) {
		c->ta = n;
		calib_ask(c, STEP_B, c->b);
	} else {
		calib_fit(c, n);
	}
}

struct calib *dataset_calibrate_start(struct dataset *d, struct http *h, const char *base_url,
				      struct curl_slist *headers, const char *const *secrets, const char *model,
				      const struct tls_opts *tls, calibrate_fn fn, void *ud)
{
	bool ended = false;
	struct calib *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->d = d;
	c->fn = fn;
	c->ud = ud;
	c->model = model;
	c->secrets = secrets;
	c->messages = d->api == OAI_CHAT;
	bool synth = d->kind == DATASET_SYNTHETIC;
	c->a = dataset_sample_text(d, synth ? SAMPLE_UNITS_SYNTH : SAMPLE_UNITS_FILE, &c->units);
	/* The sample twice, joined the way prompts join text: a space
	 * between synthetic words, a newline (one character) between lines. */
	char sep = synth ? ' ' : '\n';
	c->sep_units = synth ? 0 : 1;
	size_t al = c->a ? strlen(c->a) : 0;
	c->b = c->a ? malloc(2 * al + 2) : NULL;
	if (c->b) {
		memcpy(c->b, c->a, al);
		c->b[al] = sep;
		memcpy(c->b + al + 1, c->a, al + 1);
	}
	size_t ucap = strlen(base_url) + sizeof "/tokenize" + 64;
	c->url = malloc(ucap);
	c->f = fetch_new(h, ANSWER_MAX, calib_on_answer, c);
	if (!c->a || !c->b || !c->url || !c->f) {
		fetch_free(c->f);
		free(c->url);
		free(c->a);
		free(c->b);
		free(c);
		return NULL;
	}
	/* From here on fn is told, possibly before this returns (then the
	 * handle returned is already gone: a caller keeping it learns of the
	 * end through fn first). */
	if (url_join(base_url, "/tokenize", c->url, ucap) != 0) {
		calib_fallback(c, "cannot build the /tokenize URL");
		return CALIBRATE_ENDED;
	}
	CURL *e = fetch_easy(c->f);
	curl_easy_setopt(e, CURLOPT_URL, c->url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, TOKENIZE_TIMEOUT_MS);
	http_easy_tls(e, tls);
	if (c->units < MIN_UNITS) {
		/* A tiny file: too little text to measure. */
		calib_fallback(c, "too little text to calibrate");
		return CALIBRATE_ENDED;
	}
	c->ending = &ended;
	calib_ask(c, STEP_A, c->a);
	if (ended)
		return CALIBRATE_ENDED;
	c->ending = NULL;
	return c;
}

void dataset_calibrate_cancel(struct calib *c)
{
	if (!c || c == CALIBRATE_ENDED)
		return;
	fetch_free(c->f);
	free(c->url);
	free(c->a);
	free(c->b);
	free(c);
}
