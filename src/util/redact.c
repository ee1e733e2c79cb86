#include "config.h"

#include "infertop/redact.h"
#include "infertop/utf8.h"

#include <ctype.h>
#include <string.h>

void redact_url(const char *url, char *dst, size_t cap)
{
	if (!cap)
		return;
	dst[0] = '\0';
	if (!url)
		return;
	/* Query strings carry keys on some gateways (?key=, ?api_key=): they
	 * go with the password. */
	size_t end = strcspn(url, "?#");
	const char *sep = strstr(url, "://");
	size_t auth = sep && (size_t)(sep - url) < end ? (size_t)(sep - url) + 3 : 0;
	size_t hostend = auth + strcspn(url + auth, "/?#");
	const char *at = NULL;
	for (size_t i = auth; i < hostend; i++)
		if (url[i] == '@')
			at = url + i;
	size_t w = 0;
	for (size_t i = 0; i < end && w + 1 < cap; i++) {
		if (at && i >= auth && url + i <= at)
			continue;
		dst[w++] = url[i];
	}
	dst[w] = '\0';
}

/* Length of the valid UTF-8 sequence at s that is not a C1 control, 0
 * otherwise. */
static size_t printable_utf8(const unsigned char *s)
{
	uint32_t cp;
	size_t n = utf8_seq(s, strnlen((const char *)s, 4), &cp);
	return n > 1 && cp >= 0xa0 ? n : 0;
}

void redact_controls(char *t)
{
	if (!t)
		return;
	unsigned char *r = (unsigned char *)t, *w = r;
	while (*r) {
		unsigned char c = *r;
		size_t n;
		if (c >= 0x20 && c < 0x7f) {
			*w++ = *r++;
		} else if (c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
			*w++ = ' ';
			r++;
		} else if (c < 0x80) {
			*w++ = '?';    /* ESC, BEL, DEL and the other C0 controls */
			r++;
		} else if ((n = printable_utf8(r)) != 0) {
			memmove(w, r, n);
			w += n;
			r += n;
		} else {
			/* A C1 control (8-bit CSI is 0x9b, or U+009B in UTF-8)
			 * or a byte that is not UTF-8: one '?' for the lot. */
			*w++ = '?';
			r += c >= 0xc2 && c <= 0xdf && (r[1] & 0xc0) == 0x80 ? 2 : 1;
		}
	}
	*w = '\0';
}

void redact_userinfo(char *t)
{
	char *p = t;
	while ((p = strstr(p, "://"))) {
		char *host = p + 3;
		size_t n = strcspn(host, "/?# \t\n\"'");
		char *at = NULL;
		for (size_t i = 0; i < n; i++)
			if (host[i] == '@')
				at = host + i;
		if (at)
			memmove(host, at + 1, strlen(at + 1) + 1);
		p = host;
	}
	redact_controls(t);
}

static int token_char(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' ||
	       c == '=';
}

/* Replaces [p, p + n) by "***" inside the string t. */
static char *splice_stars(char *p, size_t n)
{
	memcpy(p, "***", 3);
	memmove(p + 3, p + n, strlen(p + n) + 1);
	return p + 3;
}

void redact_secrets(char *t, const char *const *secrets)
{
	if (!t)
		return;
	for (size_t i = 0; secrets && secrets[i]; i++) {
		size_t kl = strlen(secrets[i]);
		if (kl < 3)
			continue;
		char *p = t;
		while ((p = strstr(p, secrets[i])))
			p = splice_stars(p, kl);
	}
	for (char *p = t; (p = strstr(p, "Bearer ")) != NULL;) {
		p += 7;
		size_t n = 0;
		while (token_char((unsigned char)p[n]))
			n++;
		if (n > 3 || (n == 3 && memcmp(p, "***", 3) != 0))
			p = splice_stars(p, n);
		else
			p += n;
	}
	for (char *p = t; (p = strstr(p, "sk-")) != NULL;) {
		size_t n = 3;
		while (token_char((unsigned char)p[n]))
			n++;
		if (n >= 11 && (p == t || !token_char((unsigned char)p[-1])))
			p = splice_stars(p + 3, n - 3);
		else
			p += 3;
	}
	redact_userinfo(t);
}

int redact_looks_secret(const char *s)
{
	if (!s)
		return 0;
	if (strncmp(s, "sk-", 3) == 0 || strncmp(s, "Bearer ", 7) == 0 || strstr(s, "Authorization"))
		return 1;
	size_t n = 0, alpha = 0, digit = 0;
	for (; s[n]; n++) {
		if (!token_char((unsigned char)s[n]))
			return 0;
		alpha += isalpha((unsigned char)s[n]) != 0;
		digit += isdigit((unsigned char)s[n]) != 0;
	}
	return n >= 20 && alpha && digit;
}

void redact_controls_lines(char *text)
{
	if (!text)
		return;
	char *w = text;
	for (char *r = text;;) {
		char *nl = strchr(r, '\n');
		if (nl)
			*nl = '\0';
		redact_controls(r);
		size_t n = strlen(r);
		memmove(w, r, n);
		w += n;
		if (!nl)
			break;
		*w++ = '\n';
		r = nl + 1;
	}
	*w = '\0';
}
