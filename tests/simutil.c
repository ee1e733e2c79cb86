#include "config.h"

#include "simutil.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/clock.h"
#include "infertop/prom.h"

#define MAX_CHILDREN 16

static struct sim_child *children[MAX_CHILDREN];
static int atexit_set;

static void stop_all(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (children[i]) {
			sim_child_stop(children[i]);
			children[i] = NULL;
		}
	}
}

const char *su_bin(void)
{
	const char *b = getenv("INFERTOP_BIN");
	return b && *b ? b : "./infertop";
}

int su_spawn(const char *const *args, struct sim_child *out)
{
	if (!atexit_set) {
		atexit(stop_all);
		atexit_set = 1;
	}
	char err[512];
	if (sim_spawn(su_bin(), args, out, err, sizeof err) != 0) {
		fprintf(stderr, "su_spawn: %s\n", err);
		return -1;
	}
	for (int i = 0; i < MAX_CHILDREN; i++) {
		if (!children[i]) {
			children[i] = out;
			return 0;
		}
	}
	sim_child_stop(out);
	fprintf(stderr, "su_spawn: too many children\n");
	return -1;
}

int su_stop(struct sim_child *c)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (children[i] == c)
			children[i] = NULL;
	return sim_child_stop(c);
}

int su_teardown(void **state)
{
	(void)state;
	stop_all();
	return 0;
}

static int grow_append(char **p, size_t *len, size_t *cap, const char *d, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *len + n + 1)
			c *= 2;
		char *np = realloc(*p, c);
		if (!np)
			return -1;
		*p = np;
		*cap = c;
	}
	memcpy(*p + *len, d, n);
	*len += n;
	(*p)[*len] = '\0';
	return 0;
}

struct blocking {
	struct su_resp *r;
	size_t bcap, hcap;
};

static size_t on_body(char *d, size_t sz, size_t nm, void *ud)
{
	struct blocking *b = ud;
	return grow_append(&b->r->body, &b->r->len, &b->bcap, d, sz * nm) == 0 ? sz * nm : 0;
}

static size_t on_hdr(char *d, size_t sz, size_t nm, void *ud)
{
	struct blocking *b = ud;
	return grow_append(&b->r->headers, &b->r->hlen, &b->hcap, d, sz * nm) == 0 ? sz * nm : 0;
}

CURLcode su_request(int port, const char *method, const char *path, const char *body, long timeout_ms,
		    struct su_resp *r)
{
	memset(r, 0, sizeof *r);
	struct blocking b = { r, 0, 0 };
	char url[512];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	CURL *e = curl_easy_init();
	if (!e)
		return r->rc = CURLE_FAILED_INIT;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_hdr);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &b);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (body)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	if (method)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	r->rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME, &r->t_headers);
	if (!r->body)
		grow_append(&r->body, &r->len, &b.bcap, "", 0);
	if (!r->headers)
		grow_append(&r->headers, &r->hlen, &b.hcap, "", 0);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	return r->rc;
}

void su_resp_free(struct su_resp *r)
{
	free(r->body);
	free(r->headers);
	memset(r, 0, sizeof *r);
}

static int header_value(const char *block, const char *name, char *buf, size_t cap)
{
	size_t nl = strlen(name);
	for (const char *p = block; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		if (ll > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ')
				v++;
			size_t vl = (size_t)(p + ll - v);
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
				vl--;
			if (vl >= cap)
				vl = cap - 1;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return 0;
		}
		p = eol ? eol + 1 : NULL;
	}
	return -1;
}

int su_header(const struct su_resp *r, const char *name, char *buf, size_t cap)
{
	return header_value(r->headers, name, buf, cap);
}

/* ---- streams ---- */

static int push_event(struct su_stream *s, const char *data, size_t n, int64_t t)
{
	if (s->nev == s->evcap) {
		size_t c = s->evcap ? s->evcap * 2 : 64;
		struct su_event *ne = realloc(s->ev, c * sizeof *ne);
		if (!ne)
			return -1;
		s->ev = ne;
		s->evcap = c;
	}
	char *d = malloc(n + 1);
	if (!d)
		return -1;
	memcpy(d, data, n);
	d[n] = '\0';
	s->ev[s->nev].data = d;
	s->ev[s->nev].t = t;
	s->nev++;
	return 0;
}

