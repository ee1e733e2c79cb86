/* The control API's requests: routes, JSON bodies, --listen and the token.
 * Pure and fuzzed (tests/fuzz/fuzz_control.c); control.c serves them. */
#include "config.h"

#include "infertop/control_req.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/command.h"
#include "infertop/url.h"

static const struct {
	const char *path;
	enum control_route r;
	bool post;
} routes[] = {
	{ "/healthz", CONTROL_R_HEALTH, false },
	{ "/v1/status", CONTROL_R_STATUS, false },
	{ "/metrics", CONTROL_R_METRICS, false },
	{ "/v1/load", CONTROL_R_LOAD, true },
	{ "/v1/pause", CONTROL_R_PAUSE, true },
	{ "/v1/resume", CONTROL_R_RESUME, true },
	{ "/v1/snapshot", CONTROL_R_SNAPSHOT, true },
	{ "/v1/stop", CONTROL_R_STOP, true },
	{ "/v1/runs", CONTROL_R_RUNS, true },
	{ "/start-load", CONTROL_R_RUNS, true },
};

enum control_route control_req_route(const char *path, bool *post)
{
	size_t len = strcspn(path, "?");
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		if (strlen(routes[i].path) == len && memcmp(routes[i].path, path, len) == 0) {
			*post = routes[i].post;
			return routes[i].r;
		}
	}
	/* /v1/runs/ID and /v1/runs/ID/result: serve's, any method. */
	if (len > 9 && memcmp(path, "/v1/runs/", 9) == 0) {
		*post = false;
		return CONTROL_R_RUNS;
	}
	*post = false;
	return CONTROL_R_NONE;
}

