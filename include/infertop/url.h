#ifndef INFERTOP_URL_H
#define INFERTOP_URL_H

#include <stddef.h>

/* Every URL infertop builds goes through libcurl's URL API (CURLU), so a
 * base URL with credentials, a port, an IPv6 host or a query string
 * (Azure's ?api-version=...) yields endpoints that keep each part where it
 * belongs. Showing a URL is redact.h's job. */

/* A target's base URL as given by the user: http or https with a host;
 * trailing slashes and one trailing /v1 are dropped (endpoints append
 * /v1/...), the query is kept, the fragment dropped. Returns a malloc'd
 * string, or NULL with the reason in err (which never quotes the URL: it
 * may hold a password). */
char *url_base_parse(const char *in, char *err, size_t errcap);
/* base's path + path (which starts with '/'), base's query kept. 0, or -1
 * when it does not fit in cap or base is not a URL. */
int url_join(const char *base, const char *path, char *out, size_t cap);
/* scheme://host[:port] in lower case, without credentials. */
int url_origin(const char *url, char *out, size_t cap);
/* The path and query of url ("/metrics"), or -1. */
int url_path(const char *url, char *out, size_t cap);
/* What of a URL must never be shown: its password and the values of its
 * query (gateways carry keys and signatures there), as a malloc'd
 * NULL-terminated list of malloc'd strings (free with url_secrets_free);
 * NULL when out of memory. */
char **url_secrets(const char *url);
void url_secrets_free(char **list);
/* base's scheme, credentials and host with another port and path, no
 * query (Triton serves metrics on its own port). */
int url_on_port(const char *base, const char *port, const char *path, char *out, size_t cap);

#endif