/* Splits complete events (ended by a blank line) off raw. Only "data: "
 * lines are expected from the sim; anything else is a framing error. */
static void split_events(struct su_stream *s, int64_t now)
{
	for (;;) {
		const char *start = s->raw + s->scanned;
		const char *end = strstr(start, "\n\n");
		if (!end)
			return;
		char payload[65536];
		size_t pl = 0;
		for (const char *line = start; line < end + 1;) {
			const char *eol = memchr(line, '\n', (size_t)(end + 1 - line));
			size_t ll = (size_t)(eol - line);
			if (ll >= 6 && strncmp(line, "data: ", 6) == 0) {
				size_t dl = ll - 6;
				if (pl && pl < sizeof payload)
					payload[pl++] = '\n';
				if (pl + dl < sizeof payload) {
					memcpy(payload + pl, line + 6, dl);
					pl += dl;
				}
			} else {
				s->framing_error = 1;
			}
			line = eol + 1;
		}
		push_event(s, payload, pl, now);
		s->scanned = (size_t)(end + 2 - s->raw);
	}
}

static size_t stream_body(char *d, size_t sz, size_t nm, void *ud)
{
	struct su_stream *s = ud;
	int64_t now = clock_now_ns();
	if (grow_append(&s->raw, &s->len, &s->cap, d, sz * nm) != 0)
		return 0;
	split_events(s, now);
	return sz * nm;
}

static size_t stream_hdr(char *d, size_t sz, size_t nm, void *ud)
{
	struct su_stream *s = ud;
	size_t n = sz * nm;
	if (!s->t_headers)
		s->t_headers = clock_now_ns();
	char line[256];
	size_t c = n < sizeof line - 1 ? n : sizeof line - 1;
	memcpy(line, d, c);
	line[c] = '\0';
	char v[32];
	if (header_value(line, "Retry-After", v, sizeof v) == 0)
		snprintf(s->retry_after, sizeof s->retry_after, "%s", v);
	return n;
}

/* Supplying the body through a read callback timestamps the moment curl
 * sends the request, which CURLINFO times (taken from a start that lies
 * somewhere after curl_multi_add_handle) cannot give. */
static size_t stream_read(char *buf, size_t sz, size_t nm, void *ud)
{
	struct su_stream *s = ud;
	if (!s->t_sent)
		s->t_sent = clock_now_ns();
	size_t left = strlen(s->body_json) - s->body_off;
	size_t n = sz * nm < left ? sz * nm : left;
	memcpy(buf, s->body_json + s->body_off, n);
	s->body_off += n;
	return n;
}

int su_stream_init(struct su_stream *s, int port, const char *path, const char *json, long timeout_ms)
{
	memset(s, 0, sizeof *s);
	char url[512];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
	s->easy = curl_easy_init();
	s->body_json = strdup(json);
	s->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (!s->easy || !s->body_json || !s->hdrs)
		return -1;
	curl_easy_setopt(s->easy, CURLOPT_URL, url);
	curl_easy_setopt(s->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(s->body_json));
	curl_easy_setopt(s->easy, CURLOPT_READFUNCTION, stream_read);
	curl_easy_setopt(s->easy, CURLOPT_READDATA, s);
	curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->hdrs);
	curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, stream_body);
	curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(s->easy, CURLOPT_HEADERFUNCTION, stream_hdr);
	curl_easy_setopt(s->easy, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
	curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->easy, CURLOPT_TCP_NODELAY, 1L);
	/* One connection per stream, as concurrent streams need anyway. */
	curl_easy_setopt(s->easy, CURLOPT_FORBID_REUSE, 1L);
	if (timeout_ms > 0)
		curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	s->rc = CURLE_OK;
	return 0;
}

