/*
 * Private declarations shared by the files of controller/tiering/: the copy
 * records (copy_records.c), promotion's helpers for the rbd-mirror mode,
 * and refresh (promotion_refresh.c).
 */
#pragma once

#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdbool.h>

#include "dataset_internal.h"
#include "tier_admin.h"
#include "tiering.h"

struct gantry_copier_record;

/* ---- The copy records in "gantry.copies" (copy_records.c) ---- */

/* Reads the copy record under @key in @io's "gantry.copies"; -ENOENT when there is none. */
int gantry_promotion_record_read(rados_ioctx_t io, const char *key, struct gantry_copier_record *ret);
/* Writes @rec under @key in @io's "gantry.copies" (creating the object). */
int gantry_promotion_record_store(rados_ioctx_t io, const char *key,
                                  const struct gantry_copier_record *rec);
/*
 * Same, only if "gantry.copies" is still at @version (rados_get_last_version()
 * of @io right after the read the caller bases @rec on): -ERANGE when
 * anything was written there since (read again and retry).
 */
int gantry_promotion_record_store_at(rados_ioctx_t io, const char *key,
                                     const struct gantry_copier_record *rec, uint64_t version);
/* Calls @fn (cluster and pool given as "") for every readable record of @io's "gantry.copies". */
int gantry_promotion_records_each(rados_ioctx_t io, gantry_controller_copy_fn fn, void *arg);

/* One record written (created when missing), or removed (a missing one: 0). */
int gantry_promotion_record_write(rados_ioctx_t io, const char *uuid,
                                  const struct gantry_copier_record *rec);
int gantry_promotion_record_remove(rados_ioctx_t io, const char *uuid);
/*
 * Calls @fn for every copy record kept in a pool of cluster @c, read with
 * the config's credentials (every pool the credentials can read). Returns 0 or -errno with @err.
 */
int gantry_copies_list_cluster(const struct gantry_cluster_config *c,
                               int (*fn)(const char *cluster_id, const char *pool,
                                         const struct gantry_copier_record *rec, void *arg),
                               void *arg, struct gantry_error *err);

/* ---- Refresh: a newer snapshot of a promoted source, as a clone plus its changes (promotion_refresh.c) ---- */

/* The snapshot of a complete promoted copy that a refresh clones. */
#define GANTRY_REFRESH_PROMOTED_SNAP "gantry-promoted"

/*
 * A copy just completed into @img: snapshots it (GANTRY_REFRESH_PROMOTED_SNAP,
 * idempotent) and names the snapshot in @rec, so a later copy of a newer
 * snapshot of the same source can build on it. Returns 0 or -errno (the
 * copy is still complete, only not a refresh base).
 */
int gantry_refresh_mark_base(rbd_image_t img, struct gantry_copier_record *rec);
/*
 * The copy in @img is being demoted: removes its GANTRY_REFRESH_PROMOTED_SNAP
 * (which would keep every discarded object alive; the caller has checked
 * that no clone reads through it) and clears the name in @rec, so it is no
 * refresh base until copied again. Returns 0 or -errno.
 */
int gantry_refresh_unmark_base(rbd_image_t img, struct gantry_copier_record *rec);
/*
 * For the new copy @rec of @q (its source snapshot taken): looks in the
 * destination pool's records for a complete promotion of the same source
 * image from an older snapshot that still exists, whose promoted snapshot
 * still exists and fits @q->size; the newest wins. Fills @rec's refresh
 * fields and returns 1 when found, 0 when none fits (a full copy), or
 * -errno. Call under the volume's uuid lock.
 */
int gantry_refresh_pick_base(const struct gantry_promotion_request *q, struct gantry_copier_record *rec);
/* True when the base a refresh @rec builds on is gone (source snapshot or clone parent). */
bool gantry_refresh_base_gone(const struct gantry_promotion_request *q,
                              const struct gantry_copier_record *rec);
/* Forgets @rec's refresh: it becomes a full copy from the start. */
void gantry_refresh_forget(struct gantry_copier_record *rec);
/* Makes @q->dst_image as a clone of @rec's refresh parent, grown to @q->size. Returns 0 or -errno. */
int gantry_refresh_make_image(const struct gantry_promotion_request *q,
                              const struct gantry_copier_record *rec);

/* ---- Promotion's helpers for the rbd-mirror mode (promotion.c) ---- */

/* A source snapshot (take or remove). */
int gantry_promotion_snapshot(rados_ioctx_t io, const char *image, const char *snap, bool take);
/* The first record of a copy for @q (state "copying", the copier's). */
void gantry_promotion_record_new(const struct gantry_promotion_request *q,
                                 struct gantry_copier_record *ret);
