/*
 * The simulator's deterministic generator (splitmix64); see sim_rng.h.
 */
#include "sim_rng.h"

uint64_t gantry_sim_rng_next(struct gantry_sim_rng *r)
{
        uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

uint64_t gantry_sim_rng_below(struct gantry_sim_rng *r, uint64_t n)
{
        return n ? gantry_sim_rng_next(r) % n : 0;
}
