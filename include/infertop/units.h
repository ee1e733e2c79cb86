#ifndef INFERTOP_UNITS_H
#define INFERTOP_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "250ms", "10s", "1.5m", "2h", "500us", "3d"; a bare number is in
 * `bare_unit_ns` (e.g. CLOCK_NS_PER_S for options documented in seconds).
 * Returns 0, or -1 for garbage, negatives, or overflow. */
int units_parse_duration(const char *s, int64_t bare_unit_ns, int64_t *out_ns);

/* "512", "64k", "1M", "1G" (binary multiples, optional trailing B/iB). */
int units_parse_size(const char *s, uint64_t *out);

/* Plain finite double; whole string must be consumed. */
int units_parse_double(const char *s, double *out);

/* Plain integer within [min, max]; whole string must be consumed. */
int units_parse_long(const char *s, long min, long max, long *out);

/* Human duration for messages: "1h02m", "3m05s", "12.5s", "850ms". */
void units_format_duration(int64_t ns, char *buf, size_t cap);

#endif