static int refuse(char field[64], const char *name, char err[CONTROL_ERR_MAX], const char *msg)
{
	/* A field name comes from the client: cut, and only printable ASCII
	 * kept, so it cannot break the JSON or a terminal. */
	size_t n = 0;
	for (const char *p = name; *p && n < 63; p++)
		field[n++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	field[n] = '\0';
	snprintf(err, CONTROL_ERR_MAX, "%s", msg);
	return -1;
}

/* The body as a JSON object, nothing after it; NULL after refuse(). */
static cJSON *parse_object(const char *body, size_t len, char field[64], char err[CONTROL_ERR_MAX])
{
	if (len > CONTROL_BODY_MAX) {
		refuse(field, "", err, "request body too large");
		return NULL;
	}
	/* cJSON wants a NUL; a NUL inside the body ends it early, which the
	 * trailing-bytes check below then refuses. */
	char buf[CONTROL_BODY_MAX + 1];
	memcpy(buf, body, len);
	buf[len] = '\0';
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 0);
	if (!j) {
		refuse(field, "", err, "the body is not valid JSON");
		return NULL;
	}
	while (end && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	if (!end || (size_t)(end - buf) != len) {
		cJSON_Delete(j);
		refuse(field, "", err, "bytes after the JSON value");
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		refuse(field, "", err, "the body must be a JSON object");
		return NULL;
	}
	return j;
}

int control_req_parse_load(const char *body, size_t len, struct control_load *out, char field[64],
			   char err[CONTROL_ERR_MAX])
{
	field[0] = '\0';
	err[0] = '\0';
	memset(out, 0, sizeof *out);
	cJSON *j = parse_object(body, len, field, err);
	if (!j)
		return -1;
	int rc = 0, nconc = 0, nrate = 0;
	for (cJSON *it = j->child; it && rc == 0; it = it->next) {
		const char *k = it->string ? it->string : "";
		if (strcmp(k, "concurrency") == 0) {
			double d = it->valuedouble;
			if (nconc++)
				rc = refuse(field, k, err, "given twice");
			else if (!cJSON_IsNumber(it))
				rc = refuse(field, k, err, "must be a number");
			else if (!isfinite(d) || d != floor(d))
				rc = refuse(field, k, err, "must be a whole number");
			else if (d < 1 || d > (double)CMD_CONCURRENCY_MAX)
				rc = refuse(field, k, err, "out of range (1 to 1000000000)");
			else
				out->concurrency = (long)d;
		} else if (strcmp(k, "rate") == 0) {
			double d = it->valuedouble;
			if (nrate++)
				rc = refuse(field, k, err, "given twice");
			else if (!cJSON_IsNumber(it))
				rc = refuse(field, k, err, "must be a number");
			else if (!isfinite(d) || d < CMD_RATE_MIN || d > CMD_RATE_MAX)
				rc = refuse(field, k, err, "out of range (1/60 to 1000000 requests/s)");
			else
				out->rate = d;
		} else if (strcmp(k, "force") == 0) {
			if (!cJSON_IsBool(it))
				rc = refuse(field, k, err, "must be true or false");
			else
				out->force = cJSON_IsTrue(it);
		} else {
			rc = refuse(field, k, err, "unknown field (expected concurrency, rate or force)");
		}
	}
	if (rc == 0 && nconc + nrate != 1)
		rc = nconc ? refuse(field, "rate", err, "give concurrency or rate, not both")
			   : refuse(field, "concurrency", err, "missing: give concurrency or rate");
	out->is_rate = nrate == 1;
	cJSON_Delete(j);
	return rc;
}

int control_req_parse_empty(const char *body, size_t len, char field[64], char err[CONTROL_ERR_MAX])
{
	field[0] = '\0';
	err[0] = '\0';
	size_t i = 0;
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
		i++;
	if (i == len)
		return 0;
	cJSON *j = parse_object(body, len, field, err);
	if (!j)
		return -1;
	int rc = 0;
	if (j->child)
		rc = refuse(field, j->child->string ? j->child->string : "", err,
			    "unknown field (this request takes none)");
	cJSON_Delete(j);
	return rc;
}

/* NAME[:PORT] of n bytes to "name:port" (default_port when no port is
 * given). NAME is a
 * host name (letters, digits, '.', '-', '_'), an IPv4 address or an IPv6
 * one in brackets. 0, or -1 with why in *why. */
static int authority(const char *s, size_t n, int default_port, char out[CONTROL_HOSTPORT_MAX], const char **why)
{
	char host[CONTROL_HOSTPORT_MAX];
	char name[CONTROL_HOSTPORT_MAX - 8];   /* room left for ":65535" */
	int port;
	bool bracket;
	if (url_split_hostport(s, n, host, sizeof host, &port, &bracket, true, why) != 0) {
		if (bracket && strcmp(*why, "expected a port from 0 to 65535") != 0)
			*why = "expected an [IPv6] address";
		else if (strcmp(*why, "expected a port from 0 to 65535") == 0)
			*why = "expected a port from 1 to 65535 after the name";
		else
			*why = "expected a host name or an address";
		return -1;
	}
	size_t nl = 0, hl = strlen(host);
	if (bracket) {
		unsigned char a[sizeof(struct in6_addr)];
		if (hl == 0 || hl > INET6_ADDRSTRLEN || strspn(host, "0123456789abcdefABCDEF:.") != hl ||
		    inet_pton(AF_INET6, host, a) != 1) {
			*why = "expected an [IPv6] address";
			return -1;
		}
		name[nl++] = '[';
		for (size_t k = 0; k < hl; k++)
			name[nl++] = (char)tolower((unsigned char)host[k]);
		name[nl++] = ']';
	} else {
		static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_";
		if (hl == 0 || hl > 253 || strspn(host, ok) != hl) {
			*why = "expected a host name or an address";
			return -1;
		}
		for (size_t k = 0; k < hl; k++)
			name[nl++] = (char)tolower((unsigned char)host[k]);
	}
	name[nl] = '\0';
	if (port == 0) {
		*why = "expected a port from 1 to 65535 after the name";
		return -1;
	}
	snprintf(out, CONTROL_HOSTPORT_MAX, "%s:%d", name, port < 0 ? default_port : port);
	return 0;
}

int control_req_allow_host(const char *spec, int port, char out[CONTROL_HOSTPORT_MAX], char *err, size_t errcap)
{
	const char *why = NULL;
	if (authority(spec, strlen(spec), port, out, &why) != 0) {
		snprintf(err, errcap, "%s (NAME or NAME:PORT, e.g. gen-1.example or 10.0.0.7:8080)", why);
		return -1;
	}
	return 0;
}

int control_req_host_header(const char *value, char out[CONTROL_HOSTPORT_MAX])
{
	const char *why;
	return value ? authority(value, strlen(value), 80, out, &why) : -1;
}

int control_req_origin(const char *value, char out[CONTROL_HOSTPORT_MAX])
{
	static const char scheme[] = "http://";
	const char *why;
	if (!value || strncasecmp(value, scheme, sizeof scheme - 1) != 0)
		return -1;
	/* An origin is scheme, host and port: nothing after them. */
	const char *h = value + sizeof scheme - 1;
	return authority(h, strlen(h), 80, out, &why);
}

bool control_req_json_type(const char *value)
{
	static const char json[] = "application/json";
	if (!value)
		return false;
	while (*value == ' ' || *value == '\t')
		value++;
	if (strncasecmp(value, json, sizeof json - 1) != 0)
		return false;
	const char *p = value + sizeof json - 1;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p == '\0' || *p == ';';
}

bool control_req_token_ok(const char *header, const char *token)
{
	static const char scheme[] = "Bearer ";
	size_t plen = sizeof scheme - 1;
	if (!header || !token || !*token)
		return false;
	size_t hlen = strlen(header), tlen = strlen(token);
	unsigned diff = hlen != plen + tlen;
	if (hlen < plen || strncasecmp(header, scheme, plen) != 0)
		diff = 1;
	/* As many steps as the token has bytes, whatever the header holds. */
	const char *given = hlen >= plen ? header + plen : "";
	size_t glen = hlen >= plen ? hlen - plen : 0;
	for (size_t i = 0; i < tlen; i++) {
		unsigned char g = i < glen ? (unsigned char)given[i] : 0;
		diff |= (unsigned)(g ^ (unsigned char)token[i]);
	}
	return diff == 0;
}
