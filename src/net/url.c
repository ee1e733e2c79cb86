#include "config.h"

#include "infertop/url.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdbool.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies a curl-allocated string into out and frees it. */
static int take(char *s, char *out, size_t cap)
{
	if (!s)
		return -1;
	size_t n = strlen(s);
	int rc = n < cap ? 0 : -1;
	if (rc == 0)
		memcpy(out, s, n + 1);
	curl_free(s);
	return rc;
}

static CURLU *parse(const char *url)
{
	CURLU *u = curl_url();
	if (u && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
		curl_url_cleanup(u);
		return NULL;
	}
	return u;
}

char *url_base_parse(const char *in, char *err, size_t errcap)
{
	CURLU *u = curl_url();
	char *host = NULL, *path = NULL, *out = NULL;
	if (!u) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	if (strncmp(in, "http://", 7) != 0 && strncmp(in, "https://", 8) != 0) {
		snprintf(err, errcap, "the URL must start with http:// or https://");
		goto done;
	}
	CURLUcode rc = curl_url_set(u, CURLUPART_URL, in, 0);
	if (rc != CURLUE_OK) {
		snprintf(err, errcap, "not a valid URL (%s)", curl_url_strerror(rc));
		goto done;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host) {
		snprintf(err, errcap, "the URL has no host");
		goto done;
	}
	curl_url_get(u, CURLUPART_PATH, &path, 0);
	size_t n = path ? strlen(path) : 0;
	while (n > 0 && path[n - 1] == '/')
		n--;
	if (n >= 3 && memcmp(path + n - 3, "/v1", 3) == 0)
		n -= 3;
	char *p = malloc(n + 2);
	if (!p) {
		snprintf(err, errcap, "out of memory");
		goto done;
	}
	memcpy(p, path ? path : "", n);
	p[n] = '\0';
	if (n == 0)
		strcpy(p, "/");
	rc = curl_url_set(u, CURLUPART_PATH, p, 0);
	free(p);
	curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
	char *whole = NULL;
	if (rc != CURLUE_OK || curl_url_get(u, CURLUPART_URL, &whole, 0) != CURLUE_OK) {
		snprintf(err, errcap, "not a valid URL");
		goto done;
	}
	out = strdup(whole);
	curl_free(whole);
	if (!out) {
		snprintf(err, errcap, "out of memory");
		goto done;
	}
	/* "http://h:8000", as users write it and earlier files saved it. */
	size_t ol = strlen(out);
	if (ol > 0 && out[ol - 1] == '/' && !strchr(out, '?'))
		out[ol - 1] = '\0';
done:
	curl_free(host);
	curl_free(path);
	curl_url_cleanup(u);
	return out;
}

int url_join(const char *base, const char *path, char *out, size_t cap)
{
	CURLU *u = parse(base);
	if (!u)
		return -1;
	char *bp = NULL;
	int rc = -1;
	curl_url_get(u, CURLUPART_PATH, &bp, 0);
	size_t n = bp ? strlen(bp) : 0;
	while (n > 0 && bp[n - 1] == '/')
		n--;
	size_t pl = strlen(path);
	char *p = malloc(n + pl + 1);
	if (p) {
		memcpy(p, bp ? bp : "", n);
		memcpy(p + n, path, pl + 1);
		char *whole = NULL;
		curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
		if (curl_url_set(u, CURLUPART_PATH, p, 0) == CURLUE_OK &&
		    curl_url_get(u, CURLUPART_URL, &whole, 0) == CURLUE_OK)
			rc = take(whole, out, cap);
		free(p);
	}
	curl_free(bp);
	curl_url_cleanup(u);
	return rc;
}

