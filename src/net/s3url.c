#include "config.h"

/* --upload's addresses, keys and headers (see s3url.h). */

#include "infertop/s3url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *err, size_t cap, const char *msg)
{
	if (cap)
		snprintf(err, cap, "%s", msg);
}

static bool bucket_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

static bool alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A prefix segment "." or ".." would be resolved away by some stores and
 * kept by others: the object would not be where the user looks. */
static bool prefix_ok(const char *p)
{
	const char *seg = p;
	for (const char *q = p;; q++) {
		if (*q && (unsigned char)*q < 0x20)
			return false;
		if (*q == 0x7f)
			return false;
		if (*q == '/' || !*q) {
			size_t n = (size_t)(q - seg);
			if (*q == '/' && n == 0)
				return false; /* "//" or a leading '/' */
			if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
				return false;
			if (!*q)
				return true;
			seg = q + 1;
		}
	}
}

int s3url_parse(const char *url, struct s3_target *t, char *err, size_t errcap)
{
	memset(t, 0, sizeof *t);
	if (!url) {
		say(err, errcap, "expected s3://BUCKET/PREFIX or gs://BUCKET/PREFIX");
		return -1;
	}
	const char *p;
	if (strncmp(url, "s3://", 5) == 0) {
		t->store = S3_STORE_S3;
		p = url + 5;
	} else if (strncmp(url, "gs://", 5) == 0) {
		t->store = S3_STORE_GCS;
		p = url + 5;
	} else {
		say(err, errcap, "expected s3://BUCKET/PREFIX or gs://BUCKET/PREFIX");
		return -1;
	}
	size_t n = strcspn(p, "/");
	if (n < 3 || n > S3URL_BUCKET_MAX) {
		say(err, errcap, "the bucket name must be 3 to 63 characters");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!bucket_char(p[i])) {
			say(err, errcap, "the bucket name takes lower-case letters, digits, '.', '-' and '_' only");
			return -1;
		}
	if (!alnum_lower(p[0]) || !alnum_lower(p[n - 1])) {
		say(err, errcap, "the bucket name must start and end with a letter or a digit");
		return -1;
	}
	memcpy(t->bucket, p, n);
	t->bucket[n] = '\0';
	if (strstr(t->bucket, "..")) {
		say(err, errcap, "the bucket name must not hold \"..\"");
		return -1;
	}
	if (t->store == S3_STORE_S3 && strchr(t->bucket, '_')) {
		say(err, errcap, "an S3 bucket name takes no '_'");
		return -1;
	}
	const char *prefix = p[n] == '/' ? p + n + 1 : p + n;
	if (strlen(prefix) > S3URL_PREFIX_MAX) {
		say(err, errcap, "the prefix is longer than 512 bytes");
		return -1;
	}
	if (*prefix && !prefix_ok(prefix)) {
		say(err, errcap, "the prefix must hold no control characters, no \"//\" and no \".\" or \"..\" part");
		return -1;
	}
	snprintf(t->prefix, sizeof t->prefix, "%s", prefix);
	return 0;
}

