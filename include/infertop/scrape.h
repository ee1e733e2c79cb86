#ifndef INFERTOP_SCRAPE_H
#define INFERTOP_SCRAPE_H

/* Periodic GET of the server's Prometheus endpoint (and of a DCGM exporter)
 * through the engine's curl multi and libev loop: never blocks, never more
 * than one scrape per endpoint in flight, backs off while an endpoint
 * fails and recovers by itself. Results land in a struct server_state. */

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/options.h"
#include "infertop/http.h"
#include "infertop/server.h"

#define SCRAPE_MAX_BODY (16u << 20)	/* larger responses fail with "too large" */
#define SCRAPE_BACKOFF_MAX_NS (30LL * 1000000000LL)
#define SCRAPE_STALE_AFTER 3		/* failures in a row before stale turns down */

struct scrape;

/* From cfg: metrics_url (NULL = the --server profile's default URL on
 * cfg->url, or, for auto, the candidates of profile_default_urls() tried in
 * turn until one serves known metrics; "none" = off), metrics_interval_ns,
 * server, gpu_metrics_url, watch_metrics, window_ns, insecure, headers and
 * the API key (both sent only to the target's own origin). With 2+
 * metrics_urls each is a server replica with its own scrape, and out holds
 * their sum (profile_raw_add()) and one server_replica each. out is
 * initialised here and written only by the scraper; it must outlive it.
 * NULL with a message in err (bad --watch-metric, bad URL, no memory). */
struct scrape *scrape_new(struct ev_loop *loop, struct http *http, const struct config *cfg,
			  struct server_state *out, char *err, size_t errcap);
/* First scrape now, then every interval. */
void scrape_start(struct scrape *s);
/* Stops the timers and removes in-flight transfers. An endpoint that never
 * answered is marked down with the reason. Idempotent. */
void scrape_stop(struct scrape *s);
void scrape_free(struct scrape *s);

/* Called on the engine tick with the client's sliding-window output tokens
 * and the window's length: sets joules_per_token (mean GPU power over the
 * window x seconds / tokens) and its run aggregate. */
void scrape_update_derived(struct scrape *s, int64_t now_ns, uint64_t window_output_tokens,
			   double window_seconds);

#endif
