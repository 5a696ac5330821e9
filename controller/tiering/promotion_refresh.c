/*
 * Incremental refresh of a promoted dataset. A new version of a
 * dataset is a newer snapshot s2 of the same source image S. When the
 * destination pool already holds a complete promoted copy P of S taken from
 * an older snapshot s1 that still exists on S, the new volume is made as a
 * clone-v2 child of P's "gantry-promoted" snapshot (P exactly as copied from
 * s1, whatever was written to P since), and the copier then writes only the
 * objects that changed between s1 and s2 (rbd_diff_iterate2 from s1, the
 * incremental source of copier/source.h). Jobs reading P are untouched; the
 * new volume reads unchanged objects through its parent.
 *
 * The base is chosen among the records of "gantry.copies" of the
 * destination pool (promotion.c): kind "promote", state "done", same source
 * cluster, pool and image, a promoted snapshot, an older source snapshot;
 * the newest such snapshot wins (fewest changes). A refresh of a refresh
 * chains clones one level deeper. Anything that does not fit makes a full
 * copy as before. Everything here runs under the new volume's uuid lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "log.h"
#include "record.h"
#include "tiering_internal.h"

int gantry_refresh_mark_base(rbd_image_t img, struct gantry_copier_record *rec)
{
        int r = rbd_snap_create(img, GANTRY_REFRESH_PROMOTED_SNAP);

        if (r < 0 && r != -EEXIST)
                return r;
        snprintf(rec->promoted_snap, sizeof(rec->promoted_snap), "%s", GANTRY_REFRESH_PROMOTED_SNAP);
        return 0;
}

int gantry_refresh_unmark_base(rbd_image_t img, struct gantry_copier_record *rec)
{
        int r = rbd_snap_remove(img, GANTRY_REFRESH_PROMOTED_SNAP);

        if (r < 0 && r != -ENOENT)
                return r;
        rec->promoted_snap[0] = '\0';
        return 0;
}

/* The search for a base: what the new copy needs, and the best candidate so far. */
struct pick {
        const struct gantry_promotion_request *q;
        rbd_image_t src;            /* S at its head: snapshot ids */
        char dst_prefix[300];       /* "CLUSTER/POOL/" of the destination */
        uint64_t new_snap_id;
        uint64_t best_snap_id;
        bool found;
        char base_id[168], base_image[128], base_snap[128], src_snap[128];
};

static int consider(const char *cluster_id, const char *pool, const struct gantry_copier_record *rec,
                    void *arg)
{
        struct pick *k = arg;
        const struct gantry_promotion_request *q = k->q;
        size_t n = strlen(k->dst_prefix);
        const char *image = rec->destination + n;
        uint64_t id;

        (void)cluster_id;
        (void)pool;
        if (strcmp(rec->kind, "promote") != 0 || strcmp(rec->state, "done") != 0 ||
            !rec->promoted_snap[0] || strcmp(rec->id, q->uuid) == 0 ||
            strcmp(rec->src_cluster, q->src_cluster->cluster_id) != 0 ||
            rec->src_pool_id != rados_ioctx_get_id(q->src_io) ||
            strcmp(rec->src_image, q->src_image) != 0 ||
            strncmp(rec->destination, k->dst_prefix, n) != 0 || !*image || strchr(image, '/') ||
            strlen(image) >= sizeof(k->base_image))
                return 0;
        if (rbd_snap_get_id(k->src, rec->src_snap, &id) < 0 || id >= k->new_snap_id ||
            (k->found && id <= k->best_snap_id))
                return 0; /* its source snapshot is gone, not older, or an older base is known */
        k->found = true;
        k->best_snap_id = id;
        snprintf(k->base_id, sizeof(k->base_id), "%s", rec->id);
        snprintf(k->base_image, sizeof(k->base_image), "%s", image);
        snprintf(k->base_snap, sizeof(k->base_snap), "%s", rec->promoted_snap);
        snprintf(k->src_snap, sizeof(k->src_snap), "%s", rec->src_snap);
        return 0;
}

