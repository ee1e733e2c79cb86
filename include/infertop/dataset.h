#ifndef INFERTOP_DATASET_H
#define INFERTOP_DATASET_H

#include <stddef.h>

#include "infertop/rng.h"

/* Synthetic prompt: `words` random common words. Random per request so a
 * server's prefix cache cannot turn the prefill into a lookup. Returns a
 * malloc'd NUL-terminated string, NULL on OOM. */
char *dataset_synthetic_prompt(struct rng *r, long words);

#endif
