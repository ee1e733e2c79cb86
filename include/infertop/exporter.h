#ifndef INFERTOP_EXPORTER_H
#define INFERTOP_EXPORTER_H

#include <stddef.h>
#include <stdint.h>

struct run_view;

/* The run's client-side figures as Prometheus text exposition (0.0.4), labelled with generator_id; malloc'd, *len bytes, NULL on OOM. */
char *exporter_text(const struct run_view *v, const char *generator_id, int64_t now_ns, size_t *len);

#endif
