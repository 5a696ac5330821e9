/*
 * The caps in force on this node, as the sampler walks them: a small
 * process-wide table of (pod, volume) -> cgroup, device, caps, declared
 * rates. Whoever applies an io.max line for a pod's volume puts its entry
 * here, and removes it with the line; the sampler (usage_sampler.h) walks
 * it with gantry_usage_targets_iterate. Thread-safe (one mutex; a walk
 * copies nothing and holds the mutex, so visits must be short).
 */
#pragma once

#include "usage_sampler.h"

/* At most this many entries (pods × volumes on one node). */
#define GANTRY_USAGE_TARGETS_MAX 1024

/*
 * Adds or replaces the entry of (@t->pod_uid, @t->volume_id); every string
 * is copied. Returns 0, -EINVAL (a required field empty: pod_uid,
 * pod_namespace, pod_name, volume_id, cgroup_dir), -ENOSPC (table full),
 * -ENOMEM.
 */
int gantry_usage_targets_put(const struct gantry_usage_target *t) GANTRY_MUST_CHECK;

/* Removes the entry of (@pod_uid, @volume_id); absent: no-op. */
void gantry_usage_targets_remove(const char *pod_uid, const char *volume_id);

/* A gantry_usage_iterate_fn over the table (@ctx unused). */
int gantry_usage_targets_iterate(void *ctx, gantry_usage_visit_fn visit, void *visit_ctx);

/* Empties the table (shutdown, tests). */
void gantry_usage_targets_clear(void);
