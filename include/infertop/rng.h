#ifndef INFERTOP_RNG_H
#define INFERTOP_RNG_H

#include <math.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: fast, good enough for arrival
 * processes and prompt sampling, and reproducible for a given --seed. */
struct rng {
	uint64_t s[4];
};

static inline uint64_t rng_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = rng_splitmix(&seed);
}

static inline uint64_t rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rng_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rng_rotl(s[3], 45);
	return result;
}

/* Uniform in (0, 1]: never 0, so -log(u) is always finite. */
static inline double rng_unit(struct rng *r)
{
	return ((double)(rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

/* Exponential with the given mean: Poisson-process inter-arrival times. */
static inline double rng_exp(struct rng *r, double mean)
{
	return -log(rng_unit(r)) * mean;
}

static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

#endif
