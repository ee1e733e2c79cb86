/* failif_parse() on arbitrary bytes (a --fail-if expression comes from a
 * CI script): it must never crash or read past the string; what it
 * accepts has 1..FAILIF_MAX conditions with a non-empty key, a finite
 * value, and parses again from its conditions' own text to the same. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/failif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	struct failif f, g;
	char err[256];
	if (failif_parse(s, &f, err, sizeof err) == 0) {
		if (f.n < 1 || f.n > FAILIF_MAX)
			abort();
		for (int i = 0; i < f.n; i++) {
			const struct failif_cond *c = &f.c[i];
			if (!c->key[0] || !isfinite(c->value))
				abort();
			/* A condition's own text is one condition, the same again
			 * (unless it was cut to fit the text buffer). */
			if (strlen(c->text) + 1 < sizeof c->text) {
				if (failif_parse(c->text, &g, err, sizeof err) != 0 || g.n != 1 ||
				    strcmp(g.c[0].key, c->key) != 0 || g.c[0].op != c->op || g.c[0].value != c->value ||
				    g.c[0].pct != c->pct)
					abort();
			}
			(void)failif_holds(c, c->value);
		}
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
	free(s);
	return 0;
}
