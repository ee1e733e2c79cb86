/* Fuzz target for the server metric maps: arbitrary bytes as one or two
 * scrapes (split at the first NUL) through every profile and auto
 * detection, DCGM parsing, --watch-metric parsing, default URLs, and the
 * JSON block and progress fragment built from the result. Every value
 * marked valid must be finite. */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/profile.h"
#include "infertop/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok)
{
	if (!ok)
		abort();
}

static void check(const struct server_value *v)
{
	require(!v->valid || isfinite(v->v));
}

static void check_state(const struct server_state *st)
{
	for (int g = 0; g < SRV_NGAUGES; g++)
		check(&st->gauge[g]);
	for (int l = 0; l < SRVL_N; l++) {
		check(&st->p50[l]);
		check(&st->p90[l]);
		check(&st->p99[l]);
		check(&st->mean[l]);
		check(&st->run_p50[l]);
		check(&st->run_mean[l]);
	}
	for (int w = 0; w < st->nwatch; w++) {
		check(&st->watch[w].value);
		check(&st->watch[w].rate);
	}
	require(memchr(st->detected, '\0', sizeof st->detected) != NULL);
	require(memchr(st->note, '\0', sizeof st->note) != NULL);
	char brief[96];
	server_format_brief(st, brief, sizeof brief);
	require(strlen(brief) < sizeof brief);
	cJSON *j = server_to_json(st);
	char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
	free(txt);
	cJSON_Delete(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(data, '\0', size);
	size_t first = nul ? (size_t)(nul - text) : size;
	size_t second_off = nul ? first + 1 : size;
	char err[256];
	static const char *const watch[] = { "vllm:num_requests_running", "a{b=\"c\",d=\"\"}", "c_total" };

	static const int profiles[] = { PROFILE_AUTO, PROFILE_VLLM, PROFILE_SGLANG, PROFILE_TRITON };
	for (size_t k = 0; k < sizeof profiles / sizeof profiles[0]; k++) {
		int p = profiles[k];
		struct profile_tracker *t = profile_tracker_new(p, watch, 3, 1000000000LL, 1000000000LL, err, sizeof err);
		if (!t)
			return 0;
		struct server_state *st = malloc(sizeof *st);
		if (!st) {
			profile_tracker_free(t);
			return 0;
		}
		server_state_init(st);
		st->status = SERVER_UP;
		(void)profile_tracker_update(t, text, first, 0, 1000000000LL, st, err, sizeof err);
		(void)profile_tracker_update(t, text + second_off, size - second_off, PROM_OPENMETRICS, 2000000000LL, st,
					     err, sizeof err);
		(void)profile_tracker_update(t, text, first, 0, 3000000000LL, st, err, sizeof err);
		check_state(st);
		profile_tracker_free(t);

		struct gpu_reading rd;
		if (gpu_parse_dcgm(text, size, 0, st, &rd, err, sizeof err) >= 0) {
			require(st->ngpus >= 1 && st->ngpus <= SERVER_MAX_GPUS);
			for (int i = 0; i < st->ngpus; i++)
				require(memchr(st->gpu[i].name, '\0', sizeof st->gpu[i].name) != NULL);
		}
		free(st);
	}

	/* The first line as a watch expression and as a base URL. */
	char line[600];
	const char *nl = memchr(text, '\n', first);
	size_t n = nl ? (size_t)(nl - text) : first;
	if (n >= sizeof line)
		n = sizeof line - 1;
	memcpy(line, text, n);
	line[n] = '\0';
	struct profile_watch_expr w;
	if (profile_watch_parse(line, &w, err, sizeof err) == 0) {
		require(w.name[0] != '\0' && w.nm >= 0 && w.nm <= PROFILE_WATCH_MATCHERS);
	}
	char urls[PROFILE_MAX_CANDIDATES][PROFILE_URL_MAX];
	for (int p = PROFILE_AUTO; p < PROFILE_COUNT; p++) {
		int k = profile_default_urls(p, line, urls, PROFILE_MAX_CANDIDATES);
		require(k >= -1 && k <= PROFILE_MAX_CANDIDATES);
		for (int i = 0; i < k; i++)
			require(strlen(urls[i]) < PROFILE_URL_MAX);
	}
	return 0;
}
