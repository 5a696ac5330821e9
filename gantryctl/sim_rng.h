/*
 * The simulator's random numbers: a small deterministic generator
 * (splitmix64), so a run is repeatable from its --seed. The placement
 * policies (sim_policy.c) and the gantry model's tie-breaking
 * (sim_gantry.c) both draw from one of their own.
 */
#pragma once

#include <stdint.h>

struct gantry_sim_rng {
        uint64_t state;
};
uint64_t gantry_sim_rng_next(struct gantry_sim_rng *r);
/* Uniform in [0, n). */
uint64_t gantry_sim_rng_below(struct gantry_sim_rng *r, uint64_t n);
