/* Stub of the Prometheus renderer: a tiny valid exposition so the control
 * API's GET /metrics can be built and tested before the real one lands. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "infertop/exporter.h"

char *exporter_text(const struct run_view *v, const char *generator_id, int64_t now_ns, size_t *len)
{
	(void)v;
	(void)generator_id;
	(void)now_ns;
	static const char text[] = "# HELP infertop_up 1 when the run answers\n"
				   "# TYPE infertop_up gauge\n"
				   "infertop_up 1\n";
	char *p = malloc(sizeof text);
	if (!p)
		return NULL;
	memcpy(p, text, sizeof text);
	*len = sizeof text - 1;
	return p;
}
