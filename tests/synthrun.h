#ifndef TESTS_SYNTHRUN_H
#define TESTS_SYNTHRUN_H

/* A run built by hand with known samples (no loop, no server): what the
 * exporter's tests render. Every figure below is what the run holds. */

#include <stdint.h>

#include "engine/engine_internal.h"

#define SYNTH_OK 10            /* successful requests */
#define SYNTH_GAPS 10          /* ITL gaps per successful request */
#define SYNTH_OUT_TOKENS 11    /* per successful request */
#define SYNTH_IN_TOKENS 100    /* per successful request */
#define SYNTH_CONNECTIONS 7
#define SYNTH_IN_FLIGHT 3
#define SYNTH_CONCURRENCY 16

/* Per successful request i, in microseconds. */
extern const int64_t synth_ttft_us[SYNTH_OK];
int64_t synth_ttfb_us(int i);
int64_t synth_e2e_us(int i);
int64_t synth_queue_us(int i);
int64_t synth_tpot_us(int i);
uint32_t synth_gap_us(int i, int j);

/* Failures, by kind: connect 2, http 1 (503), timeout 1. */
#define SYNTH_FAILED 4

struct synth {
	struct engine e;
	struct config cfg;
	int64_t t0;
	char model[64];
};

/* 0, or -1 when out of memory. model: the model label, copied. */
int synth_init(struct synth *s, const char *model);
void synth_free(struct synth *s);

#endif
