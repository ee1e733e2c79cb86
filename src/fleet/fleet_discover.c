/* Where a fleet's generators are (fleet.h): a list, a file, or a DNS name
 * re-resolved on a timer (a Kubernetes headless Service answers with one
 * address per pod).
 *
 * The resolver is glibc's getaddrinfo_a: it runs getaddrinfo in a thread of
 * its own and writes only the request's own result, which the loop reads
 * once gai_error() says it is complete (polled on the fleet's timer, with
 * SIGEV_NONE: no signal, no callback in another thread). c-ares is not in
 * the stack; curl's resolver only resolves for a transfer and never hands
 * out every address; a resolver child would need a pipe protocol for what
 * getaddrinfo_a already does. A slow DNS server therefore never stalls
 * the loop: the next round starts only after the last one ended. */
#include "config.h"

#include "infertop/fleet.h"
#include "infertop/url.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"

#define NAME_MAX_LEN 254

int fleet_add_list(struct fleet *f, const char *list, char *err, size_t errcap)
{
	const char *p = list;
	int n = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		char url[FLEET_URL_MAX];
		while (len && (*p == ' ' || *p == '\t'))
			p++, len--;
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
			len--;
		if (len >= sizeof url) {
			snprintf(err, errcap, "a generator URL is too long");
			return -1;
		}
		if (len) {
			snprintf(url, sizeof url, "%.*s", (int)len, p);
			if (fleet_add_endpoint(f, url, err, errcap) != 0)
				return -1;
			n++;
		}
		p += strcspn(p, ",");
		if (*p == ',')
			p++;
	}
	if (!n) {
		snprintf(err, errcap, "--targets: no URL given");
		return -1;
	}
	return 0;
}

int fleet_add_file(struct fleet *f, const char *path, char *err, size_t errcap)
{
	FILE *in = fopen(path, "r");
	if (!in) {
		snprintf(err, errcap, "--targets-file %s: %s", path, strerror(errno));
		return -1;
	}
	char line[FLEET_URL_MAX + 2];
	int rc = 0, n = 0;
	while (rc == 0 && fgets(line, sizeof line, in)) {
		line[strcspn(line, "#\n")] = '\0';
		size_t k = strspn(line, " \t\r");
		if (line[k] == '\0')
			continue;
		rc = fleet_add_list(f, line + k, err, errcap);
		n++;
	}
	fclose(in);
	if (rc == 0 && !n) {
		snprintf(err, errcap, "--targets-file %s: no URL in it", path);
		rc = -1;
	}
	return rc;
}

int fleet_dns_parse(const char *spec, char *name, size_t namecap, int *port, char *err, size_t errcap)
{
	if (strncmp(spec, "dns:", 4) != 0) {
		snprintf(err, errcap, "--discover %s: expected dns:NAME:PORT", spec);
		return -1;
	}
	const char *n = spec + 4, *why;
	char host[NAME_MAX_LEN + 1];
	bool bracket;
	int p;
	if (url_split_hostport(n, strlen(n), host, sizeof host, &p, &bracket, false, &why) != 0 || bracket ||
	    !host[0] || strlen(host) >= namecap || p < 1) {
		snprintf(err, errcap, "--discover %s: expected dns:NAME:PORT (a port from 1 to 65535)", spec);
		return -1;
	}
	snprintf(name, namecap, "%s", host);
	*port = p;
	return 0;
}

struct fleet_dns {
	struct fleet *f;
	struct ev_loop *loop;
	char name[NAME_MAX_LEN + 1];
	char port[8];
	struct addrinfo hints;
	struct gaicb cb;
	struct gaicb *list[1];
	bool pending;
	int64_t next_ns;
	unsigned rounds;
	ev_timer timer;
};

static void dns_collect(struct fleet_dns *d)
{
	int rc = gai_error(&d->cb);
	if (rc == EAI_INPROGRESS)
		return;
	d->pending = false;
	d->rounds++;
	if (rc != 0) {
		fprintf(stderr, "infertop fleet: --discover %s: %s\n", d->name, gai_strerror(rc));
		return;
	}
	for (struct addrinfo *a = d->cb.ar_result; a; a = a->ai_next) {
		char host[INET6_ADDRSTRLEN], url[FLEET_URL_MAX], err[256];
		const void *addr = a->ai_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr
							    : (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr;
		if (!inet_ntop(a->ai_family, addr, host, sizeof host))
			continue;
		if (a->ai_family == AF_INET6)
			snprintf(url, sizeof url, "http://[%s]:%s", host, d->port);
		else
			snprintf(url, sizeof url, "http://%s:%s", host, d->port);
		if (fleet_add_endpoint(d->f, url, err, sizeof err) != 0)
			fprintf(stderr, "infertop fleet: %s\n", err);
	}
	freeaddrinfo(d->cb.ar_result);
	d->cb.ar_result = NULL;
}

static void dns_begin(struct fleet_dns *d)
{
	memset(&d->cb, 0, sizeof d->cb);
	d->cb.ar_name = d->name;
	d->cb.ar_service = d->port;
	d->cb.ar_request = &d->hints;
	d->list[0] = &d->cb;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_NONE;
	int rc = getaddrinfo_a(GAI_NOWAIT, d->list, 1, &sev);
	if (rc != 0) {
		fprintf(stderr, "infertop fleet: --discover %s: %s\n", d->name, gai_strerror(rc));
		d->rounds++;
		return;
	}
	d->pending = true;
}

static void on_dns_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct fleet_dns *d = w->data;
	int64_t now = clock_now_ns();
	if (d->pending)
		dns_collect(d);
	if (!d->pending && now >= d->next_ns) {
		d->next_ns = now + FLEET_RESOLVE_NS;
		dns_begin(d);
	}
}

struct fleet_dns *fleet_dns_new(struct fleet *f, struct ev_loop *loop, const char *spec, char *err, size_t errcap)
{
	struct fleet_dns *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	int port;
	if (fleet_dns_parse(spec, d->name, sizeof d->name, &port, err, errcap) != 0) {
		free(d);
		return NULL;
	}
	d->f = f;
	d->loop = loop;
	snprintf(d->port, sizeof d->port, "%d", port);
	d->hints.ai_family = AF_UNSPEC;
	d->hints.ai_socktype = SOCK_STREAM;
	d->hints.ai_protocol = IPPROTO_TCP;
	ev_timer_init(&d->timer, on_dns_timer, 0., 0.25);
	d->timer.data = d;
	ev_timer_start(loop, &d->timer);
	return d;
}

unsigned fleet_dns_rounds(const struct fleet_dns *d)
{
	return d ? d->rounds : 0;
}

void fleet_dns_free(struct fleet_dns *d)
{
	if (!d)
		return;
	ev_timer_stop(d->loop, &d->timer);
	if (d->pending && gai_cancel(&d->cb) != EAI_CANCELED) {
		/* Running in glibc's thread: wait for it (bounded by the
		 * resolver's own timeout) so it never writes freed memory. */
		const struct gaicb *l[1] = {&d->cb};
		while (gai_error(&d->cb) == EAI_INPROGRESS)
			gai_suspend(l, 1, NULL);
	}
	if (d->cb.ar_result)
		freeaddrinfo(d->cb.ar_result);
	free(d);
}
