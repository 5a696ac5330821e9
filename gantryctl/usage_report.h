/*
 * `gantryctl usage`'s model: declared vs used bandwidth per job, folded
 * from the node plugins' Prometheus text (the gantry_node_volume_* and
 * gantry_node_pod_* series of node/qos/usage_sampler.c). A job is the
 * pods' `job` label (the owner or gang the enforcement side knows), else
 * the pod itself. Pure: the command (usage_cmd.c) fetches the text.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "error.h"

/* Bounds on what one report holds (a metrics text is untrusted input). */
#define GANTRY_USAGE_REPORT_MAX_VOLUMES 65536
#define GANTRY_USAGE_REPORT_MAX_LINE 4096

struct gantry_usage_report;

/* A new empty report, or NULL when out of memory. */
struct gantry_usage_report *gantry_usage_report_new(void);
/* NULL is a no-op. */
void gantry_usage_report_free(struct gantry_usage_report *r);

/*
 * Folds the Prometheus text @text (@len bytes) scraped from @source (a URL,
 * for error messages) into @r. Lines that are not gantry_node_volume_* or
 * gantry_node_pod_* samples are skipped. Returns the number of samples used,
 * or -EINVAL with @err naming the source and line number for a sample line
 * of those families that does not parse (a bad label, a bad value), -E2BIG
 * past the bounds above, -ENOMEM.
 */
int gantry_usage_report_add_text(struct gantry_usage_report *r, const char *text, size_t len,
                                 const char *source, struct gantry_error *err) GANTRY_MUST_CHECK;

/*
 * The report per job as JSON: {"jobs": [{"namespace", "job", "pods",
 * "volumes", "declaredReadBps", "declaredWriteBps", "readBps", "writeBps",
 * "capReadBps", "capWriteBps", "readBytes", "writtenBytes",
 * "atCapShare" (the largest of its volumes'), "stallShare" (the largest of
 * its pods'), "usedShare" (read+write over declared; null when nothing
 * declared)}]}, sorted by namespace then job. Rates in bytes/s. Caller
 * decrefs; NULL when out of memory.
 */
json_t *gantry_usage_report_json(const struct gantry_usage_report *r);

/* Writes the per-job table (rates in Gbps, as the pods' annotations). */
void gantry_usage_report_table(const struct gantry_usage_report *r, FILE *f);
