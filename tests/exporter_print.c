/* Prints the exposition of a synthetic run (tests/synthrun.c) on stdout,
 * for tests/exporter_promtool.sh: `promtool check metrics` reads it. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "infertop/clock.h"
#include "infertop/exporter.h"
#include "synthrun.h"

int main(int argc, char **argv)
{
	/* A model name with every character the format must escape. */
	const char *model = argc > 1 ? argv[1] : "org/model \"q\" \\ end\nline2";
	struct synth s;
	if (synth_init(&s, model) != 0)
		return 1;
	struct run_view v;
	engine_view(&s.e, &v);
	size_t len;
	char *text = exporter_text(&v, "host:4242", s.t0 + 2 * CLOCK_NS_PER_S, &len);
	int rc = text && fwrite(text, 1, len, stdout) == len ? 0 : 1;
	free(text);
	synth_free(&s);
	return rc;
}
