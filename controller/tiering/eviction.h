/*
 * Demotion of promoted copies: the eviction policy's thread, one
 * demotion, and what ControllerPublish/Unpublish do for a promoted copy
 * (eviction.c, copy_use.c). Private to controller/.
 */
#pragma once

#include <rados/librados.h>
#include <stdint.h>

#include "config.h"
#include "dataset_internal.h"
#include "error.h"

struct gantry_attachments;
struct gantry_kube_client;
struct gantry_metrics;

/*
 * Starts the eviction thread when a cluster of @config has an "evict"
 * policy; VolumeAttachments are read through @kube (NULL: no API access,
 * only watchers tell a copy in use). @config and @kube must outlive
 * gantry_eviction_stop(). Returns 0 or -errno.
 */
int gantry_eviction_start(const struct gantry_config *config, struct gantry_kube_client *kube,
                          struct gantry_error *err);
/* Stops the thread (a demotion under way stops between two chunks); no thread: no-op. */
void gantry_eviction_stop(void);
/* Where decisions are counted (may be NULL). */
void gantry_eviction_set_metrics(struct gantry_metrics *m);

/*
 * Demotes the copy recorded under @key in @io's "gantry.copies" (the pool
 * that keeps the record and the image of cluster @cluster_id): refuses when
 * it is in use (@attached names its PV; a watcher other than ours; clone
 * children), else marks it "demoting", checks again (VolumeAttachments anew
 * through @kube when not NULL), discards its data and marks it "demoted".
 * @reason ("watermark", "manual") and @idle_s go into the decision's log
 * line and metrics. Returns 0 when demoted (*@ret_freed: the bytes its copy
 * had written), 1 when it already was, -EBUSY when kept (@err says why,
 * *@ret_why a short reason: "watcher", "attached", "clones", "demoting"),
 * -EINVAL for a copy that is not complete, or another -errno.
 */
int gantry_eviction_demote(const char *cluster_id, rados_ioctx_t io, const char *key,
                           const char *reason, int64_t idle_s,
                           const struct gantry_attachments *attached,
                           struct gantry_kube_client *kube, uint64_t *ret_freed,
                           const char **ret_why, struct gantry_error *err);

/*
 * ControllerPublishVolume of dataset volume @e in @t: for a promoted copy
 * records the use; a demoted one is copied again from its source, answered
 * -EBUSY with the progress ("copying NAME from CLUSTER: 41 %, ...") until it
 * is done. 0 when the volume may be used (also: not a promoted copy).
 */
int gantry_copy_use_publish(const struct gantry_config *config, struct gantry_dataset_target *t,
                            const struct gantry_journal_entry *e, struct gantry_error *err);
/*
 * For a volume used as a source (of a clone, a copy, a snapshot): 0 unless
 * it is a promoted copy whose data is not there (demoted, or being copied
 * again): then -ESTALE (FAILED_PRECONDITION) naming @field.
 */
int gantry_copy_use_check_data(rados_ioctx_t io, const struct gantry_journal_entry *e,
                               const char *field, struct gantry_error *err);
/* ControllerUnpublishVolume: records the use of a promoted copy; best effort, never fails. */
void gantry_copy_use_unpublish(const struct gantry_config *config, const char *volume_id,
                               void *const *secrets, size_t n_secrets);
