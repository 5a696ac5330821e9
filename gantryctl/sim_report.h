/*
 * The simulator's report: a table of the policies side by side (and, with
 * --jobs, one row per job), a JSON document, and SVG charts of delivered
 * read bandwidth and busy GPUs over time.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim_engine.h"
#include "sim_model.h"

void gantry_sim_report_table(FILE *f, const struct gantry_sim_cluster *c, const struct gantry_sim_trace *t,
                             struct gantry_sim_result *const *runs, size_t n, bool per_job);

/* A new JSON object (caller owns it), or NULL when out of memory. */
json_t *gantry_sim_report_json(const struct gantry_sim_cluster *c, const struct gantry_sim_trace *t,
                               struct gantry_sim_result *const *runs, size_t n, uint64_t seed);

/* Writes the charts to @path. Returns 0 or -errno. */
int gantry_sim_report_svg(const char *path, struct gantry_sim_result *const *runs, size_t n);
