#ifndef INFERTOP_REPORT_H
#define INFERTOP_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "infertop/view.h"

/* Text and JSON views of a run's stats, from its read-only view (view.h),
 * never the engine: the same numbers feed the progress line, the summary
 * and the -o file. */

/* One headless progress line (sliding-window figures). */
void report_progress(FILE *out, const struct run_view *v, int64_t now_ns);
/* vLLM-style summary block plus infertop's TTFB and queue sections. */
void report_summary(FILE *out, const struct run_view *v);
/* Result JSON: vLLM-compatible top-level keys plus an "infertop" object.
 * Returns a malloc'd string, NULL on OOM. */
char *report_json(const struct run_view *v);
/* Writes report_json atomically (temp file, fsync, rename). 0 or -1 with
 * a message in err. */
int report_write_json(const struct run_view *v, const char *path, char *err, size_t errcap);

#endif
