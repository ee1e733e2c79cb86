#include "config.h"

#include "infertop/dataset.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/redact.h"
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
 * count is within half a token (at most 3 tries). */

#define SAMPLE_UNITS_SYNTH 500
#define SAMPLE_UNITS_FILE 8000
#define MIN_UNITS 100
#define TOKENIZE_TIMEOUT_MS 30000L
#define ANSWER_MAX ((size_t)16 << 20)
#define PREFIX_TRIES 3

struct answer {
	char *p;
	size_t len, cap;
	bool overflow;
};

struct tok {
	CURL *c;
	char *url;
	struct curl_slist *headers;
	const char *model;
	bool messages;          /* chat form: {"messages": [...]} */
	char why[160];          /* the last failure, for the note */
	long status;            /* the last HTTP status, 0 = none */
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct answer *a = ud;
	size_t n = size * nmemb;
	if (a->overflow || a->len + n + 1 > ANSWER_MAX) {
		a->overflow = true;
		return n;
	}
	if (a->len + n + 1 > a->cap) {
		size_t cap = a->cap ? a->cap : 4096;
		while (cap < a->len + n + 1)
			cap *= 2;
		char *p = realloc(a->p, cap);
		if (!p) {
			a->overflow = true;
			return n;
		}
		a->p = p;
		a->cap = cap;
	}
	memcpy(a->p + a->len, ptr, n);
	a->len += n;
	a->p[a->len] = '\0';
	return n;
}