void su_stream_free(struct su_stream *s)
{
	if (s->easy)
		curl_easy_cleanup(s->easy);
	curl_slist_free_all(s->hdrs);
	free(s->body_json);
	free(s->raw);
	for (size_t i = 0; i < s->nev; i++)
		free(s->ev[i].data);
	free(s->ev);
	memset(s, 0, sizeof *s);
}

int su_stream_has_done(const struct su_stream *s)
{
	return s->nev > 0 && strcmp(s->ev[s->nev - 1].data, "[DONE]") == 0;
}

int su_multi_init(struct su_multi *mm)
{
	memset(mm, 0, sizeof *mm);
	mm->m = curl_multi_init();
	if (!mm->m)
		return -1;
	curl_multi_setopt(mm->m, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	curl_multi_setopt(mm->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
	return 0;
}

int su_multi_add(struct su_multi *mm, struct su_stream *s)
{
	if (mm->n == mm->cap) {
		size_t c = mm->cap ? mm->cap * 2 : 16;
		struct su_stream **ns = realloc(mm->s, c * sizeof *ns);
		if (!ns)
			return -1;
		mm->s = ns;
		mm->cap = c;
	}
	mm->s[mm->n++] = s;
	s->t_added = clock_now_ns();
	if (curl_multi_add_handle(mm->m, s->easy) != CURLM_OK)
		return -1;
	mm->running++;
	return 0;
}

static void drain(struct su_multi *mm)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(mm->m, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct su_stream *s = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
		s->rc = msg->data.result;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &s->status);
		s->finished = 1;
		curl_multi_remove_handle(mm->m, msg->easy_handle);
		mm->running--;
	}
}

int su_multi_until(struct su_multi *mm, int (*cond)(void *ud), void *ud, long timeout_ms)
{
	int64_t deadline = clock_now_ns() + (int64_t)timeout_ms * CLOCK_NS_PER_MS;
	for (;;) {
		int still = 0;
		curl_multi_perform(mm->m, &still);
		drain(mm);
		for (size_t i = 0; i < mm->n; i++) {
			if (!mm->s[i]->finished)
				curl_easy_getinfo(mm->s[i]->easy, CURLINFO_RESPONSE_CODE, &mm->s[i]->status);
		}
		if (cond && cond(ud))
			return 1;
		if (mm->running <= 0)
			return 0;
		if (clock_now_ns() >= deadline)
			return -1;
		curl_multi_poll(mm->m, NULL, 0, 20, NULL);
	}
}

void su_multi_cleanup(struct su_multi *mm)
{
	for (size_t i = 0; i < mm->n; i++) {
		if (!mm->s[i]->finished) {
			curl_multi_remove_handle(mm->m, mm->s[i]->easy);
			mm->s[i]->finished = 1;
		}
	}
	if (mm->m)
		curl_multi_cleanup(mm->m);
	free(mm->s);
	memset(mm, 0, sizeof *mm);
}

double su_metric(int port, const char *path, const char *name, const char *matchers)
{
	struct su_resp r;
	if (su_request(port, NULL, path, NULL, 5000, &r) != CURLE_OK || r.status != 200) {
		su_resp_free(&r);
		return -1;
	}
	double v = 0;
	int n = prom_sum(r.body, r.len, name, matchers, &v);
	su_resp_free(&r);
	return n > 0 ? v : -1;
}

int su_is_token_event(const char *json)
{
	cJSON *root = cJSON_Parse(json);
	if (!root)
		return 0;
	int tok = 0;
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(root, "choices");
	const cJSON *c0 = cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL;
	if (c0) {
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(c0, "delta");
		const cJSON *content = delta ? cJSON_GetObjectItemCaseSensitive(delta, "content") : NULL;
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(c0, "text");
		if (cJSON_IsString(content) && content->valuestring[0])
			tok = 1;
		if (cJSON_IsString(text) && text->valuestring[0])
			tok = 1;
	}
	cJSON_Delete(root);
	return tok;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double su_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
