#ifndef INFERTOP_TRANSPORT_H
#define INFERTOP_TRANSPORT_H

/* Which transport a run's requests take (request.h says how each works):
 * the direct HTTP/1.1 path, over its own TLS for https, unless libcurl is
 * asked for, a proxy is set in the environment, or the URL is one the
 * direct path's request head refuses. Pure but for the environment, so
 * the result writer and the header can name it without an engine. */

#include <stdbool.h>
#include <stddef.h>

/* A proxy set in the environment for url's scheme: libcurl's to use. */
bool transport_proxied(const char *url);
/* "direct", "direct+tls" or "curl" (curl_client: --http-client curl). */
const char *transport_name(const char *url, bool curl_client, char *const *headers, size_t nheaders);

#endif
