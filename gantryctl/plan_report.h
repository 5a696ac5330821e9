/*
 * `gantryctl plan`'s results and their three renderings: a readable table,
 * a JSON document (--json) and SVG charts (--svg FILE).
 */
#pragma once

#include <jansson.h>
#include <stdio.h>

#include "plan_input.h"
#include "plan_model.h"

struct gantry_plan_result {
        struct gantry_plan_reads_out reads;
        struct gantry_plan_capacity_out capacity;
        struct gantry_plan_checkpoint_out checkpoint;
        struct gantry_plan_promotion_out promotion;
};

/* Runs the sections @in asks for. */
void gantry_plan_compute(const struct gantry_plan_input *in, struct gantry_plan_result *ret);

/* Writes the table to @f. */
void gantry_plan_report_table(FILE *f, const struct gantry_plan_input *in,
                              const struct gantry_plan_result *res);

/* Returns a new JSON object (caller owns it), or NULL when out of memory. */
json_t *gantry_plan_report_json(const struct gantry_plan_input *in,
                                const struct gantry_plan_result *res);

/*
 * Writes the charts for the sections present to @path: epoch time against
 * GPU count, checkpoint window against write bandwidth, usable capacity
 * against raw. Returns 0 or -errno.
 */
int gantry_plan_report_svg(const char *path, const struct gantry_plan_input *in,
                           const struct gantry_plan_result *res);

/* The whole subcommand: argv after "plan". Returns the process exit code. */
int gantry_plan_main(int argc, char **argv);
