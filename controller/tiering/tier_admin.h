/*
 * What `gantryctl tier` asks of the tiering, outside CSI, with the driver
 * config's clusters and credentials: list the copy records of every
 * cluster (copy_records.c), promote or refresh one image (tier_admin.c),
 * demote a promoted copy (tier_demote.c). controller.h includes this.
 */
#pragma once

#include <stddef.h>

#include "config.h"
#include "error.h"

struct gantry_copier_record;

/* Called for each copy record; @cluster_id and @pool say where it is kept. Return < 0 to stop. */
typedef int (*gantry_controller_copy_fn)(const char *cluster_id, const char *pool,
                                         const struct gantry_copier_record *rec, void *arg);
/* Called for a cluster that could not be read; @msg says why. */
typedef void (*gantry_controller_cluster_error_fn)(const char *cluster_id, const char *msg, void *arg);

/*
 * Lists the records of every copy (dataset promotions, copier/record.h) kept in
 * the pools of each configured cluster that has a userID/keyFile. A cluster
 * that cannot be read is reported to @on_error and skipped. Returns 0, or
 * -EIO when a cluster failed. For gantryctl; connections stay cached until
 * gantry_controller_shutdown().
 */
int gantry_controller_list_copies(const struct gantry_config *config, gantry_controller_copy_fn fn,
                                  gantry_controller_cluster_error_fn on_error, void *arg);
/* Same, for one pool (@io is a rados_ioctx_t); @cluster_id and @pool are passed as "". */
int gantry_controller_list_pool_copies(void *io, gantry_controller_copy_fn fn, void *arg);

/* Sees each progress line of a promotion ("copying ... 41 %, ..."); return < 0 to stop it. */
typedef int (*gantry_controller_promote_progress_fn)(const char *line, void *arg);

/*
 * Promotes RBD image @from ("CLUSTER/POOL/IMAGE[@SNAP]"; without a snapshot
 * one is taken for the copy and removed after) into the new image @to
 * ("CLUSTER/POOL/IMAGE", data in @data_pool when given) with the copier and
 * record of CreateVolume's promotions (key "image-IMAGE"), in the calling
 * thread, reading both clusters with the config's credentials. Calls
 * @progress about once a second. Refuses (-EEXIST) an existing @to it did
 * not make; a stopped promotion (@progress < 0, a crash) resumes when
 * called again with the same arguments. Returns 0 when done, or -errno with
 * @err filled (-ECANCELED when stopped).
 */
int gantry_controller_promote_image(const struct gantry_config *config, const char *from,
                                    const char *to, const char *data_pool,
                                    gantry_controller_promote_progress_fn progress, void *arg,
                                    struct gantry_error *err);

/*
 * As gantry_controller_promote_image(), but only as a refresh: @to is
 * made from a complete promoted copy of an older snapshot of the same source
 * image in @to's pool plus the extents changed since, and -ENOENT is
 * returned when there is no such copy (promote_image falls back to a full
 * copy instead).
 */
int gantry_controller_refresh_image(const struct gantry_config *config, const char *from,
                                    const char *to, const char *data_pool,
                                    gantry_controller_promote_progress_fn progress, void *arg,
                                    struct gantry_error *err);

/*
 * Demotes the promoted copy @what names (a PVC "NAMESPACE/NAME", looked up
 * through the API; a PV name; a volume uuid; an image name; or
 * "CLUSTER/POOL/IMAGE"): its data is discarded, its record says "demoted"
 * and the next ControllerPublishVolume copies it again. Never one in use (a
 * VolumeAttachment, through @kubeconfig or in-cluster when available; a
 * watcher on its image; clones). Returns 0 when demoted, 1 when it already
 * was (@out says what was done), -EBUSY when in use, -ENOENT when nothing
 * has that name, or another -errno, with @err filled.
 */
int gantry_controller_demote(const struct gantry_config *config, const char *what,
                             const char *kubeconfig, char *out, size_t out_size,
                             struct gantry_error *err);
