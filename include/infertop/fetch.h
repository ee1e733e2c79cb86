#ifndef INFERTOP_FETCH_H
#define INFERTOP_FETCH_H

#include <curl/curl.h>
#include <stddef.h>

#include "infertop/http.h"

/* One small HTTP exchange on the loop whose whole answer is wanted at
 * once (the probe's GET /v1/models, calibration's POST /tokenize): the
 * caller sets the request on fetch_easy(), fetch_send() adds it to the
 * loop's transfers, and fn gets the answer when it is complete. fn may
 * send the same fetch again (the connection is kept) or free it. */
struct fetch;

/* status: the HTTP status, 0 when there was no answer; then err holds
 * libcurl's words (or "answer larger than N bytes"), else err is NULL.
 * body is NUL-terminated, "" when empty. */
typedef void (*fetch_fn)(void *ud, long status, const char *body, size_t len, const char *err);

struct fetch *fetch_new(struct http *h, size_t max_body, fetch_fn fn, void *ud);
CURL *fetch_easy(struct fetch *f);
int fetch_send(struct fetch *f);
/* Safe in fn and while in flight (the transfer is dropped unanswered). */
void fetch_free(struct fetch *f);

#endif
