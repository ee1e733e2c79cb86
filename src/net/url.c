#include "config.h"

#include "infertop/url.h"

#include <ctype.h>
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