int url_origin(const char *url, char *out, size_t cap)
{
	CURLU *u = parse(url);
	if (!u)
		return -1;
	curl_url_set(u, CURLUPART_USER, NULL, 0);
	curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
	curl_url_set(u, CURLUPART_PATH, "/", 0);
	curl_url_set(u, CURLUPART_QUERY, NULL, 0);
	curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
	char *whole = NULL;
	int rc = curl_url_get(u, CURLUPART_URL, &whole, 0) == CURLUE_OK ? take(whole, out, cap) : -1;
	curl_url_cleanup(u);
	if (rc == 0) {
		size_t n = strlen(out);
		if (n > 0 && out[n - 1] == '/')
			out[n - 1] = '\0';
		for (char *p = out; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	}
	return rc;
}

int url_service_base(const char *url, char *out, size_t cap)
{
	CURLU *u = parse(url);
	if (!u)
		return URL_BASE_BAD;
	char *scheme = NULL, *user = NULL, *pass = NULL, *host = NULL, *port = NULL;
	int rc = URL_BASE_BAD;
	bool web = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
		   (strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0);
	if (!web || curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0])
		goto out;
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PASSWORD, &pass, 0) == CURLUE_OK) {
		rc = URL_BASE_CREDENTIALS;
		goto out;
	}
	curl_url_get(u, CURLUPART_PORT, &port, 0);
	int n = snprintf(out, cap, "%s://%s%s%s", scheme, host, port ? ":" : "", port ? port : "");
	rc = n >= 0 && (size_t)n < cap ? 0 : URL_BASE_LONG;
out:
	curl_free(scheme);
	curl_free(user);
	curl_free(pass);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

int url_path(const char *url, char *out, size_t cap)
{
	CURLU *u = parse(url);
	if (!u)
		return -1;
	char *p = NULL, *q = NULL;
	int rc = -1;
	if (curl_url_get(u, CURLUPART_PATH, &p, 0) == CURLUE_OK && p) {
		curl_url_get(u, CURLUPART_QUERY, &q, 0);
		int w = snprintf(out, cap, "%s%s%s", p, q ? "?" : "", q ? q : "");
		rc = w >= 0 && (size_t)w < cap ? 0 : -1;
	}
	curl_free(p);
	curl_free(q);
	curl_url_cleanup(u);
	return rc;
}

int url_on_port(const char *base, const char *port, const char *path, char *out, size_t cap)
{
	CURLU *u = parse(base);
	if (!u)
		return -1;
	char *whole = NULL;
	int rc = -1;
	if (curl_url_set(u, CURLUPART_PORT, port, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_PATH, path, 0) == CURLUE_OK) {
		curl_url_set(u, CURLUPART_QUERY, NULL, 0);
		curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
		if (curl_url_get(u, CURLUPART_URL, &whole, 0) == CURLUE_OK)
			rc = take(whole, out, cap);
	}
	curl_url_cleanup(u);
	return rc;
}

static int list_push(char ***list, size_t *n, const char *s, size_t len)
{
	char **nl = realloc(*list, (*n + 2) * sizeof *nl);
	if (!nl)
		return -1;
	*list = nl;
	if (!(nl[*n] = strndup(s, len)))
		return -1;
	nl[++*n] = NULL;
	return 0;
}

char **url_secrets(const char *url)
{
	size_t n = 0;
	char **list = calloc(1, sizeof *list);
	CURLU *u = url ? parse(url) : NULL;
	if (!list || !u) {
		curl_url_cleanup(u);
		return list;
	}
	char *pw = NULL, *q = NULL;
	int rc = 0;
	if (curl_url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK && pw && *pw)
		rc |= list_push(&list, &n, pw, strlen(pw));
	/* Each value as sent (encoded), and decoded too, as echoed. */
	if (curl_url_get(u, CURLUPART_QUERY, &q, 0) == CURLUE_OK && q) {
		for (char *p = q; *p && rc == 0;) {
			size_t len = strcspn(p, "&");
			char *eq = memchr(p, '=', len);
			if (eq && p + len > eq + 1) {
				rc |= list_push(&list, &n, eq + 1, (size_t)(p + len - eq - 1));
				char *dec = curl_easy_unescape(NULL, eq + 1, (int)(p + len - eq - 1), NULL);
				if (dec && strcmp(dec, list[n - 1]) != 0)
					rc |= list_push(&list, &n, dec, strlen(dec));
				curl_free(dec);
			}
			p += len + (p[len] == '&');
		}
	}
	curl_free(pw);
	curl_free(q);
	curl_url_cleanup(u);
	if (rc) {
		url_secrets_free(list);
		return NULL;
	}
	return list;
}

