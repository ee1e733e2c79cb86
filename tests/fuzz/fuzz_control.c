/* The control API's request parser under arbitrary bytes: it must never
 * crash, read out of bounds or leak, and what it accepts must be in
 * range. The first byte picks the parser (load body, empty body, --listen,
 * route, token, Host, Origin, Content-Type); the rest is its input,
 * without a terminating NUL for the bodies. Aborts on a violation. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/command.h"
#include "infertop/url.h"
#include "infertop/control_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "name:port": a lower-case name of host characters (or an [IPv6]) and a
 * port from 1 to 65535, so it compares as a string. */
static void check_hostport(const char *hp)
{
	const char *colon = strrchr(hp, ':');
	if (!colon || colon == hp || strlen(hp) >= CONTROL_HOSTPORT_MAX)
		abort();
	long port = strtol(colon + 1, NULL, 10);
	if (port < 1 || port > 65535)
		abort();
	for (const char *p = hp; p < colon; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && !strchr(".-_[]:", *p))
			abort();
}

static void check_refusal(const char *field, const char *err)
{
	/* Always a message; a field name only of printable ASCII without
	 * quotes or backslashes, so it goes into JSON and onto a screen. */
	if (err[0] == '\0' || strlen(err) >= CONTROL_ERR_MAX || strlen(field) >= 64)
		abort();
	for (const char *p = field; *p; p++)
		if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	char field[64], err[CONTROL_ERR_MAX];
	switch (data[0] % 8) {
	case 0: {
		struct control_load l;
		if (control_req_parse_load(in, len, &l, field, err) != 0) {
			check_refusal(field, err);
		} else if (l.is_rate) {
			if (!isfinite(l.rate) || l.rate < CMD_RATE_MIN || l.rate > CMD_RATE_MAX)
				abort();
		} else if (l.concurrency < 1 || l.concurrency > CMD_CONCURRENCY_MAX) {
			abort();
		}
		break;
	}
	case 1:
		if (control_req_parse_empty(in, len, field, err) != 0)
			check_refusal(field, err);
		break;
	default: {
		/* The others take strings: stop at the first NUL. */
		char *s = malloc(len + 1);
		if (!s)
			return 0;
		memcpy(s, in, len);
		s[len] = '\0';
		char hp[CONTROL_HOSTPORT_MAX];
		if (data[0] % 8 == 5) {
			if (control_req_host_header(s, hp) == 0)
				check_hostport(hp);
		} else if (data[0] % 8 == 6) {
			if (control_req_origin(s, hp) == 0) {
				if (strncasecmp(s, "http://", 7) != 0)
					abort();
				check_hostport(hp);
			}
		} else if (data[0] % 8 == 7) {
			/* Only application/json, then nothing or parameters. */
			if (control_req_json_type(s) && !strcasestr(s, "application/json"))
				abort();
		} else if (data[0] % 8 == 2) {
			char host[64], e[128];
			int port = -1;
			bool lb;
			if (url_parse_listen(s, host, sizeof host, &port, &lb, e, sizeof e) == 0 &&
			    (port < 0 || port > 65535 || strlen(host) >= sizeof host))
				abort();
		} else if (data[0] % 8 == 3) {
			bool post;
			enum control_route r = control_req_route(s, &post);
			if (r < CONTROL_R_NONE || r >= CONTROL_R_N)
				abort();
		} else {
			/* Only the exact header passes. */
			bool ok = control_req_token_ok(s, "tok");
			if (ok != (strlen(s) == 10 && strncasecmp(s, "Bearer ", 7) == 0 && strcmp(s + 7, "tok") == 0))
				abort();
		}
		free(s);
		break;
	}
	}
	return 0;
}
