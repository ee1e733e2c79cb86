/* The run's transport, decided once from its options: see transport.h. */
#include "config.h"

#include "infertop/transport.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <strings.h>

#include "infertop/h1.h"

static bool is_https(const char *url)
{
	return strncasecmp(url, "https:", 6) == 0;
}

bool transport_proxied(const char *url)
{
	const char *proxies[] = {"http_proxy", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"};
	size_t n = is_https(url) ? 5 : 3;
	for (size_t i = 0; i < n; i++) {
		const char *v = getenv(proxies[i]);
		if (v && *v)
			return true;
	}
	return false;
}

const char *transport_name(const char *url, bool curl_client, char *const *headers, size_t nheaders)
{
	if (!url || curl_client || transport_proxied(url))
		return "curl";
	/* The head request_new would build: one it refuses goes by curl. */
	struct curl_slist *l = NULL;
	for (size_t i = 0; i < nheaders; i++) {
		struct curl_slist *more = curl_slist_append(l, headers[i]);
		if (!more)
			break;
		l = more;
	}
	size_t len;
	char *head = h1_request_head(url, l, &len);
	curl_slist_free_all(l);
	if (!head)
		return "curl";
	free(head);
	return is_https(url) ? "direct+tls" : "direct";
}
