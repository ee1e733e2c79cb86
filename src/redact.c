#include "config.h"

#include "infertop/redact.h"

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
}
