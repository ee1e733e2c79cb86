/* Where a fleet's generators are (fleet.h): a list, a file, or a DNS name
 * re-resolved on a timer (a Kubernetes headless Service answers with one
 * address per pod) by the one resolver of src/net/resolve.c, which never
 * stalls the loop. */
#include "config.h"

#include "infertop/fleet.h"
#include "infertop/url.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/resolve.h"

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
	const char *rest, *why;
	if (resolve_parse_spec(spec, name, namecap, port, &rest, &why) != 0 || *rest) {
		snprintf(err, errcap, "--discover %s: expected dns:NAME:PORT (a port from 1 to 65535)", spec);
		return -1;
	}
	return 0;
}

struct fleet_dns {
	struct fleet *f;
	char name[RESOLVE_NAME_MAX + 1];
	int port;
	struct resolver *r;
};

static void on_answer(void *ud, const struct resolve_answer *a)
{
	struct fleet_dns *d = ud;
	if (a->rc != 0) {
		fprintf(stderr, "infertop fleet: --discover %s: %s\n", d->name, a->err);
		return;
	}
	for (int i = 0; i < a->n; i++) {
		char url[FLEET_URL_MAX], err[256];
		if (a->v6[i])
			snprintf(url, sizeof url, "http://[%s]:%d", a->addr[i], d->port);
		else
			snprintf(url, sizeof url, "http://%s:%d", a->addr[i], d->port);
		if (fleet_add_endpoint(d->f, url, err, sizeof err) != 0)
			fprintf(stderr, "infertop fleet: %s\n", err);
	}
}

struct fleet_dns *fleet_dns_new(struct fleet *f, struct ev_loop *loop, const char *spec, char *err, size_t errcap)
{
	struct fleet_dns *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	if (fleet_dns_parse(spec, d->name, sizeof d->name, &d->port, err, errcap) != 0) {
		free(d);
		return NULL;
	}
	d->f = f;
	d->r = resolver_new(loop, d->name, d->port, FLEET_RESOLVE_NS, on_answer, d, err, errcap);
	if (!d->r) {
		free(d);
		return NULL;
	}
	return d;
}

unsigned fleet_dns_rounds(const struct fleet_dns *d)
{
	return d ? resolver_rounds(d->r) : 0;
}

void fleet_dns_free(struct fleet_dns *d)
{
	if (!d)
		return;
	resolver_free(d->r);
	free(d);
}