int gantry_refresh_pick_base(const struct gantry_promotion_request *q, struct gantry_copier_record *rec)
{
        struct pick k = { .q = q };
        char pool[128] = "";
        uint64_t size;
        int r;

        rados_ioctx_get_pool_name(q->dst_io, pool, sizeof(pool));
        snprintf(k.dst_prefix, sizeof(k.dst_prefix), "%s/%s/", q->dst_cluster, pool);
        if ((r = rbd_open_read_only(q->src_io, q->src_image, &k.src, NULL)) < 0)
                return r;
        r = rbd_snap_get_id(k.src, rec->src_snap, &k.new_snap_id);
        if (r == 0)
                r = gantry_promotion_records_each(q->dst_io, consider, &k);
        rbd_close(k.src);
        if (r < 0)
                return r;
        if (!k.found)
                return 0;
        r = gantry_dataset_image_size(q->dst_io, k.base_image, k.base_snap, &size);
        if (r == -ENOENT || (r == 0 && size > q->size))
                return 0; /* the base image went, or it is larger than the new volume */
        if (r < 0)
                return r;
        snprintf(rec->refresh_of, sizeof(rec->refresh_of), "%s", k.base_id);
        snprintf(rec->refresh_from, sizeof(rec->refresh_from), "%s", k.src_snap);
        snprintf(rec->refresh_parent, sizeof(rec->refresh_parent), "%s@%s", k.base_image, k.base_snap);
        log_info("tier.refresh_base", "name=%s uuid=%s base=%s parent=%s from_snap=%s to_snap=%s",
                 q->name, q->uuid, k.base_id, rec->refresh_parent, k.src_snap, rec->src_snap);
        return 1;
}

/* Splits @rec's "IMAGE@SNAP" parent into @image and @snap. */
static int parent_of(const struct gantry_copier_record *rec, char *image, size_t size, const char **snap)
{
        char *at;

        if (snprintf(image, size, "%s", rec->refresh_parent) >= (int)size || !(at = strchr(image, '@')))
                return -EINVAL;
        *at = '\0';
        *snap = at + 1;
        return 0;
}

bool gantry_refresh_base_gone(const struct gantry_promotion_request *q,
                              const struct gantry_copier_record *rec)
{
        char image[sizeof(rec->refresh_parent)];
        const char *snap;
        uint64_t size;

        if (parent_of(rec, image, sizeof(image), &snap) < 0)
                return true;
        return gantry_dataset_image_size(q->src_io, rec->src_image, rec->refresh_from, &size) ==
                       -ENOENT ||
               gantry_dataset_image_size(q->dst_io, image, snap, &size) == -ENOENT;
}

void gantry_refresh_forget(struct gantry_copier_record *rec)
{
        rec->refresh_of[0] = rec->refresh_from[0] = rec->refresh_parent[0] = '\0';
        free(rec->position);
        rec->position = NULL;
        rec->bytes_done = rec->bytes_total = 0;
}

int gantry_refresh_make_image(const struct gantry_promotion_request *q,
                              const struct gantry_copier_record *rec)
{
        char image[sizeof(rec->refresh_parent)];
        const char *snap;
        rbd_image_t img;
        uint64_t size;
        int r;

        if ((r = parent_of(rec, image, sizeof(image), &snap)) < 0)
                return r;
        if ((r = rbd_clone3(q->dst_io, image, snap, q->dst_io, q->dst_image, q->opts)) < 0)
                return r;
        if ((r = rbd_open(q->dst_io, q->dst_image, &img, NULL)) < 0)
                return r;
        r = rbd_get_size(img, &size);
        if (r == 0 && size < q->size)
                r = rbd_resize(img, q->size);
        rbd_close(img);
        return r;
}
