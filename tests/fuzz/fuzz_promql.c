/* Fuzz target for the Prometheus HTTP API side of server replicas: the
 * selector parser and query builder on the bytes as a string, and the
 * instant-query answer splitter on the same bytes, whose every group must
 * parse as strict Prometheus text. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/prom.h"
#include "infertop/promql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';

	struct promql_selector sel;
	char err[300], q[2048];
	if (promql_selector_parse(text, &sel, err, sizeof err) == 0) {
		const char *names[] = { "a", "vllm:b_bucket" };
		require(sel.n >= 0 && sel.n <= PROMQL_MAX_MATCHERS);
		if (promql_query_build(&sel, names, 2, q, sizeof q) == 0) {
			/* What was built parses back to the same matchers. */
			struct promql_selector back;
			const char *rest = strchr(q, ',');
			char again[2100];
			snprintf(again, sizeof again, "{%s", rest ? rest + 1 : "}");
			require(promql_selector_parse(again, &back, err, sizeof err) == 0);
			require(back.n == sel.n);
			for (int i = 0; i < sel.n; i++)
				require(strcmp(back.m[i].value, sel.m[i].value) == 0 &&
					strcmp(back.m[i].op, sel.m[i].op) == 0);
		}
	} else {
		require(strstr(err, "expected a label selector") != NULL);
	}

	/* The answer splitter on an exact-size copy. */
	char *body = malloc(size ? size : 1);
	if (body) {
		if (size)
			memcpy(body, data, size);
		struct promql_split sp;
		if (promql_vector_split(body, size, 4, &sp, err, sizeof err) == 0) {
			require(sp.n >= 1 && sp.n <= 4);
			for (int i = 0; i < sp.n; i++) {
				struct prom_error pe;
				require(prom_parse(sp.g[i].text, sp.g[i].len, 0, NULL, NULL, &pe) == sp.g[i].nseries);
			}
			promql_split_free(&sp);
		} else {
			require(err[0] != '\0');
		}
		free(body);
	}
	free(text);
	return 0;
}
