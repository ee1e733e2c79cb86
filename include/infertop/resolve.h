#ifndef INFERTOP_RESOLVE_H
#define INFERTOP_RESOLVE_H

/* A DNS name resolved to every address it has, now and again every period,
 * without ever blocking the loop: a Kubernetes headless Service answers
 * with one address per pod, and pods come and go. Used by the fleet's
 * --discover and by --metrics-discover (server replicas). */

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RESOLVE_NAME_MAX 254
#define RESOLVE_ADDR_MAX 46	/* INET6_ADDRSTRLEN */
#define RESOLVE_MAX_ADDRS 64	/* more in one answer are dropped */

/* "dns:NAME:PORT" followed by anything from the first '/' on (a path the
 * caller may accept or refuse): NAME, PORT (1-65535) and *rest (the text
 * after PORT, "" when none). 0, or -1 with why in *why ("expected ..."). */
int resolve_parse_spec(const char *spec, char *name, size_t namecap, int *port, const char **rest,
		       const char **why);

/* One finished resolution: rc 0 with n addresses (numeric, IPv6 ones
 * flagged, duplicates removed, in the resolver's order), or rc a
 * getaddrinfo error (err its message, n 0). */
struct resolve_answer {
	int rc;
	const char *err;
	int n;
	char addr[RESOLVE_MAX_ADDRS][RESOLVE_ADDR_MAX];
	bool v6[RESOLVE_MAX_ADDRS];
};
typedef void (*resolve_fn)(void *ud, const struct resolve_answer *a);

struct resolver;
/* Resolves name (port: the service, for the hints) now and then every
 * period_ns, calling fn on the loop after each round. glibc's getaddrinfo_a
 * runs getaddrinfo in a thread of its own and writes only its request's
 * result; the loop polls gai_error on a short timer (SIGEV_NONE: no signal,
 * no callback in another thread), so a slow DNS server never stalls it and
 * a round starts only after the last one ended. NULL with err (no memory). */
struct resolver *resolver_new(struct ev_loop *loop, const char *name, int port, int64_t period_ns, resolve_fn fn,
			      void *ud, char *err, size_t errcap);
/* Rounds finished so far (ok or not). */
unsigned resolver_rounds(const struct resolver *r);
/* Stops the timer; waits for a round still in glibc's thread (bounded by
 * the resolver's own timeout) so it never writes freed memory. */
void resolver_free(struct resolver *r);

#endif
