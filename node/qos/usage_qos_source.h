/*
 * The caps in force of the enforcement side (qos.h) as the sampler's walk
 * (usage_sampler.h); see usage_qos_source.c.
 */
#pragma once

#include <errno.h>

#include "usage_sampler.h"

/* A gantry_usage_iterate_fn over gantry_qos_for_each (@ctx unused). */
int gantry_usage_qos_iterate(void *ctx, gantry_usage_visit_fn visit, void *visit_ctx);
