/* Prints the exposition of a synthetic run (tests/synthrun.c) on stdout,
 * for tests/exporter_promtool.sh: `promtool check metrics` reads it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/exporter.h"
#include "infertop/stats.h"
#include "synthrun.h"

int main(int argc, char **argv)
{
	/* A model name with every character the format must escape. */
	const char *model = argc > 1 ? argv[1] : "org/model \"q\" \\ end\nline2";
	struct synth s;
	if (synth_init(&s, model) != 0)
		return 1;
	/* "sessions": the run also had prefix-cache reports and sessions,
	 * turns 1 to 20 (their label stays within "1".."8+"). */
	if (argc > 2 && strcmp(argv[2], "sessions") == 0) {
		for (uint32_t turn = 1; turn <= 20; turn++) {
			struct req_result r = {.ok = true, .ttfb_ns = 1000000, .ttft_ns = 2000000 * (int64_t)turn,
					       .e2e_ns = 9000000 * (int64_t)turn, .output_tokens = 4, .chunks = 4,
					       .prompt_tokens = 100 * turn, .cached_tokens = 90 * (turn - 1),
					       .usage_tokens = -1, .retry_after_ns = -1, .turn = turn};
			s.e.stats->in_flight++;
			stats_request_done(s.e.stats, &r);
		}
		struct session_result sr = {.ok = true, .turns = 20, .duration_ns = 3 * CLOCK_NS_PER_S,
					    .context_tokens = 2000};
		stats_session_done(s.e.stats, &sr);
	}
	struct run_view v;
	engine_view(&s.e, &v);
	size_t len;
	char *text = exporter_text(&v, "host:4242", s.t0 + 2 * CLOCK_NS_PER_S, &len);
	int rc = text && fwrite(text, 1, len, stdout) == len ? 0 : 1;
	free(text);
	synth_free(&s);
	return rc;
}