static char *request_json(const struct tok *t, const char *text)
{
	cJSON *root = cJSON_CreateObject();
	bool ok = root && (!t->model || cJSON_AddStringToObject(root, "model", t->model));
	if (ok && t->messages) {
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

/* Tokens of text by the server, or -1 with t->why and t->status set; -2
 * when out of memory. */
static long tokenize(struct tok *t, const char *text)
{
	char *body = request_json(t, text);
	if (!body)
		return -2;
	struct answer a = {0};
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(t->c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(t->c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(t->c, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(t->c, CURLOPT_ERRORBUFFER, cerr);
	CURLcode cc = curl_easy_perform(t->c);
	free(body);
	long n = -1;
	t->status = 0;
	if (cc != CURLE_OK) {
		snprintf(t->why, sizeof t->why, "POST /tokenize failed: %.120s", cerr[0] ? cerr : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(t->c, CURLINFO_RESPONSE_CODE, &t->status);
	if (t->status < 200 || t->status > 299) {
		char m[96];
		oai_error_body_message(a.p, a.len, m, sizeof m);
		snprintf(t->why, sizeof t->why, "POST /tokenize answered HTTP %ld%s%s", t->status, m[0] ? ": " : "", m);
		goto out;
	}
	n = a.overflow ? -1 : answer_count(a.p, a.len);
	/* Text always makes tokens: none means the server did not read it
	 * (llama.cpp answers {"tokens": []} to the chat form). */
	if (n <= 0) {
		n = -1;
		snprintf(t->why, sizeof t->why, "POST /tokenize gave no token count");
	}
out:
	free(a.p);
	return n;
}

static int fallback(struct dataset *d, const char *why, char *err, size_t errcap)
{
	snprintf(d->note, sizeof d->note, "%s", why);
	dataset_update_desc(d);
	snprintf(err, errcap, "%s; prompt lengths are estimated", why);
	return 0;
}

/* Measures the prefix as built and rebuilds it until close. */
static int fit_prefix(struct dataset *d, struct tok *t)
{
	for (int i = 0; i < PREFIX_TRIES && d->prefix_len; i++) {
		long n = tokenize(t, d->prefix);
		if (n == -2)
			return -1;
		if (n < 0)
			return 0; /* keep the estimate for the prefix */
		double got = (double)n - d->overhead;
		if (got < 1)
			got = 1;
		d->prefix_tok = got;
		if (fabs(got - (double)d->prefix_tokens) <= 0.5)
			break;
		if (i + 1 == PREFIX_TRIES)
			break;
		d->prefix_scale *= (double)d->prefix_tokens / got;
		if (dataset_build_prefix(d) != 0)
			return -1;
	}
	return 0;
}

int dataset_calibrate(struct dataset *d, const char *base_url, struct curl_slist *headers,
		      const char *const *secrets, const char *model, bool insecure, char *err,
		      size_t errcap)
{
	if (errcap)
		err[0] = '\0';
	bool synth = d->kind == DATASET_SYNTHETIC;
	long units = 0;
	char *a = dataset_sample_text(d, synth ? SAMPLE_UNITS_SYNTH : SAMPLE_UNITS_FILE, &units);
	/* The sample twice, joined the way prompts join text: a space
	 * between synthetic words, a newline (one character) between lines. */
	const char *sep = synth ? " " : "\n";
	long sep_units = synth ? 0 : 1;
	size_t al = a ? strlen(a) : 0;
	char *b = a ? malloc(2 * al + 2) : NULL;
	if (b) {
		memcpy(b, a, al);
		b[al] = sep[0];
		memcpy(b + al + 1, a, al + 1);
	}
	struct tok t = {.headers = headers, .model = model, .messages = d->api == OAI_CHAT};
	size_t ucap = strlen(base_url) + sizeof "/tokenize" + 64;
	t.url = malloc(ucap);
	t.c = curl_easy_init();
	int rc = -1;
	if (!a || !b || !t.url || !t.c) {
		snprintf(err, errcap, "out of memory");
		goto out;
	}
	if (url_join(base_url, "/tokenize", t.url, ucap) != 0) {
		snprintf(err, errcap, "cannot build the /tokenize URL");
		goto out;
	}
	curl_easy_setopt(t.c, CURLOPT_URL, t.url);
	curl_easy_setopt(t.c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(t.c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(t.c, CURLOPT_TIMEOUT_MS, TOKENIZE_TIMEOUT_MS);
	curl_easy_setopt(t.c, CURLOPT_NOSIGNAL, 1L);
	if (insecure) {
		curl_easy_setopt(t.c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(t.c, CURLOPT_SSL_VERIFYHOST, 0L);
	}

	if (units < MIN_UNITS) {
		/* A tiny file: too little text to measure. */
		rc = fallback(d, "too little text to calibrate", err, errcap);
		goto out;
	}
	long ta = tokenize(&t, a);
	if (ta < 0 && ta != -2 && t.messages && t.status != 404) {
		/* No chat form (llama.cpp): the plain form still gives the
		 * slope; the chat template is then not counted. */
		t.messages = false;
		ta = tokenize(&t, a);
	}
	long tb = ta >= 0 ? tokenize(&t, b) : ta;
	if (ta == -2 || tb == -2) {
		snprintf(err, errcap, "out of memory");
		goto out;
	}
	if (ta < 0 || tb < 0) {
		/* The server's words go into the description, which is shown
		 * and saved: scrubbed first. */
		redact_secrets(t.why, secrets);
		rc = fallback(d, t.status == 404 ? "no /tokenize (HTTP 404)" : t.why, err, errcap);
		goto out;
	}
	double slope = (double)(tb - ta) / (double)(units + sep_units);
	double overhead = (double)ta - slope * (double)units;
	if (!(slope > 0) || !isfinite(slope)) {
		rc = fallback(d, "POST /tokenize counts did not grow with the text", err, errcap);
		goto out;
	}
	d->slope = slope;
	d->overhead = overhead > 0 ? overhead : 0;
	d->calibrated = true;
	d->note[0] = '\0';
	d->prefix_scale = 1.0;
	if (dataset_build_prefix(d) != 0 || fit_prefix(d, &t) != 0) {
		snprintf(err, errcap, "out of memory");
		goto out;
	}
	dataset_update_desc(d);
	rc = 0;
out:
	if (t.c)
		curl_easy_cleanup(t.c);
	free(t.url);
	free(a);
	free(b);
	return rc;
}
