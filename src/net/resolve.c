/* Every address of a DNS name, re-resolved on a timer (resolve.h).
 *
 * The resolver is glibc's getaddrinfo_a: it runs getaddrinfo in a thread of
 * its own and writes only the request's own result, which the loop reads
 * once gai_error() says it is complete (polled on a timer, with SIGEV_NONE:
 * no signal, no callback in another thread). c-ares is not in the stack;
 * curl's resolver only resolves for a transfer and never hands out every
 * address; a resolver child would need a pipe protocol for what
 * getaddrinfo_a already does. */
#include "config.h"

#include "infertop/resolve.h"
#include "infertop/url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"

#define POLL_S 0.25

int resolve_parse_spec(const char *spec, char *name, size_t namecap, int *port, const char **rest,
		       const char **why)
{
	static const char expect[] = "expected dns:NAME:PORT (a port from 1 to 65535)";
	*why = expect;
	if (strncmp(spec, "dns:", 4) != 0)
		return -1;
	const char *n = spec + 4, *w;
	size_t len = strcspn(n, "/");
	char host[RESOLVE_NAME_MAX + 1];
	bool bracket;
	int p;
	if (url_split_hostport(n, len, host, sizeof host, &p, &bracket, false, &w) != 0 || bracket || !host[0] ||
	    strlen(host) >= namecap || p < 1)
		return -1;
	snprintf(name, namecap, "%s", host);
	*port = p;
	*rest = n + len;
	return 0;
}

struct resolver {
	struct ev_loop *loop;
	char name[RESOLVE_NAME_MAX + 1];
	char port[8];
	struct addrinfo hints;
	struct gaicb cb;
	struct gaicb *list[1];
	bool pending;
	int64_t period_ns, next_ns;
	unsigned rounds;
	resolve_fn fn;
	void *ud;
	struct resolve_answer ans;
	ev_timer timer;
};

static void collect(struct resolver *r)
{
	int rc = gai_error(&r->cb);
	if (rc == EAI_INPROGRESS)
		return;
	r->pending = false;
	r->rounds++;
	struct resolve_answer *a = &r->ans;
	a->rc = rc;
	a->err = rc ? gai_strerror(rc) : NULL;
	a->n = 0;
	for (struct addrinfo *ai = rc ? NULL : r->cb.ar_result; ai && a->n < RESOLVE_MAX_ADDRS; ai = ai->ai_next) {
		bool v6 = ai->ai_family == AF_INET6;
		const void *addr = v6 ? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr
				      : (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr;
		if ((!v6 && ai->ai_family != AF_INET) || !inet_ntop(ai->ai_family, addr, a->addr[a->n], RESOLVE_ADDR_MAX))
			continue;
		int k;
		for (k = 0; k < a->n && strcmp(a->addr[k], a->addr[a->n]) != 0; k++)
			;
		if (k < a->n)
			continue;
		a->v6[a->n++] = v6;
	}
	if (r->cb.ar_result)
		freeaddrinfo(r->cb.ar_result);
	r->cb.ar_result = NULL;
	r->fn(r->ud, a);
}

static void begin(struct resolver *r)
{
	memset(&r->cb, 0, sizeof r->cb);
	r->cb.ar_name = r->name;
	r->cb.ar_service = r->port;
	r->cb.ar_request = &r->hints;
	r->list[0] = &r->cb;
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_NONE;
	int rc = getaddrinfo_a(GAI_NOWAIT, r->list, 1, &sev);
	if (rc != 0) {
		r->rounds++;
		r->ans.rc = rc;
		r->ans.err = gai_strerror(rc);
		r->ans.n = 0;
		r->fn(r->ud, &r->ans);
		return;
	}
	r->pending = true;
}

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct resolver *r = w->data;
	int64_t now = clock_now_ns();
	if (r->pending)
		collect(r);
	if (!r->pending && now >= r->next_ns) {
		r->next_ns = now + r->period_ns;
		begin(r);
	}
}

struct resolver *resolver_new(struct ev_loop *loop, const char *name, int port, int64_t period_ns, resolve_fn fn,
			      void *ud, char *err, size_t errcap)
{
	struct resolver *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->port, sizeof r->port, "%d", port);
	r->loop = loop;
	r->period_ns = period_ns;
	r->fn = fn;
	r->ud = ud;
	r->hints.ai_family = AF_UNSPEC;
	r->hints.ai_socktype = SOCK_STREAM;
	r->hints.ai_protocol = IPPROTO_TCP;
	ev_timer_init(&r->timer, on_timer, 0., POLL_S);
	r->timer.data = r;
	ev_timer_start(loop, &r->timer);
	return r;
}

unsigned resolver_rounds(const struct resolver *r)
{
	return r ? r->rounds : 0;
}

void resolver_free(struct resolver *r)
{
	if (!r)
		return;
	ev_timer_stop(r->loop, &r->timer);
	if (r->pending && gai_cancel(&r->cb) != EAI_CANCELED) {
		/* Running in glibc's thread: wait for it (bounded by the
		 * resolver's own timeout) so it never writes freed memory. */
		const struct gaicb *l[1] = {&r->cb};
		while (gai_error(&r->cb) == EAI_INPROGRESS)
			gai_suspend(l, 1, NULL);
	}
	if (r->cb.ar_result)
		freeaddrinfo(r->cb.ar_result);
	free(r);
}
