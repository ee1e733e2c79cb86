#ifndef INFERTOP_HTTP_H
#define INFERTOP_HTTP_H

#include <curl/curl.h>
#include <ev.h>

/* libcurl's multi interface driven by libev: one ev_io per socket curl
 * asks for, one ev_timer for curl's timeout. Every transfer stores a
 * struct http_xfer* as CURLOPT_PRIVATE; its done() runs once the transfer
 * ends, after the handle has been removed from the multi. */
struct http_xfer {
	void (*done)(struct http_xfer *x, CURLcode rc);
};

struct http;

struct http *http_new(struct ev_loop *loop);
void http_free(struct http *h);
int http_add(struct http *h, CURL *easy);
void http_remove(struct http *h, CURL *easy);
/* Connection cache size: keep-alive connections kept for reuse. Sized to
 * the load so steady-state requests never reconnect. */
void http_set_cache(struct http *h, long connections);
long http_sockets(const struct http *h);

#endif
