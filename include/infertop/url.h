#ifndef INFERTOP_URL_H
#define INFERTOP_URL_H

#include <stdbool.h>
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
/* scheme://host[:port] of an http or https URL, its path, query and
 * fragment dropped (a service's base: a fleet's generator). 0, or
 * URL_BASE_BAD (not an http(s) URL with a host), URL_BASE_CREDENTIALS (it
 * carries a user or password: refused, never shown) or URL_BASE_LONG. */
#define URL_BASE_BAD (-1)
#define URL_BASE_CREDENTIALS (-2)
#define URL_BASE_LONG (-3)
int url_service_base(const char *url, char *out, size_t cap);
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

/* The one HOST:PORT splitter (listen addresses, Host and Origin values,
 * --allow-host, dns:NAME:PORT): s (n bytes, not NUL-terminated) is
 * HOST, HOST:PORT, [IPv6] or [IPv6]:PORT. host gets HOST without brackets
 * ("" when s starts with ':'), *bracketed whether it had them, *port the
 * port (0 to 65535), -1 when none was given and port_optional. HOST
 * itself is not checked: the callers know what they accept. 0, or -1 with
 * why in *why. */
int url_split_hostport(const char *s, size_t n, char *host, size_t hostcap, int *port, bool *bracketed,
		       bool port_optional, const char **why);
/* --listen ADDR:PORT: an IPv4 address, a bracketed IPv6 one ([::1]:8080)
 * or "localhost", and a port 0-65535 (0: any). host gets the address
 * without brackets. loopback: 127.0.0.0/8, ::1 or localhost. 0, or -1
 * with a message in err. */
int url_parse_listen(const char *spec, char *host, size_t hostcap, int *port, bool *loopback, char *err,
		     size_t errcap);

#endif
