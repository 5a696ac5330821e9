/*
 * controller/tiering/: datasets between Ceph clusters. A dataset volume made
 * from a volume or snapshot of another cluster is promoted: filled by a
 * resumable copy (the copier, copier/) in a thread of the controller, or
 * replicated by rbd-mirror, while CreateVolume's retries poll; a newer
 * snapshot of a promoted source is refreshed as a clone plus its changes;
 * copies nobody uses are demoted when their pool fills (eviction.c) or by
 * gantryctl (tier_demote.c); each copy's record (copy_records.c) says where
 * it stands. It builds on dataset/'s core (Ceph connections, the journal,
 * the image helpers) and is called by dataset/'s CSI handlers and by
 * controller.c; it calls neither.
 *
 * This header is what those callers use; the files of tiering/ share
 * tiering_internal.h besides.
 */
#pragma once

#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdbool.h>

#include "config.h"
#include "error.h"

struct gantry_metrics;

/* ---- Promotion: asynchronous copies from another cluster (promotion.c) ---- */

/* The longest key of a copy: a volume uuid, or "image-<name>" for gantryctl tier promote. */
#define GANTRY_PROMOTION_KEY_MAX 160

/* What CreateVolume knows of a copy into a new dataset volume. Everything is borrowed. */
struct gantry_promotion_request {
        const char *name;                /* the CO's name, for the progress message */
        const char *uuid;                /* the new volume's journal uuid (the record's key) */
        const char *dst_cluster;
        rados_ioctx_t dst_io;            /* destination pool */
        const char *dst_image;
        rbd_image_options_t opts;        /* to create the image */
        uint64_t size;                   /* of the new image (>= the source) */
        const struct gantry_cluster_config *src_cluster;
        rados_ioctx_t src_io;            /* source pool */
        const char *src_image;
        const char *src_snap;            /* NULL: a volume, copied from a snapshot of its own */
        bool resume_only;                /* never make the image: only resume (controller start) */
        bool refresh_only;               /* no base to refresh from: -ENOENT, not a full copy */
};

/*
 * Starts, resumes or follows the copy into @q->uuid. Returns 0 when the copy
 * is complete (and its snapshot of a volume source removed), -EBUSY with
 * @err "copying NAME from CLUSTER: 41 %, ..." while it runs, or -errno.
 * *@ret_keep is true when a failed call must not roll the volume back
 * (copied data to resume from). Call under the volume's uuid lock.
 */
int gantry_promotion_poll(const struct gantry_promotion_request *q, bool *ret_keep,
                          struct gantry_error *err);
/*
 * DeleteVolume's part: cancels a running copy into @uuid and waits for it,
 * removes the snapshot it took of its source and its record. No copy: 0.
 * Call under the volume's uuid lock.
 */
int gantry_promotion_cancel(const struct gantry_config *config, rados_ioctx_t dst_io,
                            const char *uuid, struct gantry_error *err);
/* Where promotions count bytes, rates and copies (may be NULL). */
void gantry_promotion_set_metrics(struct gantry_metrics *m);
/* Cancels every running copy (each persists its position) and waits for them. */
void gantry_promotion_shutdown(void);
/*
 * Waits until the copy into @uuid that this process runs ends, at most
 * @wait_ms. True when it ended (or none runs).
 */
bool gantry_promotion_wait(const char *uuid, int64_t wait_ms);
/* True when this process runs the copy into @uuid now. */
bool gantry_promotion_running(const char *uuid);

/* ---- Resume at start: unfinished copies go on without a CreateVolume (promotion_resume.c) ---- */

/*
 * Starts a thread that resumes every unfinished copy (record "copying") of
 * CSI volumes in the pools of the configured clusters, without waiting for
 * CreateVolume's next retry. A copy whose destination image is watched (run
 * by another controller, or a killed one's watch that has not lapsed yet)
 * is tried again every few seconds for a bounded time. @config must outlive
 * gantry_promotion_resume_stop(). Logs what it does.
 */
void gantry_promotion_resume_start(const struct gantry_config *config);
/* Stops and joins that thread (no-op when not started). */
void gantry_promotion_resume_stop(void);

/* ---- Dataset promotion through rbd-mirror (mirror.c; copy.mode "rbd-mirror") ---- */

/*
 * Promotes @q through rbd-mirror when its record says so, or when there is
 * none yet and @configured (copy.mode of the pair); else it is
 * gantry_promotion_poll(). Enables snapshot mirroring of the source image,
 * takes a mirror snapshot, and once the destination's rbd-mirror daemon
 * holds it, clones the volume from the replicated snapshot. 0 when the
 * volume is made, -EBUSY "mirroring NAME from CLUSTER: ..." until then, or
 * -errno.
 */
int gantry_mirror_poll(const struct gantry_promotion_request *q, bool configured, bool *ret_keep,
                       struct gantry_error *err);
/*
 * DeleteVolume's part: when @uuid was promoted through rbd-mirror, removes
 * image @dst_image (even while half made when @force), the source snapshot
 * taken for it, the source's mirroring when Gantry enabled it and no other
 * copy needs it, and the record. Other volumes: 0, nothing done.
 */
int gantry_mirror_cancel(const struct gantry_config *config, rados_ioctx_t dst_io, const char *uuid,
                         const char *dst_image, bool force, struct gantry_error *err);
/*
 * DeleteVolume's part, both of the above: gantry_mirror_cancel() then
 * gantry_promotion_cancel(), after one read of the copy record when no copy
 * runs here (none: 0 at once, nothing done).
 */
int gantry_tier_cancel(const struct gantry_config *config, rados_ioctx_t dst_io, const char *uuid,
                       const char *dst_image, bool force, struct gantry_error *err);
