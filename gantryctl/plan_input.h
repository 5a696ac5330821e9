/*
 * The inputs of `gantryctl plan`, from a JSON file and/or command-line flags.
 *
 * One table lists every field once: its JSON path (`reads.datasetGB`), its
 * flag (`--dataset-gb`), its range and default. A JSON file is read first,
 * flags override it, then every section that was touched is checked whole:
 * a missing or out-of-range field is an error that names the field as the
 * user wrote it (the flag or the JSON path).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "plan_model.h"

struct gantry_plan_input {
        bool has_reads, has_capacity, has_checkpoint, has_promotion;
        struct gantry_plan_cluster cluster;
        struct gantry_plan_reads_in reads;
        struct gantry_plan_capacity_in capacity;
        struct gantry_plan_checkpoint_in checkpoint;
        struct gantry_plan_promotion_in promotion;
        /* output options */
        bool json;
        const char *svg_path; /* borrowed from argv; NULL: no chart */
};

/*
 * Parses argv (after the word "plan") into *ret. A flag `--input FILE` loads
 * FILE first. Returns 0, 1 when --help was asked (usage printed to stdout),
 * or -errno with @err naming the field.
 */
int gantry_plan_input_parse(int argc, char **argv, struct gantry_plan_input *ret,
                            struct gantry_error *err);

/* Parses a JSON document (the file's text) into *ret, then validates. */
int gantry_plan_input_parse_json(const char *text, struct gantry_plan_input *ret,
                                 struct gantry_error *err);

/*
 * The inputs as used, defaults filled in, in the input file's shape (so a
 * --json report can be fed back as --input). New object, or NULL (ENOMEM).
 */
json_t *gantry_plan_input_json(const struct gantry_plan_input *in);

/* Writes the flag list to stdout. */
void gantry_plan_input_usage(void);
