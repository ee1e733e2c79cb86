#ifndef INFERTOP_CLOCK_H
#define INFERTOP_CLOCK_H

#include <stdint.h>
#include <time.h>

/* All latency math uses CLOCK_MONOTONIC nanoseconds: immune to NTP steps,
 * and cheap (vDSO) enough to read once per received chunk. */
static inline int64_t clock_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define CLOCK_NS_PER_US 1000LL
#define CLOCK_NS_PER_MS 1000000LL
#define CLOCK_NS_PER_S 1000000000LL

#endif