void url_secrets_free(char **list)
{
	for (size_t i = 0; list && list[i]; i++) {
		memset(list[i], 0, strlen(list[i]));
		free(list[i]);
	}
	free(list);
}

int url_split_hostport(const char *s, size_t n, char *host, size_t hostcap, int *port, bool *bracketed,
		       bool port_optional, const char **why)
{
	size_t hs = 0, hl, i;
	*bracketed = n && s[0] == '[';
	if (*bracketed) {
		const char *close = memchr(s, ']', n);
		if (!close) {
			*why = "expected [IPv6]";
			return -1;
		}
		hs = 1;
		hl = (size_t)(close - s) - 1;
		i = hl + 2;
		if (i < n && s[i] != ':') {
			*why = "expected [IPv6]:PORT";
			return -1;
		}
	} else {
		/* Unbracketed, HOST has no colon: the first one ends it. */
		const char *colon = memchr(s, ':', n);
		hl = colon ? (size_t)(colon - s) : n;
		i = hl;
	}
	if (memchr(s + hs, '\0', hl) || hl + 1 > hostcap) {
		*why = "address too long";
		return -1;
	}
	memcpy(host, s + hs, hl);
	host[hl] = '\0';
	if (i >= n) {
		*port = -1;
		if (!port_optional) {
			*why = "expected a port after the address";
			return -1;
		}
		return 0;
	}
	/* ":" and 1 to 5 digits, at most 65535. */
	size_t d = n - i - 1;
	long p = d >= 1 && d <= 5 ? 0 : -1;
	for (size_t k = i + 1; k < n && p >= 0; k++)
		p = s[k] >= '0' && s[k] <= '9' ? p * 10 + (s[k] - '0') : -1;
	if (p < 0 || p > 65535) {
		*why = "expected a port from 0 to 65535";
		return -1;
	}
	*port = (int)p;
	return 0;
}

int url_parse_listen(const char *spec, char *host, size_t hostcap, int *port, bool *loopback, char *err,
		     size_t errcap)
{
	const char *why = NULL;
	bool bracket;
	char h[INET6_ADDRSTRLEN + 1];
	if (!strchr(spec, ':') || spec[0] == ':') {
		snprintf(err, errcap, "expected ADDR:PORT, e.g. 127.0.0.1:9464");
		return -1;
	}
	if (url_split_hostport(spec, strlen(spec), h, sizeof h, port, &bracket, false, &why) != 0) {
		if (spec[0] == '[' && strcmp(why, "expected a port from 0 to 65535") != 0)
			why = "expected [IPv6]:PORT";
		else if (strcmp(why, "address too long") != 0 && strcmp(why, "expected a port from 0 to 65535") != 0)
			why = "expected ADDR:PORT, e.g. 127.0.0.1:9464";
		snprintf(err, errcap, "%s", why);
		return -1;
	}
	if (bracket && !h[0]) {
		snprintf(err, errcap, "expected [IPv6]:PORT");
		return -1;
	}
	if (strlen(h) + 1 > hostcap) {
		snprintf(err, errcap, "address too long");
		return -1;
	}
	snprintf(host, hostcap, "%s", h);
	unsigned char a[sizeof(struct in6_addr)];
	if (!bracket && strcmp(host, "localhost") == 0) {
		*loopback = true;
	} else if (!bracket && inet_pton(AF_INET, host, a) == 1) {
		*loopback = a[0] == 127;
	} else if (bracket && inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char one[16] = { [15] = 1 };
		*loopback = memcmp(a, one, 16) == 0;
	} else {
		snprintf(err, errcap, "expected an IPv4 address, [IPv6] or localhost before the port");
		return -1;
	}
	return 0;
}
