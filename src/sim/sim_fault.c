#include "config.h"

#include <string.h>

#include "sim_internal.h"

uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double sim_rng_unit(struct sim_rng *r)
{
	return (double)(sim_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	return n ? sim_rng_next(r) % n : 0;
}

static const char *const fault_names[SIM_FAULT_COUNT] = {
	[SIM_FAULT_500] = "500",
	[SIM_FAULT_429] = "429",
	[SIM_FAULT_DISCONNECT] = "disconnect",
	[SIM_FAULT_MALFORMED] = "malformed",
	[SIM_FAULT_STALL] = "stall",
	[SIM_FAULT_SLOW_HEADERS] = "slow-headers",
};

const char *sim_fault_name(enum sim_fault k)
{
	return k >= 0 && k < SIM_FAULT_COUNT ? fault_names[k] : "none";
}

int sim_fault_parse_list(const char *s, unsigned *mask, char *bad, size_t badcap)
{
	unsigned m = 0;
	const char *p = s;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		int found = 0;
		if (n == 3 && strncmp(p, "all", 3) == 0) {
			m |= (1u << SIM_FAULT_COUNT) - 1;
			found = 1;
		}
		for (int k = 0; k < SIM_FAULT_COUNT && !found; k++) {
			if (strlen(fault_names[k]) == n && strncmp(p, fault_names[k], n) == 0) {
				m |= 1u << k;
				found = 1;
			}
		}
		if (!found) {
			if (badcap) {
				size_t c = n < badcap - 1 ? n : badcap - 1;
				memcpy(bad, p, c);
				bad[c] = '\0';
			}
			return -1;
		}
		if (!end)
			break;
		p = end + 1;
	}
	*mask = m;
	return 0;
}

enum sim_fault sim_fault_pick(struct sim_rng *r, double rate, unsigned mask)
{
	if (rate <= 0 || mask == 0)
		return SIM_FAULT_NONE;
	if (sim_rng_unit(r) >= rate)
		return SIM_FAULT_NONE;
	int kinds[SIM_FAULT_COUNT], n = 0;
	for (int k = 0; k < SIM_FAULT_COUNT; k++)
		if (mask & (1u << k))
			kinds[n++] = k;
	return (enum sim_fault)kinds[sim_rng_below(r, (uint64_t)n)];
}

/* Mid-stream faults strike after at least one token so the stream has
 * visibly started, and before the last one so it is visibly cut short. */
int32_t sim_fault_position(struct sim_rng *r, enum sim_fault k, int32_t target)
{
	switch (k) {
	case SIM_FAULT_DISCONNECT:
	case SIM_FAULT_STALL:
		if (target < 2)
			return 0;
		return 1 + (int32_t)sim_rng_below(r, (uint64_t)(target - 1));
	case SIM_FAULT_MALFORMED:
		return (int32_t)sim_rng_below(r, (uint64_t)target);
	default:
		return -1;
	}
}