int s3url_key(const struct s3_target *t, const char *path, char *key, size_t cap)
{
	if (!path)
		return -1;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -1;
	int n = snprintf(key, cap, "%s%s", t->prefix, base);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* RFC 3986 unreserved bytes stay, '/' stays (it separates the key's
 * parts), everything else is %XX in upper case: the form SigV4's canonical
 * URI has, so what curl signs is what S3 checks. */
static int encode_key(const char *key, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
		bool keep = (*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') ||
			    *k == '-' || *k == '_' || *k == '.' || *k == '~' || *k == '/';
		if (o + (keep ? 1 : 3) >= cap)
			return -1;
		if (keep) {
			out[o++] = (char)*k;
		} else {
			out[o++] = '%';
			out[o++] = hex[*k >> 4];
			out[o++] = hex[*k & 15];
		}
	}
	if (o >= cap)
		return -1;
	out[o] = '\0';
	return 0;
}

int s3url_endpoint_check(const char *endpoint, char *err, size_t errcap)
{
	const char *h = NULL;
	if (endpoint && strncmp(endpoint, "http://", 7) == 0)
		h = endpoint + 7;
	else if (endpoint && strncmp(endpoint, "https://", 8) == 0)
		h = endpoint + 8;
	if (!h || !*h || *h == '/' || *h == ':') {
		say(err, errcap, "expected an http:// or https:// URL with a host");
		return -1;
	}
	size_t hostlen = strcspn(h, "/");
	if (memchr(h, '@', hostlen)) {
		say(err, errcap, "the endpoint takes no user or password (keys come from the environment)");
		return -1;
	}
	if (strpbrk(endpoint, "?#")) {
		say(err, errcap, "the endpoint takes no query or fragment");
		return -1;
	}
	for (const char *c = endpoint; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
			say(err, errcap, "the endpoint holds a space or a control character");
			return -1;
		}
	return 0;
}

int s3url_object_url(const struct s3_target *t, const char *endpoint, const char *region, const char *key,
		     char *out, size_t cap)
{
	char enc[3 * (S3URL_PREFIX_MAX + 256) + 1];
	if (encode_key(key, enc, sizeof enc) != 0)
		return -1;
	int n;
	if (endpoint) {
		if (s3url_endpoint_check(endpoint, NULL, 0) != 0)
			return -1;
		size_t len = strlen(endpoint);
		while (len > 0 && endpoint[len - 1] == '/')
			len--;
		n = snprintf(out, cap, "%.*s/%s/%s", (int)len, endpoint, t->bucket, enc);
	} else if (t->store == S3_STORE_GCS) {
		n = snprintf(out, cap, "https://storage.googleapis.com/%s/%s", t->bucket, enc);
	} else if (strchr(t->bucket, '.')) {
		n = snprintf(out, cap, "https://s3.%s.amazonaws.com/%s/%s", region, t->bucket, enc);
	} else {
		n = snprintf(out, cap, "https://%s.s3.%s.amazonaws.com/%s", t->bucket, region, enc);
	}
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static const char *set(s3_env_fn env, const char *name)
{
	const char *v = env(name);
	return v && *v ? v : NULL;
}

const char *s3url_region(const struct s3_target *t, const char *option, s3_env_fn env)
{
	if (option && *option)
		return option;
	const char *r = set(env, "AWS_REGION");
	if (!r)
		r = set(env, "AWS_DEFAULT_REGION");
	if (r)
		return r;
	return t->store == S3_STORE_GCS ? "auto" : "us-east-1";
}

int s3url_creds(const struct s3_target *t, s3_env_fn env, struct s3_creds *c, char *err, size_t errcap)
{
	memset(c, 0, sizeof *c);
	if (t->store == S3_STORE_GCS && set(env, "GOOGLE_HMAC_ACCESS_ID") && set(env, "GOOGLE_HMAC_SECRET")) {
		c->id_var = "GOOGLE_HMAC_ACCESS_ID";
		c->secret_var = "GOOGLE_HMAC_SECRET";
	} else {
		c->id_var = "AWS_ACCESS_KEY_ID";
		c->secret_var = "AWS_SECRET_ACCESS_KEY";
		/* HMAC keys carry no session token. */
		c->token = set(env, "AWS_SESSION_TOKEN");
	}
	c->id = set(env, c->id_var);
	c->secret = set(env, c->secret_var);
	if (!c->id || !c->secret) {
		if (t->store == S3_STORE_GCS)
			say(err, errcap, "no keys: set GOOGLE_HMAC_ACCESS_ID and GOOGLE_HMAC_SECRET (a Cloud Storage "
					 "HMAC key), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
		else
			say(err, errcap, "no keys: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
					 "AWS_SESSION_TOKEN for temporary ones)");
		return -1;
	}
	/* The id and the secret meet as "id:secret" in CURLOPT_USERPWD. */
	if (strchr(c->id, ':')) {
		snprintf(err, errcap, "%s holds a ':', which no access key id has", c->id_var);
		return -1;
	}
	if (strpbrk(c->secret, "\r\n") || (c->token && strpbrk(c->token, "\r\n"))) {
		snprintf(err, errcap, "%s or AWS_SESSION_TOKEN holds a line break", c->secret_var);
		return -1;
	}
	return 0;
}

int s3url_sigv4(const char *region, char *out, size_t cap)
{
	if (!region || !*region || strlen(region) > 32)
		return -1;
	for (const char *r = region; *r; r++)
		if (!alnum_lower(*r) && *r != '-')
			return -1;
	int n = snprintf(out, cap, "aws:amz:%s:s3", region);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int s3url_headers(const struct s3_creds *c, char *lines[2])
{
	int n = 0;
	if (!(lines[n++] = strdup("x-amz-content-sha256: UNSIGNED-PAYLOAD")))
		return -1;
	if (c->token) {
		size_t len = strlen(c->token) + 32;
		if (!(lines[n] = malloc(len))) {
			s3url_headers_free(lines, n);
			return -1;
		}
		snprintf(lines[n++], len, "x-amz-security-token: %s", c->token);
	}
	return n;
}

void s3url_headers_free(char *lines[2], int n)
{
	for (int i = 0; i < n; i++) {
		if (lines[i]) {
			memset(lines[i], 0, strlen(lines[i]));
			free(lines[i]);
			lines[i] = NULL;
		}
	}
}
