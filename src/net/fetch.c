#include "config.h"

#include "infertop/fetch.h"
#include "infertop/bodybuf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fetch {
	struct http_xfer x;     /* first: http hands it back to done() */
	struct http *h;
	CURL *easy;
	fetch_fn fn;
	void *ud;
	size_t max_body;
	char *buf;
	size_t len, cap;
	bool too_large, in_flight;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t fetch_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct fetch *f = ud;
	size_t n = size * nmemb;
	int rc = bodybuf_append(&f->buf, &f->len, &f->cap, p, n, f->max_body, 4096);
	/* 0 ends the transfer: the rest is not wanted. */
	f->too_large = rc == BODYBUF_TOO_LARGE;
	return rc == BODYBUF_OK ? n : 0;
}

static void fetch_done(struct http_xfer *x, CURLcode rc)
{
	struct fetch *f = (struct fetch *)x;
	f->in_flight = false;
	long status = 0;
	char err[CURL_ERROR_SIZE + 48] = "";
	if (f->too_large)
		snprintf(err, sizeof err, "answer larger than %zu bytes", f->max_body);
	else if (rc != CURLE_OK)
		snprintf(err, sizeof err, "%s", f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc));
	else
		curl_easy_getinfo(f->easy, CURLINFO_RESPONSE_CODE, &status);
	/* The answer is handed over, then forgotten: fn may send again. */
	char *body = f->buf;
	size_t len = f->len;
	f->buf = NULL;
	f->len = f->cap = 0;
	f->too_large = false;
	f->errbuf[0] = '\0';
	f->fn(f->ud, err[0] ? 0 : status, body ? body : "", len, err[0] ? err : NULL);
	free(body);
}

struct fetch *fetch_new(struct http *h, size_t max_body, fetch_fn fn, void *ud)
{
	struct fetch *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->h = h;
	f->fn = fn;
	f->ud = ud;
	f->max_body = max_body;
	f->x.done = fetch_done;
	f->x.taken_fd = -1;
	f->easy = curl_easy_init();
	if (!f->easy) {
		free(f);
		return NULL;
	}
	curl_easy_setopt(f->easy, CURLOPT_PRIVATE, &f->x);
	curl_easy_setopt(f->easy, CURLOPT_WRITEFUNCTION, fetch_write);
	curl_easy_setopt(f->easy, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(f->easy, CURLOPT_ERRORBUFFER, f->errbuf);
	curl_easy_setopt(f->easy, CURLOPT_NOSIGNAL, 1L);
	return f;
}

CURL *fetch_easy(struct fetch *f)
{
	return f->easy;
}

int fetch_send(struct fetch *f)
{
	if (f->in_flight)
		return -1;
	f->len = 0;
	f->too_large = false;
	f->errbuf[0] = '\0';
	if (http_add(f->h, f->easy, false) != 0)
		return -1;
	f->in_flight = true;
	return 0;
}

void fetch_free(struct fetch *f)
{
	if (!f)
		return;
	if (f->in_flight)
		http_remove(f->h, f->easy);
	http_release(f->h, &f->x);
	curl_easy_cleanup(f->easy);
	free(f->buf);
	free(f);
}
